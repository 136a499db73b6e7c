"""What every tool returns: one :class:`Result`.

:func:`fabriclab.perftest`, :func:`~fabriclab.flows`, :func:`~fabriclab.imb`,
:func:`~fabriclab.osu`, :func:`~fabriclab.cbench`, :func:`~fabriclab.hpl`,
:func:`~fabriclab.fio` and :func:`~fabriclab.iperf` (and every item of
:func:`fabriclab.run_scenario`) return a :class:`Result`::

    >>> import fabriclab
    >>> res = fabriclab.perftest("ib_write_bw", "h0", "h4", size=65536)
    >>> res.tool, res.backend, res.outcome
    ('perftest', 'packet', 'Finished')
    >>> list(res.df.columns[:3])
    ['bytes', 'iters', 'bw_peak']
    >>> print(res.text)                  # doctest: +SKIP

- ``res.df``: the tool's main table (one row per size, per flow, per test,
  ...), a plain DataFrame. Its ``attrs`` hold only scalars: ``tool``,
  ``backend``, ``fabric`` (and ``name`` for a scenario item, ``bw_unit``
  for perftest's bandwidth tests: ``"MiB/s"`` or ``"Gb/s"``), so that
  pandas' copies of them on every operation stay cheap; everything else
  is on the result.
- ``res.text``: the real tool's text output, byte for byte (None for
  flows, which has no real tool: :meth:`Result.summary` tabulates it).
- ``res.ports`` / ``res.qps``: port and QP counter tables (None where a
  tool has none), ``res.ports_table`` the ports that carried traffic as
  text. On the flow backend the counters it does not model
  (:data:`FLOW_NOT_MODELLED`: drops, marks, pauses, queues,
  retransmissions, CNPs, TCP's window and RTT) are NaN, and ``n/a`` in
  the text tables, never 0.
- ``res.port_samples``: port telemetry (:data:`fabriclab.api.PORT_SAMPLE_COLUMNS`)
  for the tools that sample it (flows with ``sample_us``, the MPI tools
  with ``telemetry_us``; an empty table when not asked), else None;
  ``res.samples``: flows' per-QP telemetry (None for the other tools).
- The run's figures: ``outcome``, ``sim_time_us``, ``events``, ``wall_s``
  (None where a tool does not report one).
- ``res.extras``: what only one tool has, by name (perftest's
  ``out_json``; fio's and iperf's ``json``; the MPI tools' ``mpi``
  counters, ``lowered``, ``iperf_text`` and ``tcp``; Cbench's
  ``rotations`` and ``summary``; HPL's ``samples``, ``settings``,
  ``rank_hosts`` and ``report``; iperf's ``sums``, ``sum_received``, ...;
  flows' ``deadlocks``, ``qp_failures``, ``flow_stats``). Each tool's
  docstring lists its own.

:meth:`Result.figures` gives the scalar figures as a dict and
:meth:`Result.tables` every table by name (``"result"`` is ``df``).
"""

from __future__ import annotations

import html
import json
import sys
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ._tables import tuples
from .errors import DeadlockError, RunFailedError, TransportRetryError

__all__ = ["Result", "FIGURE_NAMES", "FLOW_NOT_MODELLED", "frame_attrs", "print_notes", "run_failed", "run_stoppable"]

#: The run figures every result may carry (None where a tool has none).
FIGURE_NAMES = ("outcome", "sim_time_us", "events", "wall_s")

_SCALARS = (str, int, float, bool)


#: Counter columns the flow backend does not model (no queues, pauses,
#: marks, drops, retransmissions, CNPs, rate limiters or TCP windows):
#: NaN in its results, never 0. By table: ``ports``, ``qps``, the ``tcp``
#: table among the extras, and iperf's interval tables.
FLOW_NOT_MODELLED: dict[str, tuple[str, ...]] = {
    "ports": (
        "drops", "drop_bytes", "drops_by_prio", "ecn_marks", "pause_tx", "pause_starts", "pause_rx",
        "paused_ps", "peak_queue_bytes", "peak_buffer_bytes", "lost_packets", "lost_bytes",
        "wd_storms", "wd_restores", "wd_drops",
        # InfiniBand's credits, flow-control packets, FECN marks and VL buffers
        "credit_stalled_ps", "credit_stalls", "fcp_tx", "fcp_rx", "fecn_marks",
        "peak_vl_buffer_bytes", "peak_vl_queue_bytes",
    ),
    "qps": ("rate_gbps", "retx_packets", "timeouts", "naks_rx", "cnps_rx", "cnps_tx", "rx_discarded"),
    "tcp": (
        "retx_segments", "fast_retransmits", "timeouts", "ecn_echoes", "ecn_cuts", "cwnd_bytes",
        "max_cwnd_bytes", "srtt_ns", "rttvar_ns", "min_rtt_ns", "rx_out_of_order", "rx_ce_segments",
    ),
    # iperf's interval tables (its result and ``sums``): what TCP_INFO gives
    "iperf": ("retransmits", "snd_cwnd", "snd_wnd", "rtt", "rttvar"),
}


