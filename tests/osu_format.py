"""A parser and a layout checker for OSU Micro-Benchmarks (MPI) output,
written against the real samples in tests/golden (OMB 7.4: osu_latency,
osu_bw, osu_bibw, osu_mbw_mr, osu_allreduce, osu_alltoall, osu_allgather,
osu_bcast, osu_barrier; ``-f`` full and ``-z`` tail-latency variants).

``parse_osu(text)`` returns::

    {"title": "OSU MPI Allreduce Latency Test v7.4",
     "benchmark": "OSU MPI Allreduce Latency Test", "version": "7.4",
     "header_lines": ["# Datatype: MPI_CHAR."],   # between title and columns
     "datatype": "MPI_CHAR", "pairs": None, "window_size": None,
     "leading_blank": True, "has_size": True,
     "columns": ["Size", "Avg Latency(us)", ...],
     "rows": [[1, 2.26, 1.08, 3.46, 1000], ...]}

Column names are as printed ("Size" without its "# "); ``Size`` and
``Iterations`` are ints, ``Validation`` a string, the rest floats.
osu_barrier has no size column: ``columns == ["Avg Latency(us)"]`` and one
row.

``check_osu_layout(text)`` raises ``AssertionError`` unless the text is
spaced exactly as OMB prints it. From OMB's ``osu_util_mpi.c``
(``print_only_header`` / ``print_stats``) and the samples: the size column
is ``"%-10d"`` (header ``"%-10s" % "# Size"``); every other column is
right-aligned in ``FIELD_WIDTH = 18`` (``"%18.2f"``, header ``"%18s"``)
except ``Iterations``, 12 wide; without a size column (osu_barrier) the
header is ``"# Avg Latency(us)"`` and the value ``"%17.2f"``. Every test
prints a blank line before its title except osu_mbw_mr (as in the sample).

Pure Python; no fabriclab import.
"""

from __future__ import annotations

import re
from typing import Any, NoReturn

#: OMB's FIELD_WIDTH for the MPI benchmarks.
OSU_FIELD = 18
#: Width of the left-aligned size column.
OSU_SIZE = 10
#: Width of the Iterations column (``-f``).
OSU_ITERS = 12
#: Width of the value when there is no size column (osu_barrier).
OSU_NOSIZE_VALUE = 17

_TITLE = re.compile(r"^# (OSU .+?) v(\d+(?:\.\d+)*)$")
_DATATYPE = re.compile(r"^# Datatype: (MPI_\w+)\.$")
_PAIRS = re.compile(r"^# \[ pairs: (\d+) \] \[ window size: (\d+) \]$")


def _is_data(line: str) -> bool:
    return bool(line.strip()) and not line.startswith("#")


def _value(column: str, field: str) -> int | float | str:
    if column in ("Size", "Iterations"):
        return int(field)
    if column == "Validation":
        return field
    return float(field)


def _split_columns(header: str) -> list[str]:
    body = header[1:].strip()  # drop the "#"
    return [c for c in re.split(r"\s{2,}", body) if c]


def parse_osu(text: str) -> dict[str, Any]:
    """The title, extra header lines, column names and typed rows."""
    lines = text.splitlines()
    i = 0
    leading_blank = False
    while i < len(lines) and not lines[i].strip():
        leading_blank = True
        i += 1
    if i >= len(lines) or not (m := _TITLE.match(lines[i])):
        raise ValueError(f"no '# OSU ... vX.Y' title line; got {lines[i] if i < len(lines) else '<end>'!r}")
    out: dict[str, Any] = {
        "title": lines[i][2:],
        "benchmark": m.group(1),
        "version": m.group(2),
        "header_lines": [],
        "datatype": None,
        "pairs": None,
        "window_size": None,
        "leading_blank": leading_blank,
        "has_size": False,
        "columns": [],
        "rows": [],
    }
    i += 1
    # Comment lines up to the data: the last one holds the column names.
    comments: list[str] = []
    while i < len(lines) and lines[i].startswith("#"):
        comments.append(lines[i])
        i += 1
    if not comments:
        raise ValueError("no column header line after the title")
    header = comments[-1]
    for extra in comments[:-1]:
        out["header_lines"].append(extra)
        if m := _DATATYPE.match(extra):
            out["datatype"] = m.group(1)
        elif m := _PAIRS.match(extra):
            out["pairs"], out["window_size"] = int(m.group(1)), int(m.group(2))
    cols = _split_columns(header)
    out["has_size"] = bool(cols) and cols[0] == "Size"
    out["columns"] = cols
    while i < len(lines) and _is_data(lines[i]):
        fields = lines[i].split()
        if len(fields) != len(cols):
            raise ValueError(f"row {lines[i]!r} has {len(fields)} fields for {len(cols)} columns {cols}")
        out["rows"].append([_value(c, f) for c, f in zip(cols, fields)])
        i += 1
    rest = [line for line in lines[i:] if line.strip()]
    if rest:
        raise ValueError(f"text after the table: {rest[0]!r}")
    return out


