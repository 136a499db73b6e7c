"""The scenario of one sweep point: the swept file as a document, the
point's overrides applied to it, written as standalone TOML, and loaded.

:func:`load_swept` reads the swept file once; :func:`point_doc` applies a
point's overrides (a preset or fabric file becomes an inline ``[fabric]``
table when one of its keys is overridden, a fabric file always, so a point
needs no shared files); :func:`scenario_text` writes the document as a
scenario file; :func:`load_point` loads a document with
:meth:`Scenario.from_dict`, its errors naming the swept file (no temporary
files); :func:`scenario_from_text` loads a point's text where it runs.
Left out: the path language (:mod:`fabriclab.sweep_paths`) and the checks
beyond the loader's (:mod:`fabriclab.sweep_checks`).
"""

from __future__ import annotations

import copy
import dataclasses
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from . import api
from ._toml import toml_dumps, toml_key, toml_value
from .errors import FabriclabError, InvalidArgumentError, ParseError
from .kinds import NAMES
from .scenario import Scenario, file_order, item_headers, read_toml
from .sweep_paths import OverridePath, assign, check_targets, parse_path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["SweptFile", "load_swept", "parse_paths", "point_doc", "scenario_text", "load_point", "scenario_from_text"]


@dataclasses.dataclass
class SweptFile:
    """The scenario file being swept (or a lab's run), as a document."""

    path: str  # as the caller gave it (for messages)
    base_dir: str
    doc: dict[str, Any]
    order: list[str]  # item kinds in file order
    fabrics: dict[str, Any] = dataclasses.field(default_factory=dict)  # cache of loaded fabric tables


def load_swept(path: str) -> SweptFile:
    """Read scenario file ``path`` for sweeping."""
    text, doc = read_toml(path)
    counts = {k: len(doc[k]) if isinstance(doc.get(k), list) else 0 for k in NAMES}
    if not any(counts.values()):
        # as load_scenario: a file that runs nothing is a mistake
        raise ParseError(f"scenario {path}: it runs nothing; add an item table such as [[perftest]] or [[imb]] ({', '.join(NAMES)})")
    return SweptFile(path, os.path.dirname(os.path.abspath(path)), doc, file_order(text, counts))


def parse_paths(names: Iterable[str], doc: Mapping[str, Any]) -> dict[str, OverridePath]:
    """Each of ``names`` parsed, and checked against document ``doc``."""
    paths: dict[str, OverridePath] = {}
    for text in names:
        if text not in paths:
            p = parse_path(text)
            for other in paths.values():
                # Two spellings of one setting (``backend`` and
                # ``fabric.sim.backend``; ``flows.bytes`` and
                # ``flows[0].bytes``): the last would win unseen.
                same_items = p.index is None or other.index is None or p.index == other.index
                if (p.root, p.rest) == (other.root, other.rest) and same_items:
                    raise InvalidArgumentError(
                        f"sweep paths {other.text!r} and {text!r} set the same thing; give one of them"
                    )
            check_targets(p, doc)
            paths[text] = p
    return paths


def _fabric_table(base: SweptFile, fabric: Any, need_table: bool) -> Any:
    """The fabric as the point's scenario will carry it: a fabric file or
    TOML text as a table; a preset name stays a name unless ``need_table``
    (some of its settings are overridden)."""
    if not isinstance(fabric, str):
        return copy.deepcopy(fabric)  # a table, or something the loader rejects
    key = f"{need_table}:{fabric}"
    if key not in base.fabrics:
        preset = fabric in api.presets()
        if preset and not need_table:
            base.fabrics[key] = fabric  # a preset name
        else:
            try:
                text, file = api.resolve_fabric(fabric, base.base_dir)  # the core's error for an unknown name
            except OSError as e:
                raise InvalidArgumentError(f"fabric file {e.filename or fabric}: {e.strerror or e}") from None
            where = f"fabric file {file}" if file else (f"preset {fabric}" if preset else "fabric")
            try:
                base.fabrics[key] = tomllib.loads(text)
            except tomllib.TOMLDecodeError as e:
                raise ParseError(f"{where}: {e}") from None
    return copy.deepcopy(base.fabrics[key])


def point_doc(base: SweptFile, params: Mapping[str, Any], paths: Mapping[str, OverridePath]) -> dict[str, Any]:
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
                assign(doc["fabric"], p.rest, value, text)
        else:
            tables = doc[p.root]
            for t in [tables[p.index]] if p.index is not None else tables:
                assign(t, p.rest, value, text)
    _absolute_dats(doc, base.base_dir)
    return doc


def _absolute_dats(doc: dict[str, Any], base_dir: str) -> None:
    """[[hpl]] tables' ``dat`` paths made absolute: the point's scenario
    runs elsewhere, and the file is read where the point runs."""
    tables = doc.get("hpl")
    for t in tables if isinstance(tables, list) else []:
        if isinstance(t, dict) and isinstance(t.get("dat"), str):
            t["dat"] = os.path.join(base_dir, t["dat"])


def scenario_text(doc: Mapping[str, Any], order: Sequence[str]) -> str:
    """A scenario document as TOML, its items in ``order`` as ``[[kind]]``
    tables (so the file order survives) and an inline ``[fabric]`` table
    last."""
    lines: list[str] = []
    fabric = doc.get("fabric")
    for k, v in doc.items():
        if k in NAMES and isinstance(v, list) and all(isinstance(t, dict) for t in v):
            continue
        if k == "fabric" and isinstance(v, dict):
            continue
        lines.append(f"{toml_key(k)} = {toml_value(v)}")
    seen = {k: 0 for k in NAMES}
    for kind in order:
        tables = doc.get(kind)
        if not isinstance(tables, list) or seen[kind] >= len(tables) or not isinstance(tables[seen[kind]], dict):
            continue
        lines += ["", f"[[{kind}]]"]
        lines += [f"{toml_key(k)} = {toml_value(v)}" for k, v in tables[seen[kind]].items()]
        seen[kind] += 1
    if isinstance(fabric, dict):
        lines += ["", toml_dumps({"fabric": fabric}).strip("\n")]
    return "\n".join(lines).lstrip("\n") + "\n"


def load_point(base: SweptFile, doc: Mapping[str, Any], prefix: str = "") -> Scenario:
    """Load a point's document as :func:`fabriclab.scenario.load_scenario`
    would load the swept file with it; errors name the swept file, after
    ``prefix``."""
    try:
        # An error of an inline fabric names its key, not the lines of the
        # TOML the sweep wrote (Scenario.from_dict); the prefix names the point.
        return Scenario.from_dict(doc, origin=base.path, base_dir=base.base_dir, order=base.order)
    except FabriclabError as e:
        raise type(e)(f"{prefix}: {e}" if prefix else str(e)) from None


def scenario_from_text(text: str, origin: str) -> Scenario:
    """A point's scenario text (:attr:`SweepPoint.toml`) loaded where it
    runs; errors name ``origin``, the swept file."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ParseError(f"scenario {origin}: {e}") from None
    return Scenario.from_dict(doc, origin=origin, order=item_headers(text))
