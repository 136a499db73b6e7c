"""Parameter sweeps: one scenario file run at many points of a grid of
overrides, in parallel on Dask, with every result in one DataFrame.

:func:`sweep` expands a grid (the cartesian product of value lists, or an
explicit list of points), writes each point's scenario (the file with the
point's overrides applied), checks every one before anything runs, runs
each point in a Dask worker process and returns one row per result row of
every item of every point, sorted by point. By default it starts a
``distributed.LocalCluster`` on this machine (one single-threaded worker
process per core) and closes it afterwards; pass ``client=`` (a
``distributed.Client``, e.g. on dask-jobqueue's ``SLURMCluster``) or a
scheduler address to run on a cluster (see ``docs/sweeps.md``).

A worker process that dies (killed, out of memory) loses only the point it
was running: Dask runs that point again on another worker, up to
``RETRIES_ON_WORKER_DEATH`` more times, then the point is recorded as failed
with the reason. The ``out`` file grows as points finish (see
:mod:`fabriclab.sweep_writer`), so an interrupted sweep leaves it valid
with every point finished so far; ``resume=True`` (``--resume``) then runs
only the points it lacks.

What it leaves out: it starts no batch jobs itself (dask-jobqueue does
that), it does not retry points whose items failed (their errors are in the
``error`` column; ``resume`` runs them again),
it runs the points it is given (no adaptive search), it does not aggregate
(the DataFrame is for pandas), and it never splits one point over workers:
a point's items run one after another in one process.

Example::

    import fabriclab

    df = fabriclab.sweep(
        "scenarios/heps.toml",
        {"fabric.cc.algorithm": ["none", "dcqcn"], "seed": [1, 2, 3]},
        workers=4,
        progress=True,
        out="heps-sweep.csv",
    )
    bw = df[df["name"] == "bandwidth"]
    print(bw.groupby("fabric.cc.algorithm")["bw_avg_gbps"].mean())

Override paths address the scenario document:

- ``seed``: the scenario's seed (the default of items without their own);
- ``fabric``: the whole fabric, a preset name or a fabric file (relative to
  the scenario file) or, from Python, a dict with a fabric file's schema;
- ``fabric.<section>.<key>`` (any depth, e.g. ``fabric.cc.algorithm``,
  ``fabric.ecn.kmax_bytes``, ``fabric.ib.cc.enabled``) or
  ``fabric.<key>`` (``fabric.transport``): one setting of the fabric. A
  preset or a fabric file is loaded as a table first, so the point's
  scenario carries its fabric inline; missing sections are created;
- ``<kind>.<key>`` (``perftest.size``, ``imb.np``, ``flows.limit_us``): that
  key of every ``[[kind]]`` table; ``<kind>[i].<key>``: of the i-th one,
  counting from 0 in file order. Deeper keys and list elements work the same
  way: ``imb.algorithms.allreduce``, ``flows[0].flows[1].bytes``.

An ``[[hpl]]`` item's ``dat`` (a path relative to the scenario file) is
made absolute in the point's scenario; the worker reads it, so on a
cluster it must be on a file system the workers share.

Values are TOML values: int, float, bool, str, lists and dicts of them
(numpy scalars are taken as Python numbers).

This module holds the two entry points; each of their steps has a module
of its own: grids (:mod:`fabriclab.sweep_grid`), the path language
(:mod:`fabriclab.sweep_paths`), a point's scenario
(:mod:`fabriclab.sweep_scenario`), the checks before anything runs
(:mod:`fabriclab.sweep_checks`), running a point's items
(:mod:`fabriclab.sweep_rows`), Dask (:mod:`fabriclab.sweep_dask`) and the
results file (:mod:`fabriclab.sweep_writer`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any, cast

import pandas as pd

from ._checks import as_path
from ._tables import records
from .errors import FabriclabError, InvalidArgumentError
from .progress import ProgressArg, check_progress
from .sweep_checks import check_point
from .sweep_dask import RETRIES_ON_WORKER_DEATH, SweepProgress, dask_client, run_all, worker_count
from .sweep_grid import Grid, SweepPoint, expand_grid
from .sweep_rows import (
    ITEM_COLUMNS,
    LEADING_COLUMNS,
    SCENARIO_SHA,
    cell,
    columns,
    param_columns,
    row_failed,
    rows_frame,
)
from .sweep_scenario import load_swept, parse_paths, point_doc, scenario_text
from .sweep_writer import open_writer, point_key, read_rows, refuse_overwrite

__all__ = [
    "sweep", "sweep_points", "run_points", "finished_points", "expand_grid", "SweepPoint", "Grid", "LEADING_COLUMNS", "ITEM_COLUMNS",
    "RETRIES_ON_WORKER_DEATH",
]


def sweep_points(scenario: str | os.PathLike[str], grid: Grid) -> list[SweepPoint]:
    """The points of a sweep of scenario file ``scenario`` over ``grid``,
    each with its scenario text, all checked: the errors a point's scenario
    would raise (unknown paths or keys, wrong types, values the fabric
    rejects, hosts the fabric lacks) are raised here, as
    :class:`~fabriclab.errors.ParseError` or
    :class:`~fabriclab.errors.InvalidArgumentError` (or the core's class)
    naming the point, as are the values each item's run would reject
    (:mod:`fabriclab.sweep_checks`; on fabrics above
    :data:`~fabriclab.sweep_checks.CORE_CHECK_MAX_HOSTS` hosts those are
    reported per point by :func:`sweep`)."""
    origin = os.fspath(scenario)
    points = expand_grid(grid)
    base = load_swept(origin)
    paths = parse_paths((text for params in points for text in params), base.doc)
    out: list[SweepPoint] = []
    for i, params in enumerate(points):
        draft = SweepPoint(i, params, "")
        try:
            doc = point_doc(base, params, paths)
            text = scenario_text(doc, base.order)
        except FabriclabError as e:
            raise type(e)(f"{draft.label()}: {e}") from None
        point = SweepPoint(i, params, text)
        check_point(point, base, doc)
        out.append(point)
    return out


def sweep(
    scenario: str | os.PathLike[str],
    grid: Grid,
    *,
    client: Any = None,
    workers: int | None = None,
    progress: ProgressArg = False,
    out: str | os.PathLike[str] | None = None,
    resume: bool = False,
) -> pd.DataFrame:
    """Run scenario file ``scenario`` once per point of ``grid``, each point
    in a Dask worker process, and return every result row in one DataFrame.

    ``grid`` maps override paths (``"seed"``, ``"fabric.cc.algorithm"``,
    ``"perftest.size"``, ``"imb[1].np"``; see :mod:`fabriclab.sweeps`) to
    lists of values and sweeps their cartesian product, or is a list of
    points, each a mapping of paths to values. Every point's scenario is
    built and checked before anything runs (see :func:`sweep_points`).

    ``client``: None starts a ``distributed.LocalCluster`` of ``workers``
    single-threaded worker processes (default: one per CPU, at most one per
    point) and closes it at the end; a ``distributed.Client`` (e.g. on
    ``dask_jobqueue.SLURMCluster``) is used as it is; a scheduler address
    (``"tcp://host:8786"``) is connected to for the sweep. Workers need
    fabriclab installed; points carry their scenario (fabric inline or a
    preset name), so workers need no shared files.

    ``progress``: True draws the points done on stderr (a tqdm bar on a
    terminal or in a notebook, else lines); a callable gets each point
    done as a :class:`fabriclab.progress.Progress` (``tool`` "sweep",
    ``unit`` "points", ``label`` the point; no lines); anything else is an
    :class:`~fabriclab.errors.ArgumentTypeError`. ``out`` (a ``.csv`` or,
    with pyarrow, a ``.parquet`` path) is written as points finish, so a
    killed sweep keeps its finished points; at the end it holds the
    returned table. An ``out`` that already holds something is refused
    unless ``resume`` (delete it to start afresh). If ``out`` cannot be
    written any more (a full disk), the sweep runs on and then raises
    :class:`~fabriclab.errors.InvalidArgumentError` with ``result``, the
    table of every point. With ``resume``, the points already in ``out`` without
    an error (matched by their swept values, seed included when swept) are
    not run again: their rows are kept and the rest are added; a file with
    a point the grid lacks, or one run from another scenario (each row's
    ``scenario_sha``), is refused. Stopped by Ctrl-C, the sweep raises
    ``KeyboardInterrupt`` with ``result``: the table of the points that
    finished.

    Returns one row per result row of every item of every point, sorted by
    point, then item in file order: ``point``, one column per swept path,
    ``item`` (``"perftest[0]"``: kind and index, the path prefix that
    addresses it), ``kind``, ``name``, the item's own columns (perftest's
    :data:`~fabriclab.BW_COLUMNS` or :data:`~fabriclab.LAT_COLUMNS`, a
    flows item's per-flow table, IMB's, OSU's or Cbench's rows),
    ``outcome``, ``sim_time_us``, ``events`` (where the item has them),
    ``scenario_sha`` (:meth:`SweepPoint.digest`: the first 16 hex digits of
    the SHA-256 of the point's scenario text), ``item_error`` (only where
    a flows item's run ended in a PFC deadlock, a stall or a transport
    retry error: that failure, on each of the item's rows, which keep what
    ran) and ``error``: None, or the error of an item that failed (its
    only row; the point's other items and the other points still run) or
    of a point whose worker died (one row, no item), or on a flow's own
    row the flow's error (``"transport retry counter exceeded"``, as
    :func:`fabriclab.flows` reports it; the item's other flows keep None).
    perftest rows also have ``bw_unit``: the unit of their ``bw_peak``
    and ``bw_avg`` (``"MiB/s"``, or ``"Gb/s"`` with ``report_gbits``). ``df.attrs`` holds ``"params"`` (the
    swept paths), ``"points"`` (how many) and ``"failed"`` (the indices of
    points with an error). The same grid and seeds give the same
    DataFrame, whatever the number of workers.
    """
    origin = as_path("scenario", scenario)
    check_progress(progress)
    if out is not None:
        out = as_path("out", out)
    if client is not None and workers is not None:
        raise InvalidArgumentError(
            "workers sizes the LocalCluster that sweep starts; a client or scheduler brings its own workers"
        )
    return run_points(origin, sweep_points(origin, grid), client=client, workers=workers, progress=progress, out=out, resume=resume)


def run_points(
    origin: str,
    points: Sequence[SweepPoint],
    *,
    client: Any = None,
    workers: int | None = None,
    progress: ProgressArg = False,
    out: str | None = None,
    resume: bool = False,
) -> pd.DataFrame:
    """:func:`sweep`'s run of points already made and checked by
    :func:`sweep_points` from scenario file ``origin`` (what
    :func:`fabriclab.compare` does for both sides before either runs)."""
    params = param_columns(points)
    done: dict[int, list[dict[str, Any]]] = {}
    if resume:
        if out is None:
            raise InvalidArgumentError("resume needs out=: the results file of the sweep to resume")
        done = _finished(os.fspath(out), points, params)
    elif out is not None:
        refuse_overwrite(out)
    todo = [p for p in points if p.index not in done]
    kept = [r for i in sorted(done) for r in done[i]]
    write_error: OSError | None = None
    writer = open_writer(out, params, kept) if out is not None else None
    prog = SweepProgress(len(todo), progress)
    if resume:
        prog.note(f"{len(done)} point(s) already in {os.fspath(out or '')}, {len(todo)} to run")
    if todo:
        nworkers = worker_count(workers, len(todo)) if client is None else 0
        try:
            with dask_client(client, nworkers) as (c, where):
                prog.note(f"{len(todo)} point(s) of {origin} on {where}")
                prog.begin()
                write_error = run_all(c, todo, origin, writer, prog, done)
        except KeyboardInterrupt as e:
            # Stopped: the finished points go with the interrupt, as the
            # tools hand over what they completed, and stay in the file
            # (a stop while the cluster closed came after run_all's own
            # close, or with nothing to close).
            if writer is not None:
                writer.close()
            e.result = _frame(done, params, len(points))  # type: ignore[attr-defined]
            raise
    df = _frame(done, params, len(points))
    if write_error is not None:
        # The points are all here: hand them over with the error, never
        # lose them with the file.
        err = InvalidArgumentError(
            f"{os.fspath(out or '')} could not be written ({write_error.strerror or write_error}): the sweep "
            f"ran all {len(points)} point(s) and the table holds them (the exception's result); free the "
            "space or write to another -o/out=, then --resume to keep what the file has"
        )
        err.result = df  # type: ignore[attr-defined]
        raise err
    if writer is not None:
        try:
            writer.finish(df)
        except KeyboardInterrupt as e:
            writer.close()
            e.result = df  # type: ignore[attr-defined]
            raise
    return df


def finished_points(out: str | os.PathLike[str], points: Sequence[SweepPoint]) -> list[int]:
    """The indices of ``points`` that results file ``out`` already holds
    without an error: what a resume would not run again (refused as
    :func:`sweep` with ``resume`` refuses it)."""
    return sorted(_finished(os.fspath(out), points, param_columns(points)))


def _frame(done: Mapping[int, Sequence[Mapping[str, Any]]], params: Sequence[str], points: int) -> pd.DataFrame:
    """The result table of the points in ``done``, with its attrs."""
    rows = [r for i in sorted(done) for r in done[i]]
    seen: dict[str, None] = {}
    for r in rows:
        seen.update(dict.fromkeys(r))
    df = rows_frame(rows, columns(params, seen))
    df.attrs["params"] = list(params)
    df.attrs["points"] = points
    df.attrs["failed"] = sorted(i for i, recs in done.items() if any(row_failed(r) for r in recs))
    return df


def _finished(out: str, points: Sequence[SweepPoint], params: Sequence[str]) -> dict[int, list[dict[str, Any]]]:
    """The rows of the points that results file ``out`` holds without an
    error (matched by their swept values), by point index. A file with a
    point this grid does not have, or run from another scenario (another
    file, or this one edited: the point's ``scenario_sha`` differs), is
    refused: resuming would drop its rows or mix two scenarios' results."""
    rows, failed = read_rows(out, params)
    by_key = {point_key(p.params, params): p for p in points}
    # Every point of the file, failed ones included: the rewritten file
    # keeps only this grid's points.
    for _, point_rows in rows.groupby("point", sort=True) if len(rows) else ():
        key = point_key(cast("Mapping[str, Any]", point_rows.iloc[0].to_dict()), params)
        if key not in by_key:
            where = ", ".join(f"{n} = {v}" for n, v in zip(params, key))
            raise InvalidArgumentError(
                f"--resume: {out} holds a point this grid does not have ({where}), whose rows the resumed "
                "file would lose; resume with a grid that includes every point of the file, or write to another -o"
            )
    old = rows[~rows["point"].isin(failed)] if len(rows) else rows
    if len(old) and SCENARIO_SHA not in old.columns:
        raise InvalidArgumentError(
            f"--resume: {out} has no column {SCENARIO_SHA!r} (written by an older fabriclab), so it cannot "
            "tell which scenario its points ran; run without --resume to start afresh, or write to another -o"
        )
    done: dict[int, list[dict[str, Any]]] = {}
    for _, point_rows in old.groupby("point", sort=True) if len(old) else ():
        first = cast("Mapping[str, Any]", point_rows.iloc[0].to_dict())
        p = by_key[point_key(first, params)]
        if str(first[SCENARIO_SHA]) != p.digest():
            raise InvalidArgumentError(
                f"--resume: {out} holds {p.label()} run from another scenario (the scenario file, or a "
                "fabric file it names, is not the one that wrote it, or was edited since); resume only the "
                "sweep that wrote the file: run without --resume to start afresh, or write to another -o"
            )
        if p.index not in done:
            done[p.index] = [
                {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
                | {"point": p.index, **{k: cell(v) for k, v in p.params.items()}}
                for r in records(point_rows)
            ]
    return done
