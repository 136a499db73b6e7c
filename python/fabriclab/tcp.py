"""iperf3 over the hosts' TCP on a simulated fabric.

The Rust core runs a Linux-like TCP (CUBIC, NewReno or DCTCP; fast
retransmit, timeouts, delayed ACKs) in the fabric's TCP priority, beside
any RDMA traffic, and iperf3's client on top of it: ``-P`` streams, ``-b``
pacing per stream, ``-t``, ``-i``, ``-l``, ``-C``. The result's ``df``
has one row per stream per interval; ``res.text`` is iperf3's text output
and ``res.extras["json"]`` its ``-J`` document::

    >>> import fabriclab
    >>> res = fabriclab.iperf("h1", "h0", parallel=2, bitrate="20G",
    ...                       duration=0.01, interval=0.002)
    >>> df = res.df
    >>> len(df), sorted(set(df.socket))
    (10, [5, 7])
    >>> round(df.groupby("interval").bits_per_second.sum().mean() / 1e9)
    40
    >>> print(res.text)                  # doctest: +SKIP

Simulated time is costly: the defaults are ``duration=1`` s and
``interval=0.1`` s (iperf3's are 10 and 1), and a second at 100 Gb/s is
about 8 million packets.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from . import _core
from ._checks import as_bool, as_float, as_int, as_seed, as_str, dumps, size_bytes
from ._tables import frame
from .api import PORT_COLUMNS, FabricLike, Flow, fabric_arg, fabric_label, flow_list, with_backend
from .errors import InvalidArgumentError
from .results import Result

__all__ = ["iperf", "iperf_options", "parse_rate", "parse_size", "IPERF_COLUMNS", "TCP_COLUMNS", "CONGESTION"]

#: Congestion controls (``-C``).
CONGESTION = ("reno", "cubic", "dctcp")
#: Columns of :func:`iperf`'s DataFrame (one row per stream per interval).
IPERF_COLUMNS = [
    "interval",
    "socket",
    "start",
    "end",
    "seconds",
    "bytes",
    "bits_per_second",
    "retransmits",
    "snd_cwnd",
    "snd_wnd",
    "rtt",
    "rttvar",
    "pmtu",
]
#: Columns of the TCP connection counters (``res.extras["tcp"]``).
TCP_COLUMNS = [
    "conn",
    "client",
    "server",
    "sport",
    "dport",
    "cc",
    "app_written_bytes",
    "tx_bytes",
    "tx_segments",
    "retx_segments",
    "fast_retransmits",
    "timeouts",
    "acked_bytes",
    "ecn_echoes",
    "ecn_cuts",
    "cwnd_bytes",
    "max_cwnd_bytes",
    "srtt_ns",
    "rttvar_ns",
    "min_rtt_ns",
    "rx_bytes",
    "rx_out_of_order",
    "rx_ce_segments",
]

_RATE = {"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}


def parse_rate(value: Any) -> float:
    """A bitrate in bits/s: a number, or text like ``"20G"``, ``"100M"``,
    ``"1.5g"`` (suffixes K, M, G, T in powers of 1000, as iperf3's ``-b``)."""
    if isinstance(value, str):
        t = value.strip()
        mult = 1.0
        if t and t[-1].lower() in _RATE:
            mult = _RATE[t[-1].lower()]
            t = t[:-1]
        try:
            return float(t) * mult
        except ValueError:
            raise InvalidArgumentError(f"invalid bitrate {value!r}: write e.g. 20G, 100M or 0 for unlimited") from None
    return as_float("bitrate", value)


def parse_size(value: Any, name: str = "length") -> int:
    """A size in bytes: an integer, or text like ``"128K"`` (suffixes K, M,
    G in powers of 1024, as iperf3's ``-l`` and fio's ``bs``); ``name`` is
    the option errors name."""
    if isinstance(value, str):
        try:
            return size_bytes(value)
        except ValueError:
            raise InvalidArgumentError(f"invalid {name} {value!r}: write e.g. 131072 or 128K") from None
    return as_int(name, value)


def iperf_options(
    client: str = "h0",
    server: str = "h1",
    *,
    parallel: int = 1,
    bitrate: float | str = 0,
    duration: float = 1.0,
    interval: float = 0.1,
    length: int | str = 131072,
    congestion: str | None = None,
    background: Iterable[Flow | Mapping[str, Any]] | None = None,
    get_server_output: bool = False,
) -> dict[str, Any]:
    """The core's option object for an iperf run (type-checked; the core
    checks the values)."""
    opts: dict[str, Any] = {
        "client": as_str("client", client),
        "server": as_str("server", server),
        "parallel": as_int("parallel", parallel),
        "bitrate_bps": parse_rate(bitrate),
        "time_s": as_float("duration", duration),
        "interval_s": as_float("interval", interval),
        "length": parse_size(length),
    }
    if congestion is not None:
        opts["congestion"] = as_str("congestion", congestion)
    if as_bool("get_server_output", get_server_output):
        opts["get_server_output"] = True
    bg = flow_list("background", background)
    if bg:
        opts["background"] = bg
    return opts


def _run_iperf(fabric: FabricLike, opts: Mapping[str, Any], seed: int, label: str | None = None) -> Result:
    out = json.loads(_core.iperf(fabric_arg(fabric), dumps(dict(opts)), as_seed(seed)))
    rep = out["report"]
    rows = [{"interval": k, **s} for k, iv in enumerate(rep["intervals"]) for s in iv["streams"]]
    df = frame(rows, IPERF_COLUMNS)
    return Result(
        "iperf",
        df,
        backend=out["backend"],
        fabric=label,
        text=out["text"],
        ports=frame(rep["ports"], PORT_COLUMNS),
        ports_table=out["ports_table"],
        outcome=rep["outcome"],
        sim_time_us=rep["sim_time_ps"] / 1e6,
        events=rep["events"],
        extras={
            "json": out["json"],
            "sums": frame([iv["sum"] for iv in rep["intervals"]], IPERF_COLUMNS[2:8]),
            "server_intervals": frame(
                [{"interval": k, **s} for k, iv in enumerate(rep["server_intervals"]) for s in iv["streams"]],
                IPERF_COLUMNS[:7],
            ),
            "sum_sent": rep["sum_sent"],
            "sum_received": rep["sum_received"],
            "end_streams": rep["end_streams"],
            "congestion": rep["congestion"],
            "tcp_table": out["tcp_table"],
            "tcp": frame(rep["tcp"], TCP_COLUMNS),
            "options": rep["options"],
        },
    )


def iperf(
    client: str = "h0",
    server: str = "h1",
    fabric: FabricLike = "heps",
    seed: int = 1,
    *,
    parallel: int = 1,
    bitrate: float | str = 0,
    duration: float = 1.0,
    interval: float = 0.1,
    length: int | str = 131072,
    congestion: str | None = None,
    background: Iterable[Flow | Mapping[str, Any]] | None = None,
    backend: str | None = None,
    get_server_output: bool = False,
) -> Result:
    """Run iperf3 from ``client`` (the sender) to ``server`` on ``fabric``.

    Options follow iperf3: ``parallel`` is ``-P``, ``bitrate`` ``-b`` (bits/s
    per stream, a number or text like ``"20G"``; 0 = unlimited), ``duration``
    ``-t`` (s), ``interval`` ``-i`` (s; 0 = one interval), ``length`` ``-l``
    (bytes or ``"128K"``), ``congestion`` ``-C`` (``"reno"``, ``"cubic"``,
    ``"dctcp"``; default the fabric's ``[tcp] congestion``). ``background``
    is RDMA traffic during the run (:class:`Flow` objects or dicts).
    ``get_server_output`` is ``--get-server-output``: the text and JSON
    also carry the server's report.

    The client counts bytes when it writes them into the socket, as iperf3
    does, so its first interval includes what filled the send buffer and
    can exceed the line rate on a short interval; the server's figures
    (``res.extras["server_intervals"]``, ``["sum_received"]``) count bytes read
    and stay at or under the TCP goodput.

    Returns a :class:`fabriclab.Result` with ``tool="iperf"``: ``df`` has
    one row per stream per interval (:data:`IPERF_COLUMNS`; ``rtt`` and
    ``rttvar`` in us, windows in bytes); ``text`` is iperf3's text output,
    ``ports`` (port counters, :data:`fabriclab.api.PORT_COLUMNS`),
    ``ports_table``, ``outcome``, ``sim_time_us``, ``events``. ``extras``:
    ``json`` (iperf3's ``-J`` document), ``sums`` (per-interval sums),
    ``server_intervals``, ``sum_sent`` / ``sum_received``,
    ``end_streams``, ``congestion``, ``tcp`` (connection counters,
    :data:`TCP_COLUMNS`), ``tcp_table``, ``options``.
    """
    label = fabric_label(fabric)
    fabric = with_backend(fabric, backend)
    opts = iperf_options(
        client,
        server,
        parallel=parallel,
        bitrate=bitrate,
        duration=duration,
        interval=interval,
        length=length,
        congestion=congestion,
        background=background,
        get_server_output=get_server_output,
    )
    return _run_iperf(fabric, opts, seed, label)
