"""What a sweep checks of every point before anything runs, beyond loading
its scenario: the host names an item gives, then everything a run of each
item checks of its input, simulating nothing
(:meth:`fabriclab.kinds.Kind.check_run`, :mod:`fabriclab.precheck`).

The host names come first, as a cheap look-up: the names an item gives
(each tool's host keys, read with the tools' own host-list syntax,
:func:`fabriclab.storage.parse_hosts`, and the ends of its flows) are
looked up in the fabric's host list (the core's, from
:attr:`fabriclab.Fabric.hosts`), with the core's wording.

A run's check builds the point's fabric: a few ms on the seed fabrics,
1.25 s for an IMB job on 16,384 hosts (a k = 32 fat tree, measured
2026-11-27 with the routing tables per edge switch; 3.4-4 s before), paid
point by point on the machine that starts the sweep. So on fabrics above
:data:`CORE_CHECK_MAX_HOSTS` hosts only the host names are checked up
front, and a point's other bad values are reported when it runs (the
sweep marks it failed and goes on). Left out: what only a run can show (a
deadlock, a QP out of retries).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .errors import FabriclabError, UnknownHostError
from .kinds import KINDS, Kind
from .storage import parse_hosts
from .sweep_grid import SweepPoint
from .sweep_scenario import SweptFile, load_point

__all__ = ["check_point", "named_hosts", "CORE_CHECK_MAX_HOSTS"]

#: Fabrics up to this many hosts get each item's run checked up front.
CORE_CHECK_MAX_HOSTS = 16384

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
        _check_hosts(where, kind, item.options, sc.fabric.hosts)
        if len(sc.fabric.hosts) > CORE_CHECK_MAX_HOSTS:
            continue
        try:
            kind.check_run(sc.fabric, item.seed, item.options, item.name)
        except FabriclabError as e:
            raise type(e)(f"{where}: {e}") from None