def _not_modelled(df: pd.DataFrame | None, table: str) -> None:
    """Blank (NaN) the columns of ``df`` that the flow backend does not model."""
    if isinstance(df, pd.DataFrame):
        cols = [c for c in FLOW_NOT_MODELLED[table] if c in df.columns]
        if cols:
            df[cols] = float("nan")


def frame_attrs(tool: str, backend: str, fabric: str | None) -> dict[Hashable | None, Any]:
    """What a result's ``df.attrs`` holds: scalars only."""
    return {"tool": tool, "backend": backend, "fabric": fabric}


@dataclass(repr=False, eq=False)
class Result:
    """A tool's result: its main table :attr:`df`, its text output, counter
    tables, telemetry and figures (see :mod:`fabriclab.results`)."""

    #: The tool that ran: "perftest", "flows", "imb", "osu", "cbench",
    #: "hpl", "fio", "iperf" or "nccl-tests".
    tool: str
    #: The main table (scalars only in its ``attrs``).
    df: pd.DataFrame
    #: The backend that ran ("packet" or "flow").
    backend: str = "packet"
    #: The fabric's name (a preset's, a Fabric's), or the file it came from.
    fabric: str | None = None
    #: The tool's own text output (None for flows).
    text: str | None = None
    #: Port counters (:data:`fabriclab.api.PORT_COLUMNS`), or None.
    ports: pd.DataFrame | None = None
    #: QP counters (:data:`fabriclab.api.QP_COLUMNS`), or None.
    qps: pd.DataFrame | None = None
    #: The ports that carried traffic, as a text table (None if none).
    ports_table: str | None = None
    #: Port telemetry samples (:data:`fabriclab.api.PORT_SAMPLE_COLUMNS`),
    #: or None for a tool that does not sample.
    port_samples: pd.DataFrame | None = None
    #: Flows' per-QP telemetry (:data:`fabriclab.api.SAMPLE_COLUMNS`), or None.
    samples: pd.DataFrame | None = None
    #: How the run ended ("Finished", "Drained", "TimeLimit", ...), or None.
    outcome: str | None = None
    #: Simulated time at the end, us.
    sim_time_us: float | None = None
    #: Events processed.
    events: int | None = None
    #: Wall time of the simulation, s (the MPI tools and HPL).
    wall_s: float | None = None
    #: The scenario item's name (scenario runs only).
    name: str | None = None
    #: What only this tool has, by name (see the tool's docstring).
    extras: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.df.attrs = frame_attrs(self.tool, self.backend, self.fabric)
        if self.backend == "flow":
            _not_modelled(self.ports, "ports")
            _not_modelled(self.qps, "qps")
            _not_modelled(self.extras.get("tcp"), "tcp")
            if self.tool == "iperf":
                for df in (self.df, self.extras.get("sums"), self.extras.get("server_intervals")):
                    _not_modelled(df, "iperf")

    def set_name(self, name: str | None) -> None:
        """Label the result (and ``df.attrs["name"]``) with an item's name."""
        self.name = name
        self.df.attrs["name"] = name

    def figures(self) -> dict[str, Any]:
        """The scalar figures: :data:`FIGURE_NAMES` the tool reports, then
        the scalar extras (numbers and one-line strings: perftest's ``mtu``,
        iperf's ``congestion``, ...; not texts such as ``out_json``)."""
        out: dict[str, Any] = {k: getattr(self, k) for k in FIGURE_NAMES if getattr(self, k) is not None}
        for k, v in self.extras.items():
            if isinstance(v, _SCALARS) and not (isinstance(v, str) and "\n" in v) and k not in out:
                out[k] = v
        return out

    def tables(self) -> dict[str, pd.DataFrame]:
        """Every table of the result by name: ``"result"`` (:attr:`df`),
        ``ports``, ``qps``, ``port_samples``, ``samples`` where present,
        then the tables among the extras (Cbench's ``rotations``, ...)."""
        out: dict[str, pd.DataFrame] = {"result": self.df}
        for k in ("ports", "qps", "port_samples", "samples"):
            t = getattr(self, k)
            if isinstance(t, pd.DataFrame):
                out[k] = t
        out.update({k: v for k, v in self.extras.items() if isinstance(v, pd.DataFrame) and k not in out})
        return out

    def summary(self) -> str:
        """The tool's text output; for flows (which has none) a text table
        of the flows and how the run ended."""
        if self.text is not None:
            return self.text
        return _flows_summary(self)

    def _header(self) -> str:
        what = f"{self.tool} {self.name!r}" if self.name else self.tool
        parts = [f"{len(self.df)} rows"]
        if self.fabric:
            parts.append(f"fabric {self.fabric}")
        parts.append(f"{self.backend} backend")
        if self.outcome is not None:
            parts.append(self.outcome)
        if self.sim_time_us is not None:
            parts.append(f"{self.sim_time_us:.3f} us simulated")
        if self.events is not None:
            parts.append(f"{self.events:,} events")
        return f"<Result {what}: {', '.join(parts)}>"

    def _fields(self) -> list[str]:
        names = [k for k in ("text", "ports", "qps", "port_samples", "samples") if getattr(self, k) is not None]
        return names + [f"extras[{k!r}]" for k in self.extras]

    def __repr__(self) -> str:
        return f"{self._header()}\n{self.df!r}\nalso: {', '.join(self._fields())}"

    def _repr_html_(self) -> str:
        head = html.escape(self._header())
        also = html.escape(", ".join(self._fields()))
        # As a notebook shows the DataFrame itself (pandas' display options).
        body = self.df.to_html(
            max_rows=pd.get_option("display.max_rows"),
            max_cols=pd.get_option("display.max_columns"),
            show_dimensions=True,
        )
        return f"<div><p><b>{head}</b></p>{body}<p><small>also: {also}</small></p></div>"


