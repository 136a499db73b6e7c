"""The kinds of scenario item: one entry per ``[[kind]]`` table of a
scenario file (perftest, flows, imb, osu, cbench, fio, hpl and nccl).

Each :class:`Kind` holds what the scenario loader
(:mod:`fabriclab.scenario`), ``fabriclab run`` and sweeps need of it: the
API function that runs it (its keyword arguments, less the run's own
``fabric``, ``seed``, ``progress``, ``backend`` and ``name``, are the
table's keys), the keys it cannot do without, a few words saying what an
item does, and an example key for messages. Every kind's function returns
a :class:`fabriclab.Result` (:mod:`fabriclab.results`), so reading a
result is the same for all: ``res.df``, :func:`figures`,
``res.port_samples``. A new kind of item is
one entry in :data:`KINDS`.

Left out: how the command line prints a result (the CLI's, keyed by these
names), and checking values (the API functions' and the core's, which
:meth:`Kind.check_run` calls without running anything).
"""

from __future__ import annotations

import difflib
import inspect
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from . import api, mpi
from .bisection import cbench
from .errors import FabriclabError, ParseError
from .gpu import nccl_tests
from .linpack import hpl, parse_grids, read_dat
from .precheck import check_call
from .progress import ProgressArg
from .results import Result
from .storage import fio

__all__ = ["Kind", "KINDS", "NAMES", "RUN_ARGS", "ITEM_KEYS", "FIGURES", "Result", "figures", "kind_of"]

#: Keyword arguments of the API functions that are the run's, not the item
#: table's (the scenario gives the fabric and seed; ``name`` is the item's).
RUN_ARGS = frozenset({"fabric", "seed", "progress", "backend", "name"})
#: The keys every item table has besides its kind's: its label and seed.
ITEM_KEYS = ("name", "seed")

#: Words users bring from other tools for a key of ours (suggested when
#: the item has that key).
_ALIASES = {"iterations": "iters", "iteration": "iters", "n_iters": "iters", "message_size": "size"}

#: Figures of a whole item run (one value per item, where it has them).
FIGURES = ("outcome", "sim_time_us", "events")

def figures(res: Result) -> dict[str, Any]:
    """An item result's :data:`FIGURES` (those its tool reports)."""
    return {k: getattr(res, k) for k in FIGURES if getattr(res, k) is not None}


