"""Running a lab: its runs through the scenario machinery, then the verdicts.

:func:`lab_run` (``fabriclab lab run NAME``) runs every run of a lab
(:mod:`fabriclab.lab`) item by item, as ``fabriclab run`` runs a scenario
file, measures each metric (:mod:`fabriclab.lab_measure`) and returns one
row per metric: ``metric | published | fabriclab | delta | verdict``.
:func:`lab_list` lists the labs. ::

    >>> import fabriclab
    >>> df = fabriclab.lab_run("heps", quick=True)          # doctest: +SKIP
    >>> df[["metric", "published", "fabriclab", "verdict"]]  # doctest: +SKIP

A run's overrides (``[run.set]``, and ``[run.quick]`` with ``quick=True``)
are applied as ``fabriclab sweep`` applies its paths (:mod:`fabriclab.sweeps`).

A lab with ``repetitions = K`` runs every item K times, with its seed, its
seed + 1, ... (seeds change ECMP hashing and every random draw); each
figure is the mean of its K values (a figure combining two measurements,
such as a reduction, is computed from their means, as a report does),
with the least and greatest single-repetition figure in
``fabriclab_min`` and ``fabriclab_max``; the verdict is the mean's.
``--quick`` runs one repetition.

Parallel runs (Dask, ``fabriclab lab run --workers N``) are in
:mod:`fabriclab.lab_dask`. Left out: caching results between labs, and
any verdict not computed from the numbers.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Callable, NoReturn

import pandas as pd

from ._checks import as_bool
from ._tables import tuples
from .errors import FabriclabError, InvalidArgumentError
from .lab import Lab, LabLike, LabRun, load_lab, load_labs
from .lab_measure import measure_reps, verdict
from .results import run_failed
from .scenario import Scenario, ScenarioItem, run_item
from .sweep_scenario import SweptFile, load_point, parse_paths, point_doc

__all__ = ["LAB_COLUMNS", "LIST_COLUMNS", "LabResult", "dumps", "lab_list", "lab_run", "run_lab", "scenario_of", "table_text", "to_json"]

#: Columns of :func:`lab_run`'s DataFrame.
LAB_COLUMNS = (
    "metric", "unit", "published", "fabriclab", "delta", "verdict",
    "kind", "tolerance", "place", "published_low", "published_high",
    "fabriclab_min", "fabriclab_max",
)
#: Columns of :func:`lab_list`'s DataFrame.
LIST_COLUMNS = ("name", "seed", "title", "reproduces", "runtime_s", "quick_runtime_s", "repetitions", "metrics", "path")

#: Called before each item runs: (lab, run, item index from 0, the item).
OnItem = Callable[[Lab, LabRun, int, ScenarioItem], None]
#: Called after each item ran: (lab, run, the item, its result).
OnResult = Callable[[Lab, LabRun, ScenarioItem, Any], None]


@dataclass
class LabResult:
    """A lab's run: its metrics' rows and the tools' results."""

    lab: Lab
    quick: bool
    wall_s: float
    rows: pd.DataFrame
    #: The first repetition's results (the plots draw them).
    results: dict[str, list[tuple[Any, Any]]] = field(default_factory=dict)
    #: Repetitions run (1 with --quick).
    repetitions: int = 1


def scenario_of(lab: Lab, run: LabRun, quick: bool) -> Scenario:
    """``run`` as a loaded scenario, its overrides applied (``[run.set]``,
    then ``[run.quick]`` if ``quick``); errors name the lab file and run."""
    params = {**run.set, **(run.quick if quick else {})}
    prefix = f"run {run.name!r}" + (" (--quick)" if quick and run.quick else "")
    base = SweptFile(lab.path, _lab_dir(lab), dict(run.doc), list(run.order))
    try:
        doc = point_doc(base, params, parse_paths(params, base.doc))
    except FabriclabError as e:
        raise type(e)(f"lab {lab.path}: {prefix}: {e}") from None
    return load_point(base, doc, f"lab {lab.path}: {prefix}")


