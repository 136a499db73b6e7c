"""Checking a run's input without running it: ``fabriclab run`` checks
every item of a scenario, and a sweep every point, before the first runs,
so that a bad value in the last item is reported at once, not after the
others have run.

A tool's API function called in check-only mode (:func:`check_call`) goes
through everything it checks of its input, in Python and in the core, and
builds its fabric; the core then stops every simulation loop before its
first event and the call raises its input's error, or
:class:`~fabriclab.errors.CheckPassed`, which :func:`check_call` takes as
"valid". The mode is the calling thread's (the core's), so other threads'
runs are not affected.

Left out: checks a tool makes only after a first simulation (none of the
seed tools has one today), and errors that only a run can show (a PFC
deadlock, a QP out of retries). A check costs the fabric's build: a few
ms on the seed fabrics, 3.4-4 s at 16,384 hosts (see
:mod:`fabriclab.sweep_checks` for what sweeps do about that).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from . import _core
from .errors import CheckPassed

__all__ = ["check_call", "check_mode"]


@contextmanager
def check_mode() -> Iterator[None]:
    """Check-only mode for the calling thread while the block runs."""
    _core.set_check_only(True)
    try:
        yield
    finally:
        _core.set_check_only(False)


def check_call(function: Callable[..., Any], /, *args: Any, **kwargs: Any) -> None:
    """Call a tool's API function (:func:`fabriclab.perftest`,
    :func:`fabriclab.imb`, ...) in check-only mode: its input error is
    raised as the run would raise it; a valid input returns None."""
    with check_mode():
        try:
            function(*args, **kwargs)
        except CheckPassed:
            pass
