"""A parser and a layout checker for HPL 2.3's output, written against the
real sample in tests/golden (hpl_sample.txt) and applied to fabriclab's
output alike.

``parse_hpl(text)`` returns::

    {"params": {"N": ["2000"], "NB": ["128"], "P": ["1", "2"], ...,
                "PMAP": "Row-major process mapping", "SWAP": "Mix (threshold = 64)", ...},
     "tests": [{"variant": "WR11C2R4", "n": 2000, "nb": 128, "p": 1, "q": 2,
                "time_s": 0.18, "gflops": 30.302, "start": "Sat Nov 21 04:25:10 2026",
                "end": "...", "residual": 3.21e-03 or None}],
     "finished": 2, "passed": 2 or None, "failed": 0 or None,
     "unchecked": None or 2, "skipped": 0}

``check_hpl_layout(text)`` raises ``AssertionError`` unless the T/V lines
are HPL's ``"%s%12d %5d %5d %5d %18.2f     %18.4e"`` and the parameter
lines its label followed by ``"%8d "`` / ``"%8s "`` fields, at most 8 to
a line (continuations indented by 8 spaces).

``comparable(text)`` drops what a run without the residual check does not
print (the residual lines, the check's description, the summary's pass
and fail counts), and masks times, dates and figures: two runs of the
same HPL.dat, checked or not, are then equal.

Pure Python; no fabriclab import.
"""

from __future__ import annotations

import re
from typing import Any

RULE_EQ = "=" * 80
RULE_DASH = "-" * 80
TV_HEADER = "T/V                N    NB     P     Q               Time                 Gflops"
#: HPL_pdtest's result line: variant, N, NB, P, Q, time, Gflops.
TV = re.compile(
    r"^(W[RC]\d[0-5][LCR]\d+[LCR]\d+)( {0,11}\d+) ( {0,4}\d+) ( {0,4}\d+) ( {0,4}\d+) "
    r"( *\d+\.\d\d)     ( *\d\.\d{4}e[+-]\d\d)$"
)
CTIME = r"(\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4})"
START = re.compile(rf"^HPL_pdgesv\(\) start time {CTIME}$")
END = re.compile(rf"^HPL_pdgesv\(\) end time   {CTIME}$")
RESIDUAL = re.compile(
    r"^\|\|Ax-b\|\|_oo/\(eps\*\(\|\|A\|\|_oo\*\|\|x\|\|_oo\+\|\|b\|\|_oo\)\*N\)= +(\S+) \.\.\.\.\.\. (PASSED|FAILED)$"
)
#: Parameters HPL lists as fields of 8 (lists), and as free text.
LIST_LABELS = ("N", "NB", "P", "Q", "PFACT", "NBMIN", "NDIV", "RFACT", "BCAST", "DEPTH")
TEXT_LABELS = ("PMAP", "SWAP", "L1", "U", "EQUIL", "ALIGN")
PARAM = re.compile(r"^([A-Z0-9]+) *:(.*)$")
FINISHED = re.compile(r"^Finished +(\d+) tests with the following results:$")
COUNT = re.compile(r"^ {9}( {0,5}\d+) tests (completed and passed residual checks,|completed and failed residual checks,|completed without checking,|skipped because of illegal input values\.)$")
_COUNT_KEY = {
    "completed and passed residual checks,": "passed",
    "completed and failed residual checks,": "failed",
    "completed without checking,": "unchecked",
    "skipped because of illegal input values.": "skipped",
}


def _param_block(lines: list[str]) -> tuple[int, int]:
    """First and past-last line of the parameter list."""
    start = lines.index("The following parameter values will be used:") + 2
    end = start
    while end < len(lines) and lines[end] != "":
        end += 1
    return start, end


def _fields(rest: str) -> list[str]:
    """A parameter line's ``%8s `` fields (after the label or indent)."""
    assert len(rest) % 9 == 0 and 0 < len(rest) <= 8 * 9, f"not 1..8 fields of 9 characters: {rest!r}"
    chunks = [rest[i : i + 9] for i in range(0, len(rest), 9)]
    for c in chunks:
        assert c.endswith(" ") and c[:8].strip() and c[:8] == c[:8].strip().rjust(8), f"not a %8s field: {c!r}"
    return [c.strip() for c in chunks]


