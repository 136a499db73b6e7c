"""The ``fabriclab sweep`` command: a scenario file over a grid of
overrides, on Dask (see :mod:`fabriclab.sweeps` and ``docs/sweeps.md``).

::

    fabriclab sweep SCENARIO.toml --set PATH=V1,V2,... [--set PATH=...]...
                    [--workers N | --scheduler ADDRESS] [-o FILE.csv|FILE.parquet]
                    [--dry-run] [--quiet]

Each ``--set`` gives one path's values; the sweep runs their cartesian
product. Values are TOML scalars (``64``, ``2.5``, ``true``, ``"quoted"``)
or bare strings (``none``, ``dcqcn``); ``A..B`` is the integers A to B;
commas inside ``[...]``, ``{...}`` or quotes do not split. The table has
one line per point and item, with each item's key figure. Exit status: 0;
1 if some point or item failed (the table shows its error); 2 on bad
input (nothing runs); 130 when stopped by Ctrl-C (the table of the points
that finished is printed first).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import math
import re
import sys
from collections.abc import Iterator, Sequence
from typing import Any, Callable

import pandas as pd

from ._checks import check_out_path, command_inputs
from ._toml import toml_value
from .errors import FabriclabError, InvalidArgumentError
from .sweep_dask import worker_count
from .sweep_rows import ERROR, ITEM_ERROR
from .sweep_writer import out_is_parquet, refuse_overwrite
from .sweeps import finished_points, sweep, sweep_points

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

_RANGE = re.compile(r"(-?\d+)\.\.(-?\d+)")
_MAX_RANGE = 100_000
_ERROR_WIDTH = 100


# --------------------------------------------------------------------------
# --set PATH=V1,V2,...


def _split_values(text: str) -> list[str]:
    """``text`` split at the commas outside brackets, braces and quotes."""
    parts: list[str] = []
    cur: list[str] = []
    depth, quote, escaped = 0, "", False
    for ch in text:
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\" and quote == '"':
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    parts.append("".join(cur).strip())
    return parts


def _parse_one(piece: str, whole: str) -> list[Any]:
    """One comma-separated piece: a range of integers, a TOML value or a bare
    string."""
    if not piece:
        raise argparse.ArgumentTypeError(f"empty value in {whole!r}")
    m = _RANGE.fullmatch(piece)
    if m:
        lo, hi = int(m.group(1)), int(m.group(2))
        if hi < lo:
            raise argparse.ArgumentTypeError(f"range {piece!r} is empty: write LOW..HIGH")
        if hi - lo >= _MAX_RANGE:
            raise argparse.ArgumentTypeError(f"range {piece!r} has more than {_MAX_RANGE} values")
        return list(range(lo, hi + 1))
    try:
        doc = tomllib.loads(f"v = {piece}")
    except tomllib.TOMLDecodeError as e:
        if piece[0] in "[{\"'":
            raise argparse.ArgumentTypeError(f"{piece!r} is not a TOML value ({e})") from None
        return [piece]  # a bare string
    v = doc.get("v")
    if set(doc) != {"v"} or isinstance(v, (datetime.date, datetime.time)):
        return [piece]
    return [_whole(v, piece)]


def _whole(v: Any, piece: str) -> Any:
    """A number written with an exponent whose value is whole (``1e6``,
    ``2.5e3``) as the integer it is, so that it fits an integer key
    (``perftest.size=1e6``) as well as a float one; other values as they
    are (``2.0`` stays a float)."""
    if isinstance(v, float) and "e" in piece.lower() and v.is_integer() and abs(v) < 2**53:
        return int(v)
    return v


def parse_values(text: str) -> list[Any]:
    """The values of ``--set PATH=VALUES``: ``"none,dcqcn"`` ->
    ``["none", "dcqcn"]``, ``"1..3,8"`` -> ``[1, 2, 3, 8]``,
    ``"[0, 10],[0, 20]"`` -> ``[[0, 10], [0, 20]]``, ``"1e3,2.5"`` ->
    ``[1000, 2.5]``."""
    return [v for piece in _split_values(text) for v in _parse_one(piece, text)]


def set_spec(text: str) -> tuple[str, list[Any]]:
    path, sep, values = text.partition("=")
    if not sep or not path.strip():
        raise argparse.ArgumentTypeError(
            f"expected PATH=V1,V2,... (e.g. fabric.cc.algorithm=none,dcqcn), got {text!r}"
        )
    return path.strip(), parse_values(values)


def _grid(sets: Sequence[tuple[str, list[Any]]]) -> dict[str, list[Any]]:
    grid: dict[str, list[Any]] = {}
    for path, values in sets:
        if path in grid:
            raise InvalidArgumentError(
                f"--set {path} is given twice; put all its values in one --set ({path}=V1,V2,...)"
            )
        grid[path] = values
    return grid


# --------------------------------------------------------------------------
# The parser


def cluster_opts(p: argparse.ArgumentParser) -> None:
    """``--workers N | --scheduler ADDRESS``: where the runs go (sweep, compare)."""
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--workers", type=int, metavar="N", help="worker processes of the local Dask cluster (default: one per CPU)"
    )
    where.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run on an existing Dask scheduler, e.g. tcp://login1:8786 (one started with dask-jobqueue on Slurm)",
    )


@contextlib.contextmanager
def cluster_errors() -> Iterator[None]:
    """Dask missing or a scheduler out of reach as a FabriclabError; files
    the user named keep their own errors."""
    try:
        yield
    except ImportError as e:
        raise FabriclabError(str(e)) from None
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        raise
    except OSError as e:  # the scheduler could not be reached
        raise FabriclabError(str(e)) from None


def add_parser(sub: Any) -> None:
    """Add the ``sweep`` subcommand to ``sub``."""
    p = sub.add_parser("sweep", help="run a scenario over a grid of parameters, on Dask")
    p.add_argument("scenario", metavar="SCENARIO.toml")
    p.add_argument(
        "--set",
        dest="sets",
        type=set_spec,
        action="append",
        required=True,
        metavar="PATH=V1,V2,...",
        help="a swept path and its values, e.g. fabric.cc.algorithm=none,dcqcn or seed=1..8 (repeatable: "
        "the sweep runs every combination); paths: seed, backend, fabric, fabric.SECTION.KEY, KIND.KEY, KIND[I].KEY",
    )
    cluster_opts(p)
    p.add_argument("-o", "--out", metavar="FILE", help="write every result row to FILE (.csv, or .parquet with pyarrow) as points finish; a FILE that "
        "already holds something is refused without --resume")
    p.add_argument(
        "--resume",
        action="store_true",
        help="with -o FILE: keep the points FILE already holds without an error and run only the others "
        "(a FILE of another or edited scenario, or with points this grid lacks, is refused)",
    )
    p.add_argument(
        "--dry-run", action="store_true", help="check the points and list them (with --resume, those left to run); run nothing"
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar or lines on stderr")


# --------------------------------------------------------------------------
# The summary table


def cell_text(v: Any) -> str:
    """A cell of the table."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, str):
        return v
    if isinstance(v, (bool, list, tuple, dict)):
        return toml_value(v)
    return str(v)


