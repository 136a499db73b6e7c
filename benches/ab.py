"""A/B timing of two builds of the packet engine.

Speed claims in docs/benchmarks.md compare two builds by interleaved runs
(A, B, A, B, ...) on the same machine, so that a change of machine load
hits both sides alike, and report each side's range and median. The runs
must agree on every figure other than wall time (events, last completion,
packets forwarded), or the two builds do not simulate the same thing and
the timing proves nothing; the script says so and exits 1.

    cargo build --release -p fabriclab-core --bin fabriclab-bench
    cp target/release/fabriclab-bench /tmp/bench-a     # the build before
    # ... change, rebuild ...
    cp target/release/fabriclab-bench /tmp/bench-b
    python benches/ab.py /tmp/bench-a /tmp/bench-b a2a-32 none --runs 10

A side may also be a directory holding a copy of an installed `fabriclab`
package (the folder that contains `fabriclab/`): that side runs `fabriclab
bench NAME --cc CC --json` with it first on the Python path. That is how
the Python extension's builds are compared, e.g. the plain build against
the PGO build of `scripts/install_pgo.sh` (whose profile does not fit the
bench binary):

    mkdir -p /tmp/pkg-a /tmp/pkg-b
    cp -r "$(python -c 'import fabriclab, os; print(os.path.dirname(fabriclab.__file__))')" /tmp/pkg-a/
    # ... bash scripts/install_pgo.sh, then the same copy into /tmp/pkg-b/ ...
    python benches/ab.py /tmp/pkg-a /tmp/pkg-b a2a-32 none --runs 10

`--baseline` compares against an older build whose model differs, such as
the commit an issue's "today" figures were measured on: both sides' figures
are printed and may differ, and the ratio of medians says how much faster
the benchmark as it is now runs than it did then on this same machine, a
figure that does not depend on how fast the machine is today:

    python benches/ab.py /tmp/bench-then /tmp/bench-now a2a-32 none --runs 30 --baseline

What it leaves out: CPU pinning and frequency control (the machines this
runs on share cores), and any statistics beyond median and range.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

#: Figures both builds must agree on.
SAME = ("events", "last_completion_us", "packets_forwarded")


#: Runs the command line of the package found first on the Python path.
CLI = "import sys; from fabriclab.cli import main; sys.exit(main())"


def run(build: str, bench: str, cc: str) -> dict[str, float]:
    if os.path.isdir(build):
        if not os.path.isdir(os.path.join(build, "fabriclab")):
            raise SystemExit(f"ab.py: {build} is a directory without a fabriclab package in it")
        cmd = [sys.executable, "-c", CLI, "bench", bench, "--json"] + (["--cc", cc] if cc else [])
        env = dict(os.environ, PYTHONPATH=os.path.abspath(build))
        out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    else:
        out = subprocess.run([build, bench, cc], check=True, capture_output=True, text=True).stdout
    doc: dict[str, float] = json.loads(out)
    return doc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", help="build A: a fabriclab-bench binary, or a directory holding a fabriclab package")
    ap.add_argument("b", help="build B, the same way")
    ap.add_argument("bench", help="benchmark name, e.g. a2a-32")
    ap.add_argument("cc", nargs="?", default="", help='congestion control: none, dcqcn or "" for the default')
    ap.add_argument("--runs", type=int, default=8, help="runs per side (default 8)")
    ap.add_argument(
        "--baseline",
        action="store_true",
        help="A is an older build whose results may differ: print both sides' figures and A's median over B's",
    )
    a = ap.parse_args()
    if a.runs < 1:
        ap.error("--runs must be at least 1")
    walls: dict[str, list[float]] = {"A": [], "B": []}
    figures: dict[str, tuple[float, ...]] = {}
    for _ in range(a.runs):
        for side, binary in (("A", a.a), ("B", a.b)):
            d = run(binary, a.bench, a.cc)
            walls[side].append(float(d["wall_s"]))
            figures.setdefault(side, tuple(d.get(k, float("nan")) for k in SAME))
    for side, w in walls.items():
        print(f"{side}: median {statistics.median(w):.4f} s, range {min(w):.4f}-{max(w):.4f} s over {len(w)} runs")
    ma, mb = statistics.median(walls["A"]), statistics.median(walls["B"])
    print(f"B against A: {100 * (mb - ma) / ma:+.1f} % (median)")
    if a.baseline:
        print(f"A's median over B's: {ma / mb:.2f}x")
        for side in ("A", "B"):
            print(f"{side}: {', '.join(f'{k} {v}' for k, v in zip(SAME, figures[side]))}")
        return 0
    if figures["A"] != figures["B"]:
        print(f"the builds differ in {', '.join(SAME)}: {figures['A']} against {figures['B']}", file=sys.stderr)
        return 1
    print(f"same {', '.join(SAME)}: {figures['A']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