def parse_params(lines: list[str]) -> dict[str, Any]:
    """The parameter list: list labels to their values (strings), text
    labels to their text."""
    params: dict[str, Any] = {}
    start, end = _param_block(lines)
    label = None
    for line in lines[start:end]:
        if line.startswith(" " * 8):
            assert label in LIST_LABELS, f"continuation line after {label!r}: {line!r}"
            params[label] += _fields(line[8:])
            continue
        m = PARAM.match(line)
        assert m and line[:7] == m.group(1).ljust(7) and line[7] == ":", f"not a parameter line: {line!r}"
        label = m.group(1)
        if label in LIST_LABELS:
            params[label] = _fields(line[8:])
        else:
            assert label in TEXT_LABELS, f"unknown parameter {label!r}"
            assert line[8] == " ", line
            params[label] = line[9:]
    return params


def _test(lines: list[str], i: int) -> tuple[dict[str, Any], int]:
    """The test whose T/V header is at line ``i``; the line after it."""
    assert lines[i + 1] == RULE_DASH, lines[i + 1]
    m = TV.match(lines[i + 2])
    assert m, f"not a T/V line: {lines[i + 2]!r}"
    t: dict[str, Any] = {
        "variant": m.group(1),
        "n": int(m.group(2)),
        "nb": int(m.group(3)),
        "p": int(m.group(4)),
        "q": int(m.group(5)),
        "time_s": float(m.group(6)),
        "gflops": float(m.group(7)),
        "residual": None,
    }
    s, e = START.match(lines[i + 3]), END.match(lines[i + 5])
    assert s and lines[i + 4] == "" and e and lines[i + 6] == "", lines[i + 3 : i + 7]
    t["start"], t["end"] = s.group(1), e.group(1)
    j = i + 7
    if lines[j] == RULE_DASH:
        r = RESIDUAL.match(lines[j + 1])
        assert r, f"not a residual line: {lines[j + 1]!r}"
        t["residual"] = float(r.group(1))
        j += 2
    assert lines[j] == RULE_EQ, lines[j]
    return t, j + 1


def parse_hpl(text: str) -> dict[str, Any]:
    lines = text.rstrip("\n").split("\n")
    out: dict[str, Any] = {"params": parse_params(lines), "tests": []}
    i = 0
    while i < len(lines):
        if lines[i] == TV_HEADER:
            t, i = _test(lines, i)
            out["tests"].append(t)
            continue
        if m := FINISHED.match(lines[i]):
            out["finished"] = int(m.group(1))
            counts = {"passed": None, "failed": None, "unchecked": None, "skipped": None}
            i += 1
            while i < len(lines) and (c := COUNT.match(lines[i])):
                counts[_COUNT_KEY[c.group(2)]] = int(c.group(1))
                i += 1
            out.update(counts)
            continue
        i += 1
    assert "finished" in out, "no 'Finished ... tests' summary"
    assert lines[-4:] == [RULE_DASH, "", "End of Tests.", RULE_EQ], lines[-4:]
    return out


def check_hpl_layout(text: str) -> None:
    """Every T/V and parameter line as HPL's printf formats print it."""
    lines = text.rstrip("\n").split("\n")
    parse_params(lines)  # asserts the parameter lines' fields
    for line in lines:
        m = TV.match(line)
        if line.startswith("W") and not line.startswith("Written"):
            assert m, f"not a T/V line: {line!r}"
            v = (m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5)))
            again = "%s%12d %5d %5d %5d %18.2f     %18.4e" % (*v, float(m.group(6)), float(m.group(7)))
            assert again == line, f"{line!r} is not HPL's format ({again!r})"
    assert TV_HEADER in lines


def comparable(text: str) -> str:
    """``text`` without what a run "without checking" leaves out, with
    figures, times and dates masked."""
    out: list[str] = []
    lines = text.rstrip("\n").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line == RULE_DASH and i + 2 < len(lines) and lines[i + 2].startswith("- The matrix A"):
            # The residual check's description: from the rule to the blank
            # line after "- Computational tests pass ...".
            while not lines[i].startswith("- Computational tests pass"):
                i += 1
            i += 2
            continue
        if line == RULE_DASH and i + 1 < len(lines) and RESIDUAL.match(lines[i + 1]):
            i += 2
            continue
        if c := COUNT.match(line):
            if _COUNT_KEY[c.group(2)] in ("passed", "failed", "unchecked"):
                i += 1
                continue
        if m := TV.match(line):
            line = f"{m.group(1)}{m.group(2)} {m.group(3)} {m.group(4)} {m.group(5)} TIME GFLOPS"
        line = re.sub(CTIME, "DATE", line)
        out.append(line)
        i += 1
    return "\n".join(out) + "\n"