def _flows_summary(res: Result) -> str:
    lines = [f"{'src':<8} {'dst':<8} {'bytes':>12} {'start_us':>10} {'fct_us':>12} {'messages':>8}"]
    for r in tuples(res.df, index=False):
        fct = "-" if pd.isna(r.fct_us) else f"{r.fct_us:.3f}"
        lines.append(f"{r.src:<8} {r.dst:<8} {r.bytes:>12} {r.start_ps / 1e6:>10.3f} {fct:>12} {r.messages:>8}")
    lines.append(f"outcome: {res.outcome}, simulated {res.sim_time_us or 0.0:.3f} us, {res.events or 0} events")
    for d in res.extras.get("deadlocks", []):
        cycle = ", ".join(f"{p['node']} -> {p['peer']}" for p in d["ports"])
        lines.append(
            f"PFC deadlock on priority {d['priority']} at {d['time_ps'] / 1e6:.3f} us: {cycle} "
            f"(paused since {d['paused_since_ps'] / 1e6:.3f} us)"
        )
    return "\n".join(lines) + "\n"


def run_failed(res: Result) -> RunFailedError | None:
    """The failure a result carries instead of raising it, as the error
    ``fabriclab flows`` exits 3 with (:class:`DeadlockError` for a PFC
    deadlock, :class:`RunFailedError` for flows that can never finish,
    :class:`TransportRetryError` for a QP out of retries); None if the run
    did not fail. Only flows reports what ran before such a failure; the
    other tools raise it. ``fabriclab flows``, ``fabriclab run``,
    ``fabriclab lab run`` and sweeps all take the failure from here."""
    extras = res.extras
    if extras.get("deadlock_error"):
        return DeadlockError(extras["deadlock_error"])
    if extras.get("stall_error"):
        return RunFailedError(extras["stall_error"])
    failures = extras.get("qp_failures")
    if not failures or not isinstance(failures, list):
        return None
    f = failures[0]
    failed = int(res.df["error"].notna().sum()) if "error" in res.df else len(failures)
    return TransportRetryError(
        f"{failed} flow(s) failed: transport retry counter exceeded "
        f"on QP {f['qp']} ({f['host']} -> {f['peer']}) at {f['time_ps'] / 1e6:.3f} us "
        f"(nic.retry_cnt = {f['retries']}): the peer is unreachable: {f['cause']}"
    )


def run_stoppable(call: Callable[[], str], build: Callable[[dict[str, Any]], Result]) -> Result:
    """``build`` of the JSON the core ``call`` returns. If the user stops
    the run (Ctrl-C), the ``KeyboardInterrupt`` raised carries ``result``:
    the measurements that completed, built the same way (IMB, OSU and
    Cbench report them, perftest the sizes done; ``None`` for a run stopped
    before any)."""
    try:
        return build(json.loads(call()))
    except KeyboardInterrupt as e:
        partial = getattr(e, "partial", None)
        e.result = build(json.loads(partial)) if isinstance(partial, str) else None  # type: ignore[attr-defined]
        raise


def print_notes(res: Result) -> None:
    """``fabriclab: note: ...`` on stderr for each of a run's notes (what
    it did that may not be meant: ``extras["notes"]`` of flows and the
    MPI tools)."""
    sys.stdout.flush()
    for note in res.extras.get("notes") or ():
        print(f"fabriclab: note: {note}", file=sys.stderr)
