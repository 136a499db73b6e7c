"""Lab files: one seed experiment, its published figures and how to measure them.

A lab (``python/fabriclab/labs/NAME.toml``, shipped with the package) says
which seed report it reproduces, which runs make the experiment (each a
scenario: a fabric and its items, the format of :mod:`fabriclab.scenario`),
what ``--quick`` changes, and the metrics: each a published figure, its
place in the seed, a tolerance and a small declarative selector that picks
fabriclab's value out of the runs' result tables. ``fabriclab lab run NAME``
(:func:`fabriclab.lab_run`) runs it and computes each verdict
(:mod:`fabriclab.lab_measure`); nothing in a lab file states a verdict.
The format::

    [lab]
    name = "heps"                 # the file's name without .toml
    seed = "002"                  # the seed report (docs/seeds.md section)
    title = "HEPS data-center network"
    reproduces = "ib_write_bw and ib_write_lat across spines"
    runtime_s = 1.0               # measured wall time, full lab (2 cores)
    quick_runtime_s = 1.0         # the same with --quick
    repetitions = 1               # optional: runs with seeds seed..seed+K-1

    [[run]]                       # a scenario: fabric, seed and [[run.KIND]] items
    name = "roce"
    fabric = "heps"               # a preset name, or a [run.fabric] table
    seed = 1
    [run.set]                     # optional overrides, sweep paths (docs/sweeps.md)
    "fabric.failover.detect_us" = 1000
    [run.quick]                   # overrides for --quick only
    "perftest.iters" = 1000
    [[run.perftest]]              # items: perftest, flows, imb, osu, cbench, fio, hpl
    name = "bandwidth"
    test = "ib_write_bw"

    [[metric]]
    label = "ib_write_bw across spines"
    unit = "Gb/s"
    published = 92.0              # or [low, high] for a printed range
    printed = "92"                # optional: the figure as the seed prints it
    place = "HEPS paper, Figure 3"
    kind = "compare"              # compare | calibrated | chart only (no published)
    tolerance_pct = 5             # or tolerance = 0.1 (absolute, in unit)
    select = {run = "roce", item = "bandwidth", column = "bw_avg_gbps"}

A selector: ``run`` (may be left out when the lab has one run), ``item``
(an item's name; may be left out when the run has one item), ``table``
(``"result"``, the tool's main table ``res.df``, by default; or another
of the result's tables, :meth:`fabriclab.Result.tables`, such as
``"ports"``; or ``"attrs"`` for one of its scalar figures,
:meth:`fabriclab.Result.figures`, named by ``column``), ``where`` (column = value, or = [values]),
``column`` and ``agg`` (``only``, the default: exactly one row; ``mean``,
``min``, ``max``, ``sum``). A metric may combine two selectors:
``base`` with ``op`` = ``difference`` (select - base), ``ratio``
(select / base) or ``reduction_pct`` (100 x (base - select) / base);
``by = "bytes"`` pairs their rows on a column, and the metric's ``agg``
reduces the pairs. ``scale`` and ``divide_by`` multiply and divide the
result. ``quick = false`` marks a figure the ``--quick`` variant does not
measure (it runs a smaller problem): with ``--quick`` its verdict is
``not compared (quick)``. ``repetitions = K`` repeats every run with
the seeds ``seed`` to ``seed + K - 1``, as a report repeats each test:
a figure is then the mean of its K values (their minimum and maximum
beside it), and ``--quick`` runs one repetition. ``[[plot]]`` tables draw the seed's charts in the HTML report
(:mod:`fabriclab.lab_html`).

Left out: arbitrary code in lab files (selectors are data) and verdicts
written by hand. (Runs in parallel: :mod:`fabriclab.lab_dask`.)
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from ._checks import read_file
from .errors import ArgumentTypeError, InvalidArgumentError, ParseError
from .kinds import NAMES as ITEM_KINDS
from .scenario import file_order

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["LAB_DIR", "KINDS", "Lab", "LabRun", "Metric", "Plot", "Selector", "lab_names", "load_lab", "load_labs"]

#: Where the labs shipped with the package are.
LAB_DIR = Path(__file__).resolve().parent / "labs"
#: The kinds of metric: a published figure to compare; a figure that set a
#: model parameter (it proves nothing); a figure the seed shows only as a chart.
KINDS = ("compare", "calibrated", "chart only")
AGGS = ("only", "mean", "min", "max", "sum")
OPS = ("value", "difference", "ratio", "reduction_pct")
PLOT_KINDS = ("lines", "bars")

#: Most repetitions of a lab's runs (and of a comparison's): the seed
#: reports repeated theirs 5 times; 1,000 is already hours of runs.
MAX_REPEAT = 1000
_LAB_KEYS = {"name", "seed", "title", "reproduces", "runtime_s", "quick_runtime_s", "notes", "repetitions"}
_RUN_KEYS = {"name", "fabric", "seed", "set", "quick", *ITEM_KINDS}
_METRIC_KEYS = {
    "label", "unit", "published", "printed", "place", "kind", "tolerance_pct", "tolerance", "note",
    "select", "base", "op", "by", "agg", "scale", "divide_by", "quick",
}
_SELECT_KEYS = {"run", "item", "table", "where", "column", "agg"}
_PLOT_KEYS = {"title", "place", "kind", "x", "y", "xlabel", "ylabel", "logx", "logy", "series", "metrics"}
_SERIES_KEYS = {"label", "run", "item", "table", "where"}


@dataclass(frozen=True)
class Selector:
    """Which rows and column of which run's item hold a value."""

    run: str
    item: str | None
    column: str
    table: str = "result"
    where: Mapping[str, Any] = field(default_factory=dict)
    agg: str = "only"


