"""Dashboards of port telemetry: one static HTML page of figures and a table.

The input is the port samples of a run (``flows(..., sample_us=10)``'s
``port_samples``, or the ``PREFIX.ports.csv`` of ``fabriclab flows
--telemetry PREFIX``; columns :data:`~fabriclab.api.PORT_SAMPLE_COLUMNS`).
The page shows the hosts' NIC transmit rates, the switch-to-switch links'
rates and utilisation, switch queue depths, PFC pauses and the busiest
ports; its figures are PNGs (matplotlib, Agg) embedded in the HTML, so the
file needs nothing else to open::

    >>> import fabriclab
    >>> res = fabriclab.flows([fabriclab.Flow(f"h{i}", "h0", 1 << 20) for i in range(4, 12)],
    ...                       fabric="leaf-spine", sample_us=10)
    >>> fabriclab.dashboard(res.port_samples, "dash.html", fabric="leaf-spine")  # doctest: +SKIP
    PosixPath('dash.html')
    >>> from fabriclab.dashboards import busiest_ports
    >>> busiest_ports(res.port_samples, n=1)[["node", "port", "peer"]].values.tolist()  # h0's leaf port
    [['leaf0', 0, 'h0']]

Rates are averages over a sample period: the bytes a port sent between two
consecutive samples over the time between them. Bytes are counted whole
packets at a time, so one period can show up to one packet more than the
link carries (a little over 100 %). Not shown: QP samples, drops, ECN marks
(see the port counters for those).
"""

from __future__ import annotations

import base64
import html
import io
import os
import re
from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd

from ._checks import as_path, as_str
from ._tables import tuples
from .api import PORT_SAMPLE_COLUMNS, FabricLike, as_fabric
from .errors import InvalidArgumentError

__all__ = ["CAPTIONS", "Panels", "busiest_ports", "check_port_samples", "dashboard", "panels", "port_rates"]

#: At most this many hosts get one line each in the host rate figure.
MAX_HOST_LINES = 16
#: At most this many time columns in the heat map (more samples are averaged).
HEAT_COLUMNS = 1000

#: The caption of each panel, in page order.
CAPTIONS = {
    "hosts": "Transmit rate of each host's NIC (all its ports), Gb/s, averaged over each sample period; "
    "with more than 16 hosts, the mean, max and min across hosts.",
    "links": "Transmit rate of the switch-to-switch links (each direction a link), Gb/s: mean and max across links.",
    "heat": "Each switch-to-switch link (node:port to peer) over time: % of its link rate when the fabric is known, "
    "Gb/s otherwise (over 1000 samples, runs of neighbouring samples averaged).",
    "queues": "Switch egress queue depth (all priorities), KB: max and 99th percentile across switch ports at each sample.",
    "pfc": "Ports held paused by PFC at each sample, switch ports and host NIC ports counted apart.",
    "busiest": "The 10 ports that sent the most bytes between the first and last sample: average rate over that span, "
    "peak sampled queue, and the share of samples in which PFC held the port paused.",
}

_HOST_NAME = re.compile(r"h\d+")
_NUMERIC = ("time_ps", "port", "queue_bytes", "tx_bytes")
_KEY = ["node", "port"]


# --------------------------------------------------------------------------
# Pure pandas: checks, rates, the busiest ports


