"""A parser and a layout checker for Sandia Cbench rotate and
rotate_latency output, written against the real samples in tests/golden.

``parse_cbench(text)`` returns::

    {"kind": "bandwidth" | "latency",
     "processes": {0: "vm", ...},
     "rotations": [{"rotation": 0, "values": [7488.02, 9012.53],
                    "min": ..., "max": ..., "ave": ...,
                    "aggregate": ... or None, "aggregate_floor": ... or None}],
     "summary": {"min": ..., "max": ..., "average": ..., "aggregate": ... or None},
     "bytes": 8388608, "tests": 3, "iterations": 10}

``check_cbench_layout(text)`` raises ``AssertionError`` unless every line
is one the tool's ``printf`` calls print (``%.2lf`` figures, ``" , "``
after each pair, the summary wording and units).

Pure Python; no fabriclab import.
"""

from __future__ import annotations

import re
from typing import Any

F = r"(-?\d+\.\d\d)"
PROCESS = re.compile(r"^process (\d+) on (\S+)$")
ROT_BW = re.compile(
    rf"^rotate (\d+) \*\* ((?:{F[1:-1]} , )+)\*\* min={F} max={F} ave={F} aggregate={F} aggregate_floor={F}$"
)
ROT_LAT = re.compile(rf"^rotate (\d+) \*\* ((?:{F[1:-1]} , )+)\*\* min={F} max={F} ave={F}$")
SUMMARY = {
    "bandwidth": [
        ("min", re.compile(rf"^Min Unidirectional Link Bandwidth: {F} MB/s$")),
        ("max", re.compile(rf"^Max Unidirectional Link Bandwidth: {F} MB/s$")),
        ("average", re.compile(rf"^Average Link Unidirectional Bandwidth: {F} MB/s$")),
        ("aggregate", re.compile(rf"^Average Aggregate Unidirectional Bandwidth: {F} MB/s$")),
    ],
    "latency": [
        ("min", re.compile(rf"^Min Link Latency: {F} us$")),
        ("max", re.compile(rf"^Max Link Latency: {F} us$")),
        ("average", re.compile(rf"^Average Link Latency: {F} us$")),
    ],
}
USING = re.compile(r"^Using (\d+) byte messages, (\d+) tests of (\d+) iterations$")


def parse_cbench(text: str) -> dict[str, Any]:
    lines = text.rstrip("\n").split("\n")
    out: dict[str, Any] = {"processes": {}, "rotations": [], "summary": {}}
    i = 0
    while i < len(lines) and (m := PROCESS.match(lines[i])):
        out["processes"][int(m[1])] = m[2]
        i += 1
    kind = None
    while i < len(lines) and lines[i].startswith("rotate "):
        mb, ml = ROT_BW.match(lines[i]), ROT_LAT.match(lines[i])
        m = mb or ml
        assert m, f"not a rotate line: {lines[i]!r}"
        k = "bandwidth" if mb else "latency"
        assert kind in (None, k), "bandwidth and latency lines mixed"
        kind = k
        rot = {
            "rotation": int(m[1]),
            "values": [float(v) for v in m[2].split(" , ") if v],
            "min": float(m[3]),
            "max": float(m[4]),
            "ave": float(m[5]),
            "aggregate": float(m[6]) if mb else None,
            "aggregate_floor": float(m[7]) if mb else None,
        }
        out["rotations"].append(rot)
        i += 1
    assert kind, "no rotate lines"
    out["kind"] = kind
    assert lines[i] == "", f"expected a blank line before the summary, got {lines[i]!r}"
    i += 1
    for key, pat in SUMMARY[kind]:
        m = pat.match(lines[i])
        assert m, f"expected {pat.pattern!r}, got {lines[i]!r}"
        out["summary"][key] = float(m[1])
        i += 1
    out["summary"].setdefault("aggregate", None)
    m = USING.match(lines[i])
    assert m, f"expected the 'Using ...' line, got {lines[i]!r}"
    out["bytes"], out["tests"], out["iterations"] = int(m[1]), int(m[2]), int(m[3])
    assert i == len(lines) - 1, f"unexpected lines after the summary: {lines[i + 1:]}"
    return out


def check_cbench_layout(text: str) -> None:
    """Raise AssertionError unless ``text`` is laid out as Cbench prints."""
    parse_cbench(text)
    assert text.endswith("\n"), "Cbench ends with a newline"


def check_cbench_arithmetic(p: dict[str, Any]) -> None:
    """The per-rotation and summary figures follow from the printed pair
    figures (within the rounding of ``%.2lf``)."""
    tol = 0.011
    for r in p["rotations"]:
        v = r["values"]
        assert abs(r["min"] - min(v)) < tol and abs(r["max"] - max(v)) < tol
        assert abs(r["ave"] - sum(v) / len(v)) < tol * 2
        if r["aggregate"] is not None:
            assert abs(r["aggregate"] - sum(v)) < tol * len(v)
            assert abs(r["aggregate_floor"] - min(v) * len(v)) < tol * len(v)
    rots = p["rotations"]
    s = p["summary"]
    assert abs(s["min"] - min(r["min"] for r in rots)) < tol
    assert abs(s["max"] - max(r["max"] for r in rots)) < tol
    assert abs(s["average"] - sum(r["ave"] for r in rots) / len(rots)) < tol * 2
    if s["aggregate"] is not None:
        assert abs(s["aggregate"] - sum(r["aggregate"] for r in rots) / len(rots)) < tol * 4
