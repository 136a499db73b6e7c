"""Exceptions raised by fabriclab.

Every error the simulator core reports is a :class:`FabriclabError` (itself a
:class:`ValueError`); the subclass tells what kind of input was wrong, and
``str(error)`` is the core's message, which names the value to change::

    try:
        fabriclab.perftest("ib_write_bw", client="h0", server="h99")
    except fabriclab.UnknownHostError as e:
        print(e)
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "FabriclabError",
    "FabricError",
    "UnknownHostError",
    "InvalidArgumentError",
    "ParseError",
    "ArgumentTypeError",
    "MissingFileError",
    "DirectoryGivenError",
    "FilePermissionError",
    "RunFailedError",
    "DeadlockError",
    "TransportRetryError",
    "AuditError",
]


class FabriclabError(ValueError):
    """Base class of every error reported by fabriclab."""

    #: The core's name of the error kind ("InvalidFabric", "UnknownHost",
    #: "InvalidArgument", "Parse", "Deadlock" or "TransportRetry"); None on
    #: the base classes.
    kind: str | None = None


class FabricError(FabriclabError):
    """The fabric description is impossible or inconsistent (zero hosts, a
    negative link rate, a link to a node that does not exist, ...)."""

    kind = "InvalidFabric"


class UnknownHostError(FabriclabError):
    """A host (or node) name that the fabric does not have."""

    kind = "UnknownHost"


class InvalidArgumentError(FabriclabError):
    """An option or argument value out of its domain (unknown test or preset,
    an MTU that RoCE does not have, too few iterations, ...)."""

    kind = "InvalidArgument"


class ArgumentTypeError(InvalidArgumentError, TypeError):
    """An argument of the wrong type (a bool where a count goes, a number
    where host names go, ...). Also a :class:`TypeError`, as Python's own
    type errors are, so that either ``except`` clause catches it."""


class MissingFileError(InvalidArgumentError, FileNotFoundError):
    """A file the user named (fabric, scenario, lab) does not exist. Also a
    :class:`FileNotFoundError`, so that either ``except`` clause catches
    it; ``filename`` is the path."""


class DirectoryGivenError(InvalidArgumentError, IsADirectoryError):
    """A folder given where a file goes (also an :class:`IsADirectoryError`)."""


class FilePermissionError(InvalidArgumentError, PermissionError):
    """A file the user named that cannot be read (also a
    :class:`PermissionError`)."""


class ParseError(FabriclabError):
    """A fabric or scenario file that is not valid TOML, or has unknown or
    mistyped keys."""

    kind = "Parse"


class RunFailedError(FabriclabError):
    """The run itself failed (not its input): the simulated fabric did what
    makes a real job fail. The command line prints :attr:`tool_output`, then
    ``fabriclab: error: MESSAGE``, and exits with status 3."""

    #: What the real tool prints on this failure (perftest's or the MPI
    #: library's error lines), or "".
    tool_output: str = ""


class DeadlockError(RunFailedError):
    """The simulated fabric fell into a PFC deadlock (a cycle of switch
    queues pausing each other; ``[pfc.deadlock]`` in the fabric). The
    message names the priority, the time and the ports of the cycle."""

    kind = "Deadlock"


class TransportRetryError(RunFailedError):
    """An RC queue pair exhausted its retry count (``nic.retry_cnt``
    timeouts in a row: its peer was unreachable, e.g. cut off by a link
    failure) and its work completed in error, status 12, "transport retry
    counter exceeded". The message names the QP, the hosts and the time;
    :attr:`tool_output` holds perftest's or the MPI library's error lines.

    :attr:`ports` and :attr:`qps` hold the counters of the run that failed
    as they stood when the QP failed (the ``lost_packets`` column says
    where packets died), and :attr:`ports_table` / :attr:`qps_table` the
    tables ``--counters`` prints (perftest, the MPI tools, fio); None
    where the error did not come from a run."""

    kind = "TransportRetry"
    #: The counters as the core sent them (JSON), or "".
    counters_json: str = ""

    def _counters(self) -> dict[str, Any] | None:
        """The counters, parsed once (the JSON may hold a row per port of a
        large fabric)."""
        if not self.counters_json:
            return None
        parsed = self.__dict__.get("_parsed")
        if parsed is None or parsed[0] is not self.counters_json:
            import json

            parsed = (self.counters_json, json.loads(self.counters_json))
            self.__dict__["_parsed"] = parsed
        c: dict[str, Any] = parsed[1]
        return c

    @property
    def ports(self) -> Any:
        """Port counters of the failed run (a DataFrame as
        :attr:`fabriclab.Result.ports`), or None."""
        c = self._counters()
        if c is None:
            return None
        from ._tables import frame
        from .api import PORT_COLUMNS

        return frame(c["ports"], PORT_COLUMNS)

    @property
    def qps(self) -> Any:
        """QP counters of the failed run (as :attr:`fabriclab.Result.qps`),
        or None."""
        c = self._counters()
        if c is None:
            return None
        from ._tables import frame
        from .api import QP_COLUMNS

        return frame(c["qps"], QP_COLUMNS)

    @property
    def ports_table(self) -> str | None:
        """The port counter table as ``--counters`` prints it, or None."""
        c = self._counters()
        return None if c is None else c["ports_table"]

    @property
    def qps_table(self) -> str | None:
        """The QP counter table as ``--counters`` prints it, or None."""
        c = self._counters()
        return None if c is None else c["qps_table"]


class AuditError(FabriclabError):
    """The conservation audit (``FABRICLAB_AUDIT=1``, ``fabriclab --audit``)
    found a run whose books do not balance: bytes into a switch that did not
    come out, were not dropped, lost or queued; a lossless drop that neither
    the PFC watchdog nor a link failure explains; a message neither
    completed, failed nor in flight; unmatched XOFF/XON. The message names
    the switch, priority or QP and the numbers. The command line exits
    with status 4."""

    kind = "Audit"


class CheckPassed(Exception):
    """Not an error: what a tool's call raises in check-only mode
    (:func:`fabriclab.precheck.check_call`) when its input is valid, in
    place of a result (nothing was simulated). Deliberately not a
    :class:`FabriclabError`, so that no handler of errors takes it for one."""
