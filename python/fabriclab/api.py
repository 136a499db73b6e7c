"""The Python API of fabriclab: fabrics, perftest, flows and benchmarks.

Everything here is a thin layer over the Rust core (:mod:`fabriclab._core`):
it turns Python arguments into the core's JSON options, runs the simulation
(with the GIL released) and turns the JSON it returns into pandas
DataFrames. The core checks every value and words the errors; this module
only checks Python types the JSON form cannot carry.

A *fabric* argument is a :class:`Fabric`, the name of a preset (see
:func:`presets`) or the path of a fabric TOML file (a ``str`` ending in
``.toml`` or containing a path separator, or any :class:`os.PathLike`).
The other tool modules turn a fabric argument into the core's text with
:func:`fabric_arg` (:func:`with_backend`, :func:`as_fabric`,
:func:`resolve_fabric`) and a list of flows with :func:`flow_list`: the
one place each is done. Type checks of single arguments are in
:mod:`fabriclab._checks`.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Union

import pandas as pd

from . import _core
from ._checks import as_bool, as_float, as_int, as_list, as_path, as_seed, as_str, dumps, read_file
from ._tables import frame
from .errors import ArgumentTypeError, FabriclabError, InvalidArgumentError, ParseError
from .progress import ProgressArg, progress_callback
from .results import Result, run_stoppable

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "Fabric",
    "Flow",
    "Result",
    "fabric_label",
    "FabricLike",
    "presets",
    "preset_toml",
    "perftest",
    "flows",
    "bench",
    "TESTS",
    "BW_COLUMNS",
    "LAT_COLUMNS",
]

#: The perftest programs the simulator runs.
TESTS = (
    "ib_write_bw",
    "ib_write_lat",
    "ib_read_bw",
    "ib_read_lat",
    "ib_send_bw",
    "ib_send_lat",
)

#: Columns of the DataFrame :func:`perftest` returns for bandwidth tests.
#: ``bw_peak`` and ``bw_avg`` are in perftest's report unit: MiB/s (its
#: "MB/sec"), or Gb/s with ``report_gbits``; ``df.attrs["bw_unit"]`` says
#: which ("MiB/s" or "Gb/s"). ``bw_avg_gbps`` is Gb/s either way.
BW_COLUMNS = ["bytes", "iters", "bw_peak", "bw_avg", "msg_rate_mpps", "bw_avg_gbps"]
#: Columns of the DataFrame :func:`perftest` returns for latency tests.
LAT_COLUMNS = [
    "bytes",
    "iters",
    "t_min_us",
    "t_max_us",
    "t_typical_us",
    "t_avg_us",
    "t_stdev_us",
    "p99_us",
    "p999_us",
]
#: Columns of the port counters.
PORT_COLUMNS = [
    "node",
    "port",
    "peer",
    "rate_gbps",
    "tx_bytes",
    "tx_packets",
    "rx_bytes",
    "rx_packets",
    "drops",
    "drop_bytes",
    "drops_by_prio",
    "ecn_marks",
    "pause_tx",
    "pause_starts",
    "pause_rx",
    "paused_ps",
    "peak_queue_bytes",
    "peak_buffer_bytes",
    "lost_packets",
    "lost_bytes",
    "wd_storms",
    "wd_restores",
    "wd_drops",
]
#: Columns of the QP counters.
QP_COLUMNS = [
    "qp",
    "host",
    "peer",
    "prio",
    "rate_gbps",
    "tx_payload_bytes",
    "tx_packets",
    "acked_bytes",
    "retx_packets",
    "timeouts",
    "naks_rx",
    "cnps_rx",
    "cnps_tx",
    "rx_payload_bytes",
    "rx_discarded",
    "messages_done",
]
#: Columns of a flows result's flow table (the last one is derived here).
FLOW_COLUMNS = [
    "src",
    "dst",
    "bytes",
    "start_ps",
    "delivered_ps",
    "completed_ps",
    "messages",
    "failed_ps",
    "error",
    "fct_us",
]
#: Columns of the telemetry samples.
SAMPLE_COLUMNS = ["time_ps", "qp", "acked_bytes", "rate_bps"]
#: Columns of the port telemetry samples: the egress of ``node``'s port
#: ``port`` (towards ``peer``; parallel links differ by ``port``) at
#: ``time_ps``: bytes queued (all priorities), wire bytes sent so far, and
#: whether PFC holds any of its priorities paused.
PORT_SAMPLE_COLUMNS = ["time_ps", "node", "port", "peer", "queue_bytes", "tx_bytes", "paused"]
#: Columns of a fabric's link table.
LINK_COLUMNS = ["a", "b", "gbps", "delay_ns"]


# --------------------------------------------------------------------------
# Fabrics


def presets() -> list[str]:
    """Names of the built-in fabric presets."""
    names: list[str] = json.loads(_core.presets())
    return names


def preset_toml(name: str) -> str:
    """The TOML text of preset ``name``, with its calibration comments."""
    return _core.preset_toml(as_str("name", name))


def _read_fabric_file(path: str | os.PathLike[str]) -> str:
    """A fabric file's text; a file that is not TOML is a ``ParseError``
    naming the file (the core, which gets only the text, cannot)."""
    path = as_path("fabric file", path)
    try:
        text = read_file(path).decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ParseError(f"fabric file {path}: not a UTF-8 text file ({e.reason})") from None
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ParseError(f"fabric file {os.fspath(path)}: not valid TOML: {e}") from None
    try:  # its values and graph, in an error that names the file
        _core.fabric_check(text)
    except FabriclabError as e:
        msg = str(e).removeprefix("fabric TOML: ")
        raise type(e)(f"fabric file {os.fspath(path)}: {msg}") from None
    return text


def _looks_like_path(s: str) -> bool:
    return s.endswith(".toml") or "/" in s or os.sep in s or os.path.isfile(s)


def resolve_fabric(fabric: FabricLike, base_dir: str | None = None) -> tuple[str, str | None]:
    """What the core takes for a fabric (its TOML text: a preset's from
    ``_core.preset_toml``), and the file it was read from. Relative paths
    are taken from ``base_dir`` when given (scenario files)."""
    if isinstance(fabric, Fabric):
        return fabric.toml, fabric.path
    if isinstance(fabric, os.PathLike):
        path = os.fspath(fabric)
    elif isinstance(fabric, str):
        if fabric in presets():
            return _core.preset_toml(fabric), None
        if "\n" in fabric:  # TOML text (Fabric.from_toml is the documented way)
            return fabric, None
        path = fabric
        rel = os.path.join(base_dir, path) if base_dir is not None else path
        if not (_looks_like_path(path) or os.path.isfile(rel)):
            # Neither a preset, nor text, nor a file: the core's error
            # names the presets there are.
            return _core.preset_toml(fabric), None
    else:
        raise ArgumentTypeError(
            "fabric must be a Fabric, a preset name or the path of a fabric TOML file, "
            f"not {type(fabric).__name__}"
        )
    if base_dir is not None:
        path = os.path.join(base_dir, path)
    return _read_fabric_file(path), path


#: The simulation backends (``[sim] backend`` in a fabric file).
BACKENDS = ("packet", "flow")


def fabric_arg(fabric: FabricLike, base_dir: str | None = None, backend: str | None = None) -> str:
    """What the core takes for a fabric: its TOML text, with
    ``[sim] backend`` replaced when ``backend`` is given ("packet" or
    "flow"; the core words the error for anything else)."""
    arg = resolve_fabric(fabric, base_dir)[0]
    if backend is None:
        return arg
    return _core.fabric_with_backend(arg, as_str("backend", backend))


FabricLike = Union["Fabric", str, "os.PathLike[str]"]


def with_backend(fabric: FabricLike, backend: str | None) -> FabricLike:
    """``fabric`` as it is, or as TOML text with ``[sim] backend`` set
    (what every tool's ``backend=`` argument does)."""
    return fabric if backend is None else fabric_arg(fabric, backend=backend)


class Fabric:
    """A validated fabric: its hosts, switches and links.

    Make one with :meth:`preset`, :meth:`from_toml` or :meth:`load`; pass it
    (or just a preset name or file path) wherever a ``fabric`` is taken.
    """

    def __init__(self, source: str, *, path: str | None = None, _preset: bool | None = None):
        """``source`` is a preset name or fabric TOML text (prefer the class
        methods, which say which): a single word is a preset name (an
        unknown one gets the list of presets), anything else TOML."""
        as_str("source", source)
        if _preset is None:
            _preset = source in presets() or not any(c in source for c in "\n=[")
        #: The TOML the fabric was made from (a preset's comes with its
        #: calibration comments).
        self.toml: str = _core.preset_toml(source) if _preset else source
        info = json.loads(_core.fabric_info(self.toml))
        #: The fabric's name.
        self.name: str = info["name"]
        #: Free text: what the fabric is and where its numbers come from.
        self.description: str = info["description"]
        #: Host names, in order (``h0``, ``h1``, ... for leaf-spine).
        self.hosts: list[str] = list(info["hosts"])
        #: Switch names.
        self.switches: list[str] = list(info["switches"])
        #: Links: columns a, b, gbps, delay_ns.
        self.links: pd.DataFrame = frame(info["links"], LINK_COLUMNS)
        #: Every setting of the fabric, defaults filled in, as TOML.
        self.normalized_toml: str = info["toml"]
        #: The DCQCN parameters in force (the ``[cc]`` preset with its
        #: overrides), or None where RoCE QPs do not run DCQCN (InfiniBand,
        #: iWARP, ``[cc] algorithm = "none"``, the flow backend).
        self.dcqcn: dict[str, Any] | None = info["dcqcn"]
        #: The backend its runs use (``[sim] backend``): "packet" or "flow".
        self.backend: str = info["backend"]
        #: The file this fabric was loaded from, if any.
        self.path: str | None = path
        self.is_preset: bool = _preset

    @classmethod
    def preset(cls, name: str) -> Fabric:
        """A built-in preset (see :func:`presets`)."""
        as_str("name", name)
        return cls(name, _preset=True)  # the core's error for an unknown name

    @classmethod
    def from_toml(cls, text: str) -> Fabric:
        """A fabric from the text of a fabric TOML file."""
        return cls(as_str("text", text), _preset=False)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Fabric:
        """A fabric from a TOML file (``FileNotFoundError`` if it is absent)."""
        text = _read_fabric_file(path)
        return cls(text, path=os.fspath(path), _preset=False)

    def __repr__(self) -> str:
        return (
            f"<Fabric {self.name or '(unnamed)'!r}: {len(self.hosts)} hosts, "
            f"{len(self.switches)} switches, {len(self.links)} links>"
        )


def as_fabric(fabric: FabricLike, base_dir: str | None = None) -> Fabric:
    """A :class:`Fabric` for any fabric argument."""
    if isinstance(fabric, Fabric):
        return fabric
    if isinstance(fabric, str) and fabric in presets():
        return Fabric.preset(fabric)
    text, path = resolve_fabric(fabric, base_dir)
    return Fabric(text, path=path, _preset=False)


def fabric_label(fabric: FabricLike) -> str | None:
    """What a result calls its fabric (:attr:`Result.fabric`): a
    :class:`Fabric`'s or a preset's name, a file's path, or the name in
    TOML text (None if it has none)."""
    if isinstance(fabric, Fabric):
        return fabric.name or fabric.path
    if isinstance(fabric, os.PathLike):
        return os.fspath(fabric)
    if isinstance(fabric, str) and "\n" in fabric:
        try:
            name: str = json.loads(_core.fabric_info(fabric))["name"]
        except FabriclabError:  # the run words the error
            return None
        return name or None
    return fabric if isinstance(fabric, str) else None


# --------------------------------------------------------------------------
# Flows


@dataclass
class Flow:
    """One message (or, with ``repeat``, a background stream of them) from
    ``src`` to ``dst``."""

    src: str
    dst: str
    bytes: int
    #: "write", "read" (dst's data pulled to src) or "send".
    op: str = "write"
    #: When the first message is posted, us.
    start_us: float = 0.0
    #: Traffic priority 0-7 (default: the fabric's data priority).
    priority: int | None = None
    #: Re-post the message as soon as it completes, for ever (background).
    repeat: bool = False
    #: Pin the data's path through this switch (ECMP fabrics): the QP's UDP
    #: source port is the first whose ECMP hash takes it there.
    via: str | None = None
    #: Pin the other direction's path (the data's ACKs and CNPs; a READ's
    #: request) through this switch, likewise.
    return_via: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The core's JSON form."""
        d: dict[str, Any] = {
            "src": as_str("src", self.src),
            "dst": as_str("dst", self.dst),
            "bytes": as_int("bytes", self.bytes),
            "op": as_str("op", self.op),
            "start_us": as_float("start_us", self.start_us),
            "repeat": as_bool("repeat", self.repeat),
        }
        if self.priority is not None:
            d["priority"] = as_int("priority", self.priority)
        if self.via is not None:
            d["via"] = as_str("via", self.via)
        if self.return_via is not None:
            d["return_via"] = as_str("return_via", self.return_via)
        return d


def flow_list(name: str, items: Iterable[Flow | Mapping[str, Any]] | None) -> list[Any]:
    """Flows (:class:`Flow` objects or dicts) as the core's JSON objects;
    None is none."""
    if items is None:
        return []
    if isinstance(items, Flow):
        raise ArgumentTypeError(f"{name} must be a list of flows (Flow objects or dicts)")
    out: list[Any] = []
    for f in as_list(name, items, "flows (Flow objects or dicts)"):
        if isinstance(f, Flow):
            out.append(f.to_dict())
        elif isinstance(f, Mapping):
            out.append(dict(f))
        else:
            raise ArgumentTypeError(f"each of {name} must be a Flow or a dict, not {type(f).__name__}")
    return out


def flows(
    flows: Iterable[Flow | Mapping[str, Any]],
    fabric: FabricLike = "heps",
    seed: int = 1,
    sample_us: float | None = None,
    limit_us: float | None = None,
    backend: str | None = None,
    progress: ProgressArg = False,
) -> Result:
    """Run a set of flows (each a :class:`Flow` or a dict with the same keys)
    on ``fabric`` until they complete (or ``limit_us`` of simulated time).
    ``progress`` (True: a bar or lines on stderr; or a callable) reports the
    flows completed as the run goes.

    ``sample_us`` turns on telemetry every that many microseconds: per QP
    (``samples``: bytes acknowledged and received, current rate) and per
    port (``port_samples``: queue depth, bytes sent, PFC pause state).

    Returns a :class:`fabriclab.Result` with ``tool="flows"``: ``df`` has
    one row per flow (:data:`FLOW_COLUMNS`: src, dst, bytes, start_ps,
    delivered_ps, completed_ps, messages, failed_ps and error, when its QP
    ran out of retries: the time and "transport retry counter exceeded";
    fct_us, completion minus start in us, NaN if it did not complete);
    ``ports`` and ``qps`` the counters, ``samples`` and ``port_samples``
    the telemetry (empty unless ``sample_us`` was given), ``outcome``
    ("Finished", "Drained", "TimeLimit", "Stalled", "Interrupted" or
    "Deadlock"), ``sim_time_us``, ``events``, ``ports_table``; no
    ``text`` (:meth:`Result.summary` tabulates the flows). ``extras``:
    ``deadlocks`` (PFC deadlocks found, each a dict: time_ps, priority,
    paused_since_ps and ports, the egress queues of the cycle as node,
    port, peer), ``deadlock_error`` (with outcome "Deadlock": the message
    the command line fails with), ``stall_error`` (with outcome "Stalled"
    and flows unfinished: why, e.g. a host's own link down; the command
    line fails with it), ``notes`` (lines about what the run did that may
    not be meant, such as lossless frames dropped when PFC headroom
    overflowed; the command line prints them), ``qp_failures`` (RC QPs that exhausted
    their retries: time_ps, qp, host, peer, retries, failed_wrs, and cause:
    why the peer stopped answering, as far as the fabric can tell) and
    ``flow_stats`` (the flow backend's figures, or None).

    Stopped by Ctrl-C, it raises ``KeyboardInterrupt`` with ``result``:
    this Result as the run stood (outcome "Interrupted"; the flows not
    done have no completion time).
    """
    label = fabric_label(fabric)
    fabric = with_backend(fabric, backend)
    fl = flow_list("flows", flows)
    if not fl:
        # Nothing to run: the run would end at once, "Drained", with an
        # empty table (a bad-input hunt).
        raise InvalidArgumentError("flows: give at least one flow, e.g. Flow('h0', 'h4', 1 << 20)")
    args = (
        fabric_arg(fabric),
        dumps(fl),
        as_seed(seed),
        None if sample_us is None else as_float("sample_us", sample_us),
        None if limit_us is None else as_float("limit_us", limit_us),
        progress_callback("flows", progress),
    )
    # Stopped (Ctrl-C), the interrupt carries the flows as they stood.
    return run_stoppable(lambda: _core.flows(*args), lambda out: _flows_result(out, label))


def _flows_result(out: dict[str, Any], label: str | None) -> Result:
    fdf = frame(out["flows"], FLOW_COLUMNS[:-1])
    # A time or NaN (not None), as sweeps' tables have it.
    fdf["failed_ps"] = fdf["failed_ps"].astype("float64")
    fdf["fct_us"] = (fdf["completed_ps"].astype("float64") - fdf["start_ps"].astype("float64")) / 1e6
    return Result(
        "flows",
        fdf,
        backend=out["backend"],
        fabric=label,
        ports=frame(out["ports"], PORT_COLUMNS),
        qps=frame(out["qps"], QP_COLUMNS),
        ports_table=out["ports_table"],
        samples=frame(out["samples"], SAMPLE_COLUMNS),
        port_samples=frame(out["port_samples"], PORT_SAMPLE_COLUMNS),
        outcome=out["outcome"],
        sim_time_us=out["sim_time_ps"] / 1e6,
        events=out["events"],
        extras={
            "deadlocks": out["deadlocks"],
            "deadlock_error": out["deadlock_error"],
            "stall_error": out["stall_error"],
            "notes": out["notes"],
            "qp_failures": out["qp_failures"],
            "flow_stats": out["flow_stats"],
        },
    )


# --------------------------------------------------------------------------
# perftest


def perftest_options(
    test: str,
    client: str = "h0",
    server: str = "h1",
    *,
    size: int | None = None,
    all_sizes: bool = False,
    iters: int | None = None,
    tx_depth: int | None = None,
    bidirectional: bool = False,
    duration_s: float | None = None,
    mtu: int | None = None,
    report_gbits: bool = False,
    qps: int = 1,
    cq_mod: int | None = None,
    background: Iterable[Flow | Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The core's option object for a perftest run (type-checked)."""
    opts: dict[str, Any] = {
        "test": as_str("test", test),
        "client": as_str("client", client),
        "server": as_str("server", server),
        "all_sizes": as_bool("all_sizes", all_sizes),
        "bidirectional": as_bool("bidirectional", bidirectional),
        "report_gbits": as_bool("report_gbits", report_gbits),
        "qps": as_int("qps", qps),
    }
    for name, value in (("size", size), ("iters", iters), ("tx_depth", tx_depth), ("mtu", mtu), ("cq_mod", cq_mod)):
        if value is not None:
            opts[name] = as_int(name, value)
    if duration_s is not None:
        opts["duration_s"] = as_float("duration_s", duration_s)
    bg = flow_list("background", background)
    if bg:
        opts["background"] = bg
    return opts


def _run_perftest(
    fabric: FabricLike, opts: Mapping[str, Any], seed: int, label: str | None = None, progress: ProgressArg = False
) -> Result:
    return run_stoppable(
        lambda: _core.perftest(
            fabric_arg(fabric), dumps(dict(opts)), as_seed(seed), progress_callback("perftest", progress)
        ),
        lambda out: _perftest_result(out, label),
    )


def _perftest_result(out: dict[str, Any], label: str | None) -> Result:
    rep = out["report"]
    bw = out["test"].endswith("_bw")
    df = frame(rep["bw"], BW_COLUMNS) if bw else frame(rep["lat"], LAT_COLUMNS)
    res = Result(
        "perftest",
        df,
        backend=out["backend"],
        fabric=label,
        text=out["text"],
        ports=frame(rep["ports"], PORT_COLUMNS),
        qps=frame(rep["qps"], QP_COLUMNS),
        ports_table=out["ports_table"],
        outcome=rep["outcome"],
        sim_time_us=rep["sim_time_ps"] / 1e6,
        events=rep["events"],
        extras={
            "test": out["test"],
            "out_json": out["out_json"],
            "qps_table": out["qps_table"],
            "options": rep["options"],
            "mtu": rep["mtu"],
            "tx_depth": rep["tx_depth"],
            "iters": rep["iters"],
        },
    )
    if bw:  # bw_peak and bw_avg are in the unit perftest reports, which the columns' names do not say
        res.df.attrs["bw_unit"] = "Gb/s" if rep["options"]["report_gbits"] else "MiB/s"
    return res


def perftest(
    test: str,
    client: str = "h0",
    server: str = "h1",
    fabric: FabricLike = "heps",
    seed: int = 1,
    *,
    size: int | None = None,
    all_sizes: bool = False,
    iters: int | None = None,
    tx_depth: int | None = None,
    bidirectional: bool = False,
    duration_s: float | None = None,
    mtu: int | None = None,
    report_gbits: bool = False,
    qps: int = 1,
    cq_mod: int | None = None,
    background: Iterable[Flow | Mapping[str, Any]] | None = None,
    backend: str | None = None,
    progress: ProgressArg = False,
) -> Result:
    """Run perftest program ``test`` (``"ib_write_bw"``, ...) from ``client``
    to ``server`` on ``fabric``; the keyword options are perftest's (``size``
    is ``-s``, ``all_sizes`` ``-a``, ``iters`` ``-n``, ``tx_depth`` ``-t``,
    ``bidirectional`` ``-b``, ``duration_s`` ``-D``, ``qps`` ``-q``,
    ``cq_mod`` ``-Q``, ``mtu`` ``--mtu``, ``report_gbits``
    ``--report_gbits``); ``background`` is other traffic during the test
    (:class:`Flow` objects or dicts, usually with ``repeat=True``).
    ``progress`` as :func:`fabriclab.imb`, in iterations (messages
    completed: ``-n`` per QP and direction and per size), or with ``-D``
    in microseconds of simulated time (``-D`` per size).

    Returns a :class:`fabriclab.Result` with ``tool="perftest"``: ``df``
    has one row per message size, the bandwidth columns
    (:data:`BW_COLUMNS`; ``bw_peak`` and ``bw_avg`` in MiB/s, or Gb/s with
    ``report_gbits``, as ``df.attrs["bw_unit"]`` says) or the latency
    columns (:data:`LAT_COLUMNS`);
    ``text`` is perftest's output, ``ports`` and ``qps`` the counters of
    the last size's run, ``outcome``, ``sim_time_us`` and ``events`` the
    run's figures. ``extras``: ``test``, ``out_json`` (its ``--out_json``
    document), ``qps_table``, ``options``, ``mtu``, ``tx_depth``, ``iters``.
    """
    label = fabric_label(fabric)
    fabric = with_backend(fabric, backend)
    opts = perftest_options(
        test,
        client,
        server,
        size=size,
        all_sizes=all_sizes,
        iters=iters,
        tx_depth=tx_depth,
        bidirectional=bidirectional,
        duration_s=duration_s,
        mtu=mtu,
        report_gbits=report_gbits,
        qps=qps,
        cq_mod=cq_mod,
        background=background,
    )
    return _run_perftest(fabric, opts, seed, label, progress)


# --------------------------------------------------------------------------
# Benchmarks


#: The benchmarks of fabrics too large for the packet engine (hours, or
#: tens of GB; allreduce-1k over 10 minutes): they run on the flow backend
#: unless asked otherwise.
FLOW_BENCHES = ("a2a-1024", "perm-64k", "allreduce-1k", "allreduce-16k", "nccl-1024")


def bench(name: str, cc: str = "", progress: ProgressArg = False, backend: str | None = None) -> dict[str, Any]:
    """Run benchmark ``name`` (``"a2a-32"``, ``"a2a-128"``, ``"ns3-hpcc-64"``, ``"a2a-1024"``, ``"perm-64k"``, ``"allreduce-1k"``, ``"allreduce-16k"`` or ``"nccl-1024"``)
    with congestion control ``cc`` (``"none"``, ``"dcqcn"`` or ``""`` for the
    benchmark's default) on ``backend`` (``"packet"`` or ``"flow"``; by
    default ``"flow"`` for the scale benchmarks of :data:`FLOW_BENCHES`,
    ``"packet"`` for the others) and return its figures (wall_s,
    events_per_s, ...). With ``progress``, progress lines go to stderr."""
    if backend is None:
        backend = "flow" if name in FLOW_BENCHES else "packet"
    figures: dict[str, Any] = json.loads(
        _core.bench(as_str("name", name), as_str("cc", cc), progress_callback("bench", progress), as_str("backend", backend))
    )
    return figures

