"""DCQCN parameter sets on the 15:1 incast, and on an all-to-all, of the
``heps`` fabric.

h1..h15 each send SIZE to h0 (one leaf-spine-leaf hop away, except the
senders on leaf0); the bottleneck is the egress leaf0 -> h0. For each
congestion-control setting the script prints the mean bottleneck queue
after the first millisecond, the port-samples in which a port was
PFC-paused, the CNPs the receiver sent, the last completion against bytes /
line rate, and Jain's index of the senders' goodput over the middle of the
run; with ``--plot DIR`` it draws the bottleneck queue and the senders'
rates over time (matplotlib)::

    python benches/dcqcn_incast.py                  # 15 x 20 MiB (long-lived), about 5 min
    python benches/dcqcn_incast.py --size-mib 1     # the short incast
    python benches/dcqcn_incast.py --plot docs/img  # and the figures
    python benches/dcqcn_incast.py --alltoall       # 32 hosts, 992 flows of 512 KiB
    python benches/dcqcn_incast.py --paper-testbed  # the paper's 40G setting, 2-20 senders

With ``--alltoall`` every host sends SIZE-KiB to every other host at once
(heps is 1:1: 4 x 100G down and 2 spines x 2 links x 100G up per leaf);
the table gives the mean and 99th-percentile flow completion time, the
last completion against each NIC's bytes / line rate, the deepest switch
queue, paused port-samples and CNPs.

With ``--paper-testbed`` the fabric is the DCQCN paper's setting as far as
it is published: one 40G switch with a 12 MB shared buffer (Arista
7050QX32), PFC, marking at 5 KB / 200 KB / 1 % and the ``paper`` preset;
N senders (2, 10 and 20, the flow counts of the authors' fluid-model
validation) send SIZE each to one receiver. The table gives the
bottleneck's utilisation (wire bytes sent over the middle half of the
run against 40G), its mean and 95th-percentile queue there, paused
samples and Jain's index, to set beside the operating point the first
author gives for the paper's stable lines ("~99% link rate and the queue
length is mostly ~100KB or less", ns3-rdma issue 9).

The tables in docs/dcqcn.md come from this script. What it leaves out:
the paper's testbed results themselves (not readable here), its 3-tier
Clos and its traffic mixes.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import fabriclab

#: The settings compared: name -> the lines of the fabric's [cc] section.
SETS: dict[str, str] = {
    "no CC": 'algorithm = "none"',
    "connectx (per-port CNPs, 4 us)": 'algorithm = "dcqcn"\npreset = "connectx"',
    "connectx, CNP per marked packet (interval 0)": 'algorithm = "dcqcn"\npreset = "connectx"\ncnp_interval_us = 0',
    "connectx, per-QP CNPs (4 us)": 'algorithm = "dcqcn"\npreset = "connectx"\ncnp_scope = "qp"',
    "paper": 'algorithm = "dcqcn"\npreset = "paper"',
}
LINE_BPS = 100e9


def fabric(cc: str) -> fabriclab.Fabric:
    """``heps`` with its [cc] section replaced (it is the file's last)."""
    base = fabriclab.preset_toml("heps").split("\n[cc]")[0]
    return fabriclab.Fabric.from_toml(f"{base}\n[cc]\n{cc}\n")


def jain(x: list[float]) -> float:
    s = sum(x)
    return s * s / (len(x) * sum(v * v for v in x)) if s > 0 else float("nan")


def middle_half_shares(r: fabriclab.Result, end_ps: float) -> list[float]:
    """Bytes each of h0's receiving QPs got in order over the middle half
    of the run (from the QP samples)."""
    s = r.samples
    lo, hi = 0.25 * end_ps, 0.75 * end_ps
    rx = s[s.qp.isin(r.qps.qp[r.qps.host == "h0"])]
    shares = []
    for _qp, g in rx.groupby("qp"):
        a = g[g.time_ps <= lo].rx_bytes.max() if (g.time_ps <= lo).any() else 0
        b = g[g.time_ps <= hi].rx_bytes.max() if (g.time_ps <= hi).any() else 0
        shares.append(float(b - a))
    return shares


def time_mean(t_ps: Any, v: Any) -> float:
    """The mean over time of `v` sampled at `t_ps`, each sample holding
    until the next: the run's last sample, taken at its end a few us
    after the one before, weighs those few us, not a whole period."""
    t, x = t_ps.to_numpy(dtype=float), v.to_numpy(dtype=float)
    if len(t) < 2:
        return float(x.mean()) if len(x) else float("nan")
    dt = t[1:] - t[:-1]
    return float((x[:-1] * dt).sum() / dt.sum())


def run(name: str, cc: str, size: int, senders: int, sample_us: float) -> dict[str, object]:
    flows = [fabriclab.Flow(f"h{i}", "h0", size) for i in range(1, senders + 1)]
    t0 = time.time()
    r = fabriclab.flows(flows, fabric=fabric(cc), sample_us=sample_us)
    wall = time.time() - t0
    ps = r.port_samples
    bott = ps[(ps.node == "leaf0") & (ps.peer == "h0")]
    after = bott[bott.time_ps >= 1e9]
    end_ps = float(r.df.delivered_ps.max())
    ideal_ps = senders * size * 8 / LINE_BPS * 1e12
    # Goodput per sender over the middle half of the run.
    shares = middle_half_shares(r, end_ps)
    shares = [x for x in shares if x > 0] or [0.0]
    cnps = int(r.qps.cnps_tx.sum())
    return {
        "set": name,
        "mean queue after 1 ms [KB]": round(time_mean(after.time_ps, after.queue_bytes) / 1e3, 1),
        "peak queue [KB]": round(bott.queue_bytes.max() / 1e3, 1),
        "paused port-samples": int(ps.paused.sum()),
        "CNPs": cnps,
        "last completion [ms]": round(end_ps / 1e9, 3),
        "x bytes/line rate": round(end_ps / ideal_ps, 3),
        "Jain (middle half)": round(jain(shares), 3),
        "wall [s]": round(wall, 1),
        "_r": r,
    }


def alltoall(name: str, cc: str, size: int, hosts: int, sample_us: float) -> dict[str, object]:
    flows = [
        fabriclab.Flow(f"h{a}", f"h{b}", size) for a in range(hosts) for b in range(hosts) if a != b
    ]
    t0 = time.time()
    r = fabriclab.flows(flows, fabric=fabric(cc), sample_us=sample_us)
    wall = time.time() - t0
    ps = r.port_samples
    sw = ps[ps.node.str.startswith(("leaf", "spine"))]
    fct = r.df.fct_us
    end_ps = float(r.df.delivered_ps.max())
    # Each NIC sends (hosts - 1) x size at 100G; heps's fabric is 1:1.
    bound_ps = (hosts - 1) * size * 8 / LINE_BPS * 1e12
    return {
        "set": name,
        "mean FCT [us]": round(float(fct.mean()), 1),
        "p99 FCT [us]": round(float(fct.quantile(0.99)), 1),
        "last completion [ms]": round(end_ps / 1e9, 3),
        "x NIC bound": round(end_ps / bound_ps, 3),
        "deepest switch queue [KB]": round(float(sw.queue_bytes.max()) / 1e3, 1),
        "paused port-samples": int(ps.paused.sum()),
        "CNPs": int(r.qps.cnps_tx.sum()),
        "wall [s]": round(wall, 1),
        "_r": r,
    }


PAPER_TESTBED = """
name = "dcqcn-paper-testbed"
[topology]
kind = "leaf_spine"
spines = 0
leaves = 1
hosts_per_leaf = 21
host_link_gbps = 40
uplink_gbps = 40
[switch]
buffer_bytes = 12000000
[nic]
roce_mtu = 1024
[pfc]
enabled = true
priorities = [3]
[ecn]
enabled = true
kmin_bytes = 5000
kmax_bytes = 200000
pmax = 0.01
[cc]
algorithm = "dcqcn"
preset = "paper"
"""


def paper_testbed(senders: int, size: int, sample_us: float) -> dict[str, object]:
    flows = [fabriclab.Flow(f"h{i}", "h0", size) for i in range(1, senders + 1)]
    t0 = time.time()
    r = fabriclab.flows(flows, fabric=fabriclab.Fabric.from_toml(PAPER_TESTBED), sample_us=sample_us)
    wall = time.time() - t0
    ps = r.port_samples
    bott = ps[(ps.node == "leaf0") & (ps.peer == "h0")].sort_values("time_ps")
    end_ps = float(r.df.delivered_ps.max())
    mid = bott[(bott.time_ps >= 0.25 * end_ps) & (bott.time_ps <= 0.75 * end_ps)]
    span_s = (mid.time_ps.iloc[-1] - mid.time_ps.iloc[0]) / 1e12
    util = (mid.tx_bytes.iloc[-1] - mid.tx_bytes.iloc[0]) * 8 / span_s / 40e9
    shares = middle_half_shares(r, end_ps)
    return {
        "senders": senders,
        "utilisation, middle half [%]": round(100 * util, 1),
        "mean queue [KB]": round(float(mid.queue_bytes.mean()) / 1e3, 1),
        "p95 queue [KB]": round(float(mid.queue_bytes.quantile(0.95)) / 1e3, 1),
        "paused port-samples": int(ps.paused.sum()),
        "Jain (middle half)": round(jain([x for x in shares if x > 0] or [0.0]), 3),
        "last completion [ms]": round(end_ps / 1e9, 2),
        "wall [s]": round(wall, 1),
    }


def plot(rows: list[dict[str, object]], out: Path, size_mib: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(8, 4))
    for row in rows:
        ps = row["_r"].port_samples  # type: ignore[attr-defined]
        b = ps[(ps.node == "leaf0") & (ps.peer == "h0")]
        ax.plot(b.time_ps / 1e9, b.queue_bytes / 1e6, label=str(row["set"]), lw=0.8)
    ax.set_xlabel("time [ms]")
    ax.set_ylabel("leaf0 -> h0 queue [MB]")
    ax.set_title(f"heps, 15 x {size_mib} MiB into h0: bottleneck queue")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / f"dcqcn_incast_{size_mib}mib_queue.png", dpi=110)
    plt.close(fig)
    for row in rows:
        r = row["_r"]
        s = r.samples  # type: ignore[attr-defined]
        if not len(s):
            continue
        fig, ax = plt.subplots(figsize=(8, 3))
        senders = s[s.qp.isin(r.qps.qp[r.qps.host != "h0"])]  # type: ignore[attr-defined]
        for _qp, g in senders.groupby("qp"):
            ax.plot(g.time_ps / 1e9, g.rate_bps / 1e9, lw=0.5)
        ax.set_xlabel("time [ms]")
        ax.set_ylabel("sender rate limit [Gb/s]")
        ax.set_title(f"{row['set']}: per-QP rate")
        fig.tight_layout()
        slug = "".join(c if c.isalnum() else "_" for c in str(row["set"]))[:40]
        fig.savefig(out / f"dcqcn_incast_{size_mib}mib_rates_{slug}.png", dpi=110)
        plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mib", type=int, default=20, help="MiB per sender (default 20: long-lived)")
    ap.add_argument("--senders", type=int, default=15)
    ap.add_argument("--sample-us", type=float, default=10.0)
    ap.add_argument("--only", help="run only the sets whose name contains this text")
    ap.add_argument("--plot", type=Path, help="write PNG figures to this folder (incast only)")
    ap.add_argument("--alltoall", action="store_true", help="an all-to-all of 32 hosts instead of the incast")
    ap.add_argument("--size-kib", type=int, default=512, help="KiB per flow of the all-to-all (default 512)")
    ap.add_argument("--paper-testbed", action="store_true", help="the DCQCN paper's 40G setting, 2, 10 and 20 senders")
    a = ap.parse_args()
    rows = []
    if a.paper_testbed:
        rows = [paper_testbed(n, a.size_mib << 20, a.sample_us) for n in (2, 10, 20)]
        cols = list(rows[0])
        print("| " + " | ".join(cols) + " |")
        print("|" + "---|" * len(cols))
        for row in rows:
            print("| " + " | ".join(str(row[c]) for c in cols) + " |")
        return
    for name, cc in SETS.items():
        if a.only and a.only not in name:
            continue
        if a.alltoall:
            rows.append(alltoall(name, cc, a.size_kib << 10, 32, a.sample_us))
        else:
            rows.append(run(name, cc, a.size_mib << 20, a.senders, a.sample_us))
        print(f"  {name}: {rows[-1]['wall [s]']} s", flush=True)
    cols = [k for k in rows[0] if not k.startswith("_")]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for row in rows:
        print("| " + " | ".join(str(row[c]) for c in cols) + " |")
    if a.plot and not a.alltoall:
        plot(rows, a.plot, a.size_mib)


if __name__ == "__main__":
    main()
