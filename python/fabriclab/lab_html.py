"""The HTML report of lab runs: an index, then a section per lab.

``fabriclab lab run ... --html FILE`` writes one self-contained page: an
index table (each lab, its seed, its verdict counts, a link to its
section) and, per lab, its verdict table (``metric | published |
fabriclab | delta | verdict``, with each figure's place in the seed and
tolerance) and the charts its ``[[plot]]`` tables ask for, where the seed
shows charts. Figures are PNGs drawn with matplotlib (as
:mod:`fabriclab.dashboards` draws its own) and embedded in the page, so it
needs nothing else to open. Left out: the tools' text output (it is in
the terminal) and interactive charts.
"""

from __future__ import annotations

import html
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ._tables import tuples
from .dashboards import Plotter, matplotlib_parts
from .errors import FabriclabError, ParseError
from .lab import Plot
from .lab_measure import select_rows
from .lab_runs import LabResult, delta_text, repetitions_text, value_text

__all__ = ["write_report", "report_html"]

_VERDICT_CLASS = {
    "reproduced": "ok",
    "not reproduced": "bad",
    "calibrated": "cal",
    "chart only": "chart",
}


def _anchor(name: str) -> str:
    return "lab-" + "".join(c if c.isalnum() or c == "-" else "-" for c in name)


def _counts(r: LabResult) -> str:
    counts = r.rows.verdict.value_counts()
    return ", ".join(f"{n} {v}" for v, n in counts.items())


def _index(results: Sequence[LabResult]) -> str:
    rows = "".join(
        f'<tr><td><a href="#{_anchor(r.lab.name)}">{html.escape(r.lab.name)}</a></td>'
        f"<td>{html.escape(r.lab.seed)}</td><td>{html.escape(r.lab.reproduces)}</td>"
        f"<td>{'quick' if r.quick else 'full'}, {r.wall_s:.1f} s</td><td>{html.escape(_counts(r))}</td></tr>\n"
        for r in results
    )
    return (
        '<section id="index">\n<h2>Index</h2>\n<table class="index">\n'
        "<tr><th>lab</th><th>seed</th><th>reproduces</th><th>run</th><th>verdicts</th></tr>\n"
        f"{rows}</table>\n</section>\n"
    )


def _verdict_table(r: LabResult) -> str:
    head = "".join(f"<th>{h}</th>" for h in ("", "metric", "published", "fabriclab", "delta", "verdict"))
    body = []
    for i, row in enumerate(tuples(r.rows, index=False), 1):
        unit = f" [{row.unit}]" if row.unit else ""
        cls = _VERDICT_CLASS.get(row.verdict, "skip")
        body.append(
            f"<tr><td>{i}</td><td>{html.escape(row.metric + unit)}</td><td>{html.escape(row.published)}</td>"
            f"<td>{html.escape(value_text(r, row))}</td><td>{html.escape(delta_text(row))}</td>"
            f'<td class="{cls}">{html.escape(row.verdict)}</td></tr>\n'
        )
    notes = []
    for i, (m, row) in enumerate(zip(r.lab.metrics, tuples(r.rows, index=False)), 1):
        tol = f"; tolerance {row.tolerance}" if row.tolerance and m.kind == "compare" else ""
        note = f". {m.note}" if m.note else ""
        notes.append(f"<li value=\"{i}\">{html.escape(m.place + tol + note)}</li>")
    return (
        f'<table class="verdicts">\n<tr>{head}</tr>\n{"".join(body)}</table>\n'
        f'<ol class="places">{"".join(notes)}</ol>\n'
    )


def _lines(r: LabResult, plot: Plot, plotter: Plotter) -> str | None:
    fig, ax = plotter.axes()
    drawn = 0
    for s in plot.series:
        where = f"lab {r.lab.name}: plot {plot.title!r}, series {s.label!r}"
        try:
            rows = select_rows(r.results, s.run, s.item, s.table, s.where, f"plot {plot.title!r}")
        except FabriclabError as e:
            if r.quick:  # a quick run may lack what the full one draws
                continue
            raise ParseError(f"{where}: {e}") from None
        missing = [c for c in (plot.x, plot.y) if c not in rows.columns]
        if missing or rows.empty:
            if r.quick:
                continue
            raise ParseError(
                f"{where}: its table has no column {missing[0]!r}; the columns are {', '.join(map(str, rows.columns))}"
                if missing
                else f"{where}: its where {dict(s.where)!r} matches no row"
            )
        x = pd.to_numeric(rows[plot.x], errors="coerce").astype(float)
        y = pd.to_numeric(rows[plot.y], errors="coerce").astype(float)
        keep = x.notna() & y.notna()
        if plot.logx:
            keep &= x > 0
        if plot.logy:
            keep &= y > 0
        if not keep.any():
            continue
        ax.plot(x[keep].to_numpy(), y[keep].to_numpy(), marker="o", markersize=3, linewidth=1.4, label=s.label)
        drawn += 1
    if not drawn:
        return None
    if plot.logx:
        ax.set_xscale("log", base=2)
    if plot.logy:
        ax.set_yscale("log")
    ax.set_xlabel(plot.xlabel)
    ax.set_ylabel(plot.ylabel)
    ax.legend(loc="best", fontsize="small", frameon=False)
    return plotter.png(fig)


