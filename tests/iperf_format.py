"""A parser of iperf3's client text output and a skeleton of its ``-J``
document, written against the golden samples (iperf 3.12).

Text lines are matched with fixed column positions taken from iperf3's
format strings (``report_bw_retrans_cwnd_format``, ``report_bw_retrans_format``,
``report_bw_format`` and their ``[SUM]`` variants): a line that is off by
one column does not parse. ``parse(text)`` returns the interval lines and
the summary lines as dicts; ``skeleton(doc)`` reduces a JSON document's
text to its layout (keys, nesting, tabs, brackets) with the values blanked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_ID = r"\[(?P<id>[ \d]{2}\d|SUM)\]"
# "%6.2f-%-6.2f": two fields of exactly six columns.
_TIMES = r" (?P<start>[ \d.]{5}\d)-(?P<end>[\d.]{4}[\d. ]{2}) sec"
_XFER = r"  (?P<xfer>[ \d.]{3}[\d.]) (?P<xunit>[KMGT]?)Bytes"
_RATE = r"  (?P<rate>[ \d.]{3}[\d.]) (?P<runit>[KMGT]?)bits/sec"
INTERVAL = re.compile(
    "^" + _ID + _TIMES + _XFER + _RATE + r"  (?P<retr>[ \d]{2}\d)   (?P<cwnd>[ \d.]{3}[\d.]) (?P<cunit>[KMGT]?)Bytes {7}$"
)
INTERVAL_SUM = re.compile("^" + _ID + _TIMES + _XFER + _RATE + r"  (?P<retr>[ \d]{2}\d) {13}$")
SENDER = re.compile("^" + _ID + _TIMES + _XFER + _RATE + r"  (?P<retr>[ \d]{2}\d) {13}sender$")
RECEIVER = re.compile("^" + _ID + _TIMES + _XFER + _RATE + r" {18}receiver$")
CONNECTED = re.compile(r"^\[(?P<id>[ \d]{2}\d)\] local (?P<lh>\S+) port (?P<lp>\d+) connected to (?P<rh>\S+) port (?P<rp>\d+)$")
HEADER = "[ ID] Interval           Transfer     Bitrate         Retr  Cwnd"
SUMMARY_HEADER = "[ ID] Interval           Transfer     Bitrate         Retr"
SEPARATOR = "- - - - - - - - - - - - - - - - - - - - - - - - -"
_UNIT = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_RUNIT = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


@dataclass
class IperfText:
    connecting: str
    connected: list[dict] = field(default_factory=list)
    intervals: list[dict] = field(default_factory=list)
    sums: list[dict] = field(default_factory=list)
    senders: list[dict] = field(default_factory=list)
    receivers: list[dict] = field(default_factory=list)
    separators: int = 0


def _fields(m: re.Match) -> dict:
    d = m.groupdict()
    out: dict = {"id": d["id"].strip(), "start": float(d["start"]), "end": float(d["end"])}
    out["bytes"] = float(d["xfer"]) * _UNIT[d["xunit"]]
    out["bps"] = float(d["rate"]) * _RUNIT[d["runit"]]
    if d.get("retr") is not None:
        out["retr"] = int(d["retr"])
    if d.get("cwnd") is not None:
        out["cwnd"] = float(d["cwnd"]) * _UNIT[d["cunit"]]
    return out


def parse(text: str) -> IperfText:
    """Parse iperf3's client text; every line must be one iperf3 prints."""
    lines = text.rstrip("\n").split("\n")
    if not lines[0].startswith("Connecting to host "):
        raise ValueError(f"first line: {lines[0]!r}")
    out = IperfText(connecting=lines[0])
    if lines[-2:] != ["", "iperf Done."]:
        raise ValueError("the output must end with a blank line and 'iperf Done.'")
    in_summary = False
    for line in lines[1:-2]:
        if line == HEADER:
            continue
        if line == SUMMARY_HEADER:
            in_summary = True
            continue
        if line == SEPARATOR:
            out.separators += 1
            continue
        for rx, dest in (
            (CONNECTED, None),
            (INTERVAL, out.intervals),
            (INTERVAL_SUM, out.sums),
            (SENDER, out.senders),
            (RECEIVER, out.receivers),
        ):
            m = rx.match(line)
            if m is None:
                continue
            if dest is None:
                out.connected.append(m.groupdict())
            else:
                if (dest is out.intervals or dest is out.sums) == in_summary:
                    raise ValueError(f"line in the wrong section: {line!r}")
                dest.append(_fields(m))
            break
        else:
            raise ValueError(f"not an iperf3 line: {line!r}")
    return out


_KEY = re.compile(r'^(\t*)"([^"]+)":\t(.*?)(,?)$')


def skeleton(doc: str) -> list[str]:
    """The layout of a cJSON document: every line with its value blanked
    (objects and arrays of objects kept as brackets)."""
    out = []
    for line in doc.rstrip("\n").split("\n"):
        m = _KEY.match(line)
        if m and m.group(3) not in ("{", "[{", "[]"):
            value = m.group(3)
            kind = "S" if value.startswith('"') else "B" if value in ("true", "false") else "N"
            out.append(f'{m.group(1)}"{m.group(2)}":\t{kind}{m.group(4)}')
        else:
            out.append(line)
    return out


def structure(v):
    """A JSON value's key structure: objects as ordered (key, structure)
    lists, arrays by their first element, scalars by type."""
    if isinstance(v, dict):
        return [(k, structure(x)) for k, x in v.items()]
    if isinstance(v, list):
        shapes = [structure(x) for x in v]
        if any(s != shapes[0] for s in shapes):
            raise ValueError("array elements differ in structure")
        return ["array of", shapes[0] if shapes else None]
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    return type(v).__name__