def _lab_dir(lab: Lab) -> str:
    return os.path.dirname(os.path.abspath(lab.path))


def run_lab(
    lab: LabLike,
    quick: bool = False,
    *,
    progress: bool = False,
    on_item: OnItem | None = None,
    on_result: OnResult | None = None,
) -> LabResult:
    """Run ``lab`` (a name, a lab file's path or a :class:`~fabriclab.lab.Lab`)
    and compute its metrics. Every run's scenario is built and checked
    before the first item runs. An item whose run fails stops the lab with
    the error (a :class:`~fabriclab.errors.RunFailedError` naming the lab,
    the run and the item), after ``on_result`` has seen what it returned,
    if anything: a failed run gives no figures."""
    lab = lab if isinstance(lab, Lab) else load_lab(lab)
    scenarios = [(run, scenario_of(lab, run, quick)) for run in lab.runs]
    repetitions = 1 if quick else lab.repetitions
    start = time.perf_counter()
    reps: list[dict[str, list[tuple[Any, Any]]]] = []
    for rep in range(repetitions):
        results: dict[str, list[tuple[Any, Any]]] = {}
        for run, sc in scenarios:
            results[run.name] = []
            for i, item in enumerate(sc.items):
                item = item_in_rep(item, rep)
                if on_item:
                    on_item(lab, run, i, item)
                try:
                    res = run_item(sc, item, progress=progress)
                except FabriclabError as e:
                    raise_in_lab(lab, run, i, e)
                results[run.name].append((item.name, res))
                if on_result:
                    on_result(lab, run, item, res)
                raise_if_failed(lab, run, i, res)
        reps.append(results)
    wall_s = time.perf_counter() - start
    return LabResult(lab, quick, wall_s, lab_rows(lab, reps, quick), reps[0], repetitions)


def item_in_rep(item: ScenarioItem, rep: int) -> ScenarioItem:
    """``item`` as repetition ``rep`` (from 0) runs it: its seed plus ``rep``."""
    return replace(item, seed=item.seed + rep)


def raise_if_failed(lab: Lab, run: LabRun, index: int, res: Any) -> None:
    """Stop the lab, as an item that raised stops it, if the item's run
    failed although it returned what ran (flows: a PFC deadlock, a stall,
    a QP out of retries; :func:`fabriclab.results.run_failed`): no figure
    of a lab is computed from a failed run, so none can read
    ``reproduced``. The error names the lab, the run and the item."""
    failure = run_failed(res)
    if failure is not None:
        raise_in_lab(lab, run, index, failure)


def raise_in_lab(lab: Lab, run: LabRun, index: int, error: BaseException) -> NoReturn:
    """Raise ``error``, an item's, naming the lab, the run and the item
    (from 1) when it is fabriclab's own (its type and attributes kept)."""
    if isinstance(error, FabriclabError):
        named = type(error)(f"lab {lab.name}: run {run.name!r} [{index + 1}]: {error}")
        named.__dict__.update(error.__dict__)
        raise named from None
    raise error


def _measured(m: Any, reps: Sequence[dict[str, list[tuple[Any, Any]]]], quick: bool) -> tuple[float, float, float]:
    """(figure over the repetitions, its least and greatest value in one
    repetition); NaN when the quick variant does not run what it needs."""
    try:
        value, per_rep = measure_reps(m, reps)
    except InvalidArgumentError:
        if not quick or m.quick:
            raise
        return math.nan, math.nan, math.nan
    finite = [x for x in per_rep if not math.isnan(x)]
    if not finite:
        return value, math.nan, math.nan
    return value, min(finite), max(finite)


