#!/usr/bin/env python3
"""Time every `fabriclab ...` command of the README's shell blocks.

Each command runs once, in a scratch folder (with `scenarios/` and
`tests/` linked, so the README's relative paths work, and the files
commands write landing there); the script prints one
line per command: wall seconds, exit status, the command. The README
states these times next to its examples (measured on the CI machine class:
2 cores).

Usage: python3 scripts/readme_times.py [--match TEXT] [--timeout S]
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def commands(readme: str) -> list[str]:
    out: list[str] = []
    for block in re.findall(r"```bash\n(.*?)```", readme, flags=re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = line.strip()
            # The two set-up commands start with pip; keep what follows.
            if "&&" in line:
                line = line.split("&&", 1)[1].strip()
            if not line.startswith("fabriclab "):
                continue
            cmd = re.split(r"\s+#", line, maxsplit=1)[0].strip()
            out.append(cmd)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--match", help="only commands containing this text")
    ap.add_argument("--timeout", type=float, default=600.0)
    a = ap.parse_args()
    cmds = commands((ROOT / "README.md").read_text())
    if a.match:
        cmds = [c for c in cmds if a.match in c]
    with tempfile.TemporaryDirectory() as tmp:
        for d in ("scenarios", "tests"):
            os.symlink(ROOT / d, Path(tmp) / d)
        for cmd in cmds:
            argv = shlex.split(cmd)
            t0 = time.perf_counter()
            try:
                r = subprocess.run(argv, cwd=tmp, capture_output=True, text=True, timeout=a.timeout, check=False)
                status = str(r.returncode)
            except subprocess.TimeoutExpired:
                status = "timeout"
            print(f"{time.perf_counter() - t0:8.1f} s  exit {status:>7}  {cmd}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
