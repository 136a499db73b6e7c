"""A parser for fio's normal text output, written against the real sample
in tests/golden (fio 3.33) and applied to fabriclab's output alike.

``parse_fio(text)`` returns one dict per job report (lines may carry fio's
client-mode ``<host> `` prefix)::

    {"host": "h0" or None, "name": "randwrite-4k", "jobs": 2, "dir": "write",
     "iops": 166000.0, "bw_bytes": 680e6, "io_bytes": ..., "runtime_ms": 3001,
     "clat": {"unit": "usec", "min": 17, "max": 4076, "avg": 189.61, "stdev": 71.09},
     "lat": {...}, "slat": {...},
     "percentiles": {"unit": "usec", "values": {1.0: 102, ..., 99.99: 2474}},
     "lat_buckets": {("usec", "250"): 94.05, ...},
     "issued": (reads, writes), "depth": 16}

Numbers with fio's suffixes (k, M, Ki, Mi, ...) are expanded. Pure Python;
no fabriclab import.
"""

from __future__ import annotations

import re
from typing import Any

_SUFFIX = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "Ki": 1024, "Mi": 1024**2, "Gi": 1024**3}
NUM = r"([\d.]+)(k|M|G|Ki|Mi|Gi)?"
HEADER = re.compile(r"^(\S.*): \(groupid=(\d+), jobs=(\d+)\): err= ?(\d+)")
IOPS = re.compile(
    # Client mode's "All clients" block prints the bandwidth without B/s.
    rf"^  (read|write): IOPS={NUM}, BW={NUM}(?:B/s)? \({NUM}(?:B/s)?\)\({NUM}B/(\d+)msec\)"
)
STAT = re.compile(rf"^ +(slat|clat|lat) \((nsec|usec|msec)\): min={NUM}, max={NUM}, avg= *([\d.]+), stdev= *([\d.]+)$")
PCT_HEAD = re.compile(r"^ +clat percentiles \((nsec|usec|msec)\):$")
PCT = re.compile(r"(\d+\.\d\d)th=\[\s*(\d+)\]")
BUCKETS = re.compile(r"^  lat \((nsec|usec|msec)\) +: (.*)$")
ISSUED = re.compile(r"^ +issued rwts: total=(\d+),(\d+),(\d+),(\d+)")
LATENCY = re.compile(r"^ +latency +: target=\d+, window=\d+, percentile=[\d.]+%, depth=(\d+)$")


def _num(value: str, suffix: str | None) -> float:
    return float(value) * _SUFFIX[suffix or ""]


def parse_fio(text: str) -> list[dict[str, Any]]:
    jobs: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    in_pct = False
    for raw in text.splitlines():
        host = None
        m = re.match(r"^<([^>]+)> ?(.*)$", raw)
        line = raw
        if m:
            host, line = m.group(1), m.group(2)
        if h := HEADER.match(line):
            cur = {"host": host, "name": h.group(1), "jobs": int(h.group(3)), "error": int(h.group(4))}
            cur["lat_buckets"] = {}
            jobs.append(cur)
            in_pct = False
            continue
        if cur is None:
            continue
        if m2 := IOPS.match(line):
            g = m2.groups()
            cur.update(
                dir=g[0],
                iops=_num(g[1], g[2]),
                bw_bytes=_num(g[3], g[4]),
                bw_bytes_si=_num(g[5], g[6]),
                io_bytes=_num(g[7], g[8]),
                runtime_ms=int(g[9]),
            )
        elif s := STAT.match(line):
            g = s.groups()
            cur[g[0]] = {
                "unit": g[1],
                "min": _num(g[2], g[3]),
                "max": _num(g[4], g[5]),
                "avg": float(g[6]),
                "stdev": float(g[7]),
            }
        elif p := PCT_HEAD.match(line):
            cur["percentiles"] = {"unit": p.group(1), "values": {}}
            in_pct = True
        elif in_pct and "|" in line:
            for pc, v in PCT.findall(line):
                cur["percentiles"]["values"][float(pc)] = int(v)
        elif b := BUCKETS.match(line):
            in_pct = False
            for item in b.group(2).split(", "):
                k, v = item.rsplit("=", 1)
                cur["lat_buckets"][(b.group(1), k)] = float(v.rstrip("%"))
        elif i := ISSUED.match(line):
            cur["issued"] = (int(i.group(1)), int(i.group(2)))
        elif d := LATENCY.match(line):
            cur["depth"] = int(d.group(1))
        else:
            in_pct = in_pct and "|" in line
    return jobs