def lab_rows(lab: Lab, reps: Sequence[dict[str, list[tuple[Any, Any]]]], quick: bool) -> pd.DataFrame:
    """The metrics' rows (:data:`LAB_COLUMNS`) from the results of each
    repetition (run name -> [(item name, result)])."""
    rows = []
    for m in lab.metrics:
        value, lo_rep, hi_rep = _measured(m, reps, quick)
        delta, v = verdict(m, value, quick)
        lo, hi = m.published if m.published is not None else (math.nan, math.nan)
        rows.append(
            {
                "metric": m.label,
                "unit": m.unit,
                "published": m.printed,
                "fabriclab": value,
                "delta": math.nan if delta is None else delta,
                "verdict": v,
                "kind": m.kind,
                "tolerance": m.tolerance_text(),
                "place": m.place,
                "published_low": lo,
                "published_high": hi,
                "fabriclab_min": lo_rep,
                "fabriclab_max": hi_rep,
            }
        )
    return pd.DataFrame(rows, columns=list(LAB_COLUMNS))


def lab_run(name: LabLike, quick: bool = False, progress: bool = False, *, workers: int | None = None, client: Any = None) -> pd.DataFrame:
    """Run lab ``name`` (see ``fabriclab lab list``, or the path of a lab
    file) and return one row per metric (:data:`LAB_COLUMNS`): the
    published figure as the seed prints it (``published``; its value or
    range in ``published_low`` / ``published_high``), fabriclab's value,
    ``delta`` = fabriclab - published (to the nearer end of a range, 0
    inside it) and the computed ``verdict``. ``quick`` runs the lab's
    quick variant. Over a lab's ``repetitions``, ``fabriclab`` is the mean
    and ``fabriclab_min`` / ``fabriclab_max`` the extremes (all three equal
    with one). ``df.attrs``: ``lab`` (name, seed, title, reproduces),
    ``quick``, ``repetitions``, ``wall_s`` and ``text`` (the table as the CLI prints it).
    The tools' own results are on :func:`run_lab`'s :class:`LabResult`
    (``.results``: run -> [(item name, :class:`fabriclab.Result`)]), not
    in ``attrs``, which pandas copies with every operation. ``workers``
    (a local Dask cluster of that many processes) or ``client`` (a Dask
    scheduler's address or client) runs the items in parallel, with the
    same figures (:mod:`fabriclab.lab_dask`). An item whose run failed
    (a PFC deadlock, a transport retry error, flows that can never finish,
    whether the tool raised it or a flows item returned it) raises its
    :class:`~fabriclab.errors.RunFailedError`, naming the lab, the run and
    the item: no verdict is computed from a failed run."""
    quick, progress = as_bool("quick", quick), as_bool("progress", progress)
    if workers is None and client is None:
        r = run_lab(name, quick, progress=progress)
    else:
        from .lab_dask import run_labs

        r = run_labs([name], quick, workers=workers, client=client, progress=progress)[0]
    df = r.rows
    df.attrs.update(
        lab={"name": r.lab.name, "seed": r.lab.seed, "title": r.lab.title, "reproduces": r.lab.reproduces, "path": r.lab.path},
        quick=r.quick,
        repetitions=r.repetitions,
        wall_s=r.wall_s,
        text=table_text(r),
    )
    return df


def lab_list() -> pd.DataFrame:
    """One row per lab shipped with the package (:data:`LIST_COLUMNS`):
    its seed, what it reproduces, its measured run time (full and
    ``--quick``, seconds), its repetitions and how many metrics it has."""
    rows = [
        {
            "name": lab.name,
            "seed": lab.seed,
            "title": lab.title,
            "reproduces": lab.reproduces,
            "runtime_s": lab.runtime_s,
            "quick_runtime_s": lab.quick_runtime_s,
            "repetitions": lab.repetitions,
            "metrics": len(lab.metrics),
            "path": lab.path,
        }
        for lab in load_labs()
    ]
    return pd.DataFrame(rows, columns=list(LIST_COLUMNS))


# --------------------------------------------------------------------------
# Text and JSON


