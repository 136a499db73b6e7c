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

A lab's ``wall_s`` is the time its items ran on the workers (their sum,
comparable with a serial run's time); the client's ``FABRICLAB_AUDIT``
(``fabriclab --audit``) holds on every worker. The first error in the
serial order stops the labs after everything before it was handed on, and
names the lab, the run and the item.

Left out: retrying a failed item (Dask re-runs an item whose worker died),
progress bars of single items on workers (progress lines count items
instead), and keeping results that finished but wait behind an unfinished
earlier item when the run is interrupted (Ctrl-C: the labs that finished
are kept, :func:`run_labs`).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Callable

from .errors import InvalidArgumentError
from .lab import Lab, LabLike, load_lab
from .lab_runs import (
    LabResult,
    OnItem,
    OnResult,
    item_in_rep,
    lab_rows,
    raise_if_failed,
    raise_in_lab,
    run_lab,
    scenario_of,
)
from .scenario import run_item
from .sweep_dask import SweepProgress, dask_client, distributed, worker_count
from .sweep_rows import audit_env

__all__ = ["ItemFailed", "OnDone", "OnLab", "run_lab_item", "run_labs"]

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


@dataclass(frozen=True)
class ItemFailed:
    """What a task returns when its item raised: the error, handed back as
    a value so that the worker does not log it as a failed task."""

    error: BaseException


