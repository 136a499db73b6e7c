"""The HTML page of an A/B comparison (``fabriclab compare --html FILE``).

One self-contained page in the dashboard's style (:mod:`fabriclab.dashboards`):
what A and B are and how many runs each, then per item a table as the
EANTC report has it: each row and metric, A's and B's min / avg / max,
delta and %, and how many runs gave a value; then the runs whose item
failed, if any. Left out: charts (the numbers are the result) and any
colouring of "better" or "worse" (the sign means what the metric means).
"""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

import pandas as pd

from .comparisons import delta_text, pct_text, row_label, sides_text, value_text
from .dashboards import html_page, html_section

__all__ = ["compare_html", "write_html"]

_STYLE = """
table.compare td:nth-child(n+3), table.compare th:nth-child(n+3) { text-align: right; }
table.compare th[colspan] { text-align: center; border-bottom: 1px solid #999; }
table.compare td.pct { font-weight: 600; }
"""


def _item_table(rows: pd.DataFrame) -> str:
    group = (
        '<tr><th></th><th></th><th colspan="3">A (without)</th><th colspan="3">B (with)</th>'
        "<th></th><th></th><th></th></tr>\n"
    )
    head = "".join(
        f"<th>{h}</th>"
        for h in ("row", "metric", "min", "avg", "max", "min", "avg", "max", "delta", "%", "runs A / B")
    )
    body = []
    for r in rows.to_dict("records"):
        nums = "".join(f"<td>{value_text(r[c])}</td>" for c in ("a_min", "a_avg", "a_max", "b_min", "b_avg", "b_max"))
        body.append(
            f"<tr><td>{html.escape(row_label(r))}</td><td>{html.escape(r['metric'] if isinstance(r['metric'], str) else '-')}</td>{nums}"
            f"<td>{delta_text(r['delta'])}</td><td class=\"pct\">{pct_text(r['pct'])}</td>"
            f"<td>{r['a_runs']} / {r['b_runs']}</td></tr>\n"
        )
    return f'<table class="compare">\n{group}<tr>{head}</tr>\n{"".join(body)}</table>\n'


def _failed(failed: list[dict[str, Any]]) -> str:
    items = "".join(
        f"<li>side {html.escape(str(f['side']))}, seed {html.escape(str(f['seed']))}, "
        f"{html.escape(str(f['item'] or 'the whole run'))}: {html.escape(str(f['error']))}</li>\n"
        for f in failed
    )
    return html_section("Runs that failed", f"<p>Their figures are left out.</p>\n<ul>\n{items}</ul>\n")


def compare_html(df: pd.DataFrame, title: str = "fabriclab compare") -> str:
    """The page's HTML for :func:`fabriclab.compare`'s DataFrame."""
    meta = "; ".join(line for line in sides_text(df).splitlines() if line) + (
        ". Delta is B avg - A avg; % is delta / A avg x 100."
    )
    sections = []
    for label, rows in df.groupby("item", sort=False):
        name = rows["name"].iloc[0]
        named = f" {name}" if isinstance(name, str) and name else ""
        sections.append(html_section(f"{label}{named}", _item_table(rows)))
    failed = df.attrs.get("failed", [])
    if failed:
        sections.append(_failed(failed))
    if not sections:
        sections.append(html_section("No rows", "<p>No item gave a value on either side.</p>\n"))
    return html_page(title, meta, sections, style=_STYLE)


def write_html(df: pd.DataFrame, out: str | os.PathLike[str], title: str = "fabriclab compare") -> Path:
    """Write the comparison page to ``out``; returns its path."""
    path = Path(out)
    path.write_text(compare_html(df, title), encoding="utf-8")
    return path
