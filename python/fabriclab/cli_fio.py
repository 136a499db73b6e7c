"""The ``fabriclab fio`` command: fio's job options (``--rw``, ``--bs``,
``--iodepth``, ``--numjobs``, ``--runtime``, ``--ramp_time``,
``--output-format``) from client hosts against storage targets on a
simulated fabric::

    fabriclab fio --rw randwrite --bs 4M --iodepth 32 --clients h0-h10 \\
        --targets h12-h15 --runtime 0.05 --fabric eantc-storage
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .cli_iperf import size_arg
from .results import Result
from .storage import FIO_RW
from .storage import fio as run_fio


def add_parser(sub: Any) -> None:
    """Add the ``fio`` subcommand to ``sub``."""
    p = sub.add_parser("fio", help="run fio block I/O from clients against storage targets")
    p.add_argument("--fabric", default="eantc-storage", help="preset name or fabric TOML file (default eantc-storage)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    p.add_argument("--name", default="fio", help="job name (default fio)")
    p.add_argument("--rw", default="randwrite", choices=FIO_RW, help="I/O pattern (default randwrite)")
    p.add_argument("--bs", type=size_arg, default=4096, metavar="BYTES", help="block size, K/M suffixes (default 4K)")
    p.add_argument("--iodepth", type=int, default=1, help="I/Os in flight per job (default 1)")
    p.add_argument("--numjobs", type=int, default=1, help="jobs per client (default 1)")
    p.add_argument("--runtime", type=float, default=0.05, metavar="SECS", help="seconds counted (default 0.05)")
    p.add_argument("--ramp_time", "--ramp-time", type=float, default=0.0, metavar="SECS", help="seconds before counting (default 0)")
    p.add_argument("--clients", default="h0", metavar="HOSTS", help="hosts running fio, e.g. h0-h10 (default h0)")
    p.add_argument("--targets", default="h12", metavar="HOSTS", help="storage target hosts, e.g. h12-h15 (default h12)")
    p.add_argument("--target-write-mbps", type=float, metavar="MB/s", help="media write rate per target (default 3400)")
    p.add_argument("--target-read-mbps", type=float, metavar="MB/s", help="media read rate per target (default 5800)")
    p.add_argument("--target-latency-us", type=float, metavar="US", help="device and stack time per I/O (default 28)")
    p.add_argument("--output-format", choices=("normal", "json"), default="normal", help="fio's text (normal) or JSON")
    p.add_argument("--counters", action="store_true", help="also print the port counters")
    p.add_argument("--quiet", action="store_true", help="no progress bar or lines on stderr")


def cmd_fio(a: argparse.Namespace) -> None:
    """``fabriclab fio``."""
    res = run_fio(
        a.rw,
        bs=a.bs,
        iodepth=a.iodepth,
        numjobs=a.numjobs,
        runtime=a.runtime,
        ramp_time=a.ramp_time,
        clients=a.clients,
        targets=a.targets,
        fabric=a.fabric,
        seed=a.seed,
        name=a.name,
        target_write_mbps=a.target_write_mbps,
        target_read_mbps=a.target_read_mbps,
        target_latency_us=a.target_latency_us,
        progress=not a.quiet,
    )
    print_result(res, a.counters, a.quiet, json_output=a.output_format == "json")


def print_result(res: Result, counters: bool, quiet: bool = False, json_output: bool = False) -> None:
    """Print a fio result: fio's text (or JSON), then counters if asked;
    the simulated time on stderr unless ``quiet``."""
    out: str = res.extras["json"] if json_output else res.text or ""
    sys.stdout.write(out if out.endswith("\n") else out + "\n")
    if counters:
        sys.stdout.write("\nPort counters:\n" + (res.ports_table or ""))
    if not quiet:
        print(f"simulated {(res.sim_time_us or 0.0) / 1e6:.6f} s ({res.events or 0:,} events)", file=sys.stderr)