@dataclass(frozen=True)
class Metric:
    """One published figure and how fabriclab measures it."""

    label: str
    unit: str
    kind: str  # one of KINDS
    place: str  # where the seed prints (or draws) it
    published: tuple[float, float] | None  # (low, high); low == high for one figure
    printed: str  # the published figure as the seed prints it ("" for chart only)
    tolerance_pct: float | None
    tolerance: float | None  # absolute, in unit
    select: Selector
    base: Selector | None = None
    op: str = "value"
    by: str | None = None
    agg: str = "only"
    scale: float = 1.0
    divide_by: float = 1.0
    note: str = ""
    #: False when the --quick variant does not measure this figure (a
    #: smaller problem): its verdict is then QUICK_SKIPPED.
    quick: bool = True

    def tolerance_text(self) -> str:
        """``5 %`` or ``0.1 Gb/s``; "" when it has none."""
        if self.tolerance_pct is not None:
            return f"{self.tolerance_pct:g} %"
        if self.tolerance is not None:
            if self.unit == "%":
                return f"{self.tolerance:g} percentage point{'' if self.tolerance == 1 else 's'}"
            return f"{self.tolerance:g} {self.unit}".rstrip()
        return ""


@dataclass(frozen=True)
class Series:
    """One line of a ``lines`` plot."""

    label: str
    run: str
    item: str | None
    table: str
    where: Mapping[str, Any]


@dataclass(frozen=True)
class Plot:
    """A chart of the report, drawn where the seed shows one."""

    title: str
    place: str
    kind: str  # "lines" (y over x, one line per series) or "bars" (metrics)
    x: str = ""
    y: str = ""
    xlabel: str = ""
    ylabel: str = ""
    logx: bool = False
    logy: bool = False
    series: tuple[Series, ...] = ()
    metrics: tuple[str, ...] = ()


@dataclass(frozen=True)
class LabRun:
    """One scenario of a lab: its document (as a scenario file's), the
    order of its items, and the overrides always and under ``--quick``."""

    name: str
    doc: Mapping[str, Any]
    order: tuple[str, ...]  # item kinds in file order
    set: Mapping[str, Any]
    quick: Mapping[str, Any]

    def item_names(self) -> list[str | None]:
        """The items' names in file order."""
        seen = {k: 0 for k in ITEM_KINDS}
        out = []
        for kind in self.order:
            out.append(self.doc[kind][seen[kind]].get("name"))
            seen[kind] += 1
        return out


@dataclass(frozen=True)
class Lab:
    """A parsed lab file."""

    name: str
    seed: str
    title: str
    reproduces: str
    runtime_s: float | None
    quick_runtime_s: float | None
    runs: tuple[LabRun, ...]
    metrics: tuple[Metric, ...]
    plots: tuple[Plot, ...]
    path: str
    notes: str = ""
    #: Each run is repeated with seeds seed, seed + 1, ...; figures are means.
    repetitions: int = 1

    def run(self, name: str) -> LabRun:
        return next(r for r in self.runs if r.name == name)


