"""What a sweep checks of every point before anything runs, beyond loading
its scenario: the options the API can check without running (perftest's
types, through :func:`fabriclab.api.perftest_options`) and the host names
an item gives.

The core checks host names only when an item runs, and has no entry point
that checks them alone; so that a sweep fails on a bad host before it
starts a cluster, the names an item gives (each tool's host keys, read
with the tools' own host-list syntax, :func:`fabriclab.storage.parse_hosts`,
and the ends of its flows) are looked up in the fabric's host list (the
core's, from :attr:`fabriclab.Fabric.hosts`), with the core's wording.
Left out: every other value (the core reports them per point when it runs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .errors import FabriclabError, UnknownHostError
from .kinds import KINDS, Kind
from .storage import parse_hosts
from .sweep_grid import SweepPoint
from .sweep_scenario import SweptFile, load_point

__all__ = ["check_point", "named_hosts"]

#: Keys that name one host, and keys that name several (a list, or text
#: with ranges like h0-h7), in any kind that has them.
_ONE_HOST = ("client", "server")
_HOST_LISTS = ("clients", "targets", "hosts")
#: Keys holding flows, whose ``src`` and ``dst`` are hosts.
_FLOW_LISTS = ("flows", "background")


def named_hosts(kind: Kind, options: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(key, host) for every host an item of ``kind`` names (defaults
    included)."""
    keys = kind.keys
    out: list[tuple[str, Any]] = []
    for key in _ONE_HOST:
        if key in keys:
            out.append((key, options.get(key, kind.default(key))))
    for key in _HOST_LISTS:
        value = options.get(key, kind.default(key)) if key in keys else None
        if value is None:
            continue
        try:
            out += [(key, h) for h in parse_hosts(value)]
        except FabriclabError:
            pass  # the tool names the bad value when the item runs
    for key in _FLOW_LISTS:
        flows = options.get(key) if key in keys else None
        for n, f in enumerate(flows if isinstance(flows, list) else []):
            if isinstance(f, Mapping):
                out += [(f"{key}[{n}].{end}", f.get(end)) for end in ("src", "dst")]
    return out


def _check_hosts(where: str, kind: Kind, options: Mapping[str, Any], hosts: Sequence[str]) -> None:
    known = set(hosts)
    for key, host in named_hosts(kind, options):
        if isinstance(host, str) and host not in known:
            shown = ", ".join(hosts) if len(hosts) <= 6 else ", ".join([*hosts[:4], "...", hosts[-1]])
            raise UnknownHostError(
                f'{where}: {key}: the fabric has no host "{host}"; its {len(hosts)} hosts are {shown}'
            )


def check_point(point: SweepPoint, base: SweptFile, doc: Mapping[str, Any]) -> None:
    """Load the point's scenario document ``doc`` and check what the core
    would otherwise find only when it runs; errors name the point."""
    sc = load_point(base, doc, point.label())
    counters = {k: 0 for k in KINDS}
    for item in sc.items:
        where = f"{point.label()}: {item.kind}[{counters[item.kind]}]"
        counters[item.kind] += 1
        kind = KINDS[item.kind]
        if kind.check is not None:
            try:
                kind.check(**item.options)
            except FabriclabError as e:
                raise type(e)(f"{where}: {e}") from None
        _check_hosts(where, kind, item.options, sc.fabric.hosts)
