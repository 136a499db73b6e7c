"""A parser and a layout checker for Intel MPI Benchmarks (IMB-MPI1) output,
written against the real samples in tests/golden (IMB 2021.11).

``parse_imb(text)`` returns one dict per "# Benchmarking X" section::

    {"name": "PingPong", "np": 2, "waiting": 2, "multi": False, "mode": None,
     "columns": ["#bytes", "#repetitions", "t[usec]", "Mbytes/sec"],
     "rows": [[0, 1000, 1.53, 0.0], ...]}

(``waiting`` is the "( 2 additional processes waiting in MPI_Barrier)"
count, 0 when the line is absent.) ``parse_imb_header(text)`` returns the
facts of the banner: version, the ``# Key : value`` info lines, calling
sequence, message-length range, datatypes, the list of benchmarks and
whether the "# All processes entering MPI_Finalize" trailer is there.

``check_imb_layout(text)`` raises ``AssertionError`` unless the text is
spaced exactly as IMB prints it. From IMB's ``IMB_output.c`` (and the
samples): every table field is right-aligned in ``ow_format = 13``
characters; the header is one ``"%13s"`` per column name, a row is
``"%13d"`` for ``#bytes`` and ``#repetitions`` and ``"%13.2f"`` for the
times and Mbytes/sec (``"%13.0f"`` for Msg/sec); the dashed line around
"# Benchmarking" is ``"#"`` followed by ``13 x columns - 1`` dashes; each
section starts with a blank line; the banner's dashed lines are ``"#"`` and
64 dashes. A copy with the right words but other spacing fails.

Pure Python; no fabriclab import.
"""

from __future__ import annotations

import re
from typing import Any, NoReturn

#: IMB's field width (``ow_format`` in IMB_output.c).
IMB_WIDTH = 13
#: The banner's dashed line: "#" and 64 dashes.
IMB_BANNER_RULE = "#" + "-" * 64
#: The last printed line of a completed run.
IMB_FINALIZE = "# All processes entering MPI_Finalize"

_INT_COLUMNS = {"#bytes", "#repetitions", "&Group"}
_BENCH = re.compile(r"^# Benchmarking (Multi-)?(\S+) $")
_PROCS = re.compile(r"^# #processes = (\d+) $")
_WAITING = re.compile(r"^# \( (\d+) additional processes? waiting in MPI_Barrier\)$")
_MODE = re.compile(r"^#    MODE: (AGGREGATE|NON-AGGREGATE) $")
_RULE = re.compile(r"^#-+$")
_VERSION = re.compile(r"^#    Intel\(R\) MPI Benchmarks (\S+), (.+) part$")
_INFO = re.compile(r"^# (.{22}): (.*)$")


def _rule(ncols: int) -> str:
    """The dashed line IMB prints around a section header of ncols columns."""
    return "#" + "-" * (IMB_WIDTH * ncols - 1)


def _value(column: str, field: str) -> int | float:
    if column in _INT_COLUMNS:
        return int(field)
    return float(field)


def _row_format(column: str) -> str:
    if column in _INT_COLUMNS:
        return f"%{IMB_WIDTH}d"
    if column == "Msg/sec":
        return f"%{IMB_WIDTH}.0f"
    return f"%{IMB_WIDTH}.2f"


def format_imb_header(columns: list[str]) -> str:
    """The column-name line exactly as IMB prints it."""
    return "".join(f"%{IMB_WIDTH}s" % c for c in columns)


def format_imb_row(columns: list[str], row: list[Any]) -> str:
    """A table row exactly as IMB prints it."""
    return "".join(_row_format(c) % v for c, v in zip(columns, row))


