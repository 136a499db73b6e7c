"""MPI benchmarks on a simulated fabric: Intel MPI Benchmarks and OSU.

Both run a real MPI model in the Rust core (eager and rendezvous
protocols over RoCE queue pairs, shared memory inside a host, Open MPI's
or MPICH's collective algorithms chosen by their selection rules) and
return a :class:`fabriclab.Result` whose ``df`` has one row per message
size; ``res.text`` is the benchmark's own text output, byte for byte in
its format::

    >>> import fabriclab
    >>> res = fabriclab.imb(["Allreduce"], np=8, fabric="eantc-hpc",
    ...                     msglog=(0, 10), npmin=8, iters=50)
    >>> list(res.df.columns[:6])
    ['bench', 'np', 'bytes', 'reps', 't_min_us', 't_max_us']
    >>> print(res.text)                  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from . import _core
from ._checks import SIZE_HELP, as_bool, as_float, as_int, as_list, as_mapping, as_seed, as_str, dumps, size_bytes
from ._tables import frame
from .api import (
    PORT_COLUMNS,
    PORT_SAMPLE_COLUMNS,
    QP_COLUMNS,
    FabricLike,
    Flow,
    fabric_arg,
    fabric_label,
    flow_list,
    with_backend,
)
from .errors import InvalidArgumentError
from .progress import ProgressArg, progress_callback
from .results import Result, run_stoppable
from .storage import parse_hosts
from .tcp import iperf_options

__all__ = ["imb", "osu", "IMB_BENCHMARKS", "OSU_TESTS", "IMB_COLUMNS", "OSU_COLUMNS", "MPI_COUNTER_KEYS"]

#: IMB-MPI1 benchmarks the simulator runs, in IMB's order.
IMB_BENCHMARKS = (
    "PingPong",
    "PingPing",
    "Sendrecv",
    "Exchange",
    "Allreduce",
    "Reduce",
    "Reduce_scatter",
    "Allgather",
    "Allgatherv",
    "Gather",
    "Scatter",
    "Alltoall",
    "Bcast",
    "Barrier",
)
#: OSU programs the simulator runs.
OSU_TESTS = (
    "osu_latency",
    "osu_bw",
    "osu_bibw",
    "osu_mbw_mr",
    "osu_allreduce",
    "osu_alltoall",
    "osu_allgather",
    "osu_bcast",
    "osu_reduce",
    "osu_gather",
    "osu_scatter",
    "osu_barrier",
)
#: Columns of :func:`imb`'s DataFrame.
IMB_COLUMNS = ["bench", "np", "bytes", "reps", "t_min_us", "t_max_us", "t_avg_us", "mbytes_per_sec", "algorithm"]
#: Columns of :func:`osu`'s DataFrame.
#: OSU's default ``-z`` percentiles (``osu(..., tail_lat=True)``).
OSU_TAIL_PERCENTILES = (50, 90, 99)
OSU_COLUMNS = ["bytes", "avg_us", "min_us", "max_us", "mb_per_s", "msgs_per_s", "iterations", "algorithm"]
#: Keys of the MPI runtime counters in ``res.extras["mpi"]``.
MPI_COUNTER_KEYS = ["eager_msgs", "rndv_msgs", "shm_msgs", "net_bytes", "shm_bytes", "unexpected", "qps"]


#: How the core groups the options every MPI tool shares (``JobSpec``,
#: ``RunEnv`` and ``Tuning`` in the Rust crate). Users give them flat, as
#: keyword arguments and scenario keys; :func:`core_options` nests them, the
#: one place that knows the core's layout.
OPTION_GROUPS: dict[str, tuple[str, ...]] = {
    "job": ("np", "ppn", "hosts", "placement"),
    "env": ("background", "background_iperf", "telemetry_us"),
    "tuning": ("library", "max_volume"),
}


def core_options(opts: Mapping[str, Any]) -> dict[str, Any]:
    """The flat options of an MPI tool as the core reads them: the keys of
    :data:`OPTION_GROUPS` moved into their groups."""
    out = dict(opts)
    for group, keys in OPTION_GROUPS.items():
        nested = {k: out.pop(k) for k in keys if k in out}
        if nested:
            out[group] = nested
    return out


def add_job(opts: dict[str, Any], np: int | None, ppn: int | None, hosts: Sequence[str] | str | None, placement: str | None) -> None:
    """The job's keys, checked (``np`` may be left to the tool: HPL's is
    its largest grid)."""
    if np is not None:
        opts["np"] = as_int("np", np)
    if ppn is not None:
        opts["ppn"] = as_int("ppn", ppn)
    if hosts is not None:
        opts["hosts"] = parse_hosts(hosts)  # ranges like h0-h7
    if placement is not None:
        # mpirun's --map-by names too (slot, node), as the CLI takes them.
        name = as_str("placement", placement).lower().replace("-", "_")
        aliases = {"block": "block", "slot": "block", "round_robin": "round_robin", "node": "round_robin", "rr": "round_robin"}
        if name not in aliases:
            raise InvalidArgumentError(
                f'placement {placement!r} is unknown; use "block" (or "slot") or "round_robin" (or "node", "rr")'
            )
        opts["placement"] = aliases[name]


def add_extras(
    opts: dict[str, Any],
    library: str | None,
    max_volume: int | None,
    background: Iterable[Flow | Mapping[str, Any]] | None,
    background_iperf: Iterable[Mapping[str, Any]] | None,
    telemetry_us: float | None = None,
) -> None:
    """The options IMB and OSU share beyond the job's placement."""
    if telemetry_us is not None:
        opts["telemetry_us"] = as_float("telemetry_us", telemetry_us)
    if library is not None:
        opts["library"] = as_str("library", library)
    if max_volume is not None:
        opts["max_volume"] = as_int("max_volume", max_volume)
    bg = flow_list("background", background)
    if bg:
        opts["background"] = bg
    if background_iperf:
        opts["background_iperf"] = [
            iperf_options(**dict(as_mapping("background_iperf", b)))
            for b in as_list("background_iperf", background_iperf, "iperf option dicts")
        ]


