"""Parameter sweeps: one scenario file run at many points of a grid of
overrides, in parallel on Dask, with every result in one DataFrame.

:func:`sweep` expands a grid (the cartesian product of value lists, or an
explicit list of points), writes each point's scenario (the file with the
point's overrides applied), checks every one before anything runs, runs
each point in a Dask worker process and returns one row per result row of
every item of every point, sorted by point. By default it starts a
``distributed.LocalCluster`` on this machine (one single-threaded worker
process per core) and closes it afterwards; pass ``client=`` (a
``distributed.Client``, e.g. on dask-jobqueue's ``SLURMCluster``) or a
scheduler address to run on a cluster (see ``docs/sweeps.md``).

A worker process that dies (killed, out of memory) loses only the point it
was running: Dask runs that point again on another worker, up to
``RETRIES_ON_WORKER_DEATH`` more times, then the point is recorded as failed
with the reason. The ``out`` file is rewritten whole through a temporary
file and a rename, so an interrupted sweep leaves it complete and valid
with every point finished so far; ``resume=True`` (``--resume``) then runs
only the points it lacks.

What it leaves out: it starts no batch jobs itself (dask-jobqueue does
that), it does not retry points whose items failed (their errors are in the
``error`` column; ``resume`` runs them again),
it runs the points it is given (no adaptive search), it does not aggregate
(the DataFrame is for pandas), and it never splits one point over workers:
a point's items run one after another in one process.

Example::

    import fabriclab

    df = fabriclab.sweep(
        "scenarios/heps.toml",
        {"fabric.cc.algorithm": ["none", "dcqcn"], "seed": [1, 2, 3]},
        workers=4,
        progress=True,
        out="heps-sweep.csv",
    )
    bw = df[df["name"] == "bandwidth"]
    print(bw.groupby("fabric.cc.algorithm")["bw_avg_gbps"].mean())

Override paths address the scenario document:

- ``seed``: the scenario's seed (the default of items without their own);
- ``fabric``: the whole fabric, a preset name or a fabric file (relative to
  the scenario file) or, from Python, a dict with a fabric file's schema;
- ``fabric.<section>.<key>`` (any depth, e.g. ``fabric.cc.algorithm``,
  ``fabric.ecn.kmax_bytes``, ``fabric.ib.cc.enabled``) or
  ``fabric.<key>`` (``fabric.transport``): one setting of the fabric. A
  preset or a fabric file is loaded as a table first, so the point's
  scenario carries its fabric inline; missing sections are created;
- ``<kind>.<key>`` (``perftest.size``, ``imb.np``, ``flows.limit_us``): that
  key of every ``[[kind]]`` table; ``<kind>[i].<key>``: of the i-th one,
  counting from 0 in file order. Deeper keys and list elements work the same
  way: ``imb.algorithms.allreduce``, ``flows[0].flows[1].bytes``.

An ``[[hpl]]`` item's ``dat`` (a path relative to the scenario file) is
made absolute in the point's scenario; the worker reads it, so on a
cluster it must be on a file system the workers share.

Values are TOML values: int, float, bool, str, lists and dicts of them
(numpy scalars are taken as Python numbers).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import importlib.util
import inspect
import io
import itertools
import logging
import math
import numbers
import os
import re
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Union, cast

import pandas as pd

from . import api
from .errors import FabriclabError, InvalidArgumentError, ParseError, UnknownHostError
from .scenario import _KINDS, Scenario, _key, _value, file_order, load_scenario, read_toml, run_item, toml_dumps
from .storage import parse_hosts

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["sweep", "sweep_points", "expand_grid", "SweepPoint", "LEADING_COLUMNS", "ITEM_COLUMNS"]

#: Grid: a mapping of override paths to lists of values (their cartesian
#: product), or a list of points (each a mapping of paths to values).
Grid = Union[Mapping[str, Iterable[Any]], Sequence[Mapping[str, Any]]]

#: The columns every sweep result starts with, the swept paths going
#: between ``point`` and ``item``.
LEADING_COLUMNS = ("point", "item", "kind", "name")
#: Per-item figures that follow an item's own columns (where the item has them).
ITEM_COLUMNS = ("outcome", "sim_time_us", "events")
_ERROR = "error"
_PERFTEST_KEYS = tuple(inspect.signature(api.perftest_options).parameters)
_SEGMENT = re.compile(r"([A-Za-z0-9_-]+)(?:\[(\d+)\])?")
_PARQUET_EVERY_S = 2.0


@dataclasses.dataclass(frozen=True)
class SweepPoint:
    """One point of a sweep."""

    #: Position in the expanded grid, from 0.
    index: int
    #: The overrides: path -> value.
    params: dict[str, Any]
    #: The point's scenario file, standalone (its fabric is a preset name or
    #: an inline table): ``fabriclab run`` runs it as it is.
    toml: str

    def label(self) -> str:
        """``point 3 (seed = 2, fabric.cc.algorithm = "none")``."""
        inner = ", ".join(f"{k} = {_value(v)}" for k, v in self.params.items())
        return f"point {self.index} ({inner})" if inner else f"point {self.index}"


# --------------------------------------------------------------------------
# Grids


def _toml_value(v: Any, where: str) -> Any:
    """``v`` as a plain TOML-compatible Python value (numpy scalars and
    tuples converted); :class:`InvalidArgumentError` if TOML cannot hold it."""
    if isinstance(v, bool) or type(v).__name__ == "bool_":
        return bool(v)
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        return float(v)
    if isinstance(v, str):
        return v
    if isinstance(v, Mapping):
        return {str(k): _toml_value(x, where) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_toml_value(x, where) for x in v]
    what = "None" if v is None else f"a {type(v).__name__}"
    raise InvalidArgumentError(
        f"{where}: {what} is not a value a scenario can hold; use an int, float, bool, string, list or table"
    )


def _path_key(k: Any) -> str:
    if not isinstance(k, str):
        raise InvalidArgumentError(
            f"grid keys are override paths (strings like 'fabric.cc.algorithm'), got {k!r}"
        )
    return k.strip()


def _value_list(path: str, values: Any) -> list[Any]:
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
        raise InvalidArgumentError(
            f"grid[{path!r}] must be a list of values, e.g. [{values!r}], not a {type(values).__name__}"
        )
    out = [_toml_value(v, f"grid[{path!r}]") for v in values]
    if not out:
        raise InvalidArgumentError(f"grid[{path!r}] is empty: give at least one value")
    return out


def expand_grid(grid: Grid) -> list[dict[str, Any]]:
    """The points of ``grid``: the cartesian product of a mapping of paths to
    value lists (the last path varying fastest), or a list of points (each a
    mapping of paths to single values) as given. Values are normalised
    (numpy scalars to Python numbers, tuples to lists)."""
    if isinstance(grid, Mapping):
        paths = [_path_key(k) for k in grid]
        lists = [_value_list(p, v) for p, v in zip(paths, grid.values())]
        return [dict(zip(paths, combo)) for combo in itertools.product(*lists)]
    given: object = grid  # callers need not be typed: checked here
    if isinstance(given, (str, bytes)) or not isinstance(given, Iterable):
        raise InvalidArgumentError(
            f"grid must be a mapping of paths to value lists or a list of points, not {type(grid).__name__}"
        )
    points: list[dict[str, Any]] = []
    for n, point in enumerate(grid):
        if not isinstance(point, Mapping):
            raise InvalidArgumentError(
                f"grid point {n} must be a mapping of paths to values, not {type(point).__name__}"
            )
        points.append({_path_key(k): _toml_value(v, f"grid point {n}, {k!r}") for k, v in point.items()})
    if not points:
        raise InvalidArgumentError("the grid has no points")
    return points


# --------------------------------------------------------------------------
# Override paths


@dataclasses.dataclass(frozen=True)
class _Path:
    text: str
    root: str  # "seed", "fabric" or an item kind
    index: int | None  # [[kind]] table index, or None for all of them
    rest: tuple[tuple[str, int | None], ...]  # keys below the root


_ROOTS_HELP = "seed, backend, fabric, fabric.<section>.<key> or <kind>.<key> / <kind>[i].<key> with kind one of " + ", ".join(_KINDS)


def _parse_path(text: str) -> _Path:
    """Split ``text`` into its root and keys; :class:`ParseError` if it
    cannot address anything in a scenario."""
    if text == "backend":  # the simulation backend: fabric.sim.backend
        return _Path(text, "fabric", None, (("sim", None), ("backend", None)))
    segments: list[tuple[str, int | None]] = []
    for part in text.split("."):
        m = _SEGMENT.fullmatch(part)
        if not m:
            raise ParseError(
                f"invalid sweep path {text!r}: expected keys separated by dots, e.g. "
                "fabric.cc.algorithm or perftest[0].size"
            )
        segments.append((m.group(1), None if m.group(2) is None else int(m.group(2))))
    (root, index), rest = segments[0], tuple(segments[1:])
    if root == "seed":
        if index is not None or rest:
            raise ParseError(f"invalid sweep path {text!r}: seed has no keys below it")
    elif root == "fabric":
        if index is not None:
            raise ParseError(f"invalid sweep path {text!r}: the fabric is one table, write fabric.<section>.<key>")
    elif root in _KINDS:
        if not rest:
            raise ParseError(f"invalid sweep path {text!r}: say which key of [[{root}]], e.g. {root}.{_example_key(root)}")
    else:
        raise ParseError(f"unknown sweep path {text!r}: paths are {_ROOTS_HELP}")
    return _Path(text, root, index, rest)


def _example_key(kind: str) -> str:
    return {"perftest": "size", "flows": "limit_us", "imb": "np", "osu": "np", "cbench": "np", "fio": "iodepth", "hpl": "bcast"}[kind]


def _check_targets(path: _Path, doc: Mapping[str, Any]) -> None:
    """A kind path must name tables the scenario has."""
    if path.root not in _KINDS:
        return
    tables = doc.get(path.root, [])
    n = len(tables) if isinstance(tables, list) else 0
    if n == 0:
        have = [k for k in _KINDS if isinstance(doc.get(k), list) and doc[k]]
        raise ParseError(
            f"sweep path {path.text!r}: the scenario has no [[{path.root}]] tables"
            + (f" (it has {', '.join(f'[[{k}]]' for k in have)})" if have else "")
        )
    if path.index is not None and path.index >= n:
        raise InvalidArgumentError(
            f"sweep path {path.text!r}: the scenario has {n} [[{path.root}]] table(s), "
            f"so the index must be 0{f' to {n - 1}' if n > 1 else ''}"
        )


def _assign(target: Any, keys: Sequence[tuple[str, int | None]], value: Any, path: str) -> None:
    """Set ``target[k1][k2]...[kn] = value`` (creating missing tables)."""
    for n, (key, idx) in enumerate(keys):
        last = n == len(keys) - 1
        if not isinstance(target, dict):
            shown = ".".join(k for k, _ in keys[:n]) or "its root"
            raise InvalidArgumentError(f"sweep path {path!r}: {shown} is not a table")
        if idx is None:
            if last:
                target[key] = copy.deepcopy(value)
                return
            target = target.setdefault(key, {})
            if isinstance(target, list):
                raise InvalidArgumentError(
                    f"sweep path {path!r}: {key} is a list; address one element, e.g. {key}[0]"
                )
            continue
        seq = target.get(key)
        if not isinstance(seq, list):
            raise InvalidArgumentError(f"sweep path {path!r}: {key} is not a list, it cannot take [{idx}]")
        if idx >= len(seq):
            raise InvalidArgumentError(
                f"sweep path {path!r}: {key} has {len(seq)} element(s), so [{idx}] is out of range"
            )
        if last:
            seq[idx] = copy.deepcopy(value)
            return
        target = seq[idx]


# --------------------------------------------------------------------------
# Scenarios of points


@dataclasses.dataclass
class _Base:
    """The scenario file being swept, as a document."""

    path: str  # as the caller gave it (for messages)
    base_dir: str
    doc: dict[str, Any]
    order: list[str]  # item kinds in file order
    fabrics: dict[str, Any] = dataclasses.field(default_factory=dict)  # cache of loaded fabric tables


def _load_base(path: str) -> _Base:
    text, doc = read_toml(path)
    counts = {k: len(doc[k]) if isinstance(doc.get(k), list) else 0 for k in _KINDS}
    return _Base(path, os.path.dirname(os.path.abspath(path)), doc, file_order(text, counts))


def _fabric_table(base: _Base, fabric: Any, need_table: bool) -> Any:
    """The fabric as the point's scenario will carry it: a fabric file or
    TOML text as a table; a preset name stays a name unless ``need_table``
    (some of its settings are overridden)."""
    if not isinstance(fabric, str):
        return copy.deepcopy(fabric)  # a table, or something load_scenario rejects
    key = f"{need_table}:{fabric}"
    if key not in base.fabrics:
        preset = fabric in api.presets()
        if preset and not need_table:
            base.fabrics[key] = fabric  # a preset name
        else:
            try:
                text, file = api._resolve(fabric, base.base_dir)  # the core's error for an unknown name
            except OSError as e:
                raise InvalidArgumentError(f"fabric file {e.filename or fabric}: {e.strerror or e}") from None
            where = f"fabric file {file}" if file else (f"preset {fabric}" if preset else "fabric")
            try:
                base.fabrics[key] = tomllib.loads(text)
            except tomllib.TOMLDecodeError as e:
                raise ParseError(f"{where}: {e}") from None
    return copy.deepcopy(base.fabrics[key])


def _point_doc(base: _Base, params: Mapping[str, Any], paths: Mapping[str, _Path]) -> dict[str, Any]:
    """The scenario document with ``params`` applied (a whole ``fabric``
    first, then the rest in order)."""
    doc = copy.deepcopy(base.doc)
    fabric = params.get("fabric", doc.get("fabric", "heps"))
    fabric_keys = [p for p in params if paths[p].root == "fabric" and paths[p].rest]
    doc["fabric"] = _fabric_table(base, fabric, need_table=bool(fabric_keys))
    for text, value in params.items():
        p = paths[text]
        if p.root == "seed":
            doc["seed"] = value
        elif p.root == "fabric":
            if p.rest:
                _assign(doc["fabric"], p.rest, value, text)
        else:
            tables = doc[p.root]
            for t in [tables[p.index]] if p.index is not None else tables:
                _assign(t, p.rest, value, text)
    _absolute_dats(doc, base.base_dir)
    return doc


def _absolute_dats(doc: dict[str, Any], base_dir: str) -> None:
    """[[hpl]] tables' ``dat`` paths made absolute: the point's scenario is
    written elsewhere, and the file is read where the point runs."""
    tables = doc.get("hpl")
    for t in tables if isinstance(tables, list) else []:
        if isinstance(t, dict) and isinstance(t.get("dat"), str):
            t["dat"] = os.path.join(base_dir, t["dat"])


def _scenario_text(doc: Mapping[str, Any], order: Sequence[str]) -> str:
    """A scenario document as TOML, its items in ``order`` as ``[[kind]]``
    tables (so the file order survives) and an inline ``[fabric]`` table
    last."""
    lines: list[str] = []
    fabric = doc.get("fabric")
    for k, v in doc.items():
        if k in _KINDS and isinstance(v, list) and all(isinstance(t, dict) for t in v):
            continue
        if k == "fabric" and isinstance(v, dict):
            continue
        lines.append(f"{_key(k)} = {_value(v)}")
    seen = {k: 0 for k in _KINDS}
    for kind in order:
        tables = doc.get(kind)
        if not isinstance(tables, list) or seen[kind] >= len(tables) or not isinstance(tables[seen[kind]], dict):
            continue
        lines += ["", f"[[{kind}]]"]
        lines += [f"{_key(k)} = {_value(v)}" for k, v in tables[seen[kind]].items()]
        seen[kind] += 1
    if isinstance(fabric, dict):
        lines += ["", toml_dumps({"fabric": fabric}).strip("\n")]
    return "\n".join(lines).lstrip("\n") + "\n"


@contextlib.contextmanager
def _as_file(text: str, origin: str) -> Iterator[str]:
    """``text`` in a temporary file named like ``origin``."""
    with tempfile.TemporaryDirectory(prefix="fabriclab-sweep-") as d:
        path = os.path.join(d, os.path.basename(origin) or "scenario.toml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        yield path


def _reworded(e: FabriclabError, tmp: str, origin: str, prefix: str) -> FabriclabError:
    """``e`` with the temporary file's name replaced by the swept file's and
    ``prefix`` in front."""
    msg = str(e).replace(tmp, origin)
    return type(e)(f"{prefix}: {msg}" if prefix else msg)


def _load_point(text: str, origin: str, prefix: str = "") -> Scenario:
    """Load a point's scenario text as :func:`load_scenario` would load the
    file; errors name the swept file."""
    with _as_file(text, origin) as tmp:
        try:
            sc = load_scenario(tmp)
        except FabriclabError as e:
            raise _reworded(e, tmp, origin, prefix) from None
    sc.path = origin
    return sc


def _check_perftest(where: str, options: Mapping[str, Any]) -> None:
    """What the core would reject in a perftest table only when it runs:
    unknown keys and wrong types."""
    unknown = sorted(set(options) - set(_PERFTEST_KEYS))
    if unknown:
        raise ParseError(
            f"{where}: unknown perftest key {unknown[0]!r}; the keys are {', '.join(_PERFTEST_KEYS)}, name, seed"
        )
    try:
        api.perftest_options(**options)
    except TypeError as e:
        raise InvalidArgumentError(f"{where}: {e}") from None


def _named_hosts(kind: str, options: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(key, host) for every host an item names."""
    out: list[tuple[str, Any]] = []
    if kind == "perftest":
        out += [("client", options.get("client", "h0")), ("server", options.get("server", "h1"))]
    ranged = {"fio": ("clients", "targets"), "hpl": ("hosts",)}.get(kind, ())
    for key in ranged:  # lists, or text with ranges like h0-h10
        try:
            out += [(key, h) for h in parse_hosts(options.get(key, []))]
        except (TypeError, FabriclabError):
            pass  # the core names the bad value when the item runs
    hosts = None if "hosts" in ranged else options.get("hosts")
    if isinstance(hosts, str):
        hosts = [h for h in hosts.split(",") if h]
    if isinstance(hosts, list):
        out += [("hosts", h) for h in hosts]
    key = "flows" if kind == "flows" else "background"
    flows = options.get(key)
    for n, f in enumerate(flows if isinstance(flows, list) else []):
        if isinstance(f, Mapping):
            out += [(f"{key}[{n}].{end}", f.get(end)) for end in ("src", "dst")]
    return out