def run_lab_item(lab: Lab, run_index: int, quick: bool, item_index: int, rep: int, audit: str | None = None) -> tuple[Any, float] | ItemFailed:
    """On a worker: item ``item_index`` of run ``run_index`` of ``lab``, in
    repetition ``rep`` (its seed plus ``rep``), as the serial run runs it,
    under the client's ``FABRICLAB_AUDIT`` setting; the result and the
    seconds it took, or :class:`ItemFailed`."""
    try:
        sc = scenario_of(lab, lab.runs[run_index], quick)
        item = item_in_rep(sc.items[item_index], rep)
        t0 = time.perf_counter()
        with audit_env(audit):
            res = run_item(sc, item)
        return res, time.perf_counter() - t0
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # a Rust panic arrives as pyo3's PanicException, a BaseException
        return ItemFailed(e)


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
    lab's ``wall_s`` is then the time its items ran on the workers (their
    sum, comparable with a serial run's), not the time it waited. Every lab
    and every run's scenario is loaded and checked before anything runs.
    An item's error stops the labs as a serial run would: the labs and
    items before it in the serial order are handed to the callbacks first,
    and the error names the lab, the run and the item. Stopped by Ctrl-C,
    the ``KeyboardInterrupt`` carries ``result``: the :class:`LabResult`
    of each lab that finished (handed to ``on_done``), in order."""
    if workers is not None and client is not None:
        raise InvalidArgumentError("give workers (a local Dask cluster) or client (a running one), not both")
    loaded = [lab if isinstance(lab, Lab) else load_lab(lab) for lab in labs]
    scenarios = [[scenario_of(lab, run, quick) for run in lab.runs] for lab in loaded]
    out: list[LabResult] = []
    try:
        if workers is None and client is None:
            for lab in loaded:
                if on_lab:
                    on_lab(lab)
                r = run_lab(lab, quick, progress=progress, on_item=on_item, on_result=on_result)
                if on_done:
                    on_done(r)
                out.append(r)
            return out
        # A relative lab path would be resolved against each worker's directory.
        loaded = [replace(lab, path=os.path.abspath(lab.path)) for lab in loaded]
        return _Batch(loaded, scenarios, quick, on_lab, on_item, on_result, on_done, out).run(workers, client, progress)
    except KeyboardInterrupt as e:
        # Stopped: the labs that finished go with the interrupt, as a
        # sweep's finished points do.
        e.result = out  # type: ignore[attr-defined]
        raise


class _Batch:
    """The labs' items as Dask tasks, handed back in the serial order."""

    def __init__(
        self,
        labs: list[Lab],
        scenarios: list[list[Any]],
        quick: bool,
        on_lab: OnLab | None,
        on_item: OnItem | None,
        on_result: OnResult | None,
        on_done: OnDone | None,
        out: list[LabResult],
    ):
        self.labs, self.scenarios, self.quick = labs, scenarios, quick
        self.on_lab, self.on_item, self.on_result, self.on_done = on_lab, on_item, on_result, on_done
        self.reps = [1 if quick else lab.repetitions for lab in labs]
        #: Per lab, its tasks in the serial order.
        self.tasks = [
            [_Task(li, rep, ri, ii) for rep in range(self.reps[li]) for ri, sc in enumerate(scs) for ii in range(len(sc.items))]
            for li, scs in enumerate(scenarios)
        ]
        #: A finished task's result and seconds, or the exception it raised.
        self.done: dict[_Task, tuple[Any, float] | BaseException] = {}
        self.next_lab = self.next_task = 0
        #: The labs handed on, in order (the caller's list, kept on Ctrl-C).
        self.out = out

    def run(self, workers: int | None, client: Any, progress: bool) -> list[LabResult]:
        dd = distributed()
        every = [t for lt in self.tasks for t in lt]
        order = {t: k for k, t in enumerate(every)}
        n = worker_count(workers, len(every)) if client is None else 0
        prog = SweepProgress(len(every), progress, prefix="lab", unit="items")
        audit = os.environ.get("FABRICLAB_AUDIT")
        with dask_client(client, n, what="labs on a local Dask cluster") as (c, where):
            prog.note(f"{len(every)} items of {len(self.labs)} lab(s) on {where}")
            prog.begin()
            token = uuid.uuid4().hex[:8]
            futures = {
                c.submit(run_lab_item, self.labs[t.lab], t.run, self.quick, t.item, t.rep, audit, key=f"fabriclab-lab-{token}-{k}", pure=False): t
                for k, t in enumerate(every)
            }
            try:
                self.flush()  # labs without items
                for fut in dd.as_completed(list(futures), loop=c.loop):
                    t = futures[fut]
                    try:
                        got = fut.result()
                        self.done[t] = got.error if isinstance(got, ItemFailed) else got
                    except (KeyboardInterrupt, SystemExit):
                        raise
                    except BaseException as e:  # a dead worker, a cancelled task
                        self.done[t] = e
                    if isinstance(self.done[t], BaseException):
                        # Nothing after it in the serial order will be shown.
                        c.cancel([f for f, u in futures.items() if order[u] > order[t] and not f.done()])
                    fut.release()
                    prog.update(isinstance(self.done[t], BaseException))
                    self.flush()
            finally:
                pending = [f for f in futures if not f.done()]
                if pending:
                    c.cancel(pending)
        return self.out

    def flush(self) -> None:
        """Hand every finished task whose predecessors are all handed on to
        the callbacks; a lab's result once its last task is; raise the
        first error in the serial order when its turn comes."""
        while self.next_lab < len(self.labs):
            li = self.next_lab
            lab, tasks = self.labs[li], self.tasks[li]
            while self.next_task < len(tasks) and tasks[self.next_task] in self.done:
                t = tasks[self.next_task]
                run = lab.runs[t.run]
                item = item_in_rep(self.scenarios[li][t.run].items[t.item], t.rep)
                if self.next_task == 0 and self.on_lab:
                    self.on_lab(lab)
                if self.on_item:
                    self.on_item(lab, run, t.item, item)
                got = self.done[t]
                if isinstance(got, BaseException):
                    raise_in_lab(lab, run, t.item, got)
                if self.on_result:
                    self.on_result(lab, run, item, got[0])
                raise_if_failed(lab, run, t.item, got[0])
                self.next_task += 1
            if self.next_task < len(tasks):
                return
            if not tasks and self.on_lab:
                self.on_lab(lab)
            r = self._result(li)
            if self.on_done:
                self.on_done(r)
            self.out.append(r)
            self.next_lab += 1
            self.next_task = 0

    def _result(self, li: int) -> LabResult:
        lab = self.labs[li]
        per_rep: list[dict[str, list[tuple[Any, Any]]]] = []
        wall_s = 0.0
        for rep in range(self.reps[li]):
            per_run: dict[str, list[tuple[Any, Any]]] = {}
            for ri, (run, sc) in enumerate(zip(lab.runs, self.scenarios[li])):
                per_run[run.name] = []
                for ii, item in enumerate(sc.items):
                    got = self.done.pop(_Task(li, rep, ri, ii))
                    assert not isinstance(got, BaseException)  # flush raised it
                    res, seconds = got
                    per_run[run.name].append((item.name, res))
                    wall_s += seconds
            per_rep.append(per_run)
        return LabResult(lab, self.quick, wall_s, lab_rows(lab, per_rep, self.quick), per_rep[0], self.reps[li])
