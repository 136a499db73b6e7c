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
    ]                         # each: src, dst, bytes, op, start_us, priority, repeat, via, return_via
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
                              # background_iperf (N and a grid: here or in dat;
                              # its output-file and device-out lines are not
                              # followed: the item's text is the run's output)

``telemetry_us`` in an ``[[imb]]``, ``[[osu]]``, ``[[cbench]]`` or
``[[hpl]]`` item samples every port every that many microseconds into the
result's ``port_samples`` (``fabriclab run --dashboard PREFIX``
draws them).

Unknown keys are errors (:class:`fabriclab.errors.ParseError`, naming the
item and the nearest key; the core rejects unknown keys of flows). The
kinds of item and their keys come from one registry, :mod:`fabriclab.kinds`
(each kind's keys are its API function's keyword arguments). Values are
checked by each item's run; :func:`run_scenario` and ``fabriclab run``
check every item that way before the first runs (:func:`check_scenario`,
simulating nothing). :func:`load_scenario` reads a file; :meth:`Scenario.from_dict` loads an
already-parsed document (what sweeps do with each point). Left out:
running items in parallel (see :mod:`fabriclab.sweeps`).
"""

from __future__ import annotations

import copy
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import api
from ._checks import as_path, read_file
from ._toml import toml_dumps, toml_key, toml_layout
from .errors import ArgumentTypeError, FabriclabError, ParseError
from .kinds import NAMES, Result, kind_of

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["run_scenario", "load_scenario", "Scenario", "ScenarioItem", "toml_dumps", "read_toml", "file_order", "item_headers", "run_item", "check_item", "check_scenario"]

_TOP_KEYS = {"fabric", "seed", *NAMES}
_HEADER = re.compile(r"(?m)^[ \t]*\[\[[ \t]*(" + "|".join(NAMES) + r")[ \t]*\]\]")


@dataclass
class ScenarioItem:
    """One ``[[kind]]`` table."""

    kind: str  # one of fabriclab.kinds.NAMES
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

    @classmethod
    def from_dict(
        cls,
        doc: Mapping[str, Any],
        *,
        origin: str | os.PathLike[str] | None = None,
        base_dir: str | os.PathLike[str] | None = None,
        order: Sequence[str] | None = None,
    ) -> Scenario:
        """Check and load a scenario document, as :mod:`tomllib` reads a
        scenario file. ``origin`` names it in errors (and becomes
        :attr:`path`); relative paths in it (a fabric file, an HPL.dat) are
        taken from ``base_dir`` (default: ``origin``'s directory, else the
        current one); ``order`` gives the kinds of its items in file order
        (a table's items interleave there, not in a dict: default, kind by
        kind in the document's order). ``doc`` is not changed."""
        return scenario_from_dict(doc, origin=origin, base_dir=base_dir, order=order)


# --------------------------------------------------------------------------


def _seed(where: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ParseError(f"{where}: seed must be a non-negative integer, got {v!r}")
    return v


def read_toml(path: str) -> tuple[str, dict[str, Any]]:
    """A scenario file's text and parsed document (``ParseError`` if it is
    not UTF-8 TOML; ``FileNotFoundError`` if absent)."""
    raw = read_file(path)
    try:
        text = raw.decode("utf-8-sig")
        return text, tomllib.loads(text)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ParseError(f"scenario {path}: {e}") from None


def item_headers(text: str) -> list[str]:
    """The kinds of the ``[[kind]]`` headers of scenario text ``text``, in
    file order (tomllib keeps each array's order, not how the arrays
    interleave): the ``order`` of :meth:`Scenario.from_dict`."""
    return list(_HEADER.findall(text))


def file_order(text: str, counts: Mapping[str, int]) -> list[str]:
    """The kinds of the items in file order, given how many tables of each
    kind the document has (kind by kind if the headers cannot be read)."""
    return _checked_order(item_headers(text), counts, NAMES)


def _checked_order(order: Sequence[str], counts: Mapping[str, int], kinds: Sequence[str]) -> list[str]:
    everything = [k for k in kinds for _ in range(counts.get(k, 0))]
    return list(order) if sorted(order) == sorted(everything) else everything


def load_scenario(path: str | os.PathLike[str]) -> Scenario:
    """Read and check a scenario file (``FileNotFoundError`` if absent)."""
    path = as_path("scenario file", path)
    text, doc = read_toml(path)
    sc = scenario_from_dict(doc, origin=path, order=item_headers(text))
    if not sc.items:
        # A file that runs nothing is a mistake (from_dict allows it, for
        # items made by hand).
        raise ParseError(f"scenario {path}: it runs nothing; add an item table such as [[perftest]] or [[imb]] ({', '.join(NAMES)})")
    return sc


#: The core's parse error: where in the text, then a snippet of that line
#: (gutter lines "  11 | [swich]" and "    |  ^^^^^"), then the reason.
_PARSE_AT = re.compile(r"TOML parse error at line (\d+), column \d+\n")
_GUTTER = re.compile(r"^\s*\d*\s*\|")


def _inline_fabric(label: str, fab: dict[str, Any]) -> api.Fabric:
    """A scenario's ``[fabric]`` table as a Fabric. The core reads it as a
    TOML copy of the table, so its errors' line numbers and snippets are the
    copy's: the error names the scenario and the table or key as the file
    has it (``[fabric.swich]``, ``fabric.nic.roce_mtu``) instead."""
    try:
        return api.Fabric.from_toml(toml_dumps(fab))
    except FabriclabError as e:
        msg = str(e).removeprefix("fabric TOML: ")
        m = _PARSE_AT.match(msg)
        if m:
            layout = toml_layout(fab)
            n = int(m[1])
            text, path = layout[n - 1] if 0 < n <= len(layout) else ("[", ())
            where = ".".join(toml_key(k) for k in ("fabric", *path))
            reason = " ".join(line.strip() for line in msg[m.end() :].split("\n") if not _GUTTER.match(line))
            msg = f"{f'[{where}]' if text.startswith('[') else where}: {reason}"
        elif msg.startswith("["):  # "[topology] hosts: ...", "[pfc] is ...": a table of the fabric
            msg = "[fabric." + msg[1:]
        else:
            msg = f"[fabric]: {msg}"
        raise type(e)(f"{label}: {msg}") from None


def scenario_from_dict(
    doc: Mapping[str, Any],
    *,
    origin: str | os.PathLike[str] | None = None,
    base_dir: str | os.PathLike[str] | None = None,
    order: Sequence[str] | None = None,
) -> Scenario:
    """:meth:`Scenario.from_dict`."""
    path = None if origin is None else os.fspath(origin)
    label = f"scenario {path}" if path is not None else "scenario"
    if not isinstance(doc, Mapping):
        raise ParseError(f"{label}: a scenario is a table (dict), not {type(doc).__name__}")
    unknown = sorted(set(doc) - _TOP_KEYS)
    if unknown:
        raise ParseError(
            f"{label}: unknown key {unknown[0]!r}; the keys are fabric, seed, "
            + ", ".join(f"[[{k}]]" for k in NAMES[:-1])
            + f" and [[{NAMES[-1]}]]"
        )
    if base_dir is not None:
        base = os.fspath(base_dir)
    else:
        base = os.path.dirname(os.path.abspath(path)) if path is not None else os.getcwd()
    fab = doc.get("fabric", "heps")
    if isinstance(fab, dict):
        fabric = _inline_fabric(label, fab)
    elif isinstance(fab, str):
        fabric = api.as_fabric(fab, base_dir=base)
    else:
        raise ParseError(f"{label}: fabric must be a preset name, a file path or a [fabric] table")
    seed = _seed(label, doc.get("seed", 1))

    tables: dict[str, list[Any]] = {}
    for kind in NAMES:
        v = doc.get(kind, [])
        if not isinstance(v, list) or not all(isinstance(t, dict) for t in v):
            raise ParseError(f"{label}: {kind} must be written as [[{kind}]] tables")
        tables[kind] = list(v)
    counts = {k: len(v) for k, v in tables.items()}
    if order is None:  # kind by kind, in the document's order
        kinds_order = [k for k in doc if k in tables for _ in range(counts[k])]
    else:
        kinds_order = _checked_order(order, counts, NAMES)

    items: list[ScenarioItem] = []
    counters = {k: 0 for k in NAMES}
    for kind in kinds_order:
        t = copy.deepcopy(tables[kind][counters[kind]])
        counters[kind] += 1
        where = f"{label}: [[{kind}]] number {counters[kind]}"
        name = t.pop("name", None)
        if name is not None and not isinstance(name, str):
            raise ParseError(f"{where}: name must be a string")
        item_seed = _seed(where, t.pop("seed", seed))
        kind_of(kind).check_table(where, t, base)
        items.append(ScenarioItem(kind, name, item_seed, t))
    return Scenario(fabric=fabric, seed=seed, items=items, path=path)


def check_item(scenario: Scenario, item: ScenarioItem, number: int | None = None) -> None:
    """Check one item as :func:`run_item` would run it, simulating nothing
    (:mod:`fabriclab.precheck`): its input error, naming the item (and its
    ``number`` in the file, if given), or None."""
    where = _where(item, number)
    kind = kind_of(item.kind)
    kind.check_keys(where, item.options)
    try:
        kind.check_run(scenario.fabric, item.seed, item.options, item.name)
    except ArgumentTypeError as e:
        raise ParseError(f"{where}: {e}") from None
    except FabriclabError as e:
        raise type(e)(f"{where}: {e}") from None


def check_scenario(scenario: Scenario) -> None:
    """Check every item of ``scenario`` (:func:`check_item`) before any
    runs: the first bad one's error."""
    for n, item in enumerate(scenario.items, 1):
        check_item(scenario, item, n)


def _where(item: ScenarioItem, number: int | None = None) -> str:
    label = f" {item.name!r}" if item.name else ""
    return f"{'' if number is None else f'item {number}, '}[[{item.kind}]]{label}"


def run_item(scenario: Scenario, item: ScenarioItem, progress: bool = False) -> Result:
    """Run one item: its tool's :class:`fabriclab.Result` (see
    :func:`fabriclab.perftest`, :func:`fabriclab.flows`, ...,
    :func:`fabriclab.hpl`); the item's name is in ``res.name`` (and
    ``res.df.attrs["name"]``). ``progress`` prints
    progress lines of long MPI runs to stderr. An unknown key, or one of
    the wrong type (``np = "x"``), is a :class:`fabriclab.errors.ParseError`
    naming the item; any other error is raised as it is."""
    where = _where(item)
    kind = kind_of(item.kind)
    kind.check_keys(where, item.options)
    try:
        return kind.run(scenario.fabric, item.seed, item.options, item.name, progress)
    except ArgumentTypeError as e:  # the API's check of a value's type
        raise ParseError(f"{where}: {e}") from None


def run_scenario(path: str | os.PathLike[str]) -> list[Result]:
    """Run every item of scenario file ``path``, in file order: one
    :class:`fabriclab.Result` per item. Every item is checked first
    (:func:`check_scenario`), so a bad value in the last item is an error
    before the first runs."""
    sc = load_scenario(path)
    check_scenario(sc)
    return [run_item(sc, it) for it in sc.items]