def check_port_samples(port_samples: pd.DataFrame) -> pd.DataFrame:
    """The samples' telemetry columns, typed and sorted by node, port and time.

    Raises :class:`InvalidArgumentError` for anything that is not port
    samples: a missing column, no rows, non-numeric values, fewer than two
    sample times, a repeated (time, node, port) or a decreasing tx_bytes.
    """
    if not isinstance(port_samples, pd.DataFrame):
        raise InvalidArgumentError(f"port samples must be a pandas DataFrame, not {type(port_samples).__name__}")
    missing = [c for c in PORT_SAMPLE_COLUMNS if c not in port_samples.columns]
    if missing:
        raise InvalidArgumentError(
            f"port samples lack column(s) {', '.join(missing)}: expected {', '.join(PORT_SAMPLE_COLUMNS)} "
            "(a run's port_samples with sample_us set, or the PREFIX.ports.csv of 'fabriclab flows --telemetry PREFIX')"
        )
    if port_samples.empty:
        raise InvalidArgumentError("port samples have no rows: run with sample_us (or --telemetry) to record them")
    df = port_samples[PORT_SAMPLE_COLUMNS].copy()
    for col in _NUMERIC:
        try:
            df[col] = pd.to_numeric(df[col]).astype("int64")
        except (ValueError, TypeError):
            raise InvalidArgumentError(f"port samples: column {col} must hold integers") from None
    df["node"] = df["node"].astype(str)
    df["peer"] = df["peer"].astype(str)
    df["paused"] = _bools(df["paused"])
    if df["time_ps"].nunique() < 2:
        raise InvalidArgumentError("port samples hold one sample time: rates need at least two")
    df = df.sort_values([*_KEY, "time_ps"], kind="stable").reset_index(drop=True)
    dup = df.duplicated([*_KEY, "time_ps"])
    if dup.any():
        r = df[dup].iloc[0]
        raise InvalidArgumentError(
            f"port samples repeat port {r.node}:{r.port} at {r.time_ps} ps: are two runs mixed in one frame?"
        )
    fell = df.groupby(_KEY, sort=False)["tx_bytes"].diff() < 0
    if fell.any():
        r = df[fell].iloc[0]
        raise InvalidArgumentError(
            f"port samples: tx_bytes of {r.node}:{r.port} falls at {r.time_ps} ps (it counts up): "
            "are two runs mixed in one frame?"
        )
    return df


def _bools(s: pd.Series) -> pd.Series:
    if s.dtype == bool:
        return s
    if pd.api.types.is_numeric_dtype(s):
        return s != 0
    words = s.astype(str).str.strip().str.lower().map({"true": True, "false": False, "1": True, "0": False})
    if words.isna().any():
        raise InvalidArgumentError("port samples: column paused must hold True/False")
    return words.astype(bool)


def _rates(df: pd.DataFrame) -> pd.DataFrame:
    """Per-port transmit rate of checked samples (see :func:`port_rates`)."""
    g = df.groupby(_KEY, sort=False)
    sent = g["tx_bytes"].diff()
    span_ps = g["time_ps"].diff()
    keep = sent.notna()
    out = df.loc[keep, ["time_ps", "node", "port", "peer"]].copy()
    out["gbps"] = sent[keep] * 8e3 / span_ps[keep]  # bits per ps x 1e3 = Gb/s
    return out.reset_index(drop=True)


def port_rates(port_samples: pd.DataFrame) -> pd.DataFrame:
    """Each port's transmit rate over each sample period, Gb/s.

    One row per port per sample after its first: time_ps (the end of the
    period), node, port, peer and gbps = (tx_bytes now - tx_bytes at the
    previous sample) x 8 / (time between them).
    """
    return _rates(check_port_samples(port_samples))


def _busiest(df: pd.DataFrame, n: int) -> pd.DataFrame:
    agg = df.groupby(_KEY, sort=False).agg(
        peer=("peer", "last"),
        t_first=("time_ps", "first"),
        t_last=("time_ps", "last"),
        tx_first=("tx_bytes", "first"),
        tx_last=("tx_bytes", "last"),
        peak_queue_bytes=("queue_bytes", "max"),
        paused_share=("paused", "mean"),
    )
    agg = agg.reset_index()
    agg["bytes_sent"] = agg["tx_last"] - agg["tx_first"]
    span_ps = (agg["t_last"] - agg["t_first"]).where(lambda s: s > 0)
    agg["gb_sent"] = agg["bytes_sent"] / 1e9
    agg["avg_gbps"] = (agg["bytes_sent"] * 8e3 / span_ps).fillna(0.0)
    agg["peak_queue_kb"] = agg["peak_queue_bytes"] / 1e3
    agg = _sort_ports(agg).sort_values("bytes_sent", ascending=False, kind="stable")
    cols = ["node", "port", "peer", "bytes_sent", "gb_sent", "avg_gbps", "peak_queue_kb", "paused_share"]
    return agg[cols].head(n).reset_index(drop=True)


def busiest_ports(port_samples: pd.DataFrame, n: int = 10) -> pd.DataFrame:
    """The ``n`` ports that sent the most between their first and last sample.

    Columns: node, port, peer, bytes_sent, gb_sent, avg_gbps (over that
    span), peak_queue_kb (largest sampled queue, 1 KB = 1000 bytes) and
    paused_share (fraction of samples with the port paused by PFC).
    """
    return _busiest(check_port_samples(port_samples), n)


