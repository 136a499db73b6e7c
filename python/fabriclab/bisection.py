"""Sandia Cbench's bisection tests on a simulated fabric: ``rotate``
(pairwise bandwidth, 10 x 8 MiB ``MPI_Ssend`` per pair, best of 3) and
``rotate_latency`` (10 000 zero-byte round trips per pair), over every
bisection of the job into a lower and an upper half (np/2 rotations, all
pairs of a rotation at once).

A :class:`fabriclab.Result` whose ``df`` has one row per pair and
rotation; ``res.text`` is Cbench's own output and
``res.extras["rotations"]`` its per-rotation lines::

    >>> import fabriclab
    >>> res = fabriclab.cbench("rotate_latency", np=4, fabric="sandia-iwarp",
    ...                        iterations=100)
    >>> list(res.df.columns[:4])
    ['rotation', 'rank', 'peer', 'host']
    >>> print(res.text)                  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from . import _core
from ._checks import as_int, as_seed, as_str, dumps
from ._tables import frame
from .api import FabricLike, Flow, fabric_arg, fabric_label, with_backend
from .errors import InvalidArgumentError
from .mpi import add_extras, add_job, core_options, lowered, mpi_result
from .progress import ProgressArg, progress_callback
from .results import Result, run_stoppable

__all__ = ["cbench", "CBENCH_TESTS", "CBENCH_COLUMNS", "CBENCH_ROTATION_COLUMNS"]

#: The Cbench programs the simulator runs.
CBENCH_TESTS = ("rotate", "rotate_latency")
#: Columns of :func:`cbench`'s DataFrame (``value`` is MB/s for rotate, us
#: for rotate_latency, as Cbench prints it).
CBENCH_COLUMNS = ["rotation", "rank", "peer", "host", "peer_host", "time_us", "value"]
#: Columns of ``res.extras["rotations"]``.
CBENCH_ROTATION_COLUMNS = ["rotation", "min", "max", "ave", "aggregate", "aggregate_floor"]


def cbench(
    test: str = "rotate",
    np: int = 2,
    fabric: FabricLike = "sandia-iwarp",
    seed: int = 1,
    *,
    ppn: int | None = None,
    hosts: Sequence[str] | str | None = None,
    placement: str = "block",
    bytes: int | None = None,
    iterations: int | None = None,
    tests: int | None = None,
    rotations: int | None = None,
    background: Iterable[Flow | Mapping[str, Any]] | None = None,
    background_iperf: Iterable[Mapping[str, Any]] | None = None,
    telemetry_us: float | None = None,
    progress: ProgressArg = False,
    backend: str | None = None,
) -> Result:
    """Run Cbench ``test`` (``"rotate"`` or ``"rotate_latency"``) with
    ``np`` ranks on ``fabric`` (an odd ``np`` leaves the last rank out, as
    Cbench does). Cbench compiles its constants in; here ``bytes``
    (8 MiB / 0), ``iterations`` (10 / 10000) and ``tests`` (3 / 1) override
    them, and ``rotations`` runs only the first that many bisections (the
    simulation budget of a large job; default all np/2). Placement,
    ``background``, ``background_iperf``, ``telemetry_us`` and ``progress``
    as :func:`fabriclab.imb`.

    Returns a :class:`fabriclab.Result` with ``tool="cbench"``: ``df`` has
    one row per (rotation, pair) with :data:`CBENCH_COLUMNS`; ``text`` is
    Cbench's output; counters, telemetry and figures as
    :func:`fabriclab.imb`'s; ``extras``: ``rotations`` (a DataFrame of
    :data:`CBENCH_ROTATION_COLUMNS`), ``summary`` (overall min, max,
    average link and average aggregate, rotations_total), ``test``,
    ``mpi``, ``lowered``, ``iperf_text``, ``tcp``.
    """
    label = fabric_label(fabric)
    fabric = with_backend(fabric, backend)
    opts: dict[str, Any] = {"test": as_str("test", test)}
    add_job(opts, np, ppn, hosts, placement)
    for name, value, least in (("bytes", bytes, 0), ("iterations", iterations, 1), ("tests", tests, 1), ("rotations", rotations, 1)):
        if value is not None:
            opts[name] = as_int(name, value)
            if opts[name] < least:
                raise InvalidArgumentError(f"{name} must be at least {least}, got {opts[name]}")
    add_extras(opts, None, None, background, background_iperf, telemetry_us)
    def build(out: dict[str, Any]) -> Result:
        rep = out["report"]
        return mpi_result(
            "cbench",
            frame(rep["pairs"], CBENCH_COLUMNS),
            out,
            label,
            lowered=lowered(out),
            test=rep["test"],
            rotations=frame(rep["rotations"], CBENCH_ROTATION_COLUMNS),
            summary={k: rep[k] for k in ("overall_min", "overall_max", "average_link", "average_aggregate", "rotations_total")},
        )

    return run_stoppable(
        lambda: _core.cbench(fabric_arg(fabric), dumps(core_options(opts)), as_seed(seed), progress_callback("Cbench", progress)),
        build,
    )