def parse_imb(text: str) -> list[dict[str, Any]]:
    """One dict per "# Benchmarking" section, in order (see module doc)."""
    lines = text.splitlines()
    sections: list[dict[str, Any]] = []
    i = 0
    while i < len(lines):
        m = _BENCH.match(lines[i])
        if not m:
            i += 1
            continue
        sec: dict[str, Any] = {
            "name": m.group(2),
            "multi": m.group(1) is not None,
            "np": None,
            "waiting": 0,
            "mode": None,
            "columns": [],
            "rows": [],
        }
        i += 1
        pm = _PROCS.match(lines[i]) if i < len(lines) else None
        if not pm:
            raise ValueError(f"section {sec['name']}: no '# #processes = N' line after the title")
        sec["np"] = int(pm.group(1))
        i += 1
        if i < len(lines) and (wm := _WAITING.match(lines[i])):
            sec["waiting"] = int(wm.group(1))
            i += 1
        if i >= len(lines) or not _RULE.match(lines[i]):
            raise ValueError(f"section {sec['name']}: no dashed line after the process count")
        i += 1
        # IMB-EXT / IMB-IO print "#\n#    MODE: AGGREGATE \n#\n" here.
        while i < len(lines) and (lines[i] == "#" or _MODE.match(lines[i])):
            if mm := _MODE.match(lines[i]):
                sec["mode"] = mm.group(1)
            i += 1
        if i >= len(lines):
            raise ValueError(f"section {sec['name']}: no column header")
        sec["columns"] = lines[i].split()
        i += 1
        while i < len(lines) and lines[i].strip():
            fields = lines[i].split()
            if len(fields) != len(sec["columns"]):
                raise ValueError(
                    f"section {sec['name']}: row {lines[i]!r} has {len(fields)} fields "
                    f"for {len(sec['columns'])} columns"
                )
            sec["rows"].append([_value(c, f) for c, f in zip(sec["columns"], fields)])
            i += 1
        sections.append(sec)
    return sections


def parse_imb_header(text: str) -> dict[str, Any]:
    """The banner facts: version, info lines, calling sequence, message
    lengths, datatypes, benchmark list and the finalize trailer."""
    lines = text.splitlines()
    out: dict[str, Any] = {
        "version_line": None,
        "version": None,
        "part": None,
        "info": {},
        "calling_sequence": None,
        "min_msg_bytes": None,
        "max_msg_bytes": None,
        "datatype": None,
        "reduction_datatype": None,
        "op": None,
        "benchmarks": [],
        "finalized": any(line == IMB_FINALIZE for line in lines),
    }
    i = 0
    n = len(lines)
    while i < n and not _BENCH.match(lines[i]):
        line = lines[i]
        if m := _VERSION.match(line):
            out["version_line"] = line[1:].strip()
            out["version"], out["part"] = m.group(1), m.group(2)
        elif line.startswith("# Calling sequence was:"):
            # The command line is the next non-blank line.
            j = i + 1
            while j < n and not lines[j].strip():
                j += 1
            out["calling_sequence"] = lines[j][1:].strip()
            i = j
        elif line.startswith("# Minimum message length in bytes:"):
            out["min_msg_bytes"] = int(line.split(":", 1)[1])
        elif line.startswith("# Maximum message length in bytes:"):
            out["max_msg_bytes"] = int(line.split(":", 1)[1])
        elif line.startswith("# MPI_Datatype for reductions"):
            out["reduction_datatype"] = line.split(":", 1)[1].strip()
        elif line.startswith("# MPI_Datatype "):
            out["datatype"] = line.split(":", 1)[1].strip()
        elif line.startswith("# MPI_Op "):
            out["op"] = line.split(":", 1)[1].strip()
        elif line.startswith("# List of Benchmarks to run:"):
            j = i + 1
            while j < n and not lines[j].strip():
                j += 1
            while j < n and lines[j].startswith("# ") and lines[j][2:].strip():
                out["benchmarks"].append(lines[j][2:].strip())
                j += 1
            i = j
            continue
        elif m := _INFO.match(line):
            out["info"][m.group(1).strip()] = m.group(2).strip()
        i += 1
    return out


# --------------------------------------------------------------------------
# Layout


def _fail(lineno: int, what: str, got: str, want: str | None = None) -> NoReturn:
    msg = f"IMB layout, line {lineno + 1}: {what}\n  got:  {got!r}"
    if want is not None:
        msg += f"\n  want: {want!r}"
    raise AssertionError(msg)


# The banner, line by line as IMB 2021.11 prints it (the samples).
_BANNER = [
    re.compile(r"^#-{64}$"),
    _VERSION,
    re.compile(r"^#-{64}$"),
]
_BANNER_TAIL = [
    re.compile(r"^$"),
    re.compile(r"^$"),
    re.compile(r"^# Calling sequence was: $"),
    re.compile(r"^$"),
    re.compile(r"^# \S.* $"),  # the command line, with IMB's trailing space
    re.compile(r"^$"),
    re.compile(r"^# Minimum message length in bytes:   \d+$"),
    re.compile(r"^# Maximum message length in bytes:   \d+$"),
    re.compile(r"^#$"),
    re.compile(r"^# MPI_Datatype                   :   MPI_\w+ $"),
    re.compile(r"^# MPI_Datatype for reductions    :   MPI_\w+ $"),
    re.compile(r"^# MPI_Op                         :   MPI_\w+  $"),
    re.compile(r"^# $"),
    re.compile(r"^# $"),
    re.compile(r"^$"),
    re.compile(r"^# List of Benchmarks to run:$"),
    re.compile(r"^$"),
]


