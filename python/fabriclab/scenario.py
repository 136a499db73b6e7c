"""Scenario files: a fabric and a list of experiments, in TOML.

``fabriclab run FILE`` and :func:`run_scenario` run every item in the order
the file gives them. The format::

    # The fabric: a preset name, or the path of a fabric TOML file relative
    # to this file ...
    fabric = "heps"
    # ... or, instead, an inline table with the schema of a fabric file:
    # [fabric]
    # name = "two-hosts"
    # [fabric.topology]
    # kind = "leaf_spine"
    # spines = 0
    # leaves = 1
    # hosts_per_leaf = 2
    # host_link_gbps = 100
    # uplink_gbps = 100

    seed = 1                  # optional, default 1; any item may set its own

    [[perftest]]              # one perftest run; keys are perftest's options
    name = "bandwidth"        # optional label
    test = "ib_write_bw"      # ib_write_bw, ib_write_lat, ib_read_bw, ...
    client = "h0"             # default h0
    server = "h4"             # default h1
    size = 65536              # -s
    report_gbits = true       # --report_gbits
    # all_sizes (-a), iters (-n), tx_depth (-t), bidirectional (-b),
    # duration_s (-D), mtu (--mtu), qps (-q), cq_mod (-Q), and
    # background = [{src = "h1", dst = "h4", bytes = 1048576, repeat = true}]

    [[flows]]                 # a set of flows run together until they finish
    name = "incast"
    flows = [
        {src = "h0", dst = "h4", bytes = 1048576},
        {src = "h1", dst = "h4", bytes = 1048576, start_us = 2.0},
    ]                         # each: src, dst, bytes, op, start_us, priority, repeat
    sample_us = 1.0           # optional per-QP telemetry period
    limit_us = 1000.0         # optional bound on simulated time

    [[imb]]                   # Intel MPI Benchmarks; keys as fabriclab.imb()
    benchmarks = ["Allreduce", "Alltoall"]
    np = 32                   # and ppn, hosts, placement, msglog = [0, 22],
    npmin = 32                # iters, root_shift, algorithms = {allreduce =
                              # "ring"}, library

    [[osu]]                   # an OSU micro-benchmark; keys as fabriclab.osu()
    test = "osu_allreduce"
    np = 168
    ppn = 24                  # and hosts, placement, sizes = [8, 256],
                              # iterations, warmup, full, algorithm, library

    [[cbench]]                # Cbench rotate; keys as fabriclab.cbench()
    test = "rotate"           # or "rotate_latency"
    np = 128                  # and ppn, hosts, placement, bytes,
    rotations = 4             # iterations, tests

    [[fio]]                   # fio block I/O; keys as fabriclab.fio()
    rw = "randwrite"          # randread, write, read
    bs = "4M"                 # and iodepth, numjobs, runtime, ramp_time,
    clients = "h0-h10"        # name, target_write_mbps, target_read_mbps,
    targets = "h12-h15"       # target_latency_us, submit_us, avg_time_ms

    [[hpl]]                   # HPL (Linpack); keys as fabriclab.hpl()
    dat = "HPL.dat"           # optional: an HPL.dat, relative to this file
    n = [8192]                # and nb, grids = ["2x4", "4x2"] (or [[2, 4]]),
    grids = ["2x4"]           # pmap, pfact, nbmin, ndiv, rfact, bcast,
    dgemm_gflops = 40.0       # depth, swap, swap_threshold, np, ppn, hosts,
                              # placement, pfact_gflops, samples, background,
                              # background_iperf (N and a grid: here or in dat)

``telemetry_us`` in an ``[[imb]]``, ``[[osu]]``, ``[[cbench]]`` or
``[[hpl]]`` item samples every port every that many microseconds into the
result's ``attrs["port_samples"]`` (``fabriclab run --dashboard PREFIX``
draws them).

Unknown keys are errors (:class:`fabriclab.errors.ParseError` for the
scenario's own keys; the core rejects unknown perftest options and flow
keys).
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Union

import pandas as pd

from . import api, mpi
from .bisection import cbench
from .errors import ArgumentTypeError, ParseError
from .linpack import hpl, read_dat
from .mpi import OPTION_GROUPS
from .storage import fio

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["run_scenario", "load_scenario", "Scenario", "ScenarioItem", "toml_dumps"]

_KINDS = ("perftest", "flows", "imb", "osu", "cbench", "fio", "hpl")
_TOP_KEYS = {"fabric", "seed", *_KINDS}
_FLOWS_KEYS = {"name", "seed", "flows", "sample_us", "limit_us"}
# The keys every MPI tool shares come from one table (mpi.OPTION_GROUPS).
_JOB_ENV_KEYS = {*OPTION_GROUPS["job"], *OPTION_GROUPS["env"]}
_TUNING_KEYS = set(OPTION_GROUPS["tuning"])
_IMB_KEYS = {"benchmarks", "msglog", "npmin", "iters", "root_shift", "algorithms", *_JOB_ENV_KEYS, *_TUNING_KEYS}
_CBENCH_KEYS = {"test", "bytes", "iterations", "tests", "rotations", *_JOB_ENV_KEYS}
_FIO_KEYS = {"rw", "bs", "iodepth", "numjobs", "runtime", "ramp_time", "clients", "targets", "target_write_mbps", "target_read_mbps", "target_latency_us", "submit_us", "avg_time_ms"}
_HPL_KEYS = {"dat", "n", "nb", "grids", "pmap", "pfact", "nbmin", "ndiv", "rfact", "bcast", "depth", "swap", "swap_threshold", "dgemm_gflops", "pfact_gflops", "samples", *_JOB_ENV_KEYS}
_OSU_KEYS = {"test", "sizes", "iterations", "warmup", "full", "algorithm", *_JOB_ENV_KEYS, *_TUNING_KEYS}


@dataclass
class ScenarioItem:
    """One ``[[kind]]`` table."""

    kind: str  # "perftest", "flows", "imb", "osu", "cbench", "fio" or "hpl"
    name: str | None
    seed: int
    options: dict[str, Any]


@dataclass
class Scenario:
    """A parsed scenario file."""

    fabric: api.Fabric
    seed: int
    items: list[ScenarioItem]
    path: str | None = None


# --------------------------------------------------------------------------
# A small TOML writer, for inline [fabric] tables (the core takes TOML text).

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(k: str) -> str:
    return k if _BARE_KEY.match(k) else _string(k)


def _string(s: str) -> str:
    out = ['"']
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return _string(v)
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    raise ArgumentTypeError(f"cannot write a {type(v).__name__} as TOML")


def toml_dumps(doc: dict[str, Any]) -> str:
    """``doc`` (as tomllib reads it: dicts, lists, str, int, float, bool) as
    TOML text: scalars and arrays first, then one ``[table]`` per sub-dict;
    arrays of tables are written as arrays of inline tables."""
    lines: list[str] = []

    def table(d: dict[str, Any], prefix: list[str]) -> None:
        subs = [(k, v) for k, v in d.items() if isinstance(v, dict)]
        for k, v in d.items():
            if not isinstance(v, dict):
                lines.append(f"{_key(k)} = {_value(v)}")
        for k, v in subs:
            path = prefix + [k]
            lines.append("")
            lines.append("[" + ".".join(_key(p) for p in path) + "]")
            table(v, path)

    table(doc, [])
    return "\n".join(lines).lstrip("\n") + "\n"


# --------------------------------------------------------------------------


def _item_order(text: str) -> list[str]:
    """The kinds of the [[perftest]] / [[flows]] headers in file order
    (tomllib keeps each array's order, not how the two interleave)."""
    return re.findall(r"(?m)^[ \t]*\[\[[ \t]*(perftest|flows|imb|osu|cbench|fio|hpl)[ \t]*\]\]", text)


def _seed(where: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ParseError(f"{where}: seed must be a non-negative integer, got {v!r}")
    return v


def read_toml(path: str) -> tuple[str, dict[str, Any]]:
    """A scenario file's text and parsed document (``ParseError`` if it is
    not UTF-8 TOML; ``FileNotFoundError`` if absent)."""
    with open(path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")
        return text, tomllib.loads(text)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ParseError(f"scenario {path}: {e}") from None


def file_order(text: str, counts: dict[str, int]) -> list[str]:
    """The kinds of the items in file order, given how many tables of each
    kind the document has (kind by kind if the headers cannot be read)."""
    order = _item_order(text)
    everything = [k for k in _KINDS for _ in range(counts[k])]
    return order if sorted(order) == sorted(everything) else everything


def load_scenario(path: str | os.PathLike[str]) -> Scenario:
    """Read and check a scenario file (``FileNotFoundError`` if absent)."""
    path = os.fspath(path)
    text, doc = read_toml(path)
    unknown = sorted(set(doc) - _TOP_KEYS)
    if unknown:
        raise ParseError(
            f"scenario {path}: unknown key {unknown[0]!r}; the keys are fabric, seed, "
            "[[perftest]], [[flows]], [[imb]], [[osu]], [[cbench]], [[fio]] and [[hpl]]"
        )
    base = os.path.dirname(os.path.abspath(path))
    fab = doc.get("fabric", "heps")
    if isinstance(fab, dict):
        fabric = api.Fabric.from_toml(toml_dumps(fab))
    elif isinstance(fab, str):
        fabric = api._as_fabric(fab, base_dir=base)
    else:
        raise ParseError(
            f"scenario {path}: fabric must be a preset name, a file path or a [fabric] table"
        )
    seed = _seed(f"scenario {path}", doc.get("seed", 1))

    tables: dict[str, list[Any]] = {}
    for kind in _KINDS:
        v = doc.get(kind, [])
        if not isinstance(v, list) or not all(isinstance(t, dict) for t in v):
            raise ParseError(f"scenario {path}: {kind} must be written as [[{kind}]] tables")
        tables[kind] = list(v)
    order = file_order(text, {k: len(v) for k, v in tables.items()})

    items: list[ScenarioItem] = []
    counters = {k: 0 for k in _KINDS}
    for kind in order:
        t = dict(tables[kind][counters[kind]])
        counters[kind] += 1
        where = f"scenario {path}: [[{kind}]] number {counters[kind]}"
        name = t.pop("name", None)
        if name is not None and not isinstance(name, str):
            raise ParseError(f"{where}: name must be a string")
        item_seed = _seed(where, t.pop("seed", seed))
        if kind == "flows":
            unknown = sorted(set(t) - _FLOWS_KEYS)
            if unknown:
                raise ParseError(
                    f"{where}: unknown key {unknown[0]!r}; the keys are flows, sample_us, "
                    "limit_us, name, seed"
                )
            if "flows" not in t:
                raise ParseError(f"{where}: missing the flows list")
        elif kind == "fio":
            unknown = sorted(set(t) - _FIO_KEYS)
            if unknown:
                raise ParseError(
                    f"{where}: unknown key {unknown[0]!r}; the keys are {', '.join(sorted(_FIO_KEYS))}, name, seed"
                )
        elif kind == "hpl":
            _check_hpl(where, t, base)
        elif kind in ("imb", "osu", "cbench"):
            keys = {"imb": _IMB_KEYS, "osu": _OSU_KEYS, "cbench": _CBENCH_KEYS}[kind]
            unknown = sorted(set(t) - keys)
            if unknown:
                raise ParseError(
                    f"{where}: unknown key {unknown[0]!r}; the keys are {', '.join(sorted(keys))}, name, seed"
                )
            need = "np" if kind == "imb" else "test"
            if need not in t or "np" not in t:
                raise ParseError(f"{where}: missing {need if need not in t else 'np'}")
        elif "test" not in t:
            raise ParseError(f"{where}: missing test (ib_write_bw, ib_write_lat, ...)")
        items.append(ScenarioItem(kind, name, item_seed, t))
    return Scenario(fabric=fabric, seed=seed, items=items, path=path)


def _check_hpl(where: str, t: dict[str, Any], base: str) -> None:
    """An [[hpl]] table's keys, and its ``dat`` made a readable path
    relative to the scenario file (in place)."""
    unknown = sorted(set(t) - _HPL_KEYS)
    if unknown:
        raise ParseError(
            f"{where}: unknown key {unknown[0]!r}; the keys are {', '.join(sorted(_HPL_KEYS))}, name, seed"
        )
    if "dat" in t:
        if not isinstance(t["dat"], str):
            raise ParseError(f"{where}: dat must be the path of an HPL.dat file")
        t["dat"] = os.path.join(base, t["dat"])
        read_dat(t["dat"])  # a missing file is named before anything runs
    elif "n" not in t:
        raise ParseError(f"{where}: missing n (the problem sizes) or dat (an HPL.dat)")
    elif "grids" not in t and "np" not in t:
        raise ParseError(f"{where}: missing grids (or np, or dat: an HPL.dat)")


Result = Union[pd.DataFrame, "api.FlowsResult"]


def _mpi_kwargs(o: dict[str, Any]) -> dict[str, Any]:
    out = dict(o)
    for k in ("msglog", "sizes"):
        if isinstance(out.get(k), list):
            out[k] = tuple(out[k])
    return out


def run_item(scenario: Scenario, item: ScenarioItem, progress: bool = False) -> Result:
    """Run one item: a DataFrame (perftest, IMB, OSU, Cbench, fio or HPL;
    see :func:`fabriclab.perftest`, :func:`fabriclab.imb`, ...,
    :func:`fabriclab.hpl`) or a :class:`fabriclab.FlowsResult`; the item's
    name is in ``df.attrs["name"]`` / ``result.name``. ``progress`` prints
    progress lines of long MPI runs to stderr. A key of the wrong type
    (``np = "x"``) is a :class:`fabriclab.errors.ParseError` naming the
    item."""
    try:
        return _run_item(scenario, item, progress)
    except TypeError as e:
        raise ParseError(f"[[{item.kind}]]{f' {item.name!r}' if item.name else ''}: {e}") from None


def _run_item(scenario: Scenario, item: ScenarioItem, progress: bool) -> Result:
    if item.kind == "perftest":
        df = api._run_perftest(scenario.fabric, item.options, item.seed)
        df.attrs["name"] = item.name
        return df
    if item.kind in ("imb", "osu", "cbench"):
        runs: dict[str, Callable[..., pd.DataFrame]] = {"imb": mpi.imb, "osu": mpi.osu, "cbench": cbench}
        run = runs[item.kind]
        df = run(fabric=scenario.fabric, seed=item.seed, progress=progress, **_mpi_kwargs(item.options))
        df.attrs["name"] = item.name
        return df
    if item.kind == "fio":
        df = fio(fabric=scenario.fabric, seed=item.seed, progress=progress, name=item.name or "fio", **item.options)
        df.attrs["name"] = item.name
        return df
    if item.kind == "hpl":
        df = hpl(scenario.fabric, seed=item.seed, progress=progress, **item.options)
        df.attrs["name"] = item.name
        return df
    o = item.options
    res = api.flows(
        o["flows"],
        fabric=scenario.fabric,
        seed=item.seed,
        sample_us=o.get("sample_us"),
        limit_us=o.get("limit_us"),
    )
    res.name = item.name
    return res


def run_scenario(path: str | os.PathLike[str]) -> list[Result]:
    """Run every item of scenario file ``path``, in file order: a perftest
    DataFrame for each ``[[perftest]]``, a :class:`fabriclab.FlowsResult`
    for each ``[[flows]]``."""
    sc = load_scenario(path)
    return [run_item(sc, it) for it in sc.items]
