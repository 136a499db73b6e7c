"""The override-path language of sweeps: what ``seed``,
``fabric.cc.algorithm``, ``perftest[1].size`` or ``flows[0].flows[1].bytes``
address in a scenario document, and setting a value there.

:func:`parse_path` reads a path (:class:`ParseError` if it cannot address
anything); :func:`check_targets` checks that a document has the tables it
names; :func:`assign` sets a value at a path's keys. Left out: applying a
whole point (:mod:`fabriclab.sweep_scenario`) and the values' meaning (the
scenario loader and the core check those).
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import InvalidArgumentError, ParseError
from .kinds import KINDS, NAMES

__all__ = ["OverridePath", "parse_path", "check_targets", "assign", "ROOTS_HELP"]

_SEGMENT = re.compile(r"([A-Za-z0-9_-]+)(?:\[(\d+)\])?")

#: The paths there are, for messages.
ROOTS_HELP = "seed, backend, fabric, fabric.<section>.<key> or <kind>.<key> / <kind>[i].<key> with kind one of " + ", ".join(NAMES)


@dataclasses.dataclass(frozen=True)
class OverridePath:
    """A parsed override path."""

    text: str
    root: str  # "seed", "fabric" or an item kind
    index: int | None  # [[kind]] table index, or None for all of them
    rest: tuple[tuple[str, int | None], ...]  # keys below the root


def parse_path(text: str) -> OverridePath:
    """Split ``text`` into its root and keys; :class:`ParseError` if it
    cannot address anything in a scenario."""
    if text == "backend":  # the simulation backend: fabric.sim.backend
        return OverridePath(text, "fabric", None, (("sim", None), ("backend", None)))
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
    elif root in KINDS:
        if not rest:
            raise ParseError(
                f"invalid sweep path {text!r}: say which key of [[{root}]], e.g. {root}.{KINDS[root].example_key}"
            )
    else:
        raise ParseError(f"unknown sweep path {text!r}: paths are {ROOTS_HELP}")
    return OverridePath(text, root, index, rest)


def check_targets(path: OverridePath, doc: Mapping[str, Any]) -> None:
    """A kind path must name tables the scenario has."""
    if path.root not in KINDS:
        return
    tables = doc.get(path.root, [])
    n = len(tables) if isinstance(tables, list) else 0
    if n == 0:
        have = [k for k in NAMES if isinstance(doc.get(k), list) and doc[k]]
        raise ParseError(
            f"sweep path {path.text!r}: the scenario has no [[{path.root}]] tables"
            + (f" (it has {', '.join(f'[[{k}]]' for k in have)})" if have else "")
        )
    if path.index is not None and path.index >= n:
        raise InvalidArgumentError(
            f"sweep path {path.text!r}: the scenario has {n} [[{path.root}]] table(s), "
            f"so the index must be 0{f' to {n - 1}' if n > 1 else ''}"
        )


def assign(target: Any, keys: Sequence[tuple[str, int | None]], value: Any, path: str) -> None:
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
