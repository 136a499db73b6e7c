"""A lab's measured values and verdicts, from its runs' result tables.

:func:`measure` applies a metric's selectors (:class:`fabriclab.lab.Selector`)
to the results of a lab's runs; :func:`verdict` compares the value with the
published figure. Both are pure: no simulation runs here, so a test can
feed them any tables. A verdict is one of :data:`VERDICTS`:

- ``reproduced``: within the metric's stated tolerance of the published
  figure (of the nearer end of a published range, or inside it);
- ``not reproduced``: outside it;
- ``calibrated``: the figure set a model parameter, so matching it proves
  nothing; whatever the numbers, this is the verdict;
- ``chart only``: the seed shows the figure as a chart with no number.

Over repeated runs (a lab's ``repetitions``), :func:`measure_mean`
averages each side of a figure over the runs before combining them.

Left out: tolerances other than relative (% of the published figure) or
absolute, and statistics over runs beyond mean, minimum and maximum.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from .errors import InvalidArgumentError
from .lab import Metric, Selector

__all__ = ["QUICK_SKIPPED", "VERDICTS", "Results", "measure", "measure_mean", "measure_reps", "verdict", "select_rows"]

VERDICTS = ("reproduced", "not reproduced", "calibrated", "chart only")
#: The verdict of a figure that a lab's --quick variant does not measure
#: (``quick = false``: a smaller problem than the seed's).
QUICK_SKIPPED = "not compared (quick)"

#: A lab's results: run name -> [(item name, the tool's result), ...].
Results = Mapping[str, Sequence[tuple[Any, Any]]]


def _table(results: Results, run: str, item: Any, table: str, where: str) -> Any:
    found = [res for name, res in results.get(run, []) if name == item]
    if not found:
        raise InvalidArgumentError(f"{where}: run {run!r} has no result for item {item!r}")
    res = found[0]
    if isinstance(res, pd.DataFrame):  # a bare table (tests feed them)
        if table == "result":
            return res
        if table == "attrs":
            return res.attrs
        raise InvalidArgumentError(f"{where}: item {item!r} of run {run!r} has no table {table!r}")
    if table == "attrs":
        return res.figures()
    t = res.tables().get(table)
    if t is None:
        raise InvalidArgumentError(f"{where}: item {item!r} of run {run!r} has no table {table!r}")
    return t


def select_rows(results: Results, run: str, item: Any, table: str, where: Mapping[str, Any], what: str) -> pd.DataFrame:
    """The rows of a run's item's table that match ``where``."""
    df = _table(results, run, item, table, what)
    mask = pd.Series(True, index=df.index)
    for col, want in where.items():
        if col not in df.columns:
            raise InvalidArgumentError(f"{what}: where: no column {col!r}; the columns are {', '.join(map(str, df.columns))}")
        values = want if isinstance(want, list) else [want]
        mask &= df[col].isin(values)
    selected: pd.DataFrame = df[mask]
    return selected


def _values(results: Results, s: Selector, what: str) -> pd.Series:
    if s.table == "attrs":
        attrs = _table(results, s.run, s.item, "attrs", what)
        if s.column not in attrs:
            raise InvalidArgumentError(f"{what}: the result of item {s.item!r} has no attribute {s.column!r}")
        return pd.Series([float(attrs[s.column])])
    rows = select_rows(results, s.run, s.item, s.table, s.where, what)
    if s.column not in rows.columns:
        raise InvalidArgumentError(f"{what}: no column {s.column!r}; the columns are {', '.join(map(str, rows.columns))}")
    return pd.to_numeric(rows[s.column], errors="coerce").astype(float)


def _reduce(values: pd.Series, agg: str, what: str) -> float:
    values = values.dropna()
    if agg == "only":
        if len(values) != 1:
            raise InvalidArgumentError(f"{what}: the selector matches {len(values)} rows with a value, not 1 (narrow `where` or set agg)")
        return float(values.iloc[0])
    if values.empty:
        raise InvalidArgumentError(f"{what}: the selector matches no rows with a value")
    return float(getattr(values, agg)())


def _combine(op: str, a: Any, b: Any, what: str) -> Any:
    if op == "difference":
        return a - b
    if bool((pd.Series(b, dtype=float) == 0).any()):
        raise InvalidArgumentError(f"{what}: its base is 0 in this run, so the {op} is undefined (pick another base column)")
    if op == "ratio":
        return a / b
    return 100.0 * (b - a) / b  # reduction_pct


def _sides(metric: Metric, results: Results) -> Any:
    """What a metric is computed from in one run's results: its value (one
    selector), the two reduced values (select, base), or the two series
    paired on ``by``."""
    what = f"metric {metric.label!r}"
    if metric.base is None:
        return _reduce(_values(results, metric.select, what), metric.select.agg, what)
    if metric.by is None:
        a = _reduce(_values(results, metric.select, what), metric.select.agg, f"{what} select")
        b = _reduce(_values(results, metric.base, what), metric.base.agg, f"{what} base")
        return a, b
    pairs = []
    for s, name in ((metric.select, "select"), (metric.base, "base")):
        rows = select_rows(results, s.run, s.item, s.table, s.where, f"{what} {name}")
        for col in (metric.by, s.column):
            if col not in rows.columns:
                raise InvalidArgumentError(f"{what} {name}: no column {col!r}")
        pairs.append(pd.Series(pd.to_numeric(rows[s.column], errors="coerce").astype(float).to_numpy(), index=rows[metric.by].to_numpy()))
    return tuple(pairs)


def _finish(metric: Metric, sides: Any) -> float:
    what = f"metric {metric.label!r}"
    if metric.base is None:
        value = sides
    elif metric.by is None:
        a, b = sides
        value = _combine(metric.op, a, b, what)
    else:
        sel, base = sides
        common = sel.index.intersection(base.index)
        if common.empty:
            raise InvalidArgumentError(f"{what}: select and base share no {metric.by} value")
        value = _reduce(_combine(metric.op, sel[common], base[common], what), metric.agg, what)
    return float(value) * metric.scale / metric.divide_by


def measure(metric: Metric, results: Results) -> float:
    """fabriclab's value of ``metric`` from ``results``;
    :class:`InvalidArgumentError` naming the metric when a selector matches
    nothing (or more than one row where one is meant)."""
    return _finish(metric, _sides(metric, results))


def measure_reps(metric: Metric, reps: Sequence[Results]) -> tuple[float, list[float]]:
    """``metric`` over repeated runs, as a report computes it, and its value
    in each run. Over the runs each side's value is averaged first (a
    reduction or ratio of the mean latencies, not the mean of per-run
    reductions; series paired on ``by`` averaged point by point); with one
    run, :func:`measure`."""
    sides = [_sides(metric, r) for r in reps]
    per_run = [_finish(metric, s) for s in sides]
    if len(sides) == 1:
        return per_run[0], per_run
    if metric.base is None:
        mean = statistics.mean(sides)
    elif metric.by is None:
        mean = tuple(statistics.mean(side[i] for side in sides) for i in (0, 1))
    else:
        mean = tuple(pd.concat([side[i] for side in sides]).groupby(level=0).mean() for i in (0, 1))
    return _finish(metric, mean), per_run


def measure_mean(metric: Metric, reps: Sequence[Results]) -> float:
    """``metric`` over repeated runs (:func:`measure_reps`' first value)."""
    return measure_reps(metric, reps)[0]


def verdict(metric: Metric, measured: float, quick: bool = False) -> tuple[float | None, str]:
    """(delta, verdict): measured minus the published figure (minus the
    nearer end of a range, 0 inside it; None for chart only), and the
    verdict computed from them and the metric's tolerance. With ``quick``,
    a metric marked ``quick = false`` is not compared (delta None)."""
    if quick and not metric.quick:
        return None, QUICK_SKIPPED
    if metric.published is None:
        return None, "chart only"
    lo, hi = metric.published
    delta = 0.0 if lo <= measured <= hi else (measured - hi if measured > hi else measured - lo)
    if metric.kind == "calibrated":
        return delta, "calibrated"
    if math.isnan(measured):
        return delta, "not reproduced"
    if metric.tolerance_pct is not None:
        nearer = hi if measured > hi else lo
        ok = abs(delta) <= metric.tolerance_pct / 100.0 * abs(nearer) * (1 + 1e-12)
    else:
        ok = abs(delta) <= float(metric.tolerance or 0.0) * (1 + 1e-12) + 1e-15
    return delta, "reproduced" if ok else "not reproduced"