# --------------------------------------------------------------------------
# Finding labs


def lab_names() -> list[str]:
    """The labs shipped with the package, sorted by seed then name."""
    return [lab.name for lab in load_labs()]


def load_labs() -> list[Lab]:
    """Every shipped lab, sorted by seed then name."""
    labs = [load_lab(p) for p in sorted(LAB_DIR.glob("*.toml"))]
    return sorted(labs, key=lambda lab: (lab.seed, lab.name))


def _lab_path(name_or_path: str | os.PathLike[str]) -> str:
    if not isinstance(name_or_path, (str, os.PathLike)) or isinstance(os.fspath(name_or_path), bytes):
        raise ArgumentTypeError(
            "a lab is a name (see `fabriclab lab list`) or the path of a lab file, "
            f"not {type(name_or_path).__name__}"
        )
    text = os.fspath(name_or_path)
    if isinstance(name_or_path, os.PathLike) or text.endswith(".toml") or os.sep in text:
        return text
    path = LAB_DIR / f"{text}.toml"
    if not path.is_file():
        known = sorted(p.stem for p in LAB_DIR.glob("*.toml"))
        raise InvalidArgumentError(f"unknown lab {text!r}; the labs are {', '.join(known)} (`fabriclab lab list`)")
    return str(path)


def load_lab(name_or_path: str | os.PathLike[str]) -> Lab:
    """A lab by name (a shipped lab) or by the path of a lab file, checked:
    :class:`ParseError` naming the file and key for anything malformed,
    :class:`InvalidArgumentError` for an unknown lab name."""
    path = _lab_path(name_or_path)
    raw = read_file(path)
    try:
        text = raw.decode("utf-8-sig")
        doc = tomllib.loads(text)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ParseError(f"lab {path}: {e}") from None
    return _parse(path, text, doc)


# --------------------------------------------------------------------------
# Checking


class _Where:
    """Error messages naming the file and the key."""

    def __init__(self, path: str):
        self.path = path

    def error(self, key: str, message: str) -> ParseError:
        return ParseError(f"lab {self.path}: {key}: {message}")


def _keys(w: _Where, key: str, table: Any, allowed: set[str], required: Sequence[str] = ()) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise w.error(key, "must be a table")
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise w.error(key, f"unknown key {unknown[0]!r}; the keys are {', '.join(sorted(allowed))}")
    for k in required:
        if k not in table:
            raise w.error(key, f"missing {k}")
    return table


def _str(w: _Where, key: str, v: Any, empty: bool = False) -> str:
    if not isinstance(v, str) or (not empty and not v.strip()):
        raise w.error(key, f"must be a{'' if empty else ' non-empty'} string, got {v!r}")
    return v