def check_imb_layout(text: str, *, finalized: bool = True) -> None:
    """Raise AssertionError unless ``text`` is spaced exactly as IMB-MPI1
    prints it (banner, section headers, dashed lines, fixed-width table
    fields, the blank lines between sections and, when ``finalized``, the
    finalize trailer of a completed run)."""
    if "\t" in text:
        raise AssertionError("IMB layout: IMB never prints tabs")
    lines = text.splitlines()
    n = len(lines)
    i = 0
    # Banner and info lines ("# %-22s: %s").
    for pat in _BANNER:
        if i >= n or not pat.match(lines[i]):
            _fail(i, "banner", lines[i] if i < n else "<end>", pat.pattern)
        i += 1
    while i < n and lines[i].strip():
        if not _INFO.match(lines[i]):
            _fail(i, "info line is not '# <key padded to 22>: <value>'", lines[i])
        i += 1
    for pat in _BANNER_TAIL:
        if i >= n or not pat.match(lines[i]):
            _fail(i, "header block", lines[i] if i < n else "<end>", pat.pattern)
        i += 1
    while i < n and lines[i].strip():
        if not re.match(r"^# \S+$", lines[i]):
            _fail(i, "benchmark list entry is not '# Name'", lines[i])
        i += 1
    # Sections: a blank line, the dashed line, title, process count(s),
    # dashed line, column header, rows.
    nsec = 0
    while i < n:
        if lines[i] != "":
            _fail(i, "a section must start with one blank line", lines[i], "")
        i += 1
        if i < n and lines[i] == "" and i + 1 < n and lines[i + 1] == IMB_FINALIZE:
            break  # the trailer
        if i < n and lines[i] == IMB_FINALIZE:
            _fail(i, "the finalize line follows two blank lines", lines[i - 1])
        if i >= n or not _RULE.match(lines[i]):
            _fail(i, "section dashed line", lines[i] if i < n else "<end>")
        rule_at = i
        i += 1
        if i >= n or not _BENCH.match(lines[i]):
            _fail(i, "'# Benchmarking <name> ' (with IMB's trailing space)", lines[i] if i < n else "<end>")
        i += 1
        if i >= n or not _PROCS.match(lines[i]):
            _fail(i, "'# #processes = <n> ' (with IMB's trailing space)", lines[i] if i < n else "<end>")
        i += 1
        if i < n and lines[i].startswith("# ("):
            if not _WAITING.match(lines[i]):
                _fail(i, "'# ( <k> additional processes waiting in MPI_Barrier)'", lines[i])
            i += 1
        if i >= n or lines[i] != lines[rule_at]:
            _fail(i, "closing dashed line differs from the opening one", lines[i] if i < n else "<end>", lines[rule_at])
        i += 1
        while i < n and (lines[i] == "#" or _MODE.match(lines[i])):
            i += 1
        if i >= n:
            _fail(i, "no column header", "<end>")
        columns = lines[i].split()
        want = format_imb_header(columns)
        if lines[i] != want:
            _fail(i, "column header is not one right-aligned %13s per name", lines[i], want)
        if lines[rule_at] != _rule(len(columns)):
            _fail(rule_at, f"dashed line must be '#' and 13 x {len(columns)} - 1 dashes", lines[rule_at], _rule(len(columns)))
        i += 1
        rows = 0
        while i < n and lines[i] != "":
            if _RULE.match(lines[i]):
                _fail(i, "a section must start with one blank line", lines[i])
            fields = lines[i].split()
            if len(fields) != len(columns):
                _fail(i, f"row has {len(fields)} fields for {len(columns)} columns", lines[i])
            try:
                values = [_value(c, f) for c, f in zip(columns, fields)]
            except ValueError:
                _fail(i, "row field is not a number of the column's type", lines[i])
            want = format_imb_row(columns, values)
            if lines[i] != want:
                _fail(i, "row is not printed with %13d / %13.2f fields", lines[i], want)
            rows += 1
            i += 1
        if rows == 0:
            _fail(i, "section without rows", lines[i] if i < n else "<end>")
        nsec += 1
    if nsec == 0:
        raise AssertionError("IMB layout: no '# Benchmarking' section")
    if finalized and not text.endswith("\n\n\n" + IMB_FINALIZE + "\n\n"):
        raise AssertionError(
            "IMB layout: a completed run ends with two blank lines, "
            f"{IMB_FINALIZE!r} and one blank line; got {text[-60:]!r}"
        )
