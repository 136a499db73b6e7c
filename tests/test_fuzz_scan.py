"""The exhaustive single-substitution scan (``tests/fuzz_scan.py``) in a
child process limited to 6 GB of address space: every entry point, every
parameter, every odd value ends in a result, a FabriclabError or the 1 s
budget, without a panic and without unbounded memory. It found six defects
the random search had missed (an unbounded telemetry, 2^31 Cbench tests
and perftest QPs allocated up front, rates rounding to 0 b/s, a report
panicking on a run stopped before its first size)."""

from __future__ import annotations

import resource
import subprocess
import sys

from conftest import ROOT

LIMIT_BYTES = 6 << 30


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_BYTES, LIMIT_BYTES))


def test_every_single_odd_argument_ends_cleanly_within_bounded_memory() -> None:
    p = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "fuzz_scan.py"), "--budget-s", "1"],
        capture_output=True,
        text=True,
        preexec_fn=_limit,
        timeout=900,
    )
    last = [line for line in p.stdout.splitlines() if line.startswith("case ")][-1:]
    assert p.returncode == 0, f"exit {p.returncode} at {last}: {p.stderr[-2000:]}"
    assert "4160 cases" in p.stdout or "cases in" in p.stdout.splitlines()[-1]
