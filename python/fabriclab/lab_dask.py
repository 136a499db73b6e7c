"""Running labs on Dask workers: every item of every repetition of every
lab is one task, so that ``fabriclab lab run --all --workers 2`` keeps both
cores busy and ``--scheduler tcp://HOST:PORT`` runs the labs on a cluster
(dask-jobqueue on Slurm), as sweeps do (:mod:`fabriclab.sweep_dask`).

:func:`run_labs` runs a list of labs, serially (no ``workers`` and no
``client``: :func:`fabriclab.lab_runs.run_lab`, lab after lab) or on Dask.
Either way the callbacks see the labs, items and results in the serial
order: a result that finishes early waits for those before it, so the
tools' outputs print as a serial run prints them. A task ships the
:class:`~fabriclab.lab.Lab` (its parsed file) and indices; the worker
builds the run's scenario again from it (the same overrides), so fabric
files named by a lab must be readable at the same path on the workers (a
shared file system, as on Slurm clusters). Each item's figures are those
of the serial run: same scenario, same seed.

Left out: retrying a failed item (the first error stops the labs, as in a
serial run; Dask re-runs an item whose worker died), and progress bars of
single items on workers (progress lines count items instead).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Callable

from .lab import Lab, LabLike, load_lab
from .lab_runs import LabResult, OnItem, OnResult, lab_rows, run_lab, scenario_of
from .scenario import ScenarioItem, run_item
from .sweep_dask import SweepProgress, dask_client, distributed, worker_count

__all__ = ["OnDone", "OnLab", "run_labs"]

#: Called before a lab's first item (in the serial order).
OnLab = Callable[[Lab], None]
#: Called once a lab's figures are computed.
OnDone = Callable[[LabResult], None]


@dataclass(frozen=True)
class _Task:
    """One item of one repetition of one lab, in the serial order."""

    lab: int
    rep: int
    run: int
    item: int


def run_lab_item(lab: Lab, run_index: int, quick: bool, item_index: int, rep: int) -> Any:
    """On a worker: item ``item_index`` of run ``run_index`` of ``lab``, in
    repetition ``rep`` (its seed plus ``rep``), as the serial run runs it."""
    sc = scenario_of(lab, lab.runs[run_index], quick)
    item = sc.items[item_index]
    return run_item(sc, replace(item, seed=item.seed + rep))


def run_labs(
    labs: Sequence[LabLike],
    quick: bool = False,
    *,
    workers: int | None = None,
    client: Any = None,
    progress: bool = False,
    on_lab: OnLab | None = None,
    on_item: OnItem | None = None,
    on_result: OnResult | None = None,
    on_done: OnDone | None = None,
) -> list[LabResult]:
    """Run ``labs`` (names, lab files' paths or :class:`Lab` objects) and
    return their :class:`LabResult` in order. With ``workers`` (a local
    Dask cluster of that many processes) or ``client`` (a scheduler's
    address, or a ``distributed.Client``) the items run as Dask tasks; a
    lab's ``wall_s`` is then the time from the start until its last item
    finished. Every lab and every run's scenario is loaded and checked
    before anything runs."""
    loaded = [lab if isinstance(lab, Lab) else load_lab(lab) for lab in labs]
    if workers is None and client is None:
        out = []
        for lab in loaded:
            if on_lab:
                on_lab(lab)
            r = run_lab(lab, quick, progress=progress, on_item=on_item, on_result=on_result)
            if on_done:
                on_done(r)
            out.append(r)
        return out
    return _run_on_dask(loaded, quick, workers, client, progress, on_lab, on_item, on_result, on_done)


def _run_on_dask(
    labs: list[Lab],
    quick: bool,
    workers: int | None,
    client: Any,
    progress: bool,
    on_lab: OnLab | None,
    on_item: OnItem | None,
    on_result: OnResult | None,
    on_done: OnDone | None,
) -> list[LabResult]:
    scenarios = [[scenario_of(lab, run, quick) for run in lab.runs] for lab in labs]
    reps = [1 if quick else lab.repetitions for lab in labs]
    tasks = [
        _Task(li, rep, ri, ii)
        for li, lab in enumerate(labs)
        for rep in range(reps[li])
        for ri in range(len(lab.runs))
        for ii in range(len(scenarios[li][ri].items))
    ]
    n = worker_count(workers, len(tasks)) if client is None else 0
    prog = SweepProgress(len(tasks), progress, prefix="lab", unit="items")
    results: dict[_Task, Any] = {}
    done_at: dict[int, float] = {}
    flushed = 0
    out: list[LabResult] = []
    dd = distributed()
    with dask_client(client, n) as (c, where):
        prog.note(f"{len(tasks)} items of {len(labs)} lab(s) on {where}")
        prog.begin()
        start = time.perf_counter()
        token = uuid.uuid4().hex[:8]
        futures = {
            c.submit(run_lab_item, labs[t.lab], t.run, quick, t.item, t.rep, key=f"fabriclab-lab-{token}-{k}", pure=False): t
            for k, t in enumerate(tasks)
        }
        try:
            for fut in dd.as_completed(list(futures), loop=c.loop):
                t = futures[fut]
                results[t] = fut.result()  # an item's error stops the labs, as in a serial run
                fut.release()
                done_at[t.lab] = time.perf_counter() - start
                prog.update(False)
                while flushed < len(tasks) and tasks[flushed] in results:
                    t = tasks[flushed]
                    lab, run = labs[t.lab], labs[t.lab].runs[t.run]
                    item = _item(scenarios[t.lab][t.run].items[t.item], t.rep)
                    if on_lab and (flushed == 0 or tasks[flushed - 1].lab != t.lab):
                        on_lab(lab)
                    if on_item:
                        on_item(lab, run, t.item, item)
                    if on_result:
                        on_result(lab, run, item, results[t])
                    flushed += 1
                    if flushed == len(tasks) or tasks[flushed].lab != t.lab:
                        r = _lab_result(lab, quick, reps[t.lab], done_at[t.lab], scenarios[t.lab], results, t.lab)
                        if on_done:
                            on_done(r)
                        out.append(r)
        finally:
            pending = [f for f in futures if not f.done()]
            if pending:
                c.cancel(pending)
    return out


def _item(item: ScenarioItem, rep: int) -> ScenarioItem:
    return replace(item, seed=item.seed + rep)


def _lab_result(lab: Lab, quick: bool, reps: int, wall_s: float, scenarios: list[Any], results: dict[_Task, Any], li: int) -> LabResult:
    per_rep: list[dict[str, list[tuple[Any, Any]]]] = []
    for rep in range(reps):
        per_run: dict[str, list[tuple[Any, Any]]] = {}
        for ri, (run, sc) in enumerate(zip(lab.runs, scenarios)):
            per_run[run.name] = [(item.name, results.pop(_Task(li, rep, ri, ii))) for ii, item in enumerate(sc.items)]
        per_rep.append(per_run)
    return LabResult(lab, quick, wall_s, lab_rows(lab, per_rep, quick), per_rep[0], reps)
