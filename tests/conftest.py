from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# The conservation audit checks every run of the suite (net/audit.rs): a
# run whose books do not balance raises fabriclab.AuditError.
os.environ.setdefault("FABRICLAB_AUDIT", "1")

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"

ZERO_HOSTS_TOML = """
name = "empty"
[topology]
kind = "leaf_spine"
spines = 0
leaves = 1
hosts_per_leaf = 0
host_link_gbps = 100
uplink_gbps = 100
"""

NEGATIVE_RATE_TOML = """
name = "negative"
[topology]
kind = "leaf_spine"
spines = 1
leaves = 2
hosts_per_leaf = 2
host_link_gbps = -100
uplink_gbps = 100
"""

MALFORMED_TOML = """
name = "broken
[topology
"""

TWO_HOSTS_TOML = """
name = "two-hosts"
description = "two hosts on one switch"
[topology]
kind = "explicit"
nodes = [{name = "a", kind = "host"}, {name = "b", kind = "host"}, {name = "sw", kind = "switch"}]
links = [{a = "a", b = "sw", gbps = 100}, {a = "b", b = "sw", gbps = 100, delay_ns = 50}]
"""


@pytest.fixture
def toml_file(tmp_path):
    """Write TOML text to a file in tmp_path; returns its path."""

    def write(text: str, name: str = "fabric.toml") -> Path:
        p = tmp_path / name
        p.write_text(text)
        return p

    return write


def run_cli(
    *args: str, cwd: str | os.PathLike | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """``python -m fabriclab.cli ARGS`` with output captured."""
    return subprocess.run(
        [sys.executable, "-m", "fabriclab.cli", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


@pytest.fixture
def cli():
    return run_cli