def _natural(name: Hashable) -> tuple[Any, ...]:
    """A sort key that puts leaf2 before leaf10 (``name`` is a node name, a
    column label of the node names)."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", str(name)))


def _sort_ports(df: pd.DataFrame) -> pd.DataFrame:
    nodes, ports = df["node"].tolist(), df["port"].tolist()
    order = sorted(range(len(df)), key=lambda i: (_natural(nodes[i]), int(ports[i])))
    return df.iloc[order]


# --------------------------------------------------------------------------
# Nodes and links


def _classify(df: pd.DataFrame, fabric: Any) -> tuple[set[str], set[str]]:
    """(hosts, switches) among the samples' nodes."""
    nodes = set(df["node"]) | set(df["peer"])
    if fabric is None:
        hosts = {n for n in nodes if _HOST_NAME.fullmatch(n)}
        return hosts, nodes - hosts
    unknown = sorted(nodes - set(fabric.hosts) - set(fabric.switches), key=_natural)
    if unknown:
        raise InvalidArgumentError(
            f"the port samples name node(s) the fabric {fabric.name or '(unnamed)'} does not have: "
            f"{', '.join(unknown[:5])}{' ...' if len(unknown) > 5 else ''} (samples of another fabric?)"
        )
    return nodes & set(fabric.hosts), nodes & set(fabric.switches)


def _fabric_ports(fabric: Any) -> pd.DataFrame:
    """The fabric's ports, indexed by (node, port): peer and gbps.

    The core numbers each node's ports in the order of the fabric's links
    (``fabric.links`` is that order), one port per link end, so parallel
    links between two nodes get consecutive ports."""
    rows = []
    next_port: dict[str, int] = {}
    for a, b, gbps in fabric.links[["a", "b", "gbps"]].itertuples(index=False):
        for node, peer in ((a, b), (b, a)):
            port = next_port.get(node, 0)
            next_port[node] = port + 1
            rows.append((node, port, peer, float(gbps)))
    return pd.DataFrame(rows, columns=[*_KEY, "peer", "gbps"]).set_index(_KEY)


def _check_ports(df: pd.DataFrame, fabric: Any, fab_ports: pd.DataFrame) -> None:
    """Refuse samples whose ports (node, port and peer) are not ports of
    ``fabric``: node names alone can match a fabric of other links (leaves
    and spines of another size), whose link rates would then be wrong."""
    sampled = df.drop_duplicates(_KEY)[[*_KEY, "peer"]].copy()
    sampled["fabric_peer"] = fab_ports["peer"].reindex(pd.MultiIndex.from_frame(sampled[_KEY])).to_numpy()
    wrong = _sort_ports(sampled[sampled["peer"] != sampled["fabric_peer"]])  # a missing port: NaN, never equal
    if wrong.empty:
        return
    said = [
        f"{r.node}:{r.port} goes to {r.peer} in the samples"
        + (f", to {r.fabric_peer} in the fabric" if isinstance(r.fabric_peer, str) else " and is no port of the fabric")
        for r in wrong.head(3).itertuples()
    ]
    more = f" (and {len(wrong) - 3} more)" if len(wrong) > 3 else ""
    raise InvalidArgumentError(
        f"the port samples' ports are not those of the fabric {fabric.name or '(unnamed)'}: "
        f"{'; '.join(said)}{more}. Pass the fabric (--fabric) of the run that recorded the samples, "
        "or none for link utilisation in Gb/s"
    )


# --------------------------------------------------------------------------
# The data behind each panel