def _pair(name: str, value: Any, max_default: int | None = None) -> list[int]:
    """IMB's ``-msglog`` or OSU's ``-m`` as (MIN, MAX): "MIN:MAX", "MAX"
    (MIN stays the default) or a (MIN, MAX) pair. Given ``max_default``
    (OSU's -m), a string may also leave out either half, as OSU 7's
    set_message_size() reads it: ":MAX" sets the max only (as "MAX" does),
    "MIN:" the min only, the max staying ``max_default``."""
    if isinstance(value, str):
        halves = max_default is not None
        forms = "MIN:MAX, MAX, :MAX or MIN:" if halves else "MIN:MAX or MAX"
        parts = value.split(":")
        if len(parts) == 1:
            parts = ["", parts[0]]  # MAX alone
        elif not halves and not all(parts):
            parts = []  # IMB's -msglog takes both halves or MAX alone
        if len(parts) != 2 or not any(parts):
            raise InvalidArgumentError(f"{name} must look like {forms}, got {value!r}")
        try:
            if name == "msglog":  # powers of two
                lo, hi = (int(p) if p else 0 for p in parts)
            else:  # sizes, with suffixes as the default 1:4M
                lo = size_bytes(parts[0] or "1")
                hi = size_bytes(parts[1]) if parts[1] else int(max_default or 0)
                if not parts[0]:
                    lo = min(lo, hi)  # -m 0 (or :0): the 0-byte message alone
        except ValueError:
            what = "whole numbers (exponents of 2)" if name == "msglog" else SIZE_HELP
            raise InvalidArgumentError(f"{name} must look like {forms}, with {what}, got {value!r}") from None
        if not parts[1] and lo > hi:  # say so, rather than let the core show a max the user never gave
            raise InvalidArgumentError(f"{name} {value!r}: MIN is above the default largest size ({hi} B); give MIN:MAX")
        return [lo, hi]
    pair = as_list(name, value, "two integers (MIN, MAX)")
    if len(pair) != 2:
        raise InvalidArgumentError(f"{name} must be MIN:MAX or a (MIN, MAX) pair, got {value!r}")
    return [as_int(name, pair[0]), as_int(name, pair[1])]


def _osu_max_size(test: str) -> int:
    """OSU's default largest message size for ``test``: 4 MiB point-to-point,
    1 MiB for a collective. The core applies the same defaults when no -m is
    given (tools/osu.rs); "MIN:" needs it here, as the core takes the range
    whole."""
    pt2pt = test.lower().removeprefix("osu_") in ("latency", "bw", "bibw", "mbw_mr")
    return 1 << 22 if pt2pt else 1 << 20


