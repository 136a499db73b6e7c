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

__all__ = [
    "FabriclabError",
    "FabricError",
    "UnknownHostError",
    "InvalidArgumentError",
    "ParseError",
    "DeadlockError",
]


class FabriclabError(ValueError):
    """Base class of every error reported by fabriclab."""

    #: The core's name of the error kind ("InvalidFabric", "UnknownHost",
    #: "InvalidArgument", "Parse" or "Deadlock"); None on the base class.
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


class ParseError(FabriclabError):
    """A fabric or scenario file that is not valid TOML, or has unknown or
    mistyped keys."""

    kind = "Parse"


class DeadlockError(FabriclabError):
    """The run failed: the simulated fabric fell into a PFC deadlock (a cycle
    of switch queues pausing each other; ``[pfc.deadlock]`` in the fabric).
    The message names the priority, the time and the ports of the cycle.
    Not an input error: the command line exits with status 3."""

    kind = "Deadlock"