def column(parsed: dict[str, Any], name: str) -> list[Any]:
    """One column of a parsed table."""
    k = parsed["columns"].index(name)
    return [r[k] for r in parsed["rows"]]


# --------------------------------------------------------------------------
# Layout


def _width(col: str) -> int:
    return OSU_ITERS if col == "Iterations" else OSU_FIELD


def format_osu_header(columns: list[str]) -> str:
    """The column-name line exactly as OMB prints it."""
    if columns and columns[0] == "Size":
        head = "%-*s" % (OSU_SIZE, "# Size")
        rest = columns[1:]
    else:
        head = "# " + columns[0]
        rest = columns[1:]
    return head + "".join("%*s" % (_width(c), c) for c in rest)


def format_osu_row(columns: list[str], row: list[Any]) -> str:
    """A data row exactly as OMB prints it."""
    out = []
    for k, (c, v) in enumerate(zip(columns, row)):
        if c == "Size":
            out.append("%-*d" % (OSU_SIZE, v))
        elif c == "Iterations":
            out.append("%*d" % (OSU_ITERS, v))
        elif c == "Validation":
            out.append("%*s" % (OSU_FIELD, v))
        elif k == 0:
            out.append("%*.2f" % (OSU_NOSIZE_VALUE, v))
        else:
            out.append("%*.2f" % (OSU_FIELD, v))
    return "".join(out)


def _fail(lineno: int, what: str, got: str, want: str | None = None) -> NoReturn:
    msg = f"OSU layout, line {lineno + 1}: {what}\n  got:  {got!r}"
    if want is not None:
        msg += f"\n  want: {want!r}"
    raise AssertionError(msg)


def check_osu_layout(text: str) -> None:
    """Raise AssertionError unless ``text`` is spaced exactly as OMB prints
    it: the blank first line (all but osu_mbw_mr), the title, the extra
    header lines, the column header and every row in OMB's field widths."""
    if "\t" in text:
        raise AssertionError("OSU layout: OMB never prints tabs")
    if not text.endswith("\n") or text.endswith("\n\n"):
        raise AssertionError(f"OSU layout: the output ends with the last row and one newline; got {text[-40:]!r}")
    try:
        parsed = parse_osu(text)
    except ValueError as e:
        raise AssertionError(f"OSU layout: does not parse: {e}") from e
    lines = text.splitlines()
    mbw_mr = "Multiple Bandwidth / Message Rate" in parsed["title"]
    i = 0
    if mbw_mr:
        if lines[0] != "# " + parsed["title"]:
            _fail(0, "osu_mbw_mr starts with its title (no blank line)", lines[0])
    else:
        if lines[0] != "":
            _fail(0, "OMB prints one blank line before the title", lines[0], "")
        i = 1
    if lines[i] != "# " + parsed["title"]:
        _fail(i, "title", lines[i], "# " + parsed["title"])
    i += 1
    for extra in parsed["header_lines"]:
        if not (_DATATYPE.match(extra) or _PAIRS.match(extra)):
            _fail(i, "unknown header line (OMB prints '# Datatype: MPI_X.' and, for mbw_mr, the pairs line)", extra)
        i += 1
    cols = parsed["columns"]
    want = format_osu_header(cols)
    if lines[i] != want:
        _fail(i, "column header is not '%-10s' '# Size' then %18s per column (%12s Iterations)", lines[i], want)
    i += 1
    if not parsed["rows"]:
        _fail(i, "no data rows", lines[i] if i < len(lines) else "<end>")
    for row in parsed["rows"]:
        want = format_osu_row(cols, row)
        if lines[i] != want:
            _fail(i, "row is not '%-10d' then %18.2f fields (%12d Iterations; %17.2f without a size)", lines[i], want)
        i += 1
