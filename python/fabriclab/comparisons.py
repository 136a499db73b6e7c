"""A/B comparisons with repetitions: two configurations, each run K times
(seeds 1..K), compared row by row as min / avg / max, delta and %.

This is how the EANTC report tabulates a feature ("without / with / delta /
%" over 5 repetitions). Side A is a scenario file; side B is a second file,
or the same file with overrides (the paths of :mod:`fabriclab.sweeps`, one
value each). Both sides run through the sweep machinery (:func:`sweep`
with ``seed`` over 1..K, on one Dask cluster: a LocalCluster here, or the
caller's client or scheduler, e.g. on Slurm), then :func:`compare_runs`
matches their result rows by item and by the columns that identify a row
of that item's tool (:data:`KEY_COLUMNS`: message size, benchmark, flow,
host, HPL test, ...) and computes, per metric (:data:`DEFAULT_METRICS`, or
the caller's), each side's min, average and max over its runs, ``delta =
B avg - A avg`` and ``pct = delta / A avg x 100``::

    import fabriclab

    df = fabriclab.compare("scenarios/heps.toml", set={"fabric.cc.algorithm": "none"}, repeat=3)
    print(df[["item", "bytes", "metric", "a_avg", "b_avg", "delta", "pct"]])

    df = fabriclab.compare("scenarios/eantc_imb.toml", "scenarios/eantc_imb_dynamic.toml", repeat=5)

What it leaves out: significance tests (it reports the spread, min to
max, not a p-value), seeds other than 1..K, and "better or worse": the sign
of a delta means what the metric means (lower latency is better, higher
bandwidth is better). Rows found on one side only (B changed a message
size, say) are kept with the other side empty; runs whose item failed are
left out of that item's figures and listed in ``df.attrs["failed"]``.
"""

from __future__ import annotations

import math
import numbers
import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from ._checks import as_list, as_path
from ._toml import toml_value
from .api import BW_COLUMNS, FLOW_COLUMNS, LAT_COLUMNS
from .bisection import CBENCH_COLUMNS
from .errors import ArgumentTypeError, FabriclabError, InvalidArgumentError
from .gpu import NCCL_COLUMNS
from .kinds import NAMES as ITEM_KINDS
from .lab import MAX_REPEAT
from .lab_runs import fmt
from .linpack import HPL_COLUMNS
from .mpi import IMB_COLUMNS, OSU_COLUMNS
from .progress import ProgressArg, check_progress
from .scenario import file_order, read_toml
from .storage import FIO_COLUMNS
from .sweep_dask import dask_client, worker_count
from .sweep_grid import SweepPoint
from .sweep_rows import ERROR, ITEM_ERROR, failed_rows
from .sweeps import ITEM_COLUMNS, run_points, sweep_points

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "compare", "run_sides", "compare_runs", "row_label", "sides_text", "KEY_COLUMNS", "DEFAULT_METRICS", "COMPARE_COLUMNS",
    "UNIT_COLUMNS",
]

#: The columns that identify a result row within an item, per tool: rows of
#: A and B with the same item and the same values here are compared. A
#: flows item's rows are its flows, numbered from 0 in ``flow``.
KEY_COLUMNS: dict[str, tuple[str, ...]] = {
    "perftest": ("bytes",),
    "flows": ("flow", "src", "dst"),
    "imb": ("bench", "np", "bytes"),
    "osu": ("bytes",),
    "cbench": ("rotation", "rank"),
    "fio": ("host",),
    "hpl": ("variant", "n", "nb", "p", "q"),
    "nccl": ("size",),
}

#: The metrics compared by default, per tool: each of these columns that an
#: item's rows have (perftest: bandwidth for the bw tests, the typical
#: latency for the lat tests; OSU: latency or bandwidth, as the test reports).
DEFAULT_METRICS: dict[str, tuple[str, ...]] = {
    "perftest": ("bw_avg_gbps", "t_typical_us"),
    "flows": ("fct_us",),
    "imb": ("t_avg_us",),
    "osu": ("avg_us", "mb_per_s"),
    "cbench": ("value",),
    "fio": ("iops", "lat_avg_us"),
    "hpl": ("gflops",),
    "nccl": ("time_us", "busbw"),
}