def port_samples_frame(rep: Mapping[str, Any]) -> pd.DataFrame:
    """The report's port telemetry (``telemetry_us``) as a DataFrame of
    :data:`fabriclab.api.PORT_SAMPLE_COLUMNS` (empty without it)."""
    return frame(rep.get("port_samples", []), PORT_SAMPLE_COLUMNS)


def mpi_result(tool: str, df: pd.DataFrame, out: Mapping[str, Any], fabric: str | None, **extras: Any) -> Result:
    """What every MPI tool returns: ``df`` with the tool's text, port and QP
    counters, port samples and the run's figures; in ``extras`` the MPI
    counters (``mpi``), background iperf texts (``iperf_text``) and TCP
    counters (``tcp``, of the first), then ``extras``. The report's
    ``sim_time_us``, ``events`` and ``wall_s`` are the figures unless
    ``extras`` gives them (HPL's, over all tests)."""
    rep = out["report"]
    figures = {k: extras.pop(k, rep.get(k)) for k in ("sim_time_us", "events", "wall_s")}
    return Result(
        tool,
        df,
        backend=out["backend"],
        fabric=fabric,
        text=out["text"],
        ports=frame(rep["ports"], PORT_COLUMNS),
        qps=frame(rep["qps"], QP_COLUMNS),
        ports_table=out["ports_table"],
        port_samples=port_samples_frame(rep),
        **figures,
        extras={
            "mpi": rep["mpi"],
            "iperf_text": out["iperf_text"],
            "notes": out.get("notes", []),
            "tcp": rep["iperf"][0]["tcp"] if rep["iperf"] else [],
            **extras,
        },
    )


def lowered(out: Mapping[str, Any]) -> list[dict[str, Any]]:
    """IMB, OSU and Cbench: the measurements that ran fewer repetitions
    than the tool's own count because of max_volume (label, asked, ran)."""
    return list(out["report"].get("lowered", []))


def lowered_note(res: Result, option: str = "--max-volume") -> str | None:
    """One line saying which measurements the simulation budget ran with
    fewer repetitions than the tool asks (None if none did)."""
    low = res.extras.get("lowered") or []
    if not low:
        return None
    first = low[0]
    return (
        f"fabriclab: note: the simulation budget ({option}, 1 GiB moved per size by default) ran "
        f"{len(low)} measurement(s) with fewer repetitions than the tool's own count, e.g. "
        f"{first['label']}: {first['ran']} of {first['asked']}; where ranks wait on each other from one "
        "repetition to the next (a chain of sends held back by its slowest link, with the time averaged "
        f"over the ranks, as nccl-tests and IMB report it), fewer repetitions can read faster or slower than "
        f"the tool's count would; {option} 0 runs the tool's counts (and compares like with like across backends)"
    )


#: IMB's point-to-point benchmarks, lower-case; each other one runs the
#: collective of its name (Reduce_scatter: reduce_scatter).
_IMB_PT2PT = {"pingpong", "pingping", "sendrecv", "exchange"}


def _unused_algorithms(benchmarks: Iterable[str] | str | None, algorithms: Mapping[str, str]) -> list[str]:
    """The collectives of ``algorithms`` (:func:`imb`'s forced algorithms)
    that IMB ``benchmarks`` (all when None) do not run, so the core ignores
    them. A forced barrier counts as used whenever a collective runs: IMB
    times each collective call between barriers."""
    if benchmarks is None:
        names = list(IMB_BENCHMARKS)
    else:
        names = benchmarks.split() if isinstance(benchmarks, str) else list(benchmarks)
    ran = {b.lower() for b in names} - _IMB_PT2PT
    if ran:
        ran.add("barrier")
    # the core reads collective names case-insensitively, "-" as "_"
    return [c for c in algorithms if c.lower().replace("-", "_") not in ran]


def algorithm_note(benchmarks: Iterable[str] | str | None, algorithms: Mapping[str, str]) -> str | None:
    """One line naming the forced algorithms (``--algorithm``) that applied
    to no benchmark of an IMB run, and the benchmarks that ran (None if
    every one applied). A note, not an error: one list of forced algorithms
    may serve runs of different benchmarks."""
    unused = _unused_algorithms(benchmarks, algorithms)
    if not unused:
        return None
    if benchmarks is None:
        ran = "all"
    else:
        ran = " ".join(benchmarks.split() if isinstance(benchmarks, str) else benchmarks)
    forced = ", ".join(f"{c}={algorithms[c]}" for c in unused)
    return f"fabriclab: note: --algorithm {forced} not used: the run has no {' or '.join(unused)} (benchmarks that ran: {ran})"


