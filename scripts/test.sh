#!/usr/bin/env bash
# All tests: the Rust core (no Python needed), lints (Rust, then Python),
# then the Python layer.
# Expects the package installed (pip install '.[test]').
set -euo pipefail
cd "$(dirname "$0")/.."
# The conservation audit checks every run of both suites (net/audit.rs).
export FABRICLAB_AUDIT=1
# No module of the core uses a higher layer; no import cycles (docs/architecture.md).
python3 scripts/check_layers.py
cargo test -p fabriclab-core
if cargo clippy --version >/dev/null 2>&1; then
  cargo clippy -p fabriclab-core --all-targets -- -D warnings
else
  echo "clippy not installed: lint skipped"
fi
if cargo fmt --version >/dev/null 2>&1; then
  cargo fmt --all -- --check
else
  echo "rustfmt not installed: format check skipped"
fi
# The Python layer's lints (pyproject.toml's [tool.ruff] and [tool.mypy]):
# ruff on the package, tests and benches; mypy --strict on the package.
if python3 -m ruff --version >/dev/null 2>&1; then
  python3 -m ruff check .
else
  echo "ruff not installed: Python lint skipped"
fi
if python3 -m mypy --version >/dev/null 2>&1; then
  python3 -m mypy
else
  echo "mypy not installed: type check skipped"
fi
# On every core, up to 8 (pytest-xdist; each test is independent of the
# others' order): 5 min instead of 9 on 2 cores.
if python3 -c "import xdist" >/dev/null 2>&1; then
  python3 -m pytest -q -n auto --maxprocesses 8
else
  echo "pytest-xdist not installed: tests run on one core"
  python3 -m pytest -q
fi