def short_error(message: str) -> str:
    text = " ".join(str(message).split())
    return text if len(text) <= _ERROR_WIDTH else text[: _ERROR_WIDTH - 3] + "..."


def _at(nbytes: Any) -> str:
    return "" if pd.isna(nbytes) else f" at {int(nbytes)} B"


def _row(g: pd.DataFrame, label: Any) -> Any:
    """The row of ``g`` labelled ``label`` (from ``idxmax``/``idxmin``)."""
    return g.loc[label]


def _perftest_text(g: pd.DataFrame) -> str:
    sizes = f" (of {len(g)} sizes)" if len(g) > 1 else ""
    if "bw_avg_gbps" in g and g["bw_avg_gbps"].notna().any():
        r = _row(g, g["bytes"].idxmax())
        return f"bw_avg {r['bw_avg_gbps']:.2f} Gb/s{_at(r['bytes'])}{sizes}"
    if "t_typical_us" in g and g["t_typical_us"].notna().any():
        r = _row(g, g["bytes"].idxmin())
        return f"t_typical {r['t_typical_us']:.2f} us, p99 {r['p99_us']:.2f} us{_at(r['bytes'])}{sizes}"
    return f"{len(g)} row(s)"


def _flows_text(g: pd.DataFrame) -> str:
    fct = g["fct_us"]
    done = int(fct.notna().sum())
    if done == 0:
        return f"{len(g)} flow(s), none finished"
    text = f"{len(g)} flow(s), fct max {fct.max():.3f} us, mean {fct.mean():.3f} us"
    return text + (f", {len(g) - done} unfinished" if done < len(g) else "")