def _check_hosts(where: str, kind: str, options: Mapping[str, Any], hosts: Sequence[str]) -> None:
    """Hosts the fabric does not have (the core finds them only when it runs)."""
    known = set(hosts)
    for key, host in _named_hosts(kind, options):
        if isinstance(host, str) and host not in known:
            shown = ", ".join(hosts) if len(hosts) <= 6 else ", ".join([*hosts[:4], "...", hosts[-1]])
            raise UnknownHostError(
                f'{where}: {key}: the fabric has no host "{host}"; its {len(hosts)} hosts are {shown}'
            )


def _check_point(point: SweepPoint, origin: str) -> None:
    """Load the point's scenario and check what the core would otherwise
    find only when it runs."""
    sc = _load_point(point.toml, origin, point.label())
    counters = {k: 0 for k in _KINDS}
    for item in sc.items:
        where = f"{point.label()}: {item.kind}[{counters[item.kind]}]"
        counters[item.kind] += 1
        if item.kind == "perftest":
            _check_perftest(where, item.options)
        _check_hosts(where, item.kind, item.options, sc.fabric.hosts)


def sweep_points(scenario: str | os.PathLike[str], grid: Grid) -> list[SweepPoint]:
    """The points of a sweep of scenario file ``scenario`` over ``grid``,
    each with its scenario text, all checked: the errors a point's scenario
    would raise (unknown paths or keys, wrong types, values the fabric
    rejects) are raised here, as :class:`~fabriclab.errors.ParseError` or
    :class:`~fabriclab.errors.InvalidArgumentError` (or the core's class)
    naming the point. Values the core checks only when it runs (perftest's
    iteration counts, MPI options) are reported per point by :func:`sweep`."""
    origin = os.fspath(scenario)
    points = expand_grid(grid)
    base = _load_base(origin)
    paths: dict[str, _Path] = {}
    for params in points:
        for text in params:
            if text not in paths:
                paths[text] = _parse_path(text)
                _check_targets(paths[text], base.doc)
    out: list[SweepPoint] = []
    for i, params in enumerate(points):
        draft = SweepPoint(i, params, "")
        try:
            text = _scenario_text(_point_doc(base, params, paths), base.order)
        except FabriclabError as e:
            raise type(e)(f"{draft.label()}: {e}") from None
        except TypeError as e:  # a TOML date or time in the file
            raise ParseError(f"scenario {origin}: {e}; a swept scenario holds no dates or times") from None
        point = SweepPoint(i, params, text)
        _check_point(point, origin)
        out.append(point)
    return out


