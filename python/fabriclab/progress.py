"""Progress of long runs, passed from the core to Python and drawn here.

The core calls back every 2^20 events or so (a few times a second on a
long run) and once at the end, with a :class:`Progress`. Every long-running
function takes ``progress``:

- ``False`` (the default in Python): nothing;
- ``True``: a progress bar drawn with tqdm: bars with rate and ETA in a
  terminal, the notebook widget in Jupyter, and plain lines (one every
  2 s of wall time and the last) when stderr is neither;
- a callable: called with each :class:`Progress`, to draw it your own way
  or to record it. An exception it raises stops the run and is raised.

The CLI draws progress by default; ``--quiet`` turns it off.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO, Union, cast

from .errors import ArgumentTypeError

__all__ = ["Progress", "ProgressArg", "check_progress", "progress_callback", "terminal_bar"]

#: Units counted in whole items (the others are amounts of simulated time).
_COUNTED = ("measurements", "calls", "flows", "iterations", "points", "items")


@dataclass(frozen=True)
class Progress:
    """One progress report of a run."""

    #: The tool: "IMB", "OSU", "Cbench", "HPL", "fio", "perftest", "flows",
    #: "nccl-tests" or "bench"; "sweep" for a sweep's (and a comparison
    #: side's) points, "lab" for the items of labs run on Dask.
    tool: str
    #: Simulated time, us (0 for "sweep" and "lab", whose runs are
    #: elsewhere: they count points or items done).
    sim_us: float
    #: Events processed so far (0 for "sweep" and "lab").
    events: int
    #: Work done, in ``unit``\\ s.
    done: float
    #: Work in all, when known beforehand (None for a benchmark).
    total: float | None
    #: What ``done`` counts: "measurements" (IMB, OSU, Cbench: one per
    #: message size and process count), "calls" (HPL), "flows" (flows
    #: completed), "iterations" (perftest's messages completed), "ms"
    #: (fio's simulated run time), "us" (a benchmark's or perftest
    #: ``-D``'s simulated time), "points" (a sweep's) or "items" (labs').
    unit: str
    #: What runs now (the measurement, or the benchmark's name).
    label: str
    #: Wall-clock seconds since the run started.
    wall_s: float


#: What ``progress=`` takes.
ProgressArg = Union[bool, Callable[[Progress], Any], None]

#: The core's callback: ``(sim_us, events, done, total, unit, label)``.
CoreCallback = Callable[[float, int, float, "float | None", str, str], None]


def check_progress(progress: Any) -> ProgressArg:
    """``progress`` if it is one of what ``progress=`` takes (True, False,
    None or a callable), else an :class:`ArgumentTypeError` saying so."""
    if progress is None or isinstance(progress, bool) or callable(progress):
        return cast("ProgressArg", progress)
    raise ArgumentTypeError(f"progress must be True, False or a callable, not {type(progress).__name__}")


def terminal_bar(tool: str) -> Callable[[Progress], Any] | None:
    """The tqdm bar ``progress=True`` draws on a terminal or in a notebook
    (None elsewhere: the caller prints lines), for runs that report their
    own :class:`Progress` (sweeps, labs on Dask)."""
    drawer = _Drawer(tool)
    return drawer if drawer.fancy else None


def progress_callback(tool: str, progress: ProgressArg) -> CoreCallback | None:
    """The callback to hand the core for ``progress`` (None: no progress)."""
    progress = check_progress(progress)
    if progress is None or progress is False:
        return None
    sink: Callable[[Progress], Any] = _Drawer(tool) if progress is True else progress
    start = time.monotonic()

    def tick(sim_us: float, events: int, done: float, total: float | None, unit: str, label: str) -> None:
        sink(Progress(tool, sim_us, events, done, total, unit, label, time.monotonic() - start))

    return tick


def _sim_time(us: float) -> str:
    """Simulated time in the unit that fits it (an HPL run lasts minutes of
    simulated time, a ping-pong microseconds)."""
    if us >= 1e6:
        return f"{us / 1e6:.3f} s"
    return f"{us / 1e3:.3f} ms"


def _terminal_columns(file: TextIO) -> int:
    """The width of the terminal ``file`` writes to (0: not a terminal, or
    one of no width, where a bar would draw nothing)."""
    try:
        return os.get_terminal_size(file.fileno()).columns if file.isatty() else 0
    except (AttributeError, OSError, ValueError):
        return 0


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    get = getattr(shell, "get_ipython", None) if shell else None
    ip = get() if get else None
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


class _Drawer:
    """The default drawing: a tqdm bar on a terminal or in a notebook,
    plain lines otherwise."""

    def __init__(self, tool: str, file: TextIO | None = None) -> None:
        self.tool = tool
        self.file = file if file is not None else sys.stderr
        self.bar: Any = None
        self.count = True
        self.last_line = -1e9
        self.fancy = _in_notebook() or _terminal_columns(self.file) > 0

    def __call__(self, p: Progress) -> None:
        if self.fancy:
            self._bar(p)
        else:
            self._line(p)

    def _bar(self, p: Progress) -> None:
        if self.bar is None:
            from tqdm.auto import tqdm

            self.count = p.unit in _COUNTED
            total = None if p.total is None else (int(p.total) if self.count else round(p.total, 3))
            self.bar = tqdm(total=total, unit=f" {p.unit}", desc=self.tool, file=self.file, leave=True, dynamic_ncols=True)
        simulated = f"; simulated {_sim_time(p.sim_us)}, {p.events / 1e6:.1f} M events" if p.events else ""
        self.bar.set_postfix_str(f"{p.label}{simulated}", refresh=False)
        done = int(p.done) if self.count else round(p.done, 3)
        self.bar.update(done - self.bar.n)
        if p.total is not None and p.done >= p.total:
            self.bar.close()

    def _line(self, p: Progress) -> None:
        finished = p.total is not None and p.done >= p.total
        if not finished and p.wall_s - self.last_line < 2.0:
            return
        self.last_line = p.wall_s
        if p.unit in _COUNTED and p.total is not None:
            what = f"{p.done:.0f}/{p.total:.0f} {p.unit} done, at {p.label}"
        elif p.unit in _COUNTED:  # perftest -D: its runs end by time
            what = f"{p.done:.0f} {p.unit} done, at {p.label}"
        elif p.total is not None:
            what = f"simulated {p.done:.3f} of {p.total:.3f} {p.unit}"
        else:
            what = p.label
        self.file.write(f"  [{p.wall_s:>6.1f} s] {what}; simulated {_sim_time(p.sim_us)}, {p.events / 1e6:.1f} M events\n")
        self.file.flush()