#: Every column of each tool's rows (metrics are the numeric ones not in
#: :data:`KEY_COLUMNS`).
_TOOL_COLUMNS: dict[str, Sequence[str]] = {
    "perftest": [*BW_COLUMNS, *LAT_COLUMNS],
    "flows": FLOW_COLUMNS,
    "imb": IMB_COLUMNS,
    "osu": OSU_COLUMNS,
    "cbench": CBENCH_COLUMNS,
    "fio": FIO_COLUMNS,
    "hpl": HPL_COLUMNS,
    "nccl": NCCL_COLUMNS,
}
_TEXT_COLUMNS = {"src", "dst", "error", "algorithm", "algo", "bench", "host", "peer_host", "variant", "bcast", "bw_unit"}

#: Metrics whose unit a setting of the item chooses, and the sweep row's
#: column that says which: perftest's ``bw_peak`` and ``bw_avg`` are in
#: MiB/s, or Gb/s with ``report_gbits`` (as the real tool prints them).
#: Two sides in different units are refused, not compared.
UNIT_COLUMNS: dict[str, str] = {"bw_peak": "bw_unit", "bw_avg": "bw_unit"}
#: The perftest setting behind each unit.
_REPORT_GBITS = {"Gb/s": "true", "MiB/s": "false"}

#: The figures of each compared row, after ``item``, ``kind``, ``name``,
#: the key columns and ``metric``.
COMPARE_COLUMNS = ("a_min", "a_avg", "a_max", "b_min", "b_avg", "b_max", "delta", "pct", "a_runs", "b_runs")


def _metrics_of(kind: str) -> list[str]:
    """The columns of ``kind``'s rows that can be compared."""
    keys = KEY_COLUMNS[kind]
    own = [c for c in _TOOL_COLUMNS[kind] if c not in keys and c not in _TEXT_COLUMNS]
    return [*own, *(c for c in ITEM_COLUMNS if c != "outcome")]


# --------------------------------------------------------------------------
# Checking the input


def _repeat(repeat: Any) -> int:
    if isinstance(repeat, bool) or not isinstance(repeat, numbers.Integral) or not 1 <= int(repeat) <= MAX_REPEAT:
        raise InvalidArgumentError(
            f"repeat must be an integer from 1 to {MAX_REPEAT} (runs per side, seeds 1..repeat), got {repeat!r}"
        )
    return int(repeat)