def _number(w: _Where, key: str, v: Any, positive: bool = False, nonzero: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise w.error(key, f"must be a finite number, got {v!r}")
    if positive and v <= 0:
        raise w.error(key, f"must be above 0, got {v!r}")
    if nonzero and v == 0:
        raise w.error(key, "must not be 0 (it would make every value 0)")
    return float(v)


def _run_orders(text: str, nruns: int) -> list[list[str]] | None:
    """The item kinds of each [[run]] in file order, from the headers
    (None if the headers cannot be read)."""
    orders: list[list[str]] = []
    pattern = r"(?m)^[ \t]*\[\[[ \t]*run(?:[ \t]*\.[ \t]*(" + "|".join(ITEM_KINDS) + r"))?[ \t]*\]\]"
    for m in re.finditer(pattern, text):
        if m.group(1) is None:
            orders.append([])
        elif orders:
            orders[-1].append(m.group(1))
        else:
            return None
    return orders if len(orders) == nruns else None


def _parse(path: str, text: str, doc: dict[str, Any]) -> Lab:
    w = _Where(path)
    _keys(w, "top level", doc, {"lab", "run", "metric", "plot"}, ("lab", "run", "metric"))
    head = _keys(w, "[lab]", doc["lab"], _LAB_KEYS, ("name", "seed", "title", "reproduces"))
    name = _str(w, "[lab] name", head["name"])
    stem = Path(path).stem
    if name != stem:
        raise w.error("[lab] name", f"{name!r} must be the file's name without .toml ({stem!r})")
    seed = _str(w, "[lab] seed", head["seed"])
    runtimes = {k: _number(w, f"[lab] {k}", head[k], positive=True) if k in head else None for k in ("runtime_s", "quick_runtime_s")}
    repetitions = head.get("repetitions", 1)
    if isinstance(repetitions, bool) or not isinstance(repetitions, int) or not 1 <= repetitions <= MAX_REPEAT:
        raise w.error("[lab] repetitions", f"must be a whole number of runs from 1 to {MAX_REPEAT}, got {repetitions!r}")

    runs_doc = doc["run"]
    if not isinstance(runs_doc, list) or not runs_doc:
        raise w.error("[[run]]", "a lab needs at least one [[run]] table")
    orders = _run_orders(text, len(runs_doc))
    runs = []
    for i, r in enumerate(runs_doc):
        runs.append(_parse_run(w, i, r, orders[i] if orders else None))
    names = [r.name for r in runs]
    if len(set(names)) != len(names):
        raise w.error("[[run]] name", f"run names must differ, got {names}")

    metrics_doc = doc["metric"]
    if not isinstance(metrics_doc, list) or not metrics_doc:
        raise w.error("[[metric]]", "a lab needs at least one [[metric]] table")
    metrics = tuple(_parse_metric(w, i, m, runs) for i, m in enumerate(metrics_doc))
    labels = [m.label for m in metrics]
    if len(set(labels)) != len(labels):
        dup = next(x for x in labels if labels.count(x) > 1)
        raise w.error("[[metric]] label", f"labels must differ, {dup!r} is used twice")
    plots = tuple(_parse_plot(w, i, p, runs, labels) for i, p in enumerate(doc.get("plot", [])))
    return Lab(
        name=name,
        seed=seed,
        title=_str(w, "[lab] title", head["title"]),
        reproduces=_str(w, "[lab] reproduces", head["reproduces"]),
        runtime_s=runtimes["runtime_s"],
        quick_runtime_s=runtimes["quick_runtime_s"],
        runs=tuple(runs),
        metrics=metrics,
        plots=plots,
        path=path,
        notes=_str(w, "[lab] notes", head.get("notes", ""), empty=True),
        repetitions=repetitions,
    )


def _overrides(w: _Where, key: str, v: Any) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise w.error(key, 'must be a table of sweep paths, e.g. "imb.msglog" = [0, 10]')
    return dict(v)


def _parse_run(w: _Where, i: int, r: Any, order: list[str] | None) -> LabRun:
    key = f"[[run]] number {i + 1}"
    r = _keys(w, key, r, _RUN_KEYS, ("name", "fabric"))
    name = _str(w, f"{key} name", r["name"])
    key = f"run {name!r}"
    doc = {k: v for k, v in r.items() if k not in ("name", "set", "quick")}
    counts = {}
    for kind in ITEM_KINDS:
        tables = doc.get(kind, [])
        if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
            raise w.error(f"{key} {kind}", f"write items as [[run.{kind}]] tables")
        counts[kind] = len(tables)
    if not sum(counts.values()):
        raise w.error(key, "has no items ([[run.imb]], [[run.perftest]], ...)")
    everything = [k for k in ITEM_KINDS for _ in range(counts[k])]
    kinds = order if order is not None and sorted(order) == sorted(everything) else file_order("", counts)
    run = LabRun(name, doc, tuple(kinds), _overrides(w, f"{key} set", r.get("set", {})), _overrides(w, f"{key} quick", r.get("quick", {})))
    names = [n for n in run.item_names() if n is not None]
    if len(set(names)) != len(names):
        raise w.error(f"{key} items", f"item names must differ, got {names}")
    return run


def _find_run(w: _Where, key: str, run: Any, runs: Sequence[LabRun]) -> LabRun:
    if run is None:
        if len(runs) != 1:
            raise w.error(key, f"say which run (run = one of {', '.join(repr(r.name) for r in runs)})")
        return runs[0]
    found = [r for r in runs if r.name == run]
    if not found:
        raise w.error(f"{key} run", f"no run named {run!r}; the runs are {', '.join(repr(r.name) for r in runs)}")
    return found[0]


def _find_item(w: _Where, key: str, item: Any, run: LabRun) -> str | None:
    names = run.item_names()
    if item is None:
        if len(names) != 1:
            raise w.error(key, f"say which item of run {run.name!r} (item = one of {', '.join(repr(n) for n in names)})")
        return names[0]
    if item not in names:
        raise w.error(f"{key} item", f"run {run.name!r} has no item named {item!r}; its items are {', '.join(repr(n) for n in names)}")
    found: str = item  # one of the names
    return found


def _where(w: _Where, key: str, v: Any) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise w.error(key, "must be a table of column = value (or = [values])")
    return dict(v)


def _parse_selector(w: _Where, key: str, s: Any, runs: Sequence[LabRun]) -> Selector:
    s = _keys(w, key, s, _SELECT_KEYS, ("column",))
    run = _find_run(w, key, s.get("run"), runs)
    agg = s.get("agg", "only")
    if agg not in AGGS:
        raise w.error(f"{key} agg", f"must be one of {', '.join(AGGS)}, got {agg!r}")
    return Selector(
        run=run.name,
        item=_find_item(w, key, s.get("item"), run),
        column=_str(w, f"{key} column", s["column"]),
        table=_str(w, f"{key} table", s.get("table", "result")),
        where=_where(w, f"{key} where", s.get("where", {})),
        agg=agg,
    )


def _published(w: _Where, key: str, v: Any) -> tuple[float, float]:
    if isinstance(v, list):
        if len(v) != 2:
            raise w.error(key, f"a range is [low, high], got {v!r}")
        lo, hi = (_number(w, key, x) for x in v)
        if lo > hi:
            raise w.error(key, f"a range is [low, high], got {v!r}")
        return lo, hi
    x = _number(w, key, v)
    return x, x


def _printed(lo: float, hi: float) -> str:
    def one(x: float) -> str:
        return str(int(x)) if x == int(x) and abs(x) < 1e15 else repr(x)

    return one(lo) if lo == hi else f"{one(lo)} to {one(hi)}"


def _parse_metric(w: _Where, i: int, m: Any, runs: Sequence[LabRun]) -> Metric:
    key = f"[[metric]] number {i + 1}"
    m = _keys(w, key, m, _METRIC_KEYS, ("label", "unit", "kind", "place", "select"))
    label = _str(w, f"{key} label", m["label"])
    key = f"metric {label!r}"
    kind = m["kind"]
    if kind not in KINDS:
        raise w.error(f"{key} kind", f"must be one of {', '.join(repr(k) for k in KINDS)}, got {kind!r}")
    if kind == "chart only":
        for k in ("published", "printed", "tolerance_pct", "tolerance"):
            if k in m:
                raise w.error(f"{key} {k}", "a chart-only metric has no published figure (the seed has no number)")
        published, printed = None, ""
    else:
        if "published" not in m:
            raise w.error(key, f"missing published (a {kind} metric has a published figure)")
        published = _published(w, f"{key} published", m["published"])
        printed = _str(w, f"{key} printed", m["printed"]) if "printed" in m else _printed(*published)
    tol_pct = _number(w, f"{key} tolerance_pct", m["tolerance_pct"]) if "tolerance_pct" in m else None
    tol = _number(w, f"{key} tolerance", m["tolerance"]) if "tolerance" in m else None
    if (tol_pct is not None and tol_pct < 0) or (tol is not None and tol < 0):
        raise w.error(f"{key} tolerance", "must not be negative")
    if tol_pct is not None and tol is not None:
        raise w.error(key, "give tolerance_pct (relative) or tolerance (absolute), not both")
    if kind == "compare" and tol_pct is None and tol is None:
        raise w.error(key, "a compare metric states its tolerance: tolerance_pct = 5 (relative) or tolerance = 0.1 (absolute)")
    if kind == "compare" and tol_pct is not None and published is not None and 0.0 in published:
        raise w.error(f"{key} tolerance_pct", "a relative tolerance of a published 0 is meaningless; give tolerance (absolute)")
    select = _parse_selector(w, f"{key} select", m["select"], runs)
    base = _parse_selector(w, f"{key} base", m["base"], runs) if "base" in m else None
    op = m.get("op", "value" if base is None else None)
    if op not in OPS:
        raise w.error(f"{key} op", f"must be one of {', '.join(OPS)}, got {op!r}")
    if (base is None) != (op == "value"):
        raise w.error(f"{key} op", "op = value takes select only; difference, ratio and reduction_pct take select and base")
    by = _str(w, f"{key} by", m["by"]) if "by" in m else None
    agg = m.get("agg", "only")
    if agg not in AGGS:
        raise w.error(f"{key} agg", f"must be one of {', '.join(AGGS)}, got {agg!r}")
    if agg != "only" and by is None:
        raise w.error(f"{key} agg", "a metric's agg reduces the rows paired by `by`; without by, put agg in select")
    return Metric(
        label=label,
        unit=_str(w, f"{key} unit", m["unit"], empty=True),
        kind=kind,
        place=_str(w, f"{key} place", m["place"]),
        published=published,
        printed=printed,
        tolerance_pct=tol_pct,
        tolerance=tol,
        select=select,
        base=base,
        op=op,
        by=by,
        agg=agg,
        scale=_number(w, f"{key} scale", m.get("scale", 1.0), nonzero=True),
        divide_by=_number(w, f"{key} divide_by", m.get("divide_by", 1.0), positive=True),
        note=_str(w, f"{key} note", m.get("note", ""), empty=True),
        quick=_bool(w, f"{key} quick", m.get("quick", True)),
    )


def _bool(w: _Where, key: str, v: Any) -> bool:
    if not isinstance(v, bool):
        raise w.error(key, f"must be true or false, got {v!r}")
    return v


def _parse_plot(w: _Where, i: int, p: Any, runs: Sequence[LabRun], labels: Sequence[str]) -> Plot:
    key = f"[[plot]] number {i + 1}"
    p = _keys(w, key, p, _PLOT_KEYS, ("title", "place", "kind"))
    kind = p["kind"]
    if kind not in PLOT_KINDS:
        raise w.error(f"{key} kind", f"must be one of {', '.join(PLOT_KINDS)}, got {kind!r}")
    flags = {k: p.get(k, False) for k in ("logx", "logy")}
    for k, v in flags.items():
        if not isinstance(v, bool):
            raise w.error(f"{key} {k}", f"must be true or false, got {v!r}")
    series: list[Series] = []
    metrics: list[str] = []
    if kind == "lines":
        for k in ("x", "y", "series"):
            if k not in p:
                raise w.error(key, f"missing {k} (a lines plot draws y over x for each series)")
        for k in ("x", "y"):
            _str(w, f"{key} {k}", p[k])  # a column name
        if not isinstance(p["series"], list) or not p["series"]:
            raise w.error(f"{key} series", "must be a list of {label, run, item, where} tables")
        for j, s in enumerate(p["series"]):
            sk = f"{key} series {j + 1}"
            s = _keys(w, sk, s, _SERIES_KEYS, ("label",))
            run = _find_run(w, sk, s.get("run"), runs)
            series.append(
                Series(
                    label=_str(w, f"{sk} label", s["label"]),
                    run=run.name,
                    item=_find_item(w, sk, s.get("item"), run),
                    table=_str(w, f"{sk} table", s.get("table", "result")),
                    where=_where(w, f"{sk} where", s.get("where", {})),
                )
            )
    else:
        ms = p.get("metrics")
        if not isinstance(ms, list) or not ms or not all(isinstance(x, str) for x in ms):
            raise w.error(f"{key} metrics", "a bars plot lists metric labels: metrics = [\"...\", ...]")
        for x in ms:
            if x not in labels:
                raise w.error(f"{key} metrics", f"no metric labelled {x!r}")
        metrics = list(ms)
    return Plot(
        title=_str(w, f"{key} title", p["title"]),
        place=_str(w, f"{key} place", p["place"]),
        kind=kind,
        x=str(p.get("x", "")),
        y=str(p.get("y", "")),
        xlabel=str(p.get("xlabel", p.get("x", ""))),
        ylabel=str(p.get("ylabel", p.get("y", ""))),
        logx=flags["logx"],
        logy=flags["logy"],
        series=tuple(series),
        metrics=tuple(metrics),
    )


LabLike = Union[str, "os.PathLike[str]", Lab]
