"""A small parser of perftest's text output, written against the golden
samples in tests/golden (perftest 6.29's format strings).

``parse(text)`` returns a :class:`PerftestOutput`: the title ("RDMA_Write
BW Test"), the banner settings ({"TX depth": "128", ...}), the column
names of the result table as perftest prints them ("#bytes",
"BW peak[Gb/sec]", "99% percentile[usec]", ...) and the rows as numbers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_DASHES = re.compile(r"^-{20,}$")
# A column name: "#bytes", or words ending in a bracketed unit.
_COLUMN = re.compile(r"#\w+|[^\s\[][^\[]*?\[[^\]]*\]")


@dataclass
class PerftestOutput:
    title: str
    settings: dict[str, str] = field(default_factory=dict)
    columns: list[str] = field(default_factory=list)
    rows: list[list[float]] = field(default_factory=list)

    def column(self, name: str) -> list[float]:
        i = self.columns.index(name)
        return [r[i] for r in self.rows]


def parse_columns(header: str) -> list[str]:
    cols = _COLUMN.findall(header)
    # Everything on the line must be a column name (nothing skipped).
    rest = _COLUMN.sub("", header)
    if rest.strip():
        raise ValueError(f"unparsed text in the header: {rest.strip()!r}")
    return [c.strip() for c in cols]


def parse(text: str) -> PerftestOutput:
    lines = text.splitlines()
    i = 0
    while i < len(lines) and not _DASHES.match(lines[i].strip()):
        i += 1
    if i + 1 >= len(lines):
        raise ValueError("no perftest banner")
    out = PerftestOutput(title=lines[i + 1].strip())
    i += 2
    # Banner: " Key : value\t\tKey : value" lines up to the next dashes.
    while i < len(lines) and not _DASHES.match(lines[i].strip()):
        for part in re.split(r"\t+", lines[i]):
            if ":" in part:
                k, v = part.split(":", 1)
                out.settings[k.strip()] = v.strip()
        i += 1
    # Address lines (real perftest) then the header starting with #bytes.
    while i < len(lines) and not lines[i].lstrip().startswith("#bytes"):
        i += 1
    if i >= len(lines):
        raise ValueError("no result table")
    out.columns = parse_columns(lines[i])
    i += 1
    while i < len(lines) and not _DASHES.match(lines[i].strip()):
        fields = lines[i].split()
        if len(fields) != len(out.columns):
            raise ValueError(
                f"row {lines[i]!r} has {len(fields)} fields for {len(out.columns)} columns"
            )
        out.rows.append([float(f) for f in fields])
        i += 1
    if i >= len(lines):
        raise ValueError("result table not closed by a dashed line")
    return out