def _imb_text(g: pd.DataFrame) -> str:
    parts = []
    for bench, rows in g.groupby("bench", sort=False):
        r = _row(rows, rows["bytes"].idxmax()) if rows["bytes"].notna().any() else rows.iloc[-1]
        parts.append(f"{bench} t_avg {r['t_avg_us']:.2f} us{_at(r['bytes'])}")
    more = f"; +{len(parts) - 2} more" if len(parts) > 2 else ""
    return "; ".join(parts[:2]) + more


def _osu_text(g: pd.DataFrame) -> str:
    r = _row(g, g["bytes"].idxmax()) if g["bytes"].notna().any() else g.iloc[-1]
    if pd.notna(r.get("mb_per_s")):
        return f"{r['mb_per_s']:.1f} MB/s{_at(r['bytes'])}"
    return f"avg {r['avg_us']:.2f} us{_at(r['bytes'])}"


def _cbench_text(g: pd.DataFrame) -> str:
    v = g["value"]
    return f"{len(g)} pair(s): value min {v.min():.1f}, mean {v.mean():.1f}, max {v.max():.1f}"


def _fio_text(g: pd.DataFrame) -> str:
    return (
        f"{len(g)} client(s): IOPS mean {g['iops'].mean():.1f}, "
        f"lat avg {g['lat_avg_us'].mean():.1f} us, p99 max {g['p99_us'].max():.1f} us"
    )


def _hpl_text(g: pd.DataFrame) -> str:
    best = _row(g, g["gflops"].idxmax())
    what = f"{best['gflops']:.4g} Gflops ({100 * best['efficiency']:.1f} %)"
    n, nb, p, q = (int(best[k]) for k in ("n", "nb", "p", "q"))  # floats when other kinds' rows lack them
    where = f"N={n} NB={nb} {p}x{q} {best['bcast']}"
    return what + (f" at {where}" if len(g) == 1 else f", best of {len(g)} tests at {where}")


def _nccl_text(g: pd.DataFrame) -> str:
    r = _row(g, g["size"].idxmax())
    return f"busbw {r['busbw']:.2f} GB/s{_at(r['size'])} ({r['algo']})"


def _rows_text(g: pd.DataFrame) -> str:
    return f"{len(g)} row(s)"


_KIND_TEXT: dict[str, Callable[[pd.DataFrame], str]] = {
    "perftest": _perftest_text,
    "flows": _flows_text,
    "imb": _imb_text,
    "osu": _osu_text,
    "cbench": _cbench_text,
    "fio": _fio_text,
    "hpl": _hpl_text,
    "nccl": _nccl_text,
}


def _result_text(g: pd.DataFrame) -> str:
    """The key figure of one item at one point (or its error: the run
    failure its result carries first, then the item's or a row's own)."""
    for column in (ITEM_ERROR, ERROR):
        errors = g[column].dropna() if column in g else None
        if errors is not None and len(errors):
            return "error: " + short_error(errors.iloc[0])
    text = _KIND_TEXT.get(g["kind"].iloc[0], _rows_text)(g)
    outcome = g["outcome"].iloc[0] if "outcome" in g else None
    if isinstance(outcome, str) and outcome != "Finished":
        text += f" ({outcome})"
    return text


