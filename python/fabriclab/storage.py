"""fio on a simulated fabric: client hosts doing block I/O against remote
storage targets over RDMA (a distributed file system or NVMe over Fabrics
as the fabric sees it), with fio's job options and figures.

Each client runs ``numjobs`` jobs of ``iodepth`` I/Os of ``bs`` bytes,
spread round robin over the ``targets``; a target's device moves data at
its media rate and answers after its own latency (see the core's
``workload/fio.rs`` for the model and what it leaves out). One row per
client host in the result's ``df``; ``res.text`` is fio's text output
(each line starts with ``<host>``, as in fio's client mode) and
``res.extras["json"]`` its ``--output-format=json`` document::

    >>> import fabriclab
    >>> res = fabriclab.fio("randwrite", bs=4096, iodepth=1, clients=["h0"],
    ...                     targets=["h12"], fabric="eantc-storage", runtime=0.005)
    >>> list(res.df.columns[:4])
    ['host', 'jobs', 'total_ios', 'io_bytes']
    >>> print(res.text)                  # doctest: +SKIP

Simulated time is costly: ``runtime`` defaults to 0.05 s (fio users write
tens of seconds; the figures settle within milliseconds on a fabric).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from . import _core
from ._checks import as_float, as_int, as_list, as_seed, as_str, dumps
from ._tables import frame
from .api import PORT_COLUMNS, FabricLike, fabric_arg, fabric_label, with_backend
from .errors import InvalidArgumentError
from .progress import ProgressArg, progress_callback
from .results import Result
from .tcp import parse_size

__all__ = ["fio", "parse_hosts", "FIO_COLUMNS", "FIO_RW"]

#: fio's ``rw`` values the simulator runs.
FIO_RW = ("randwrite", "randread", "write", "read")
#: Columns of :func:`fio`'s DataFrame (latencies in us, bandwidth in B/s).
FIO_COLUMNS = [
    "host",
    "jobs",
    "total_ios",
    "io_bytes",
    "runtime_ms",
    "iops",
    "bw_bytes",
    "slat_avg_us",
    "clat_min_us",
    "clat_avg_us",
    "clat_max_us",
    "clat_stdev_us",
    "lat_avg_us",
    "p50_us",
    "p90_us",
    "p99_us",
    "p99_9_us",
    "p99_99_us",
]


def parse_hosts(value: Sequence[str] | str) -> list[str]:
    """Host names from a list, or from text like ``"h0-h10,h12"`` (ranges
    of ``hN`` names, comma-separated)."""
    if not isinstance(value, str):
        return [as_str("host", h) for h in as_list("hosts", value, "host names")]
    out: list[str] = []
    for part in value.split(","):
        part = part.strip()
        if not part:
            raise InvalidArgumentError(f"host list {value!r} has an empty name (two commas, or a comma at an end)")
        m = re.fullmatch(r"h(\d+)-h(\d+)", part)
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            if lo > hi:
                raise InvalidArgumentError(f"host range {part}: write the lower host first, e.g. h{hi}-h{lo}")
            out += [f"h{i}" for i in range(lo, hi + 1)]
        else:
            out.append(part)
    return out


def _row(c: dict[str, Any]) -> dict[str, Any]:
    pct = {p: v for p, v in c["clat_percentiles"]}
    us = 1e-3
    return {
        "host": c["host"],
        "jobs": c["jobs"],
        "total_ios": c["total_ios"],
        "io_bytes": c["io_bytes"],
        "runtime_ms": c["runtime_ms"],
        "iops": c["iops"],
        "bw_bytes": c["bw_bytes"],
        "slat_avg_us": c["slat_ns"]["mean"] * us,
        "clat_min_us": c["clat_ns"]["min"] * us,
        "clat_avg_us": c["clat_ns"]["mean"] * us,
        "clat_max_us": c["clat_ns"]["max"] * us,
        "clat_stdev_us": c["clat_ns"]["stddev"] * us,
        "lat_avg_us": c["lat_ns"]["mean"] * us,
        "p50_us": pct[50.0] * us,
        "p90_us": pct[90.0] * us,
        "p99_us": pct[99.0] * us,
        "p99_9_us": pct[99.9] * us,
        "p99_99_us": pct[99.99] * us,
    }


def fio(
    rw: str = "randwrite",
    *,
    bs: int | str = 4096,
    iodepth: int = 1,
    numjobs: int = 1,
    runtime: float = 0.05,
    ramp_time: float = 0.0,
    clients: Sequence[str] | str = ("h0",),
    targets: Sequence[str] | str = ("h12",),
    fabric: FabricLike = "eantc-storage",
    seed: int = 1,
    name: str = "fio",
    target_write_mbps: float | None = None,
    target_read_mbps: float | None = None,
    target_latency_us: float | None = None,
    submit_us: float | None = None,
    avg_time_ms: float | None = None,
    progress: ProgressArg = False,
    backend: str | None = None,
) -> Result:
    """Run fio's ``rw`` (randwrite, randread, write or read) with block
    size ``bs`` (bytes, or text like ``"4M"``), ``iodepth`` and ``numjobs``
    per client for ``runtime`` seconds after ``ramp_time``, from every host
    in ``clients`` against ``targets`` (lists, or text like ``"h0-h10"``;
    see :func:`parse_hosts`).

    The target model: ``target_write_mbps`` / ``target_read_mbps`` (media
    rate per target, MB/s; default two SATA-class SSDs, 3400 / 5800),
    ``target_latency_us`` (device and stack time per I/O, default 28),
    ``submit_us`` (the client's submission cost, fio's slat, default 1).
    ``avg_time_ms`` is fio's ``bw_avg_time`` (default 500).

    Returns a :class:`fabriclab.Result` with ``tool="fio"``: ``df`` has
    one row per client host with :data:`FIO_COLUMNS`; ``text`` is fio's
    text output, ``ports`` the port counters, ``ports_table``,
    ``sim_time_us``, ``events``, ``outcome``; ``extras["json"]`` is fio's
    JSON output.
    """
    label = fabric_label(fabric)
    fabric = with_backend(fabric, backend)
    opts: dict[str, Any] = {
        "name": as_str("name", name),
        "rw": as_str("rw", rw),
        "bs": parse_size(bs, "bs"),
        "iodepth": as_int("iodepth", iodepth),
        "numjobs": as_int("numjobs", numjobs),
        "runtime_s": as_float("runtime", runtime),
        "ramp_time_s": as_float("ramp_time", ramp_time),
        "clients": parse_hosts(clients),
        "targets": parse_hosts(targets),
    }
    for key, value in (
        ("target_write_mbps", target_write_mbps),
        ("target_read_mbps", target_read_mbps),
        ("target_latency_us", target_latency_us),
        ("submit_us", submit_us),
        ("avg_time_ms", avg_time_ms),
    ):
        if value is not None:
            opts[key] = as_float(key, value)
    out = json.loads(_core.fio(fabric_arg(fabric), dumps(opts), as_seed(seed), progress_callback("fio", progress)))
    rep = out["report"]
    df = frame([_row(c) for c in rep["clients"]], FIO_COLUMNS)
    return Result(
        "fio",
        df,
        backend=out["backend"],
        fabric=label,
        text=out["text"],
        ports=frame(rep["ports"], PORT_COLUMNS),
        ports_table=out["ports_table"],
        outcome=rep["outcome"],
        sim_time_us=rep["sim_time_ps"] / 1e6,
        events=rep["events"],
        extras={"json": out["json"]},
    )
