"""Writing TOML: keys, values and documents (Python reads TOML with
tomllib, but has no writer).

:func:`toml_dumps` writes a document as tomllib reads it (dicts, lists,
str, int, float, bool), :func:`toml_layout` says which key each of its lines
writes; :func:`toml_value` and :func:`toml_key` write one
value or key, as scenario files, sweep points and messages show them.
Left out: dates and times (a scenario has none), comments, and keeping a
file's layout.
"""

from __future__ import annotations

import math
import re
from typing import Any

from .errors import ArgumentTypeError

__all__ = ["toml_key", "toml_value", "toml_dumps", "toml_layout"]

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def toml_key(k: str) -> str:
    """A key, bare if it can be, else quoted."""
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


def toml_value(v: Any) -> str:
    """A value as TOML (tables inline); :class:`ArgumentTypeError` for a
    type TOML has no form for here."""
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
        return "{" + ", ".join(f"{toml_key(k)} = {toml_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    raise ArgumentTypeError(f"cannot write a {type(v).__name__} as TOML")


def toml_layout(doc: dict[str, Any]) -> list[tuple[str, tuple[str, ...]]]:
    """The lines :func:`toml_dumps` writes for ``doc``, each with the key
    path it belongs to: a ``key = value`` line its key's, a ``[table]``
    header or the blank line before it the table's. An error about line
    ``n`` of the text is about ``layout[n - 1]``'s path."""
    lines: list[tuple[str, tuple[str, ...]]] = []

    def table(d: dict[str, Any], prefix: tuple[str, ...]) -> None:
        for k, v in d.items():
            if not isinstance(v, dict):
                lines.append((f"{toml_key(k)} = {toml_value(v)}", (*prefix, k)))
        for k, v in d.items():
            if isinstance(v, dict):
                path = (*prefix, k)
                if lines:  # a blank line between tables, none at the top
                    lines.append(("", path))
                lines.append(("[" + ".".join(toml_key(p) for p in path) + "]", path))
                table(v, path)

    table(doc, ())
    return lines


def toml_dumps(doc: dict[str, Any]) -> str:
    """``doc`` (as tomllib reads it: dicts, lists, str, int, float, bool) as
    TOML text: scalars and arrays first, then one ``[table]`` per sub-dict;
    arrays of tables are written as arrays of inline tables."""
    return "\n".join(text for text, _ in toml_layout(doc)) + "\n"