def text_table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[str] = ("point",)) -> str:
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        out = [
            c.rjust(w) if h in right else c.ljust(w) for c, w, h in zip(cells, widths, headers)
        ]
        return "  ".join(out).rstrip()

    return "\n".join([line(headers)] + [line(r) for r in rows]) + "\n"


def summary(df: pd.DataFrame) -> str:
    """One line per point and item of a sweep result: the swept values,
    the item, its name and its key figure."""
    params = list(df.attrs.get("params", []))
    names = "name" in df and df["name"].notna().any()
    headers = ["point", *params, "item", *(["name"] if names else []), "result"]
    rows = []
    for _, g in df.groupby(["point", "item"], sort=False, dropna=False):
        first = g.iloc[0]
        cells = [str(first["point"]), *(cell_text(first[p]) for p in params), cell_text(first["item"])]
        if names:
            cells.append(cell_text(first["name"]))
        cells.append(_result_text(g))
        rows.append(cells)
    return text_table(headers, rows)


def _points_text(points: Sequence[Any]) -> str:
    params = list(dict.fromkeys(p for pt in points for p in pt.params))
    rows = [[str(pt.index), *(cell_text(pt.params.get(p)) for p in params)] for pt in points]
    return text_table(["point", *params], rows)


# --------------------------------------------------------------------------


def cmd_sweep(a: argparse.Namespace) -> int:
    """Run ``fabriclab sweep``; the exit status (0, or 1 if points failed)."""
    grid = _grid(a.sets)
    # Every option, before a dry run says all is well or points run.
    if a.workers is not None:
        worker_count(a.workers, 1)
    if a.resume and not a.out:
        raise InvalidArgumentError("--resume needs -o FILE: the results file of the sweep to resume")
    if a.out:
        out_is_parquet(a.out, "-o ")
        check_out_path(a.out, "-o/--out", inputs=command_inputs(a))
        if not a.resume:
            refuse_overwrite(a.out)
    if a.dry_run:
        points = sweep_points(a.scenario, grid)
        if a.resume:
            done = set(finished_points(a.out, points))
            todo = [p for p in points if p.index not in done]
            sys.stdout.write(_points_text(todo))
            print(
                f"{len(points)} point(s) checked: {len(done)} already in {a.out}, {len(todo)} to run; "
                "nothing run (--dry-run)",
                file=sys.stderr,
            )
            return 0
        sys.stdout.write(_points_text(points))
        print(f"{len(points)} point(s) checked; nothing run (--dry-run)", file=sys.stderr)
        return 0
    try:
        with cluster_errors():
            df = sweep(
                a.scenario, grid, client=a.scheduler, workers=a.workers, progress=not a.quiet, out=a.out, resume=a.resume
            )
    except KeyboardInterrupt as e:
        part = getattr(e, "result", None)
        if isinstance(part, pd.DataFrame) and len(part):
            sys.stdout.write(summary(part))
            sys.stdout.flush()
            kept = f"; {a.out} holds them" if a.out else ""
            print(
                f"fabriclab: interrupted; the table above is the {part['point'].nunique()} finished point(s) "
                f"of {part.attrs['points']}{kept}",
                file=sys.stderr,
            )
            return 130
        raise
    except FabriclabError as e:
        part = getattr(e, "result", None)
        if isinstance(part, pd.DataFrame) and len(part):
            # The results file failed, not the points: print them first.
            sys.stdout.write(summary(part))
            sys.stdout.flush()
        raise
    sys.stdout.write(summary(df))
    sys.stdout.flush()
    if a.out:
        print(f"{len(df)} rows written to {a.out}", file=sys.stderr)
    failed = df.attrs["failed"]
    if failed:
        where = f", the error column of {a.out} has them in full" if a.out else ""
        print(
            f"fabriclab: {len(failed)} of {df.attrs['points']} points had errors: the table shows them{where}",
            file=sys.stderr,
        )
        return 1
    return 0