@dataclass
class Panels:
    """What a dashboard plots, as DataFrames (time-indexed ones by time_ps;
    rates at the end of each sample period)."""

    #: Transmit rate per host (its ports summed), Gb/s: one column per host,
    #: or with more than :data:`MAX_HOST_LINES` hosts the mean, max and min.
    host_gbps: pd.DataFrame
    #: Switch-to-switch links' transmit rate, Gb/s: columns mean and max
    #: (no rows without such links).
    link_gbps: pd.DataFrame
    #: One row per switch-to-switch link ("node:port → peer", sorted by
    #: name), one column per time: :attr:`link_unit` of each link.
    link_heat: pd.DataFrame
    #: "% of link rate" with a fabric, "Gb/s" without.
    link_unit: str
    #: Switch egress queues, KB: columns max and 99th percentile.
    queue_kb: pd.DataFrame
    #: Ports paused by PFC: columns switch ports and host ports.
    paused_ports: pd.DataFrame
    #: :func:`busiest_ports` of the samples.
    busiest: pd.DataFrame
    hosts: list[str]
    switches: list[str]
    #: The sample times, ps.
    times: pd.Index
    #: Ports sampled.
    ports: int
    #: The fabric's name, or None without one.
    fabric_name: str | None = None


def panels(port_samples: pd.DataFrame, fabric: FabricLike | None = None) -> Panels:
    """The data of each panel of :func:`dashboard` (pure pandas)."""
    df = check_port_samples(port_samples)
    fab = None if fabric is None else as_fabric(fabric)
    hosts, switches = _classify(df, fab)
    fab_ports = None
    if fab is not None:
        fab_ports = _fabric_ports(fab)
        _check_ports(df, fab, fab_ports)
    times = pd.Index(sorted(df["time_ps"].unique()), name="time_ps")
    rates = _rates(df)

    host_gbps = rates[rates["node"].isin(hosts)].pivot_table(
        index="time_ps", columns="node", values="gbps", aggfunc="sum"
    )
    host_gbps = host_gbps[sorted(host_gbps.columns, key=_natural)]
    if len(host_gbps.columns) > MAX_HOST_LINES:
        n = len(host_gbps.columns)
        host_gbps = pd.DataFrame({f"{k} of {n} hosts": host_gbps.agg(k, axis=1) for k in ("mean", "max", "min")})

    s2s = rates[rates["node"].isin(switches) & rates["peer"].isin(switches)]
    links = _sort_ports(s2s.drop_duplicates(_KEY)[[*_KEY, "peer"]])
    wide = s2s.pivot(index="time_ps", columns=_KEY, values="gbps")
    wide = wide.reindex(columns=pd.MultiIndex.from_frame(links[_KEY]))
    link_gbps = pd.DataFrame({"mean": wide.mean(axis=1), "max": wide.max(axis=1)})
    link_unit = "Gb/s"
    if fab_ports is not None and len(links):
        # a frame divided column by column (pandas-stubs type it as an ndarray);
        # every sampled port is the fabric's (checked above), so no rate is missing
        wide = cast(pd.DataFrame, wide * 100.0 / fab_ports["gbps"].reindex(wide.columns).to_numpy())
        link_unit = "% of link rate"
    link_heat = wide.T.set_axis([f"{r.node}:{r.port} → {r.peer}" for r in links.itertuples()], axis=0)

    on_switch = df["node"].isin(switches)
    queues = df[on_switch].groupby("time_ps")["queue_bytes"]
    queue_kb = pd.DataFrame({"max": queues.max(), "99th percentile": queues.quantile(0.99)}).reindex(times) / 1e3

    kind = on_switch.map({True: "switch ports", False: "host ports"})
    paused = df.assign(kind=kind).pivot_table(index="time_ps", columns="kind", values="paused", aggfunc="sum")
    paused = paused.reindex(index=times, columns=["switch ports", "host ports"]).fillna(0).astype("int64")

    return Panels(
        host_gbps=host_gbps,
        link_gbps=link_gbps,
        link_heat=link_heat,
        link_unit=link_unit,
        queue_kb=queue_kb,
        paused_ports=paused,
        busiest=_busiest(df, 10),
        hosts=sorted(hosts, key=_natural),
        switches=sorted(switches, key=_natural),
        times=times,
        ports=len(df[_KEY].drop_duplicates()),
        fabric_name=None if fab is None else (fab.name or "(unnamed)"),
    )


# --------------------------------------------------------------------------
# Figures


def matplotlib_parts() -> tuple[Any, Any, Any]:
    """matplotlib's Figure, Agg canvas and colormap registry (no pyplot, so
    the caller's backend and figures are left alone)."""
    try:
        from matplotlib import colormaps
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as e:
        raise ImportError(
            "fabriclab.dashboard draws its figures with matplotlib, which is not installed: "
            "pip install 'fabriclab[plot]'",
            name="matplotlib",
        ) from e
    return Figure, FigureCanvasAgg, colormaps