def _overrides(overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    if overrides is None:
        return {}
    if not isinstance(overrides, Mapping):
        raise InvalidArgumentError(
            f"set must be a mapping of override paths to one value each, e.g. {{'fabric.cc.algorithm': 'none'}}, "
            f"not {type(overrides).__name__}"
        )
    out = {str(k).strip(): v for k, v in overrides.items()}
    if "seed" in out:
        raise InvalidArgumentError("seed cannot be set in a comparison: both sides run with seeds 1..repeat")
    return out


def _metric_list(metric: str | Iterable[str] | None) -> list[str] | None:
    if metric is None:
        return None
    items = metric.split(",") if isinstance(metric, str) else as_list("metric", metric, "column names")
    if not all(isinstance(m, str) for m in items):
        raise ArgumentTypeError("metric must be a column name, a comma-separated text or a list of column names")
    out = [m.strip() for m in items]
    if not any(out):
        raise InvalidArgumentError("metric is empty: give a column name such as t_avg_us, or leave it out")
    if not all(out):
        # as sweep's value lists: a stray comma is a typo, not nothing
        raise InvalidArgumentError(f"metric {metric!r} has an empty name between commas; remove the extra comma")
    return out


def scenario_items(path: str | os.PathLike[str]) -> dict[str, str | None]:
    """A scenario file's items in file order: ``{"imb[0]": name, ...}``."""
    text, doc = read_toml(os.fspath(path))
    counts = {k: len(doc[k]) if isinstance(doc.get(k), list) else 0 for k in ITEM_KINDS}
    seen = {k: 0 for k in ITEM_KINDS}
    items: dict[str, str | None] = {}
    for kind in file_order(text, counts):
        table = doc[kind][seen[kind]]
        items[f"{kind}[{seen[kind]}]"] = table.get("name") if isinstance(table, dict) else None
        seen[kind] += 1
    return items


def _check_same_items(a: str, b: str) -> dict[str, str | None]:
    """The items of A; :class:`InvalidArgumentError` naming the first
    difference (an item one side lacks, then a name) and both item lists
    if B's items differ."""
    ia, ib = scenario_items(a), scenario_items(b)
    if ia == ib:
        return ia

    def show(items: Mapping[str, str | None]) -> str:
        return ", ".join(f"{label} {name!r}" if name else label for label, name in items.items()) or "none"

    only_a = [x for x in ia if x not in ib]
    only_b = [x for x in ib if x not in ia]
    if only_a or only_b:
        first = f"{a} has {only_a[0]}, {b} has not" if only_a else f"{b} has {only_b[0]}, {a} has not"
    else:
        label = next(x for x in ia if ia[x] != ib[x])
        first = f"{label} is named {ia[label]!r} in {a} and {ib[label]!r} in {b}"
    raise InvalidArgumentError(
        f"{a} and {b} differ in their items: {first} (items of {a}: {show(ia)}; of {b}: {show(ib)}); "
        "compare runs the same items on both sides"
    )


def _check_metrics(metrics: list[str] | None, items: Mapping[str, str | None]) -> None:
    """Every asked metric must be a column some item's tool reports."""
    if metrics is None:
        return
    kinds = list(dict.fromkeys(label.split("[")[0] for label in items))
    known = list(dict.fromkeys(c for k in kinds for c in _metrics_of(k)))
    for m in metrics:
        if m not in known:
            raise InvalidArgumentError(
                f"metric {m!r}: no item of the scenario reports it; its items ({', '.join(kinds)}) report {', '.join(known)}"
            )


# --------------------------------------------------------------------------
# Running both sides


def run_sides(
    a: str | os.PathLike[str],
    b: str | os.PathLike[str] | None = None,
    set: Mapping[str, Any] | None = None,  # noqa: A002 - the name of --set
    *,
    repeat: int = 5,
    metric: str | Iterable[str] | None = None,
    client: Any = None,
    workers: int | None = None,
    progress: ProgressArg = False,
) -> pd.DataFrame:
    """Run side A (scenario file ``a``) and side B (file ``b``, or ``a``,
    with the overrides ``set`` applied) ``repeat`` times each, seeds 1 to
    ``repeat``, through :func:`fabriclab.sweep` on one Dask cluster.
    Everything is checked before anything runs. Returns the sweeps' rows
    with a leading ``side`` column (``"A"`` or ``"B"``); ``seed`` says
    which run a row is from. ``metric`` is only checked here (see
    :func:`compare`; a metric in another unit on each side is refused).
    Stopped by Ctrl-C, the ``KeyboardInterrupt`` carries ``result``: the
    rows of the seeds that both sides finished (``attrs["seeds"]`` lists
    them), or None if no seed finished on both."""
    check_progress(progress)
    k = _repeat(repeat)
    overrides = _overrides(set)
    metrics = _metric_list(metric)
    path_a = as_path("a", a)
    path_b = path_a if b is None else as_path("b", b)
    if client is not None and workers is not None:
        raise InvalidArgumentError(
            "workers sizes the LocalCluster that compare starts; a client or scheduler brings its own workers"
        )
    items = _check_same_items(path_a, path_b)
    _check_metrics(metrics, items)
    if b is None and not overrides:
        raise InvalidArgumentError(
            "B would be A itself (same file, same seeds, the same runs): give a second scenario file, "
            "or overrides for side B (--set PATH=VALUE; set= in Python)"
        )
    seeds = list(range(1, k + 1))
    grid_a: dict[str, list[Any]] = {"seed": seeds}
    grid_b: dict[str, list[Any]] = {**{p: [v] for p, v in overrides.items()}, "seed": seeds}
    # every run of both sides checked before anything runs
    points = {}
    for side, path, grid in (("A", path_a, grid_a), ("B", path_b, grid_b)):
        try:
            points[side] = sweep_points(path, grid)
        except FabriclabError as e:
            # "point 0 (perftest.iters = 0, seed = 1): ..." is the sweep's
            # word; here the run is one side's
            found = re.match(r"point \d+ (\(.*?\)): (.*)", str(e), re.S)
            where = f"side {side} {found[1]}: {found[2]}" if found else f"side {side}: {e}"
            raise type(e)(where) from None
    _check_point_units(metrics, points["A"], points["B"])
    n = worker_count(workers, 2 * k) if client is None else 0
    done: dict[str, pd.DataFrame] = {}
    attrs = {"a": path_a, "b": path_b, "set": overrides, "seeds": seeds}
    try:
        with dask_client(client, n) as (c, _where):
            for side, path in (("A", path_a), ("B", path_b)):
                done[side] = run_points(path, points[side], client=c, progress=progress)
    except KeyboardInterrupt as e:
        # Stopped: what both sides finished goes with the interrupt (a
        # side stopped midway hands over its finished runs).
        part = getattr(e, "result", None)
        for side in ("A", "B"):
            if side not in done and isinstance(part, pd.DataFrame):
                done[side], part = part, None
        e.result = _both_sides(done, attrs, finished_only=True)  # type: ignore[attr-defined]
        raise
    runs = _both_sides(done, attrs)
    assert runs is not None  # both sides ran
    return runs


def _both_sides(done: Mapping[str, pd.DataFrame], attrs: Mapping[str, Any], finished_only: bool = False) -> pd.DataFrame | None:
    """Both sides' sweep rows in one table with a leading ``side`` column;
    with ``finished_only``, only the seeds that both sides finished (None
    if there are none)."""
    if set(done) != {"A", "B"}:
        return None
    seeds = list(attrs["seeds"])
    if finished_only:
        both = set(done["A"]["seed"]) & set(done["B"]["seed"]) if len(done["A"]) and len(done["B"]) else set()
        seeds = [s for s in seeds if s in both]
        if not seeds:
            return None
    sides = [done[side][done[side]["seed"].isin(seeds)].copy() if len(done[side]) else done[side].copy() for side in ("A", "B")]
    for side, rows in zip(("A", "B"), sides):
        rows.insert(0, "side", side)
    runs = pd.concat(sides, ignore_index=True)
    runs.attrs.update({**attrs, "seeds": seeds})
    return runs


def _unit_error(item: str, metric: str, unit_a: str, unit_b: str) -> InvalidArgumentError:
    """A metric in one unit on side A and another on side B, refused."""
    setting = f"report_gbits = {_REPORT_GBITS.get(unit_a, '?')} on side A and {_REPORT_GBITS.get(unit_b, '?')} on side B"
    return InvalidArgumentError(
        f"{item} {metric}: side A reports it in {unit_a}, side B in {unit_b} (perftest's {setting}), so "
        "their delta would be a change of unit, not of the fabric; give both sides the same report_gbits "
        f"(--set perftest.report_gbits={_REPORT_GBITS.get(unit_a, 'true')}), or compare bw_avg_gbps, in Gb/s on both"
    )


def _point_units(point: SweepPoint) -> dict[str, str]:
    """The ``bw_unit`` of each perftest bandwidth test of a point's scenario
    (``"perftest[0]"``: ``"Gb/s"`` or ``"MiB/s"``, by its report_gbits)."""
    tables = tomllib.loads(point.toml).get("perftest", [])
    return {
        f"perftest[{i}]": "Gb/s" if t.get("report_gbits") is True else "MiB/s"
        for i, t in enumerate(tables)
        if isinstance(t, dict) and str(t.get("test", "")).endswith("_bw")
    }


def _check_point_units(metrics: list[str] | None, a: Sequence[SweepPoint], b: Sequence[SweepPoint]) -> None:
    """Refuse, before anything runs, a metric whose unit differs between
    the sides (:data:`UNIT_COLUMNS`): the first point of each (a side's
    points differ only in their seed)."""
    asked = [m for m in metrics or () if m in UNIT_COLUMNS]
    if not asked or not a or not b:
        return
    units_a, units_b = _point_units(a[0]), _point_units(b[0])
    for item, unit_a in units_a.items():
        unit_b = units_b.get(item)
        if unit_b is not None and unit_b != unit_a:
            raise _unit_error(item, asked[0], unit_a, unit_b)


def _check_units(label: str, rows: pd.DataFrame, metric: str) -> None:
    """Refuse a metric whose unit column (:data:`UNIT_COLUMNS`) says
    another unit on each side of an item's rows."""
    column = UNIT_COLUMNS.get(metric)
    if column is None or column not in rows.columns:
        return
    units = {side: sorted(set(rows.loc[rows["side"] == side, column].dropna())) for side in ("A", "B")}
    if units["A"] and units["B"] and units["A"] != units["B"]:
        raise _unit_error(label, metric, ", ".join(units["A"]), ", ".join(units["B"]))


# --------------------------------------------------------------------------
# Comparing the runs


def _number(v: Any) -> float | None:
    if v is None or isinstance(v, (str, bool)):
        return None
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) else x