# --------------------------------------------------------------------------
# Running a point (in a worker process)


def _error_text(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


def _result_rows(label: str, kind: str, name: str | None, res: Any) -> list[dict[str, Any]]:
    """One record per row of an item's result, with the item's figures."""
    head = {"item": label, "kind": kind, "name": name, _ERROR: None}
    if isinstance(res, api.FlowsResult):
        table = res.flows
        extra = {"outcome": res.outcome, "sim_time_us": res.sim_time_us, "events": res.events}
    else:
        table = res
        extra = {k: res.attrs[k] for k in ITEM_COLUMNS if k in res.attrs}
    records = api._records(table) or [{}]
    return [{**rec, **extra, **head} for rec in records]  # the leading columns win any clash


def _run_point(text: str, origin: str) -> list[dict[str, Any]]:
    """Run every item of one point's scenario; one record per result row.
    An item that fails gives one record with its error; the others run."""
    try:
        sc = _load_point(text, origin)
    except Exception as e:  # checked before the sweep started: should not happen
        return [{"item": None, "kind": None, "name": None, _ERROR: _error_text(e)}]
    rows: list[dict[str, Any]] = []
    counters = {k: 0 for k in _KINDS}
    for item in sc.items:
        label = f"{item.kind}[{counters[item.kind]}]"
        counters[item.kind] += 1
        try:
            res = run_item(sc, item)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # a Rust panic arrives as pyo3's PanicException, a BaseException
            rows.append({"item": label, "kind": item.kind, "name": item.name, _ERROR: _error_text(e)})
            continue
        rows.extend(_result_rows(label, item.kind, item.name, res))
    return rows


# --------------------------------------------------------------------------
# Results


def _param_columns(points: Sequence[SweepPoint]) -> list[str]:
    return list(dict.fromkeys(p for pt in points for p in pt.params))


def _columns(params: Sequence[str], seen: Iterable[str]) -> list[str]:
    """Leading columns, the swept paths, the items' own columns in the order
    first seen, the per-item figures, then ``error``."""
    seen = list(seen)
    fixed = set(LEADING_COLUMNS) | set(params) | set(ITEM_COLUMNS) | {_ERROR}
    own = [c for c in seen if c not in fixed]
    extra = [c for c in ITEM_COLUMNS if c in seen]
    return ["point", *params, "item", "kind", "name", *own, *extra, _ERROR]


def _cell(v: Any) -> Any:
    """A parameter as a DataFrame cell (lists as tuples, so they group)."""
    return tuple(_cell(x) for x in v) if isinstance(v, list) else v


def _records(point: SweepPoint, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    params = {k: _cell(v) for k, v in point.params.items()}
    return [{**r, "point": point.index, **params} for r in rows]


def _frame(records: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    return pd.DataFrame(list(records), columns=list(columns))


# --------------------------------------------------------------------------
# Output files


def _has_pyarrow() -> bool:
    return importlib.util.find_spec("pyarrow") is not None


def _parquet_ready(df: pd.DataFrame) -> pd.DataFrame:
    """Object columns whose values are of several types (a parameter that is
    an int at one point and a string at another) as strings: Parquet columns
    have one type."""
    out = df
    for c in df.columns:
        if df[c].dtype != object:
            continue
        kinds = {type(v) for v in df[c] if v is not None and not (isinstance(v, float) and math.isnan(v))}
        if len(kinds) > 1:
            if out is df:
                out = df.copy()
            out[c] = [None if v is None else str(v) for v in df[c]]
    return out


#: A point whose worker dies is run again on another worker up to this many
#: more times (Dask's ``distributed.scheduler.allowed-failures``), then
#: recorded as failed.
RETRIES_ON_WORKER_DEATH = 2


class _Writer:
    """Writes rows to ``out`` as points finish, at a cost that grows with the
    rows written, not with their square:

    - CSV: each point's rows are appended (whole lines, one write); the file
      is rewritten whole only when a point brings a column the file does not
      have yet (a new kind of item, say).
    - Parquet: a Parquet file is only readable once closed, so it is
      rewritten whole, through a temporary file and a rename (never seen
      half written), at most every ``_PARQUET_EVERY_S`` and no more often
      than it keeps writing to a tenth of the run's time (the wait after a
      write is nine times what the write took); :meth:`flush` writes what
      is pending (on Ctrl-C).

    :meth:`finish` writes the final table, sorted by point."""

    def __init__(self, path: str, params: Sequence[str]):
        self.path = path
        self.parquet = path.lower().endswith(".parquet")
        self.params = list(params)
        self.records: list[dict[str, Any]] = []
        self.seen: dict[str, None] = {}
        self.last_write = 0.0
        #: How long the last whole write took, s.
        self.last_cost = 0.0
        #: The columns of the CSV file as written (None: rewrite it whole).
        self.csv_columns: list[str] | None = None
        #: Rows added since the last write (Parquet).
        self.pending = False

    @classmethod
    def open(cls, out: str | os.PathLike[str], params: Sequence[str], keep: Sequence[Mapping[str, Any]] = ()) -> _Writer:
        """Check ``out`` and start it afresh, or with the rows ``keep`` of a
        sweep being resumed (:class:`InvalidArgumentError` if it cannot be
        written)."""
        path = os.fspath(out)
        low = path.lower()
        if not (low.endswith(".csv") or low.endswith(".parquet")):
            raise InvalidArgumentError(f"out={path!r}: write a .csv or a .parquet file")
        if low.endswith(".parquet") and not _has_pyarrow():
            raise InvalidArgumentError(
                f"out={path!r}: writing Parquet needs pyarrow (pip install pyarrow), or write a .csv file"
            )
        w = cls(path, params)
        try:
            if keep:
                # Resuming: the kept rows replace the file in one rename.
                w.add(keep)
            else:  # start afresh: no stale rows of an earlier sweep
                open(path, "w", encoding="utf-8").close()
                if low.endswith(".parquet"):
                    os.remove(path)  # an empty file is no Parquet file
        except OSError as e:
            raise InvalidArgumentError(f"cannot write {path}: {e.strerror or e}") from None
        return w

    def add(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Rows of one finished point."""
        self.records.extend(dict(r) for r in records)
        for r in records:
            self.seen.update(dict.fromkeys(r))
        columns = _columns(self.params, self.seen)
        if not self.parquet:
            if columns != self.csv_columns:
                self._replace(_frame(self.records, columns))
                self.csv_columns = columns
            else:
                text = _frame([dict(r) for r in records], columns).to_csv(index=False, header=False)
                # One unbuffered write per point: a killed driver leaves
                # whole points, or at worst a torn last line, which a
                # resume drops (_read_done).
                with open(self.path, "ab", buffering=0) as fh:
                    fh.write(text.encode("utf-8"))
            return
        self.pending = True
        if time.monotonic() - self.last_write >= max(_PARQUET_EVERY_S, 9 * self.last_cost):
            self.flush()

    def flush(self) -> None:
        """Write the rows not written yet (Parquet; CSV rows are written as
        they come)."""
        if self.parquet and self.pending:
            self._replace(_frame(self.records, _columns(self.params, self.seen)))

    def finish(self, df: pd.DataFrame) -> None:
        """The whole result, sorted by point."""
        self._replace(df)

    def _replace(self, df: pd.DataFrame) -> None:
        t0 = time.monotonic()
        tmp = f"{self.path}.tmp-{os.getpid()}"
        if self.parquet:
            _parquet_ready(df).to_parquet(tmp, index=False)
        else:
            df.to_csv(tmp, index=False)
        os.replace(tmp, self.path)
        self.last_write = time.monotonic()
        self.last_cost = self.last_write - t0
        self.pending = False


# --------------------------------------------------------------------------
# Dask


def _distributed() -> Any:
    try:
        import distributed
    except ImportError as e:  # pragma: no cover - a dependency of the package
        raise ImportError(
            "fabriclab.sweep needs Dask's distributed scheduler: pip install 'dask[distributed]'"
        ) from e
    return distributed


def _worker_count(workers: Any, npoints: int) -> int:
    if workers is None:
        workers = os.cpu_count() or 1
    elif isinstance(workers, bool) or not isinstance(workers, numbers.Integral) or workers < 1:
        raise InvalidArgumentError(f"workers must be a positive integer, got {workers!r}")
    return max(1, min(int(workers), npoints))


@contextlib.contextmanager
def _dask_client(client: Any, n: int) -> Iterator[tuple[Any, str]]:
    """The client to submit to, and a description of where it runs: a
    LocalCluster of ``n`` workers started (and closed) here, a client
    connected (and closed) here to a scheduler address, or the caller's
    client as it is."""
    dd = _distributed()
    if client is None:
        import dask

        with dask.config.set({"distributed.scheduler.allowed-failures": RETRIES_ON_WORKER_DEATH}), dd.LocalCluster(
            n_workers=n,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0",  # any free port: never "8787 is in use" beside another cluster
            silence_logs=logging.ERROR,
        ) as cluster, dd.Client(cluster, set_as_default=False) as c:
            where = f"a LocalCluster of {n} worker process(es)"
            if importlib.util.find_spec("bokeh") is not None:
                where += f", dashboard {cluster.dashboard_link}"
            yield c, where
        return
    if isinstance(client, str):
        _check_address(client)
        try:
            c = dd.Client(client, set_as_default=False)
        except OSError as e:
            raise OSError(f"cannot reach the Dask scheduler at {client}: {e}") from e
        with c:
            yield c, _where(c)
        return
    yield client, _where(client)


def _check_address(address: str) -> None:
    """A malformed scheduler address, before a Client is made for it (a
    Client that fails on one lingers until the interpreter exits)."""
    from distributed.comm.addressing import parse_address, parse_host_port

    try:
        scheme, location = parse_address(address)
        if scheme not in ("tcp", "tls", "ws", "wss"):
            raise InvalidArgumentError(f"sweeps connect over tcp, tls, ws or wss, not {scheme}")
        parse_host_port(location)
    except ValueError as e:
        raise InvalidArgumentError(f"scheduler address {address!r}: {e}; write tcp://HOST:PORT") from None


def _where(client: Any) -> str:
    """``tcp://host:port (N worker(s) now)`` for a progress line."""
    return f"{client.scheduler.address} ({len(client.nthreads())} worker(s) now)"


class _Progress:
    """Progress lines on stderr: points done / total, elapsed, an estimate
    of the time left; at most one a second, and always the last."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.enabled = total, enabled
        self.start = self.last = time.monotonic()
        self.done = self.failed = 0

    def begin(self) -> None:
        """The points are submitted: the clock starts (cluster start-up left out)."""
        self.start = self.last = time.monotonic()

    def note(self, text: str) -> None:
        if self.enabled:
            print(f"sweep: {text}", file=sys.stderr, flush=True)

    def update(self, failed: bool) -> None:
        self.done += 1
        self.failed += failed
        now = time.monotonic()
        if not self.enabled or (now - self.last < 1.0 and self.done < self.total):
            return
        self.last = now
        elapsed = now - self.start
        line = f"{self.done}/{self.total} points done"
        if self.failed:
            line += f" ({self.failed} with errors)"
        line += f", {elapsed:.1f} s elapsed"
        if self.done < self.total:
            line += f", about {elapsed / self.done * (self.total - self.done):.0f} s left"
        self.note(line)


def _run_all(client: Any, points: Sequence[SweepPoint], origin: str, writer: _Writer | None, progress: _Progress) -> dict[int, list[dict[str, Any]]]:
    """Submit every point; collect (and write) each as it finishes."""
    dd = _distributed()
    token = uuid.uuid4().hex[:8]
    futures = {
        client.submit(_run_point, p.toml, origin, key=f"fabriclab-sweep-{token}-{p.index}", pure=False): p
        for p in points
    }
    done: dict[int, list[dict[str, Any]]] = {}
    try:
        for fut in dd.as_completed(list(futures), loop=client.loop):
            point = futures[fut]
            try:
                rows = fut.result()
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as e:  # the worker died (KilledWorker), the task was cancelled, ...
                rows = [{"item": None, "kind": None, "name": None, _ERROR: _error_text(e)}]
            fut.release()
            records = _records(point, rows)
            done[point.index] = records
            if writer is not None:
                writer.add(records)
            progress.update(any(r.get(_ERROR) for r in rows))
    finally:
        pending = [f for f in futures if not f.done()]
        if pending:
            client.cancel(pending)
        if writer is not None:
            writer.flush()  # the finished points' rows are kept, whatever stopped the run
    return done


def sweep(
    scenario: str | os.PathLike[str],
    grid: Grid,
    *,
    client: Any = None,
    workers: int | None = None,
    progress: bool = False,
    out: str | os.PathLike[str] | None = None,
    resume: bool = False,
) -> pd.DataFrame:
    """Run scenario file ``scenario`` once per point of ``grid``, each point
    in a Dask worker process, and return every result row in one DataFrame.

    ``grid`` maps override paths (``"seed"``, ``"fabric.cc.algorithm"``,
    ``"perftest.size"``, ``"imb[1].np"``; see :mod:`fabriclab.sweeps`) to
    lists of values and sweeps their cartesian product, or is a list of
    points, each a mapping of paths to values. Every point's scenario is
    built and checked before anything runs (see :func:`sweep_points`).

    ``client``: None starts a ``distributed.LocalCluster`` of ``workers``
    single-threaded worker processes (default: one per CPU, at most one per
    point) and closes it at the end; a ``distributed.Client`` (e.g. on
    ``dask_jobqueue.SLURMCluster``) is used as it is; a scheduler address
    (``"tcp://host:8786"``) is connected to for the sweep. Workers need
    fabriclab installed; points carry their scenario (fabric inline or a
    preset name), so workers need no shared files.

    ``progress`` prints progress lines to stderr. ``out`` (a ``.csv`` or,
    with pyarrow, a ``.parquet`` path) is written as points finish, so a
    killed sweep keeps its finished points; at the end it holds the
    returned table. With ``resume``, the points already in ``out`` without
    an error (matched by their swept values, seed included when swept) are
    not run again: their rows are kept and the rest are added.

    Returns one row per result row of every item of every point, sorted by
    point, then item in file order: ``point``, one column per swept path,
    ``item`` (``"perftest[0]"``: kind and index, the path prefix that
    addresses it), ``kind``, ``name``, the item's own columns (perftest's
    :data:`~fabriclab.BW_COLUMNS` or :data:`~fabriclab.LAT_COLUMNS`, a
    flows item's per-flow table, IMB's, OSU's or Cbench's rows),
    ``outcome``, ``sim_time_us``, ``events`` (where the item has them) and
    ``error``: None, or the error of an item that failed (its only row; the
    point's other items and the other points still run) or of a point whose
    worker died (one row, no item). ``df.attrs`` holds ``"params"`` (the
    swept paths), ``"points"`` (how many) and ``"failed"`` (the indices of
    points with an error). The same grid and seeds give the same
    DataFrame, whatever the number of workers.
    """
    origin = os.fspath(scenario)
    if client is not None and workers is not None:
        raise InvalidArgumentError(
            "workers sizes the LocalCluster that sweep starts; a client or scheduler brings its own workers"
        )
    points = sweep_points(origin, grid)
    params = _param_columns(points)
    done: dict[int, list[dict[str, Any]]] = {}
    if resume:
        if out is None:
            raise InvalidArgumentError("resume needs out=: the results file of the sweep to resume")
        old = _read_done(os.fspath(out), params)
        by_key = {_point_key(p.params, params): p for p in points}
        for _, rows in old.groupby("point", sort=True) if len(old) else ():
            key = _point_key(cast("dict[str, Any]", rows.iloc[0].to_dict()), params)
            p = by_key.get(key)
            if p is not None and p.index not in done:
                recs = api._records(rows)
                done[p.index] = [
                    {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
                    | {"point": p.index, **{k: _cell(v) for k, v in p.params.items()}}
                    for r in recs
                ]
    todo = [p for p in points if p.index not in done]
    kept = [r for i in sorted(done) for r in done[i]]
    writer = _Writer.open(out, params, kept) if out is not None else None
    prog = _Progress(len(todo), progress)
    if resume:
        prog.note(f"{len(done)} point(s) already in {os.fspath(out or '')}, {len(todo)} to run")
    if todo:
        nworkers = _worker_count(workers, len(todo)) if client is None else 0
        with _dask_client(client, nworkers) as (c, where):
            prog.note(f"{len(todo)} point(s) of {origin} on {where}")
            prog.begin()
            done.update(_run_all(c, todo, origin, writer, prog))
    records = [r for i in sorted(done) for r in done[i]]
    seen: dict[str, None] = {}
    for r in records:
        seen.update(dict.fromkeys(r))
    df = _frame(records, _columns(params, seen))
    df.attrs["params"] = params
    df.attrs["points"] = len(points)
    df.attrs["failed"] = sorted(i for i, rows in done.items() if any(r.get(_ERROR) for r in rows))
    if writer is not None:
        writer.finish(df)
    return df


# --------------------------------------------------------------------------
# Resuming


def _point_key(params: Mapping[str, Any], names: Sequence[str]) -> tuple[str, ...]:
    """A point's identity in a results file: its swept values, as text (a
    CSV file gives back strings and numbers, a Parquet file its types)."""

    def text(v: Any) -> str:
        if isinstance(v, (list, tuple)):
            return "(" + ", ".join(text(x) for x in v) + ")"
        if isinstance(v, float) and v.is_integer():
            return str(int(v))
        return str(v)

    return tuple(text(params.get(n)) for n in names)


def _read_done(path: str, params: Sequence[str]) -> pd.DataFrame:
    """The rows of the points finished without error in results file
    ``path`` (empty if it does not exist)."""
    if not os.path.exists(path):
        return pd.DataFrame()
    torn = False
    try:
        if path.lower().endswith(".parquet"):
            old = pd.read_parquet(path)
        else:
            with open(path, "rb") as fh:
                data = fh.read()
            # A driver killed while appending a point can leave a torn last
            # line: drop it, and that point's other rows with it.
            torn = bool(data) and not data.endswith(b"\n")
            if torn:
                data = data[: data.rfind(b"\n") + 1]
            old = pd.read_csv(io.BytesIO(data), keep_default_na=False, na_values=[""])
    except Exception as e:  # an empty or foreign file
        raise InvalidArgumentError(f"--resume: cannot read {path} as sweep results ({e})") from None
    missing = [c for c in ("point", *params, _ERROR) if c not in old.columns]
    if missing:
        raise InvalidArgumentError(
            f"--resume: {path} has no column {missing[0]!r}: it is not the output of this sweep "
            "(the swept paths must be the same)"
        )
    failed = set(old.loc[old[_ERROR].notna(), "point"])
    if torn and len(old):
        failed.add(old["point"].iloc[-1])
    return old[~old["point"].isin(failed)]
