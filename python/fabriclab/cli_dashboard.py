"""The ``fabriclab dashboard`` command: an HTML dashboard of the port
telemetry that ``fabriclab flows --telemetry PREFIX`` writes::

    fabriclab flows --fabric leaf-spine --flow h4:h0:4M --flow h5:h0:4M --telemetry incast --sample-us 10
    fabriclab dashboard incast.ports.csv -o incast.html --fabric leaf-spine --title "2:1 incast"
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pandas as pd

from ._checks import check_out_path, command_inputs
from .api import as_fabric
from .dashboards import dashboard
from .errors import InvalidArgumentError


def add_parser(sub: Any) -> None:
    """Add the ``dashboard`` subcommand to ``sub``."""
    p = sub.add_parser("dashboard", help="write an HTML dashboard of port telemetry (PREFIX.ports.csv)")
    p.add_argument("ports_csv", metavar="PORTS.csv", help="port samples, as 'fabriclab flows --telemetry' writes them")
    p.add_argument("-o", "--output", metavar="FILE.html", help="the page to write (default: PORTS.csv's name, ending .html)")
    p.add_argument("--fabric", help="the run's preset or fabric file: tells hosts from switches, utilisation in %% of link rate")
    p.add_argument("--title", help="the page's heading (default: the CSV's file name)")


def _default_output(csv: str) -> Path:
    name = Path(csv).name
    for ending in (".ports.csv", ".csv"):
        if name.endswith(ending):
            return Path(csv).with_name(name[: -len(ending)] + ".html")
    return Path(csv).with_name(name + ".html")


def cmd_dashboard(a: argparse.Namespace) -> None:
    """``fabriclab dashboard``."""
    if a.output is not None:  # before reading the samples
        check_out_path(a.output, "-o/--output", inputs=command_inputs(a))
    try:
        samples = pd.read_csv(a.ports_csv)
    except (pd.errors.EmptyDataError, pd.errors.ParserError) as e:
        raise InvalidArgumentError(f"{a.ports_csv}: not a port telemetry CSV ({e})") from None
    fabric = as_fabric(a.fabric) if a.fabric else None  # its errors before any drawing
    out = Path(a.output) if a.output else _default_output(a.ports_csv)
    title = a.title if a.title is not None else Path(a.ports_csv).name
    try:
        path = dashboard(samples, out, fabric=fabric, title=title)
    except OSError as e:
        raise InvalidArgumentError(f"cannot write the dashboard to {out}: {e.strerror or e}") from None
    print(f"dashboard of {len(samples)} port samples in {path}")