def _key_value(v: Any) -> Any:
    """A key cell, the same on both sides (NaN and None alike; 64.0 as 64)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if hasattr(v, "item"):  # numpy scalars
        return _key_value(v.item())
    return v


def _stats(values: Sequence[float], prefix: str) -> dict[str, Any]:
    if not values:
        return {f"{prefix}_min": math.nan, f"{prefix}_avg": math.nan, f"{prefix}_max": math.nan, f"{prefix}_runs": 0}
    return {
        f"{prefix}_min": min(values),
        f"{prefix}_avg": sum(values) / len(values),
        f"{prefix}_max": max(values),
        f"{prefix}_runs": len(values),
    }


def _delta(a_avg: float, b_avg: float) -> tuple[float, float]:
    """``(B - A, (B - A) / A x 100)``; the % is NaN where A is 0 and B is not."""
    d = b_avg - a_avg
    if math.isnan(d):
        return d, math.nan
    if a_avg == 0:
        return d, 0.0 if d == 0 else math.nan
    return d, 100.0 * d / abs(a_avg)


def _item_metrics(kind: str, rows: pd.DataFrame, metrics: list[str] | None) -> list[str]:
    wanted = list(DEFAULT_METRICS[kind]) if metrics is None else metrics
    return [m for m in wanted if m in rows.columns and m not in KEY_COLUMNS[kind] and rows[m].notna().any()]


def _item_records(label: str, kind: str, name: Any, rows: pd.DataFrame, metrics: list[str] | None) -> list[dict[str, Any]]:
    keys = [c for c in KEY_COLUMNS[kind] if c in rows.columns]
    out = []
    for m in _item_metrics(kind, rows, metrics):
        _check_units(label, rows, m)
        values: dict[tuple[Any, ...], dict[str, list[float]]] = {}
        for rec in rows[["side", *keys, m]].itertuples(index=False, name=None):
            key = tuple(_key_value(v) for v in rec[1:-1])
            x = _number(rec[-1])
            sides = values.setdefault(key, {"A": [], "B": []})
            if x is not None:
                sides[rec[0]].append(x)
        for key, sides in values.items():
            if not sides["A"] and not sides["B"]:
                continue
            r: dict[str, Any] = {"item": label, "kind": kind, "name": name, **dict(zip(keys, key)), "metric": m}
            r |= _stats(sides["A"], "a") | _stats(sides["B"], "b")
            r["delta"], r["pct"] = _delta(r["a_avg"], r["b_avg"])
            out.append(r)
    return out


def _failed_runs(runs: pd.DataFrame, bad: pd.Series) -> list[dict[str, Any]]:
    """One ``{side, seed, item, error}`` per failed run of an item (a failed
    flows run has a row per flow; its run failure is its error)."""
    out: dict[tuple[Any, Any, Any], dict[str, Any]] = {}
    for r in runs[bad].to_dict("records"):
        error = r.get(ITEM_ERROR) if isinstance(r.get(ITEM_ERROR), str) else r.get(ERROR)
        out.setdefault((r["side"], r.get("seed"), r["item"]), {"side": r["side"], "seed": r.get("seed"), "item": r["item"], "error": error})
    return list(out.values())


def _no_value_records(label: str, kind: str, name: Any, metrics: list[str] | None) -> list[dict[str, Any]]:
    """The rows of an item that gave no value on either side (every run of
    both failed): one per asked metric its tool has (one without a metric
    when none was asked), with no figures and 0 runs each."""
    wanted: list[str | None] = [None] if metrics is None else [m for m in metrics if m in _metrics_of(kind)]
    empty = _stats([], "a") | _stats([], "b") | {"delta": math.nan, "pct": math.nan}
    return [{"item": label, "kind": kind, "name": name, "metric": m, **empty} for m in wanted]


def compare_runs(runs: pd.DataFrame, metric: str | Iterable[str] | None = None) -> pd.DataFrame:
    """Compare the rows of :func:`run_sides` (see :func:`compare`)."""
    metrics = _metric_list(metric)
    bad = failed_rows(runs)
    ok = runs[~bad & runs["item"].notna()]
    failed = _failed_runs(runs, bad)
    if "flows" in set(ok["kind"]):
        ok = ok.copy()
        ok["flow"] = ok.groupby(["side", "point", "item"], sort=False).cumcount()
    records: list[dict[str, Any]] = []
    # Every item, in file order: one whose every run failed on both sides
    # is a row too, with no figures.
    for label in dict.fromkeys(runs["item"].dropna()):
        rows = ok[ok["item"] == label]
        if len(rows):
            records += _item_records(str(label), rows["kind"].iloc[0], rows["name"].iloc[0], rows, metrics)
        else:
            first = runs[runs["item"] == label].iloc[0]
            records += _no_value_records(str(label), first["kind"], first["name"], metrics)
    keys = list(dict.fromkeys(c for r in records for c in r if c not in ("item", "kind", "name", "metric", *COMPARE_COLUMNS)))
    df = pd.DataFrame(records, columns=["item", "kind", "name", *keys, "metric", *COMPARE_COLUMNS])
    for c in ("a_runs", "b_runs"):
        df[c] = df[c].astype("int64")
    df.attrs.update({k: runs.attrs[k] for k in ("a", "b", "set", "seeds") if k in runs.attrs})
    df.attrs["failed"] = failed
    return df


def compare(
    a: str | os.PathLike[str],
    b: str | os.PathLike[str] | None = None,
    set: Mapping[str, Any] | None = None,  # noqa: A002 - the name of --set
    *,
    repeat: int = 5,
    metric: str | Iterable[str] | None = None,
    client: Any = None,
    workers: int | None = None,
    progress: ProgressArg = False,
) -> pd.DataFrame:
    """Compare two configurations, each run ``repeat`` times (seeds 1 to
    ``repeat``).

    Side A is scenario file ``a``; side B is file ``b`` (whose items must
    be those of ``a``: the same kinds, number and names) or, without it,
    ``a`` itself; ``set`` (``{"fabric.cc.algorithm": "none"}``, one value
    per path; the paths of :func:`fabriclab.sweep`, ``seed`` excepted)
    applies to side B. ``metric`` (a column name, a comma-separated text
    or a list) replaces :data:`DEFAULT_METRICS` in every item whose rows
    have it. ``client`` / ``workers`` / ``progress`` are :func:`sweep`'s:
    by default a LocalCluster of one worker process per CPU runs both
    sides' 2 x ``repeat`` runs.

    Returns one row per item, key (:data:`KEY_COLUMNS`) and metric, in file
    order: ``item``, ``kind``, ``name``, the key columns of the items' tools
    (empty where an item's tool has no such column), ``metric``,
    ``a_min``, ``a_avg``, ``a_max``, ``b_min``, ``b_avg``, ``b_max``,
    ``delta`` (B avg - A avg), ``pct`` (delta / A avg x 100; NaN where A's
    average is 0 and B's is not), ``a_runs`` and ``b_runs`` (how many runs
    gave the row a value; an item whose every run failed on both sides is
    one row, ``metric`` None unless ``metric`` was given, with no figures
    and 0 runs). ``df.attrs``: ``a``, ``b`` (the files),
    ``set``, ``seeds`` and ``failed`` (a list of ``{side, seed, item,
    error}`` of runs whose item failed). Raises
    :class:`~fabriclab.errors.InvalidArgumentError` or
    :class:`~fabriclab.errors.ParseError` on bad input before anything runs,
    among it a metric whose unit differs between the sides (perftest's
    ``bw_avg`` and ``bw_peak``, in Gb/s with ``report_gbits`` and MiB/s
    without: :data:`UNIT_COLUMNS`).

    Stopped by Ctrl-C, it raises ``KeyboardInterrupt`` with ``result``: the
    comparison (this DataFrame) of the seeds that both sides finished,
    ``attrs["seeds"]`` listing them, or None if no seed finished on both
    sides (nothing comparable was kept).
    """
    try:
        runs = run_sides(
            a, b, set, repeat=repeat, metric=metric, client=client, workers=workers, progress=progress
        )
    except KeyboardInterrupt as e:
        part = getattr(e, "result", None)
        e.result = compare_runs(part, metric) if isinstance(part, pd.DataFrame) else None  # type: ignore[attr-defined]
        raise
    return compare_runs(runs, metric)


def row_label(row: Any) -> str:
    """A compared row's key in a few words: ``Alltoall 65536 B``,
    ``flow 0 h0->h2``, ``N=8192 NB=192 2x4 WR00L2L2``."""

    def get(k: str) -> Any:
        v = row.get(k) if hasattr(row, "get") else getattr(row, k, None)
        return None if v is None or (isinstance(v, float) and math.isnan(v)) else v

    kind = get("kind")
    if not any(get(k) is not None for k in KEY_COLUMNS.get(str(kind), ())):
        return "-"  # an item with no value on either side
    size = f"{int(get('bytes'))} B" if get("bytes") is not None else ""
    if kind == "imb":
        np_ = f" np {int(get('np'))}" if get("np") is not None else ""
        return " ".join(x for x in (str(get("bench") or ""), size) if x) + np_
    if kind == "flows":
        return f"flow {int(get('flow'))} {get('src')}->{get('dst')}"
    if kind == "cbench":
        return f"rotation {int(get('rotation'))} rank {int(get('rank'))}"
    if kind == "fio":
        return str(get("host"))
    if kind == "hpl":
        return f"N={int(get('n'))} NB={int(get('nb'))} {int(get('p'))}x{int(get('q'))} {get('variant')}"
    return size


def sides_text(df: pd.DataFrame) -> str:
    """What A and B of a comparison are, and how many runs each (three lines)."""
    seeds = list(df.attrs.get("seeds", []))
    overrides = ", ".join(f"{k} = {toml_value(v)}" for k, v in df.attrs.get("set", {}).items())
    b = df.attrs.get("b", "")
    listed = f"1..{len(seeds)}" if seeds == list(range(1, len(seeds) + 1)) else ", ".join(map(str, seeds))
    return (
        f"A: {df.attrs.get('a', '')}\nB: {f'{b} with {overrides}' if overrides else b}\n"
        f"{len(seeds)} run(s) each, seeds {listed}\n"
    )


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def value_text(v: Any) -> str:
    """A figure to 4-5 significant digits, ``-`` if there is none."""
    return "-" if _missing(v) else fmt(v)


def delta_text(v: Any) -> str:
    """``+1.25``, ``-0.5``, ``0``; ``-`` if there is none."""
    return "-" if _missing(v) else ("+" if v > 0 else "") + fmt(v)


def pct_text(v: Any) -> str:
    """``+12.3 %``; ``-`` if there is none."""
    return "-" if _missing(v) else f"{v:+.1f} %"
