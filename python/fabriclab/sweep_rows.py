"""The rows of a sweep: running one point's items (in a worker process)
into plain records, and the order of the result's columns.

:func:`run_point` is the task each point becomes: load the point's
scenario text, run its items one after another, return one record per
result row (an item that fails gives one record with its ``error``; the
others still run). :func:`columns` orders a result's columns;
:func:`point_records` adds a point's index and swept values to its rows.
Left out: where points run (:mod:`fabriclab.sweep_dask`) and files
(:mod:`fabriclab.sweep_writer`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import pandas as pd

from ._tables import records
from .kinds import FIGURES, KINDS, Result, figures
from .results import run_failed
from .scenario import run_item
from .sweep_grid import SweepPoint
from .sweep_scenario import scenario_from_text

__all__ = [
    "ERROR", "ITEM_ERROR", "SCENARIO_SHA", "LEADING_COLUMNS", "ITEM_COLUMNS", "audit_env", "run_point", "error_text",
    "param_columns", "columns", "cell", "point_records", "rows_frame", "run_failure", "row_failed", "failed_rows",
]

#: The columns every sweep result starts with, the swept paths going
#: between ``point`` and ``item``.
LEADING_COLUMNS = ("point", "item", "kind", "name")
#: Per-item figures that follow an item's own columns (where the item has them).
ITEM_COLUMNS = FIGURES
#: The last column: None, or the error of an item or a point (and a
#: flow's own error, on the row of a flow whose QP ran out of retries).
ERROR = "error"
#: The column before it, where a result carries its run's failure instead
#: of raising it (flows: a PFC deadlock, a stall, a QP out of retries):
#: that failure on each of the item's rows, whose own columns (a flow's
#: ``error``) it leaves as they are. Only in results that have one.
ITEM_ERROR = "item_error"
#: The column before it: :meth:`SweepPoint.digest` of the point's scenario.
SCENARIO_SHA = "scenario_sha"


def error_text(e: BaseException) -> str:
    """``InvalidArgumentError: ...``."""
    return f"{type(e).__name__}: {e}"


def run_failure(res: Result) -> str | None:
    """The run failure a result carries instead of raising it (flows
    reports what ran before a PFC deadlock, a stall or a QP's transport
    retry error: :func:`fabriclab.results.run_failed`), as
    :func:`error_text` words it; None if the run did not fail."""
    failure = run_failed(res)
    return None if failure is None else error_text(failure)


def row_failed(row: Mapping[str, Any]) -> bool:
    """Whether a sweep row is an error's (its item's, its point's, or the
    run failure its item carries) rather than a result."""
    return any(isinstance(row.get(c), str) and bool(row.get(c)) for c in (ERROR, ITEM_ERROR))


def failed_rows(df: pd.DataFrame) -> pd.Series:
    """:func:`row_failed` of each row of a sweep's table."""
    failed = df[ERROR].notna() if ERROR in df else pd.Series(False, index=df.index)
    return failed | df[ITEM_ERROR].notna() if ITEM_ERROR in df else failed


def _result_rows(label: str, kind: str, name: str | None, res: Result) -> list[dict[str, Any]]:
    """One record per row of an item's result, with the item's figures,
    perftest's ``bw_unit`` (the unit of its ``bw_peak`` and ``bw_avg``) and
    its run failure, if it carries one (in :data:`ITEM_ERROR`: its rows are
    then not a result; a flow's own ``error`` stays on its row)."""
    head = {"item": label, "kind": kind, "name": name}
    unit = {"bw_unit": res.df.attrs["bw_unit"]} if res.df.attrs.get("bw_unit") else {}
    extra = figures(res)
    failure = run_failure(res)
    item_error = {ITEM_ERROR: failure} if failure else {}
    recs = records(res.df) or [{}]
    # The leading columns win any clash; the result's own error column, if
    # it has one, is kept.
    return [{ERROR: None, **rec, **unit, **extra, **item_error, **head} for rec in recs]


@contextlib.contextmanager
def audit_env(value: str | None) -> Iterator[None]:
    """On a worker: ``FABRICLAB_AUDIT`` set to the client's ``value`` (or
    unset) while a task runs, then restored. A LocalCluster's workers
    inherit the client's environment, a running cluster's do not; the core
    reads the variable when it builds a network."""
    old = os.environ.get("FABRICLAB_AUDIT")
    if value is None:
        os.environ.pop("FABRICLAB_AUDIT", None)
    else:
        os.environ["FABRICLAB_AUDIT"] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("FABRICLAB_AUDIT", None)
        else:
            os.environ["FABRICLAB_AUDIT"] = old


def run_point(text: str, origin: str, audit: str | None = None) -> list[dict[str, Any]]:
    """Run every item of one point's scenario text, under the client's
    ``FABRICLAB_AUDIT`` setting (``audit``); one record per result row. An
    item that fails gives one record with its error; the others run."""
    try:
        sc = scenario_from_text(text, origin)
    except Exception as e:  # checked before the sweep started: should not happen
        return [{"item": None, "kind": None, "name": None, ERROR: error_text(e)}]
    with audit_env(audit):
        return _run_items(sc)


def _run_items(sc: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    counters = {k: 0 for k in KINDS}
    for item in sc.items:
        label = f"{item.kind}[{counters[item.kind]}]"
        counters[item.kind] += 1
        try:
            res = run_item(sc, item)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # a Rust panic arrives as pyo3's PanicException, a BaseException
            rows.append({"item": label, "kind": item.kind, "name": item.name, ERROR: error_text(e)})
            continue
        rows.extend(_result_rows(label, item.kind, item.name, res))
    return rows


def param_columns(points: Sequence[SweepPoint]) -> list[str]:
    """The swept paths, in the order the points first give them."""
    return list(dict.fromkeys(p for pt in points for p in pt.params))


def columns(params: Sequence[str], seen: Iterable[str]) -> list[str]:
    """Leading columns, the swept paths, the items' own columns in the order
    first seen, the per-item figures, the scenario's digest (where the rows
    have it), :data:`ITEM_ERROR` (where the rows have it), then ``error``."""
    seen = list(seen)
    fixed = set(LEADING_COLUMNS) | set(params) | set(ITEM_COLUMNS) | {ERROR, ITEM_ERROR, SCENARIO_SHA}
    own = [c for c in seen if c not in fixed]
    extra = [c for c in ITEM_COLUMNS if c in seen]
    sha = [SCENARIO_SHA] if SCENARIO_SHA in seen else []
    item_error = [ITEM_ERROR] if ITEM_ERROR in seen else []
    return ["point", *params, "item", "kind", "name", *own, *extra, *sha, *item_error, ERROR]


def cell(v: Any) -> Any:
    """A parameter as a DataFrame cell (lists as tuples, so they group)."""
    return tuple(cell(x) for x in v) if isinstance(v, list) else v


def point_records(point: SweepPoint, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A point's rows with its index, swept values and scenario digest."""
    params = {k: cell(v) for k, v in point.params.items()}
    sha = point.digest()
    return [{**r, "point": point.index, **params, SCENARIO_SHA: sha} for r in rows]


def rows_frame(rows: Sequence[Mapping[str, Any]], cols: Sequence[str]) -> pd.DataFrame:
    """Records as a DataFrame of columns ``cols``."""
    return pd.DataFrame(list(rows), columns=list(cols))
