"""Hash the outputs of a fixed set of runs, to show a refactoring changes none.

    python scripts/output_hashes.py > before.txt
    ... change the code, reinstall ...
    python scripts/output_hashes.py > after.txt && diff before.txt after.txt

Each line is a run's name and the SHA-256 of its output (text and JSON),
with wall-clock figures removed. The runs cover every MPI tool's job and
environment options (ranks, ranks per host, host lists and ranges,
placement, background flows and iperf, telemetry), the two backends,
perftest, iperf, fio and the flows API, each at a size that takes seconds.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess

CLI = shutil.which("fabriclab") or "fabriclab"

WALL = re.compile(r'"wall_s": [0-9.eE+-]+|wall[_ ]?s?[ =:]+[0-9.]+ ?s?|\(\s*[0-9.]+ s wall\)')

RUNS: list[tuple[str, list[str]]] = [
    ("imb-text", ["imb", "-np", "8", "--ppn", "2", "-msglog", "10:14", "Allreduce", "Alltoall", "PingPong"]),
    ("imb-hosts", ["imb", "-np", "6", "--hosts", "h0-h2", "--ppn", "2", "-msglog", "12", "Bcast", "--counters"]),
    ("imb-env", ["imb", "-np", "4", "--map-by", "node", "--ppn", "2", "-msglog", "14", "Allgather",
                 "--background", "h8:h9:1M:repeat", "--background-iperf", "h10:h11:10G",
                 "--telemetry-us", "50", "--counters"]),
    ("imb-flow", ["imb", "-np", "8", "-msglog", "16", "Alltoall", "--backend", "flow"]),
    ("osu-text", ["osu", "osu_latency", "-np", "2", "--hosts", "h0,h5", "-m", "1:4096"]),
    ("osu-env", ["osu", "osu_allreduce", "-np", "8", "--ppn", "2", "-m", "8:65536", "--counters",
                  "--background", "h5:h6:2M:repeat"]),
    ("cbench-text", ["cbench", "rotate", "-np", "8", "--hosts", "h0-h7", "--bytes", "65536"]),
    ("cbench-env", ["cbench", "rotate", "-np", "4", "--map-by", "node", "--counters", "--telemetry-us", "20"]),
    ("hpl-text", ["hpl", "--n", "2000", "--nb", "128", "--grid", "2x2", "--hosts", "h0-h3"]),
    ("hpl-json", ["hpl", "--n", "1500", "--nb", "96", "--grid", "1x4", "--ppn", "2", "--json"]),
    ("perftest", ["perftest", "ib_write_bw", "-s", "65536", "-n", "200"]),
    ("iperf", ["iperf", "-c", "h1", "--from", "h0", "-t", "0.002", "-i", "0.001", "-J"]),
]


def _run(args: list[str]) -> str:
    proc = subprocess.run(
        [CLI, *args, "--quiet"] if _quiet(args) else [CLI, *args],
        capture_output=True,
        text=True,
        check=False,
    )
    return f"exit {proc.returncode}\n{proc.stdout}\n{_strip_stderr(proc.stderr)}"


def _quiet(args: list[str]) -> bool:
    return args[0] in {"imb", "osu", "cbench", "hpl"}


def _strip_stderr(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if "wall" not in line and " s)" not in line)


def _api_runs() -> list[tuple[str, str]]:
    import fabriclab

    out = []
    res = fabriclab.imb(["Allreduce"], np=8, ppn=2, msglog=(10, 12), hosts="h0-h3", background=[fabriclab.Flow("h8", "h9", 1 << 20, repeat=True)])
    out.append(("api-imb", res.df.to_csv() + json.dumps(res.extras["mpi"], sort_keys=True)))
    res = fabriclab.osu("osu_bw", np=2, sizes=(1, 65536), placement="round_robin", ppn=2)
    out.append(("api-osu", res.df.to_csv()))
    res = fabriclab.cbench("rotate", np=6, bytes=32768, telemetry_us=30.0)
    out.append(("api-cbench", res.df.to_csv() + str(len(res.port_samples if res.port_samples is not None else []))))
    res = fabriclab.flows([fabriclab.Flow("h0", "h5", 1 << 20), fabriclab.Flow("h1", "h5", 1 << 20)], "leaf-spine")
    out.append(("api-flows", res.df.to_csv()))
    return out


def main() -> None:
    for name, args in RUNS:
        text = WALL.sub("WALL", _run(args))
        print(name, hashlib.sha256(text.encode()).hexdigest()[:16], len(text))
    for name, text in _api_runs():
        text = WALL.sub("WALL", text)
        print(name, hashlib.sha256(text.encode()).hexdigest()[:16], len(text))


if __name__ == "__main__":
    main()
