"""GPU workloads: nccl-tests' ``*_perf`` programs on fabrics of GPU servers
(a ``[gpu]`` section, e.g. the ``h100-rail-ib`` and ``h100-rail-roce``
presets), run by the NCCL model of the core (Ring, Tree, NVLS and NVLS-Tree
collectives chosen by NCCL's tuning model, NVLink inside a server, RDMA between servers on the
receiver's rail).

>>> import fabriclab
>>> res = fabriclab.nccl_tests("all_reduce_perf", nodes=2, gpus_per_node=2,
...                            min_bytes=1 << 20, max_bytes=1 << 20, iters=2,
...                            warmup_iters=0)                  # doctest: +SKIP
>>> res.df[["size", "busbw"]]                                 # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from . import _core
from ._checks import as_bool, as_int, as_seed, as_str, dumps, size_bytes
from ._tables import frame
from .api import FabricLike, Flow, fabric_arg, fabric_label, with_backend
from .mpi import add_extras, core_options, lowered, mpi_result
from .progress import ProgressArg, progress_callback
from .results import Result, run_stoppable

__all__ = ["nccl_tests", "NCCL_TESTS", "NCCL_COLUMNS"]

#: nccl-tests programs fabriclab runs (the core's list, one source).
NCCL_TESTS: list[str] = _core.nccl_tests_programs()

#: Columns of :func:`nccl_tests`' DataFrame.
NCCL_COLUMNS = ["size", "count", "time_us", "algbw", "busbw", "wrong", "algo", "channels", "iters"]

def parse_bytes(name: str, value: int | str) -> int:
    """A byte count as nccl-tests reads it: an integer, or with a K, M or G
    suffix in powers of 1024 (``"8G"``)."""
    if isinstance(value, str):
        try:
            return size_bytes(value)
        except ValueError:
            raise _bad(name, value) from None
    return as_int(name, value)


#: nccl-tests' flags for the byte-count arguments (messages name both).
_FLAGS = {"min_bytes": "-b/--minbytes", "max_bytes": "-e/--maxbytes", "step_bytes": "-i/--stepbytes"}


def _bad(name: str, value: Any) -> Exception:
    from .errors import InvalidArgumentError

    shown = f"{_FLAGS[name]} ({name})" if name in _FLAGS else name
    return InvalidArgumentError(f"{shown} must be a byte count like 8, 1M or 8G, got {value!r}")


def nccl_tests(
    test: str = "all_reduce_perf",
    fabric: FabricLike = "h100-rail-ib",
    seed: int = 1,
    *,
    nodes: int = 1,
    gpus_per_node: int | None = None,
    ngpus: int | None = None,
    min_bytes: int | str | None = None,
    max_bytes: int | str | None = None,
    step_factor: int | None = None,
    step_bytes: int | str | None = None,
    iters: int | None = None,
    warmup_iters: int | None = None,
    check: int | None = None,
    datatype: str | None = None,
    op: str | None = None,
    root: int | None = None,
    nccl_algo: str | None = None,
    nccl_proto: str | None = None,
    min_nchannels: int | None = None,
    max_nchannels: int | None = None,
    nccl_pxn_disable: bool | None = None,
    nccl_nvls_enable: bool | None = None,
    max_volume: int | None = None,
    background: Iterable[Flow | Mapping[str, Any]] | None = None,
    background_iperf: Iterable[Mapping[str, Any]] | None = None,
    telemetry_us: float | None = None,
    progress: ProgressArg = False,
    backend: str | None = None,
) -> Result:
    """Run the nccl-tests program ``test`` (``"all_reduce_perf"`` ...,
    :data:`NCCL_TESTS`) on ``nodes`` GPU servers of ``fabric`` with
    ``gpus_per_node`` GPUs each (default: all of a server's). The options
    are nccl-tests' own: ``min_bytes`` ``-b``, ``max_bytes`` ``-e`` (K, M, G
    suffixes accepted), ``step_factor`` ``-f``, ``step_bytes`` ``-i``,
    ``iters`` ``-n``, ``warmup_iters`` ``-w``, ``check`` ``-c``, ``datatype``
    ``-d``, ``op`` ``-o``, ``root`` ``-r``, ``ngpus`` ``-g``; NCCL's
    environment: ``nccl_algo`` (``NCCL_ALGO``: ``"Ring"``, ``"Tree"``,
    ``"NVLS"`` or ``"NVLSTree"``; Tree and NVLSTree for AllReduce only),
    ``nccl_proto`` (``NCCL_PROTO``: ``"LL"``, ``"LL128"``,
    ``"Simple"``), ``min_nchannels`` / ``max_nchannels``, ``nccl_pxn_disable``
    (``NCCL_PXN_DISABLE=1``: each GPU sends through its own NIC, so data
    crosses between rails in the network instead of NVLink),
    ``nccl_nvls_enable`` (``NCCL_NVLS_ENABLE``: False turns NVLink SHARP
    off on servers that have it). ``max_volume``
    is the simulation budget (fewer timed calls where a size would move
    more bytes; 0 keeps ``-n``); ``background``, ``background_iperf`` and
    ``telemetry_us`` as :func:`fabriclab.imb`'s. ``backend`` ``"packet"``
    or ``"flow"``.

    Returns a :class:`fabriclab.Result` with ``tool="nccl-tests"``: ``df``
    has one row per size with :data:`NCCL_COLUMNS` (``algo`` is the
    algorithm/protocol NCCL's cost model chose, ``wrong`` the data check's
    wrong elements or NaN where not checked); ``text`` is nccl-tests'
    output; ``extras["avg_busbw"]`` its "Avg bus bandwidth".
    """
    opts: dict[str, Any] = {"test": as_str("test", test), "nodes": as_int("nodes", nodes)}
    for name, value in (
        ("gpus_per_node", gpus_per_node),
        ("ngpus", ngpus),
        ("step_factor", step_factor),
        ("iters", iters),
        ("warmup_iters", warmup_iters),
        ("check", check),
        ("root", root),
    ):
        if value is not None:
            opts[name] = as_int(name, value)
    for name, nbytes in (("min_bytes", min_bytes), ("max_bytes", max_bytes), ("step_bytes", step_bytes)):
        if nbytes is not None:
            opts[name] = parse_bytes(name, nbytes)
    for name, text in (("datatype", datatype), ("op", op)):
        if text is not None:
            opts[name] = as_str(name, text)
    env: dict[str, Any] = {}
    for name, text in (("algo", nccl_algo), ("proto", nccl_proto)):
        if text is not None:
            env[name] = as_str(f"nccl_{name}", text)
    for name, value in (("min_nchannels", min_nchannels), ("max_nchannels", max_nchannels)):
        if value is not None:
            env[name] = as_int(name, value)
    if nccl_pxn_disable is not None:
        env["pxn_disable"] = as_bool("nccl_pxn_disable", nccl_pxn_disable)
    if nccl_nvls_enable is not None:
        env["nvls_enable"] = as_bool("nccl_nvls_enable", nccl_nvls_enable)
    if env:
        opts["nccl"] = env
    add_extras(opts, None, max_volume, background, background_iperf, telemetry_us)
    opts = core_options(opts)
    # nccl-tests' budget is a field of its own (no MPI library to choose).
    opts.update(opts.pop("tuning", {}))
    label = fabric_label(fabric)
    fabric = with_backend(fabric, backend)

    def build(out: dict[str, Any]) -> Result:
        rep = out["report"]
        df = frame(rep["rows"], NCCL_COLUMNS)
        # One dtype whatever was checked: float, NaN where not checked
        # (it was int64, float64 or object with None by the sizes asked).
        df["wrong"] = pd.to_numeric(df["wrong"], errors="coerce").astype("float64")
        return mpi_result(
            "nccl-tests",
            df,
            out,
            label,
            lowered=lowered(out),
            test=rep["test"],
            avg_busbw=rep["avg_busbw"],
            nranks=rep["nranks"],
        )

    return run_stoppable(
        lambda: _core.nccl_tests(fabric_arg(fabric), dumps(opts), as_seed(seed), progress_callback("nccl-tests", progress)),
        build,
    )