@dataclass(frozen=True)
class Kind:
    """One kind of scenario item."""

    #: The table's name: ``[[name]]``.
    name: str
    #: The API function that runs it (it returns a :class:`Result`).
    function: Callable[..., Result]
    #: A few words on what an item does (``fabriclab run``'s header lines).
    what: Callable[[Mapping[str, Any]], str]
    #: A key to show in examples (``perftest.size``).
    example_key: str
    #: Keys an item must give, each with the message when it is missing.
    required: tuple[tuple[str, str], ...] = ()
    #: More checks of a table when it is loaded: (where, table, the
    #: scenario's directory); may rewrite the table in place.
    prepare: Callable[[str, dict[str, Any], str], None] | None = None

    @property
    def keys(self) -> frozenset[str]:
        """The table's own keys: the function's keyword arguments but the
        run's (:data:`RUN_ARGS`)."""
        params = inspect.signature(self.function).parameters.values()
        named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        return frozenset(p.name for p in params if p.kind in named and p.name not in RUN_ARGS)

    def default(self, key: str) -> Any:
        """The function's default for ``key`` (None if it has none)."""
        p = inspect.signature(self.function).parameters.get(key)
        return None if p is None or p.default is inspect.Parameter.empty else p.default

    def check_keys(self, where: str, options: Mapping[str, Any]) -> None:
        """A :class:`ParseError` naming the first key of ``options`` that is
        not one of :attr:`keys` (with the nearest one, if any is near)."""
        keys = self.keys
        unknown = sorted(k for k in options if k not in keys)
        if not unknown:
            return
        key = unknown[0]
        # The words of other tools' flags first (perftest's --iters is
        # "iterations" to many), then spelling.
        alias = _ALIASES.get(str(key))
        near = [alias] if alias in keys else difflib.get_close_matches(str(key), sorted(keys | set(ITEM_KEYS)), n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise ParseError(f"{where}: unknown key {key!r}{hint}; the keys are {', '.join(sorted(keys))}, name, seed")

    def check_table(self, where: str, table: dict[str, Any], base_dir: str) -> None:
        """Check a loaded table (its keys, the required ones, then
        :attr:`prepare`), naming ``where`` in errors."""
        self.check_keys(where, table)
        for key, message in self.required:
            if key not in table:
                raise ParseError(f"{where}: {message}")
        if self.prepare is not None:
            self.prepare(where, table, base_dir)

    def run(self, fabric: api.Fabric, seed: int, options: Mapping[str, Any], name: str | None = None, progress: ProgressArg = False) -> Result:
        """Run an item of this kind: :attr:`function` with its options,
        labelled with ``name``."""
        params = inspect.signature(self.function).parameters
        kwargs = dict(options)
        if "progress" in params:
            kwargs["progress"] = progress
        if "name" in params:
            kwargs["name"] = name or self.name
        res = self.function(fabric=fabric, seed=seed, **kwargs)
        res.set_name(name)
        return res

    def check_run(self, fabric: api.Fabric, seed: int, options: Mapping[str, Any], name: str | None = None) -> None:
        """Check an item of this kind as :meth:`run` would run it, simulating
        nothing (:mod:`fabriclab.precheck`): its input error, or None."""
        check_call(self.run, fabric, seed, options, name)


# --------------------------------------------------------------------------
# What each kind of item does, in a few words


def _perftest_what(o: Mapping[str, Any]) -> str:
    return str(o.get("test", ""))


def _flows_what(o: Mapping[str, Any]) -> str:
    return f"{len(o['flows'])} flow(s)"


def _imb_what(o: Mapping[str, Any]) -> str:
    return f"{' '.join(o.get('benchmarks', ['all']))}, -np {o['np']}"


def _test_np_what(o: Mapping[str, Any]) -> str:
    return f"{o['test']}, -np {o['np']}"


def _nccl_what(o: Mapping[str, Any]) -> str:
    gpus = o.get("gpus_per_node")
    per = f" x {gpus} GPUs" if gpus is not None else ""
    return f"{o.get('test', 'all_reduce_perf')}, {o.get('nodes', 1)} server(s){per}"


def _fio_what(o: Mapping[str, Any]) -> str:
    return (
        f"{o.get('rw', 'randwrite')} bs={o.get('bs', 4096)} iodepth={o.get('iodepth', 1)}, "
        f"clients {o.get('clients', 'h0')} -> targets {o.get('targets', 'h12')}"
    )


def _hpl_what(o: Mapping[str, Any]) -> str:
    """An [[hpl]] item's settings, as the scenario gives them."""
    parts = [f"HPL.dat {os.path.basename(o['dat'])}"] if "dat" in o else []
    for key, label in (("n", "N"), ("nb", "NB"), ("grids", "grids"), ("bcast", "bcast"), ("np", "-np")):
        if key not in o:
            continue
        v = o[key]
        if key == "grids":
            try:
                v = [f"{p}x{q}" for p, q in parse_grids(v)]
            except FabriclabError:
                pass  # the run says what is wrong with it
        parts.append(f"{label} {' '.join(map(str, v)) if isinstance(v, list) else v}")
    return ", ".join(parts)


def _hpl_prepare(where: str, t: dict[str, Any], base_dir: str) -> None:
    """An [[hpl]] table's ``dat`` made a readable path relative to the
    scenario file (in place), or N and a grid given."""
    if "dat" in t:
        if not isinstance(t["dat"], str):
            raise ParseError(f"{where}: dat must be the path of an HPL.dat file")
        t["dat"] = os.path.join(base_dir, t["dat"])
        read_dat(t["dat"])  # a missing file is named before anything runs
    elif "n" not in t:
        raise ParseError(f"{where}: missing n (the problem sizes) or dat (an HPL.dat)")
    elif "grids" not in t and "np" not in t:
        raise ParseError(f"{where}: missing grids (or np, or dat: an HPL.dat)")


_MISSING_TEST = ("test", "missing test")
_MISSING_NP = ("np", "missing np")

#: Every kind, in the order scenario files list them.
KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        Kind(
            "perftest",
            api.perftest,
            _perftest_what,
            "size",
            required=(("test", "missing test (ib_write_bw, ib_write_lat, ...)"),),
        ),
        Kind("flows", api.flows, _flows_what, "limit_us", required=(("flows", "missing the flows list"),)),
        Kind("imb", mpi.imb, _imb_what, "np", required=(_MISSING_NP,)),
        Kind("osu", mpi.osu, _test_np_what, "np", required=(_MISSING_TEST, _MISSING_NP)),
        Kind("cbench", cbench, _test_np_what, "np", required=(_MISSING_TEST, _MISSING_NP)),
        Kind("fio", fio, _fio_what, "iodepth"),
        Kind("hpl", hpl, _hpl_what, "bcast", prepare=_hpl_prepare),
        Kind("nccl", nccl_tests, _nccl_what, "nodes"),
    )
}
#: The kinds' names, in order.
NAMES = tuple(KINDS)


def kind_of(name: str) -> Kind:
    """The kind named ``name`` (:class:`ParseError` if there is none)."""
    kind = KINDS.get(name)
    if kind is None:
        raise ParseError(f"unknown item kind {name!r}; the kinds are {', '.join(NAMES)}")
    return kind
