"""The ``fabriclab lab`` commands: the seed experiments, one command each::

    fabriclab lab list
    fabriclab lab run heps                          # the tools' output, then the verdict table
    fabriclab lab run eantc-imb --quick --json
    fabriclab lab run --all --quick --html labs.html
    fabriclab lab run --all --workers 2             # items in parallel (Dask)

Each lab (:mod:`fabriclab.lab`) runs its scenarios as ``fabriclab run``
does, printing each tool's own output, then a table ``metric | published
| fabriclab | delta | verdict`` with each figure's place in the seed.
``--json`` prints only the verdicts, as JSON; ``--html FILE`` writes one
report with an index and a section per lab (:mod:`fabriclab.lab_html`).
``--workers N`` or ``--scheduler ADDRESS`` runs the items in parallel on
Dask (:mod:`fabriclab.lab_dask`), printing them in the same order.
A lab whose figures are not reproduced is a result, not an error: the
exit status is 0. An item whose run failed (a PFC deadlock, a transport
retry error, flows that can never finish) stops the labs after its output,
with status 3, and no verdict. Ctrl-C stops them with status 130, after
the labs that finished (their JSON, their report with ``--html``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any, Callable

from ._checks import check_out_path, document_files, override_files
from .cli_sweep import cluster_errors
from .errors import InvalidArgumentError
from .lab import Lab, LabRun, load_lab, load_labs
from .lab_dask import run_labs
from .lab_runs import LabResult, dumps, table_text


def add_parser(sub: Any) -> None:
    """Add the ``lab`` subcommand (``list``, ``run``) to ``sub``."""
    p = sub.add_parser("lab", help="the seed experiments: list them, run one or all against the published figures")
    lsub = p.add_subparsers(dest="lab_command", metavar="SUBCOMMAND")
    lsub.required = True
    lsub.add_parser("list", help="one line per lab: its seed, run time (full / --quick), repetitions and what it reproduces")
    r = lsub.add_parser(
        "run",
        help="run labs and compare with the published figures",
        description="Run labs and compare with the published figures. A lab whose report repeated its tests "
        "runs each item that many times with successive seeds and compares the mean, its minimum and maximum "
        "beside it (`fabriclab lab list` shows the repetitions); --quick runs one.",
    )
    r.add_argument("names", nargs="*", metavar="NAME", help="lab names (`fabriclab lab list`) or lab files")
    r.add_argument("--all", action="store_true", help="run every lab")
    r.add_argument("--quick", action="store_true", help="the labs' quick variants (smaller runs, for CI)")
    r.add_argument("--html", metavar="FILE", help="write one HTML report: an index and a section per lab, with charts")
    r.add_argument("--json", action="store_true", help="print the verdicts as JSON (and not the tools' output)")
    r.add_argument("--quiet", action="store_true", help="no progress bar or lines on stderr")
    where = r.add_mutually_exclusive_group()
    where.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="run the items (every repetition of every lab) in parallel on a local Dask cluster of N worker "
        "processes; the figures are those of a serial run",
    )
    where.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run the items on an existing Dask scheduler, e.g. tcp://login1:8786 (dask-jobqueue on Slurm); "
        "the workers must see the lab and fabric files at the same paths",
    )


def _runtime(v: float | None) -> str:
    if v is None:
        return "?"
    return f"{v:.0f} s" if v >= 10 else f"{v:.1f} s"


def _cmd_list() -> None:
    labs = load_labs()
    w = max(len(lab.name) for lab in labs)
    print(f"{'lab':<{w}}  seed  {'full':>7}  {'quick':>7}  reps  reproduces")
    for lab in labs:
        print(
            f"{lab.name:<{w}}  {lab.seed:<4}  {_runtime(lab.runtime_s):>7}  {_runtime(lab.quick_runtime_s):>7}  "
            f"{lab.repetitions:>4}  {lab.reproduces}"
        )


def lab_inputs(labs: Sequence[Lab]) -> list[str]:
    """The files ``labs`` read: the lab files, and the fabric and ``dat``
    files their runs name (in a run, or in its ``[run.set]`` or
    ``[run.quick]`` overrides), relative to each lab's folder."""
    found: list[str] = []
    for lab in labs:
        folder = os.path.dirname(os.path.abspath(lab.path))
        found.append(os.path.abspath(lab.path))
        for run in lab.runs:
            found += document_files(run.doc, folder)
            found += override_files([*run.set.items(), *run.quick.items()], [folder])
    return found


