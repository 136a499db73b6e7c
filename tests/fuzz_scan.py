"""Every entry point of ``test_fuzz.CALLS`` with each of its parameters in
turn replaced by each value of ``test_fuzz.WEIRD``: one substitution at a
time, every combination, in a fixed order (the random search of
``test_fuzz.py`` draws one to three at a time and misses most of these).

Run by ``tests/test_fuzz_scan.py`` in a child process whose address space
is limited, so that an input that makes the core allocate without bound
aborts the child instead of the machine; each case is printed before it
runs, so the last line names the culprit. Standalone::

    python tests/fuzz_scan.py [--budget-s S] [--start K]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import test_fuzz as fz  # noqa: E402


def cases() -> list[tuple[str, str, int]]:
    """(entry point, parameter, index into WEIRD), in a fixed order."""
    return [(name, p, i) for name in sorted(fz.CALLS) for p in fz._params(fz.CALLS[name][0]) for i in range(len(fz.WEIRD))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget-s", type=float, default=1.0, help="wall time a call may take before it counts as ended")
    ap.add_argument("--start", type=int, default=0, help="first case")
    a = ap.parse_args()
    all_cases = cases()
    t0 = time.perf_counter()
    for k in range(a.start, len(all_cases)):
        name, param, i = all_cases[k]
        f, base = fz.CALLS[name]
        kwargs = dict(base, fabric=fz.FABRIC)
        kwargs[param] = fz.WEIRD[i]
        print(f"case {k}: {name}({param}={fz.WEIRD[i]!r})", flush=True)
        fz._bounded(lambda f=f, kwargs=kwargs: f(**kwargs), a.budget_s)
    print(f"{len(all_cases) - a.start} cases in {time.perf_counter() - t0:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