def imb(
    benchmarks: Iterable[str] | str | None = None,
    np: int = 2,
    fabric: FabricLike = "eantc-hpc",
    seed: int = 1,
    *,
    ppn: int | None = None,
    hosts: Sequence[str] | str | None = None,
    placement: str = "block",
    msglog: tuple[int, int] | str | None = None,
    npmin: int | None = None,
    iters: int | None = None,
    root_shift: bool = False,
    algorithms: Mapping[str, str] | None = None,
    library: str | None = None,
    max_volume: int | None = None,
    background: Iterable[Flow | Mapping[str, Any]] | None = None,
    background_iperf: Iterable[Mapping[str, Any]] | None = None,
    telemetry_us: float | None = None,
    progress: ProgressArg = False,
    backend: str | None = None,
) -> Result:
    """Run IMB-MPI1 ``benchmarks`` (names like ``"Allreduce"``; all when
    None) with ``np`` ranks on ``fabric``. Options follow IMB and mpirun:
    ``msglog`` is ``-msglog MIN:MAX``, ``npmin`` ``-npmin``, ``iters``
    ``-iter``, ``root_shift`` ``-root_shift on``; ``ppn`` ranks per host,
    ``hosts`` which hosts (default: the first ones), ``placement``
    ``"block"`` or ``"round_robin"``. ``algorithms`` forces an algorithm per
    collective (``{"allreduce": "ring"}``); ``library`` picks the selection
    rules (``"openmpi"`` or ``"mpich"``; default the fabric's).
    ``max_volume`` is the simulator's budget: fewer repetitions where one
    message length would move more bytes than this through the fabric,
    each message counting at least 64 B (default 1 GiB; 0 keeps IMB's counts; the ``reps`` column shows what
    ran, and ``res.extras["lowered"]`` lists each measurement it lowered as
    ``{label, asked, ran}``; the CLI says so on stderr). ``background`` is other traffic during the run (:class:`Flow`
    objects or dicts, usually with ``repeat=True``); ``background_iperf``
    are iperf3 TCP runs beside the job, each a dict of :func:`fabriclab.iperf`'s
    keywords but ``fabric``, ``seed`` and ``backend`` (``{"client": "h2",
    "server": "h7", "bitrate": "20G"}``; checked by
    :func:`fabriclab.tcp.iperf_options`); they stop with the job and their text is in
    ``res.extras["iperf_text"]``, their TCP counters in ``res.extras["tcp"]``.
    ``telemetry_us`` samples every port's queue, bytes sent and PFC state
    every that many microseconds into ``res.port_samples`` (a
    DataFrame of :data:`fabriclab.api.PORT_SAMPLE_COLUMNS`, which
    :func:`fabriclab.dashboard` draws). ``progress``: True draws a progress
    bar (or lines off a terminal), a callable gets each
    :class:`fabriclab.progress.Progress`.

    Returns a :class:`fabriclab.Result` with ``tool="imb"``: ``df`` has
    one row per (benchmark, process count, size) with :data:`IMB_COLUMNS`;
    ``text`` is IMB's output, ``ports`` / ``qps`` the counters,
    ``port_samples`` the telemetry (empty without ``telemetry_us``),
    ``sim_time_us``, ``events``, ``wall_s`` the figures; ``extras``:
    ``mpi`` (the runtime counters, :data:`MPI_COUNTER_KEYS`), ``lowered``,
    ``iperf_text``, ``tcp``.
    """
    label = fabric_label(fabric)
    fabric = with_backend(fabric, backend)
    opts: dict[str, Any] = {}
    if benchmarks is not None:
        if isinstance(benchmarks, str):
            benchmarks = benchmarks.split()
        opts["benchmarks"] = [as_str("benchmarks", b) for b in as_list("benchmarks", benchmarks, "benchmark names")]
    add_job(opts, np, ppn, hosts, placement)
    if msglog is not None:
        opts["msglog"] = _pair("msglog", msglog)
    # The core's option is "iter" (IMB's -iter); the keyword is iters.
    for name, key, value in (("npmin", "npmin", npmin), ("iters", "iter", iters)):
        if value is not None:
            opts[key] = as_int(name, value)
    opts["root_shift"] = as_bool("root_shift", root_shift)
    if algorithms:
        opts["algorithms"] = {
            as_str("algorithms", k): as_str("algorithms", v) for k, v in as_mapping("algorithms", algorithms).items()
        }
    add_extras(opts, library, max_volume, background, background_iperf, telemetry_us)
    def build(out: dict[str, Any]) -> Result:
        rows = [{"bench": s["bench"], "np": s["np"], **row} for s in out["report"]["sections"] for row in s["rows"]]
        return mpi_result("imb", frame(rows, IMB_COLUMNS), out, label, lowered=lowered(out))

    return run_stoppable(
        lambda: _core.imb(fabric_arg(fabric), dumps(core_options(opts)), as_seed(seed), progress_callback("IMB", progress)),
        build,
    )