def _bars(r: LabResult, plot: Plot, plotter: Plotter) -> str | None:
    rows = r.rows.set_index("metric")
    fabriclab, low, high = rows["fabriclab"], rows["published_low"], rows["published_high"]
    labels = [m for m in plot.metrics if not math.isnan(float(fabriclab[m]))]
    if not labels:
        return None
    fig, ax = plotter.axes(height_in=max(2.0, 0.45 * len(labels) + 1.0))
    ax.grid(True, axis="x", alpha=0.3)
    values = [float(fabriclab[m]) for m in labels]
    ax.barh(range(len(labels)), values, color="#4c72b0", label="fabriclab")
    for i, m in enumerate(labels):
        lo, hi = low[m], high[m]
        if not math.isnan(lo):
            ax.plot([lo, hi] if hi != lo else [lo], [i] * (2 if hi != lo else 1), marker="D", color="#dd8452", linestyle="-")
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels, fontsize="small")
    ax.invert_yaxis()
    unit = rows["unit"][labels[0]]
    ax.set_xlabel(f"{unit} (bars: fabriclab; diamonds: published)" if unit else "bars: fabriclab; diamonds: published")
    ax.set_xlim(left=min(0.0, min(values)))
    return plotter.png(fig)


class _Axes(Plotter):
    """dashboard's plotter without its time axis."""

    def __init__(self) -> None:
        self.Figure, self.Canvas, self.colormaps = matplotlib_parts()

    def axes(self, height_in: float = 3.2) -> tuple[Any, Any]:
        fig = self.Figure(figsize=(9, height_in), dpi=100, layout="constrained")
        self.Canvas(fig)
        ax = fig.add_subplot()
        ax.grid(True, alpha=0.3)
        return fig, ax


def _plots(r: LabResult, plotter: Plotter) -> str:
    out = []
    for plot in r.lab.plots:
        src = (_lines if plot.kind == "lines" else _bars)(r, plot, plotter)
        caption = f"{plot.title}. The seed: {plot.place}."
        if plot.kind == "lines" and r.repetitions > 1:
            caption += " fabriclab's curves: the first repetition; the table gives the means."
        if src is None:
            out.append(f"<p class=\"meta\">{html.escape(caption)} Nothing to draw in this run.</p>\n")
            continue
        out.append(
            f'<figure><img src="{src}" alt="{html.escape(plot.title)}">'
            f"<figcaption>{html.escape(caption, quote=False)}</figcaption></figure>\n"
        )
    return "".join(out)


def _section(r: LabResult, plotter: Plotter) -> str:
    lab = r.lab
    mode = ("--quick" if r.quick else "full") + repetitions_text(r)
    meta = f"Seed {lab.seed}. Reproduces: {lab.reproduces}. Run: {mode}, {r.wall_s:.1f} s of wall time."
    return (
        f'<section id="{_anchor(lab.name)}">\n<h2>{html.escape(lab.name)}: {html.escape(lab.title)}</h2>\n'
        f'<p class="meta">{html.escape(meta)}</p>\n{_verdict_table(r)}{_plots(r, plotter)}'
        '<p><a href="#index">back to the index</a></p>\n</section>\n'
    )


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { margin-bottom: 0.2em; } .meta { color: #555; }
figure { margin: 1em 0; } img { max-width: 100%; }
figcaption { color: #444; font-size: 0.9em; margin-top: 0.3em; }
table { border-collapse: collapse; font-size: 0.9em; margin: 0.5em 0; }
th, td { border-bottom: 1px solid #ddd; padding: 0.25em 0.8em; text-align: left; vertical-align: top; }
.ok { color: #1a7f37; font-weight: 600; } .bad { color: #b42318; font-weight: 600; }
.cal { color: #8a6d00; } .chart { color: #555; } .skip { color: #777; font-style: italic; }
ol.places { font-size: 0.85em; color: #444; }
"""


def report_html(results: Sequence[LabResult], title: str = "fabriclab labs") -> str:
    """The report page's HTML."""
    plotter = _Axes()
    t = html.escape(title)
    verdicts = pd.concat([r.rows.verdict for r in results]).value_counts() if results else pd.Series(dtype=int)
    meta = f"{len(results)} lab(s); verdicts: " + ", ".join(f"{n} {v}" for v, n in verdicts.items())
    return (
        f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{t}</title>\n'
        f"<style>{_STYLE}</style>\n</head>\n<body>\n<h1>{t}</h1>\n"
        f'<p class="meta">{html.escape(meta)}. Verdicts are computed from the published figure, '
        "fabriclab's value and the stated tolerance; a calibrated figure set a model parameter "
        "and proves nothing.</p>\n"
        f"{_index(results)}{''.join(_section(r, plotter) for r in results)}</body>\n</html>\n"
    )


def write_report(results: Sequence[LabResult], out: str | os.PathLike[str], title: str = "fabriclab labs") -> Path:
    """Write the report of ``results`` to ``out``; returns its path."""
    path = Path(out)
    path.write_text(report_html(results, title), encoding="utf-8")
    return path