def fmt(v: Any) -> str:
    """A measured value or delta, to about 4-5 significant digits."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    v = float(v)
    a = abs(v)
    if a == 0:
        return "0"
    if a < 1e-3:
        return f"{v:.2g}"
    if a >= 1e6:
        return f"{v:.4e}"
    if a >= 100:
        return f"{v:.1f}"
    if a >= 10:
        return f"{v:.2f}"
    return f"{v:.3f}"


def delta_text(row: Any) -> str:
    """``+0.54 (+0.6 %)`` (no relative part for figures in %); ``0
    (inside)`` for a value inside a range."""
    if isinstance(row.delta, float) and math.isnan(row.delta):
        return ""
    d = float(row.delta)
    if row.published_low != row.published_high:
        return "0 (inside)" if d == 0 else f"{'+' if d > 0 else ''}{fmt(d)}"
    text = f"{'+' if d > 0 else ''}{fmt(d)}"
    if row.published_low and row.unit != "%":
        text += f" ({100 * d / abs(row.published_low):+.1f} %)"
    return text


def repetitions_text(r: LabResult) -> str:
    """``, mean of K repetitions (min to max)`` for a repeated lab, else ``""``."""
    return f", mean of {r.repetitions} repetitions (min to max)" if r.repetitions > 1 else ""


def value_text(r: LabResult, row: Any) -> str:
    """fabriclab's figure; over repetitions the mean, then ``(min to max)``."""
    value = fmt(row.fabriclab)
    if r.repetitions > 1 and value:
        value += f" ({fmt(row.fabriclab_min)} to {fmt(row.fabriclab_max)})"
    return value


def _cells(r: LabResult) -> list[list[str]]:
    out = []
    for row in tuples(r.rows, index=False):
        unit = f" [{row.unit}]" if row.unit else ""
        out.append([f"{row.metric}{unit}", row.published, value_text(r, row), delta_text(row), row.verdict])
    return out


def table_text(r: LabResult) -> str:
    """The verdict table: ``metric | published | fabriclab | delta |
    verdict``, then each figure's place in the seed and tolerance."""
    lab = r.lab
    head = ["metric", "published", "fabriclab", "delta", "verdict"]
    cells = _cells(r)
    for i, c in enumerate(cells, 1):
        c[0] = f"[{i}] {c[0]}"
    widths = [max(len(x) for x in col) for col in zip(head, *cells)]

    def line(cs: Sequence[str]) -> str:
        return " | ".join(c.ljust(w) for c, w in zip(cs, widths)).rstrip()

    mode = ("quick" if r.quick else "full") + repetitions_text(r)
    lines = [
        f"lab {lab.name} (seed {lab.seed}, {mode}, {r.wall_s:.1f} s): {lab.title}",
        line(head),
        "-+-".join("-" * w for w in widths),
        *(line(c) for c in cells),
        "",
    ]
    for i, (m, row) in enumerate(zip(lab.metrics, tuples(r.rows, index=False)), 1):
        tol = f"; tolerance {row.tolerance}" if row.tolerance and m.kind == "compare" else ""
        lines.append(f"[{i}] {m.place}{tol}{f'. {m.note}' if m.note else ''}")
    counts = r.rows.verdict.value_counts()
    lines.append("verdicts: " + ", ".join(f"{n} {v}" for v, n in counts.items()))
    return "\n".join(lines) + "\n"


def _json_value(v: Any) -> Any:
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def to_json(r: LabResult) -> dict[str, Any]:
    """A lab's result as a JSON-ready dict."""
    lab = r.lab
    return {
        "lab": lab.name,
        "seed": lab.seed,
        "title": lab.title,
        "reproduces": lab.reproduces,
        "quick": r.quick,
        "repetitions": r.repetitions,
        "wall_s": round(r.wall_s, 3),
        "metrics": [{k: _json_value(v) for k, v in row.items()} for row in r.rows.to_dict(orient="records")],
    }


def dumps(results: Sequence[LabResult], one: bool) -> str:
    """JSON text: one lab's object, or ``{"labs": [...]}``."""
    docs = [to_json(r) for r in results]
    return json.dumps(docs[0] if one else {"labs": docs}, indent=2)