def osu(
    test: str,
    np: int = 2,
    fabric: FabricLike = "ihep-roce",
    seed: int = 1,
    *,
    ppn: int | None = None,
    hosts: Sequence[str] | str | None = None,
    placement: str = "block",
    sizes: tuple[int, int] | str | None = None,
    iterations: int | None = None,
    warmup: int | None = None,
    full: bool = False,
    algorithm: str | None = None,
    tail_lat: bool | Sequence[int] | None = None,
    library: str | None = None,
    max_volume: int | None = None,
    background: Iterable[Flow | Mapping[str, Any]] | None = None,
    background_iperf: Iterable[Mapping[str, Any]] | None = None,
    telemetry_us: float | None = None,
    progress: ProgressArg = False,
    backend: str | None = None,
) -> Result:
    """Run OSU micro-benchmark ``test`` (``"osu_allreduce"`` or
    ``"allreduce"``, ...) with ``np`` ranks on ``fabric``. ``sizes`` is
    ``-m MIN:MAX`` (or, as OSU takes them, ``"MAX"`` / ``":MAX"`` for the
    largest size only and ``"MIN:"`` for the smallest only; sizes run from
    MIN doubling up to MAX), ``iterations`` ``-i``, ``warmup`` ``-x``, ``full``
    ``-f``; ``tail_lat`` is ``-z`` (osu_latency: ``True`` for OSU's 50th,
    90th and 99th percentiles, or a list of up to 5 whole percentiles);
    placement options
    as :func:`imb`; ``algorithm`` forces the collective's algorithm;
    ``max_volume``, ``background`` and ``progress`` as :func:`imb`.

    Returns a :class:`fabriclab.Result` with ``tool="osu"``: ``df`` has
    one row per size with :data:`OSU_COLUMNS` (and with ``tail_lat`` a
    column ``p50_us``, ``p90_us``, ... per percentile); ``text`` is OSU's
    output; the rest as :func:`imb`'s, and ``extras["test"]``.
    """
    label = fabric_label(fabric)
    fabric = with_backend(fabric, backend)
    opts: dict[str, Any] = {"test": as_str("test", test)}
    add_job(opts, np, ppn, hosts, placement)
    if sizes is not None:
        opts["sizes"] = _pair("sizes", sizes, _osu_max_size(opts["test"]))
    for name, value in (("iterations", iterations), ("warmup", warmup)):
        if value is not None:
            opts[name] = as_int(name, value)
    opts["full"] = as_bool("full", full)
    if algorithm is not None:
        opts["algorithm"] = as_str("algorithm", algorithm)
    if tail_lat is True:
        opts["tail_lat"] = list(OSU_TAIL_PERCENTILES)
    elif tail_lat is not None and tail_lat is not False:
        opts["tail_lat"] = [as_int("tail_lat", p) for p in as_list("tail_lat", tail_lat, "percentiles")]
    add_extras(opts, library, max_volume, background, background_iperf, telemetry_us)
    def build(out: dict[str, Any]) -> Result:
        rows = out["report"]["rows"]
        df = frame([{k: v for k, v in r.items() if k != "tail_us"} for r in rows], OSU_COLUMNS)
        for i, (p, _) in enumerate(rows[0].get("tail_us", []) if rows else []):
            df[f"p{p}_us"] = [r["tail_us"][i][1] for r in rows]
        return mpi_result("osu", df, out, label, lowered=lowered(out), test=out["report"]["test"])

    return run_stoppable(
        lambda: _core.osu(fabric_arg(fabric), dumps(core_options(opts)), as_seed(seed), progress_callback("OSU", progress)),
        build,
    )