def cmd_lab(
    a: argparse.Namespace,
    item_what: Callable[[Any], str],
    print_item: Callable[[str, Any, bool, bool], None],
    print_notes: Callable[[Any], None],
) -> int | None:
    """``fabriclab lab list`` and ``fabriclab lab run``; ``item_what`` and
    ``print_item`` print each item as ``fabriclab run`` does (with
    ``--json``, only ``print_notes``: the notes on stderr). Stopped by
    Ctrl-C, the labs that finished are printed (and written with
    ``--html``) and the status is 130."""
    if a.lab_command == "list":
        _cmd_list()
        return None
    if a.all and a.names:
        raise InvalidArgumentError("give lab names or --all, not both")
    if not a.all and not a.names:
        raise InvalidArgumentError("say which lab to run (`fabriclab lab list`), or --all")
    labs = load_labs() if a.all else [load_lab(n) for n in a.names]  # every name checked before anything runs
    seen = [os.path.abspath(lab.path) for lab in labs]
    for i, lab_path in enumerate(seen):
        if lab_path in seen[:i]:
            raise InvalidArgumentError(f"lab {labs[i].name} is named twice; name each lab once")
    if a.html is not None:
        check_out_path(a.html, "--html", inputs=lab_inputs(labs))  # before minutes of runs, not after
    one = len(labs) == 1 and not a.all

    def on_item(lab: Lab, run: LabRun, i: int, item: Any) -> None:
        label = f" {item.name!r}" if item.name else ""
        print(f"\n=== {lab.name}, run {run.name!r} [{i + 1}] {item.kind}{label}: {item_what(item)} (seed {item.seed}) ===", flush=True)

    def on_result(lab: Lab, run: LabRun, item: Any, res: Any) -> None:
        if a.json:
            print_notes(res)
            return
        print_item(item.kind, res, False, a.quiet)
        sys.stdout.flush()

    def on_lab(lab: Lab) -> None:
        if not a.json:
            mode = " (--quick)" if a.quick else ""
            reps = f", {lab.repetitions} repetitions" if lab.repetitions > 1 and not a.quick else ""
            print(f"\n##### lab {lab.name}{mode}: {lab.title} (seed {lab.seed}{reps}) #####", flush=True)
        elif not a.quiet and a.workers is None and a.scheduler is None:
            print(f"running lab {lab.name}{' (--quick)' if a.quick else ''} ...", file=sys.stderr, flush=True)

    def on_done(r: LabResult) -> None:
        if not a.json:
            print("\n" + table_text(r), end="", flush=True)

    try:
        with cluster_errors():
            results = run_labs(
                labs,
                a.quick,
                workers=a.workers,
                client=a.scheduler,
                progress=not a.quiet,
                on_lab=on_lab,
                on_item=None if a.json else on_item,
                on_result=on_result,
                on_done=on_done,
            )
    except KeyboardInterrupt as e:
        done = getattr(e, "result", None)
        return _interrupted(a, done if isinstance(done, list) else [], len(labs), one)
    _output(a, results, one)
    return None


def _output(a: argparse.Namespace, results: Sequence[LabResult], one: bool) -> None:
    """The verdicts as JSON (``--json``) and the report (``--html``)."""
    if a.json:
        print(dumps(results, one=one), flush=True)
    if a.html:
        from .lab_html import write_report

        try:
            written = write_report(results, a.html)
        except OSError as e:
            raise InvalidArgumentError(f"cannot write the report to {a.html}: {e.strerror or e}") from None
        print(f"lab report written to {written}", file=sys.stderr)


def _interrupted(a: argparse.Namespace, done: Sequence[LabResult], total: int, one: bool) -> int:
    """Ctrl-C: the labs that finished go out as a finished run's would
    (their tables are printed already; the JSON and the report now), and a
    line says what they are; status 130."""
    if not done:
        unwritten = f"; {a.html} is not written" if a.html else ""
        print(f"fabriclab: interrupted; no lab finished, so there are no verdicts{unwritten}", file=sys.stderr)
        return 130
    _output(a, done, one)
    where = "the JSON above holds" if a.json else "the verdict tables above are"
    kept = f"; {a.html} holds them" if a.html else ""
    names = ", ".join(r.lab.name for r in done)
    print(f"fabriclab: interrupted; {where} the {len(done)} lab(s) of {total} that finished ({names}){kept}", file=sys.stderr)
    return 130