class Plotter:
    """Makes figures on one time axis and returns them as PNG data URIs."""

    def __init__(self, t_first_ps: int, t_last_ps: int):
        self.Figure, self.Canvas, self.colormaps = matplotlib_parts()
        span_us = (t_last_ps - t_first_ps) / 1e6
        self.ps_per_unit, unit = (1e9, "ms") if span_us > 20_000 else (1e6, "us")
        self.xlabel = f"simulated time, {unit}"
        self.xlim = (t_first_ps / self.ps_per_unit, t_last_ps / self.ps_per_unit)

    def x(self, time_ps: Any) -> Any:
        return pd.Index(time_ps).to_numpy(dtype=float) / self.ps_per_unit

    def axes(self, height_in: float = 3.0) -> tuple[Any, Any]:
        fig = self.Figure(figsize=(10, height_in), dpi=100, layout="constrained")
        self.Canvas(fig)
        ax = fig.add_subplot()
        ax.set_xlabel(self.xlabel)
        ax.set_xlim(*self.xlim)
        ax.grid(True, alpha=0.3)
        return fig, ax

    def lines(self, table: pd.DataFrame, ylabel: str, many: bool = False) -> str:
        """One line per column of ``table`` (indexed by time_ps); ``many``
        picks colours from a 20-colour map instead of the default 10."""
        fig, ax = self.axes()
        x = self.x(table.index)
        for i, col in enumerate(table.columns):
            color = self.colormaps["tab20"](i % 20) if many else None
            ax.plot(x, table[col].to_numpy(dtype=float), label=str(col), linewidth=1.2, color=color)
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
        if len(table.columns):
            ncol = 1 if len(table.columns) <= 8 else 2
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False, ncol=ncol)
        return self.png(fig)

    def heat(self, table: pd.DataFrame, label: str, vmax: float | None) -> str:
        """Rows of ``table`` (one per link, indexed by name) over its
        columns (time_ps), as a heat map."""
        n = len(table)
        fig, ax = self.axes(height_in=min(12.0, max(2.5, 0.16 * n + 1.2)))
        ax.grid(False)
        x = self.x(table.columns)
        step = x[1] - x[0] if len(x) > 1 else 1.0
        values = table.to_numpy(dtype=float)
        per_bin = -(-values.shape[1] // HEAT_COLUMNS)
        if per_bin > 1:  # average runs of samples rather than let the image drop some
            values = table.T.groupby(np.arange(values.shape[1]) // per_bin).mean().T.to_numpy(dtype=float)
        im = ax.imshow(
            values,
            aspect="auto",
            interpolation="nearest",
            extent=(x[0] - step, x[-1], n - 0.5, -0.5),
            vmin=0.0,
            vmax=vmax,
            cmap="viridis",
        )
        every = max(1, -(-n // 40))  # at most 40 names on the axis
        ax.set_yticks(range(0, n, every))
        ax.set_yticklabels([str(s) for s in table.index[::every]], fontsize="x-small")
        fig.colorbar(im, ax=ax, label=label, extend="max" if vmax is not None else "neither")
        return self.png(fig)

    @staticmethod
    def png(fig: Any) -> str:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", metadata={"Software": None})
        return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


# --------------------------------------------------------------------------
# The page


def dashboard(
    port_samples: pd.DataFrame,
    out: str | os.PathLike[str],
    *,
    fabric: FabricLike | None = None,
    title: str = "",
) -> Path:
    """Write an HTML dashboard of ``port_samples`` to ``out``; returns its path.

    ``fabric`` (a preset name, file path or :class:`~fabriclab.Fabric`) tells
    hosts from switches and gives each link's rate, for utilisation in %
    (the samples' ports must be its ports, else InvalidArgumentError);
    without it, hosts are the nodes named h0, h1, ... and utilisation is in
    Gb/s. ``title`` heads the page (say what the run was). Needs matplotlib
    (``pip install 'fabriclab[plot]'``).
    """
    path = Path(as_path("out", out))
    title = as_str("title", title)
    if path.is_dir():
        raise InvalidArgumentError(f"out {path}: is a directory; give a file name such as {path / 'dashboard.html'}")
    p = panels(port_samples, fabric)
    plot = Plotter(int(p.times[0]), int(p.times[-1]))
    many = len(p.host_gbps.columns) > 10
    sections = [html_section("Host NIC transmit rate", _figure(plot.lines(p.host_gbps, "Gb/s", many), CAPTIONS["hosts"]))]
    if p.link_heat.empty:
        body = "<p>No switch-to-switch links in these samples.</p>\n"
    else:
        body = _figure(plot.lines(p.link_gbps, "Gb/s"), CAPTIONS["links"])
        vmax = 100.0 if p.link_unit.startswith("%") else None
        body += _figure(plot.heat(p.link_heat, p.link_unit, vmax), CAPTIONS["heat"])
    sections.append(html_section("Switch-to-switch links", body))
    sections.append(html_section("Switch queues", _figure(plot.lines(p.queue_kb, "KB"), CAPTIONS["queues"])))
    sections.append(html_section("PFC pauses", _figure(plot.lines(p.paused_ports, "ports paused"), CAPTIONS["pfc"])))
    sections.append(html_section("Busiest ports", _table(p.busiest, CAPTIONS["busiest"])))

    t0, t1 = int(p.times[0]), int(p.times[-1])
    period_ps = float(pd.Series(p.times).diff().median())
    meta = (
        f"Samples every {period_ps / 1e6:g} us from {t0 / 1e6:g} to {t1 / 1e6:g} us "
        f"({(t1 - t0) / 1e6:g} us, {len(p.times)} sample times). "
        f"{len(p.hosts)} hosts, {len(p.switches)} switches, {p.ports} ports; "
        + (f"fabric {p.fabric_name}." if p.fabric_name else "no fabric given: link utilisation in Gb/s.")
    )
    try:
        path.write_text(html_page(title or "fabriclab port telemetry", meta, sections), encoding="utf-8")
    except OSError as e:
        raise InvalidArgumentError(f"cannot write the dashboard to {path}: {e.strerror or e}") from None
    return path


def _figure(src: str, caption: str) -> str:
    return (
        f'<figure><img src="{src}" alt="{html.escape(caption)}">'
        f"<figcaption>{html.escape(caption, quote=False)}</figcaption></figure>\n"
    )


def html_section(heading: str, body: str) -> str:
    return f"<section>\n<h2>{html.escape(heading)}</h2>\n{body}</section>\n"


def _table(top: pd.DataFrame, caption: str) -> str:
    head = "".join(
        f"<th>{h}</th>"
        for h in ("node", "port", "peer", "GB sent", "average Gb/s", "peak queue KB", "samples paused")
    )
    rows = "".join(
        f"<tr><td>{html.escape(r.node)}</td><td>{r.port}</td><td>{html.escape(r.peer)}</td>"
        f"<td>{r.gb_sent:.4f}</td><td>{r.avg_gbps:.2f}</td><td>{r.peak_queue_kb:.1f}</td>"
        f"<td>{100 * r.paused_share:.1f} %</td></tr>\n"
        for r in tuples(top)
    )
    return (
        f"<figure><table>\n<tr>{head}</tr>\n{rows}</table>"
        f"<figcaption>{html.escape(caption, quote=False)}</figcaption></figure>\n"
    )


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { margin-bottom: 0.2em; } .meta { color: #555; }
figure { margin: 1em 0; } img { max-width: 100%; }
figcaption { color: #444; font-size: 0.9em; margin-top: 0.3em; }
table { border-collapse: collapse; font-size: 0.9em; }
th, td { border-bottom: 1px solid #ddd; padding: 0.25em 0.8em; text-align: right; }
th:nth-child(-n+3), td:nth-child(-n+3) { text-align: left; }
"""


def html_page(title: str, meta: str, sections: list[str], style: str = "") -> str:
    """A self-contained page: the title, a line of meta text, the sections;
    ``style`` adds CSS rules after the dashboard's (the compare report's)."""
    t = html.escape(title)
    return (
        f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{t}</title>\n'
        f"<style>{_STYLE}{style}</style>\n</head>\n<body>\n<h1>{t}</h1>\n"
        f'<p class="meta">{html.escape(meta)}</p>\n{"".join(sections)}</body>\n</html>\n'
    )
