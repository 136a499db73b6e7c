"""The ``fabriclab compare`` command: an A/B comparison with repetitions
(see :mod:`fabriclab.comparisons`).

::

    fabriclab compare A.toml [B.toml] [--set PATH=VALUE ...] [--repeat K]
                      [--metric COL[,COL...]] [--workers N | --scheduler ADDRESS]
                      [--csv FILE] [--html FILE] [--quiet]

Prints one line per item, row and metric: A's and B's min / avg / max over
the K runs, delta (B avg - A avg) and %. Exit status: 0; 1 if some run's
item failed (the figures leave it out, stderr names it); 2 on bad input
(nothing runs); 130 when stopped by Ctrl-C (the comparison of the seeds
both sides finished is printed and written first, if there are any).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

import pandas as pd

from ._checks import check_out_paths, command_inputs
from .cli_sweep import cell_text, cluster_errors, cluster_opts, set_spec, short_error, text_table
from .comparisons import compare, delta_text, pct_text, row_label, sides_text, value_text
from .errors import InvalidArgumentError

_NUMBERS = ("A min", "A avg", "A max", "B min", "B avg", "B max", "delta", "%")


def add_parser(sub: Any) -> None:
    """Add the ``compare`` subcommand to ``sub``."""
    p = sub.add_parser(
        "compare",
        help="A/B: two configurations, K runs each (seeds 1..K): min/avg/max, delta and %%",
        description="Run side A (A.toml) and side B (B.toml, or A.toml with the --set overrides) "
        "K times each with seeds 1..K, on Dask as fabriclab sweep does, and compare every item, "
        "row (message size, benchmark, flow, host, HPL test) and metric.",
    )
    p.add_argument("a", metavar="A.toml", help="side A: a scenario file")
    p.add_argument("b", metavar="B.toml", nargs="?", help="side B: a scenario file with the same items (default: A.toml with the --set overrides, which are then needed)")
    p.add_argument(
        "--set",
        dest="sets",
        type=set_spec,
        action="append",
        default=[],
        metavar="PATH=VALUE",
        help="an override of side B, e.g. fabric.cc.algorithm=none (repeatable; the paths of fabriclab sweep)",
    )
    p.add_argument("--repeat", type=int, default=5, metavar="K", help="runs per side, seeds 1..K (default 5)")
    p.add_argument(
        "--metric",
        metavar="COL[,COL...]",
        help="the result columns to compare (default per tool: perftest bw_avg_gbps or t_typical_us, "
        "flows fct_us, imb t_avg_us, osu avg_us or mb_per_s, cbench value, fio iops and lat_avg_us, hpl gflops)",
    )
    cluster_opts(p)
    p.add_argument("--csv", metavar="FILE", help="write the comparison to FILE as CSV")
    p.add_argument("--html", metavar="FILE", help="write the comparison to FILE as an HTML page")
    p.add_argument("--quiet", action="store_true", help="no progress bar or lines on stderr")


def _overrides(sets: Sequence[tuple[str, list[Any]]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for path, values in sets:
        if path in out:
            raise InvalidArgumentError(f"--set {path} is given twice; side B takes one value per path")
        if len(values) != 1:
            shown = ", ".join(cell_text(v) for v in values)
            raise InvalidArgumentError(
                f"--set {path}: compare takes one value per path (side B's), got {len(values)} ({shown}); "
                "to run several values, use fabriclab sweep"
            )
        out[path] = values[0]
    return out


def table_text(df: pd.DataFrame) -> str:
    """The comparison as the EANTC report tabulates it: one line per item,
    row and metric; A and B (without / with) min, avg, max; delta; %."""
    names = df["name"].notna().any()
    headers = ["item", *(["name"] if names else []), "row", "metric", *_NUMBERS]
    rows = []
    for r in df.to_dict("records"):
        cells = [r["item"], *([cell_text(r["name"])] if names else []), row_label(r), cell_text(r["metric"])]
        cells += [value_text(r[c]) for c in ("a_min", "a_avg", "a_max", "b_min", "b_avg", "b_max")]
        cells += [delta_text(r["delta"]), pct_text(r["pct"])]
        rows.append(cells)
    return text_table(headers, rows, right=_NUMBERS)


def cmd_compare(a: argparse.Namespace) -> int:
    """Run ``fabriclab compare``; the exit status (0, 1 if runs failed, 130
    if stopped by Ctrl-C, after the comparison of what both sides finished)."""
    overrides = _overrides(a.sets)
    check_out_paths(((a.csv, "--csv"), (a.html, "--html")), inputs=command_inputs(a))
    try:
        with cluster_errors():
            df = compare(
                a.a, a.b, overrides, repeat=a.repeat, metric=a.metric, client=a.scheduler, workers=a.workers,
                progress=not a.quiet,
            )
    except KeyboardInterrupt as e:
        return _interrupted(a, getattr(e, "result", None))
    _report(a, df)
    failed = df.attrs.get("failed", [])
    for f in failed:
        print(f"fabriclab: side {f['side']}, seed {f['seed']}, {f['item'] or 'the whole run'}: {short_error(f['error'])}", file=sys.stderr)
    if failed:
        print(f"fabriclab: {len(failed)} run(s) of an item failed: the figures leave them out", file=sys.stderr)
        return 1
    return 0


def _report(a: argparse.Namespace, df: pd.DataFrame) -> None:
    """The comparison on stdout, and in the ``--csv`` and ``--html`` files."""
    sys.stdout.write(sides_text(df) + "\n" + table_text(df))
    sys.stdout.flush()
    for path, what in ((a.csv, "csv"), (a.html, "html")):
        if path is None:
            continue
        try:
            if what == "csv":
                df.to_csv(path, index=False)
            else:
                from .compare_html import write_html

                write_html(df, path)
        except OSError as e:
            raise InvalidArgumentError(f"cannot write {path}: {e.strerror or e}") from None
        print(f"comparison written to {path}", file=sys.stderr)


def _interrupted(a: argparse.Namespace, part: Any) -> int:
    """Ctrl-C: the comparison of the seeds both sides finished, printed and
    written as a whole one would be, or a line saying there is none;
    status 130."""
    if not isinstance(part, pd.DataFrame):
        unwritten = " and nothing is written" if a.csv or a.html else ""
        print(
            "fabriclab: interrupted; no seed finished on both sides, so nothing comparable was kept"
            f"{unwritten}",
            file=sys.stderr,
        )
        return 130
    _report(a, part)
    seeds = ", ".join(map(str, part.attrs.get("seeds", [])))
    print(
        f"fabriclab: interrupted; the comparison above covers only the seed(s) both sides finished ({seeds}) "
        f"of 1..{a.repeat}",
        file=sys.stderr,
    )
    return 130
