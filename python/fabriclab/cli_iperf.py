"""The ``fabriclab iperf`` command: iperf3's TCP client options on a
simulated fabric (``-P``, ``-b``, ``-t``, ``-i``, ``-l``, ``-C``, ``-J``).
As in iperf3, ``-c HOST`` names the server the client connects to (the
receiver); ``--from`` names the host the client runs on (the sender)::

    fabriclab iperf -c h0 --from h1 -P 4 -b 20G -t 0.01 -i 0.001 -C cubic
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .errors import InvalidArgumentError
from .tcp import iperf as run_iperf
from .tcp import parse_rate, parse_size


def _rate(text: str) -> float:
    try:
        return parse_rate(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def size_arg(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_parser(sub: Any) -> None:
    """Add the ``iperf`` subcommand to ``sub``."""
    p = sub.add_parser("iperf", help="run iperf3 (TCP) between two hosts")
    p.add_argument("--fabric", default="heps", help="preset name or fabric TOML file (default heps)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    p.add_argument(
        "-c",
        "--client",
        dest="server",
        default="h1",
        metavar="HOST",
        help="run the client, connecting to the iperf3 server on HOST, the receiver, as iperf3's -c (default h1)",
    )
    p.add_argument("--from", dest="client", default="h0", metavar="HOST", help="host the client runs on, the sender (default h0)")
    # Before iperf3's meaning of -c was followed, -c named the sender and
    # --server the receiver: refuse the old form rather than swap silently.
    p.add_argument("--server", dest="old_server", help=argparse.SUPPRESS)
    p.add_argument("-P", "--parallel", type=int, default=1, help="parallel streams (default 1)")
    p.add_argument(
        "-b",
        "--bitrate",
        type=_rate,
        default=0.0,
        metavar="RATE",
        help="target bitrate per stream in bits/s, K/M/G/T suffixes (default 0 = unlimited)",
    )
    p.add_argument("-t", "--time", type=float, default=1.0, metavar="SECS", help="seconds to send (default 1)")
    p.add_argument(
        "-i", "--interval", type=float, default=0.1, metavar="SECS", help="seconds between reports (default 0.1; 0 = none)"
    )
    p.add_argument("-l", "--length", type=size_arg, default=131072, metavar="BYTES", help="write length, K/M suffixes (default 128K)")
    p.add_argument("-C", "--congestion", metavar="ALGO", help="congestion control: reno, cubic or dctcp (default: the fabric's)")
    p.add_argument("-J", "--json", action="store_true", help="print iperf3's JSON document instead of the text")
    p.add_argument("--counters", action="store_true", help="also print the port and TCP counters")
    p.add_argument(
        "--get-server-output",
        action="store_true",
        help="also print the server's report (its intervals count the bytes it read)",
    )


def cmd_iperf(a: argparse.Namespace) -> None:
    """``fabriclab iperf``."""
    if a.old_server is not None:
        raise InvalidArgumentError(
            "--server is gone: as in iperf3, -c names the server (the receiver) "
            f"and --from the client's host: write -c {a.old_server} --from HOST"
        )
    res = run_iperf(
        a.client,
        a.server,
        fabric=a.fabric,
        seed=a.seed,
        parallel=a.parallel,
        bitrate=a.bitrate,
        duration=a.time,
        interval=a.interval,
        length=a.length,
        congestion=a.congestion,
        get_server_output=a.get_server_output,
    )
    out: str = res.extras["json"] if a.json else res.text or ""
    sys.stdout.write(out if out.endswith("\n") else out + "\n")
    if a.counters:
        sys.stdout.write("\nPort counters:\n" + (res.ports_table or ""))
        sys.stdout.write("\nTCP counters:\n" + res.extras["tcp_table"])
