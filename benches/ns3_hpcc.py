"""Cross-check against the ns-3 HPCC simulator's all-to-all with DCQCN.

Runs ``validation/ns3_hpcc_<N>.toml`` (every ordered host pair, 524,288 B,
all at once, as ns-3's ``p2_<N>h_a2a.txt``) on fabriclab and prints the
statistics of the reference run beside it: flow count, mean, p50, p90, p99
and max flow completion time (us, start to the last ACK at the sender, as
ns-3's ``fct_*.txt``), and PFC pauses (pauses started: XOFF frames that
begin a pause, as ns-3's PFC log has one line per pause and never refreshes
one; fabriclab's ``pause_tx`` also counts XONs and refreshes)::

    python benches/ns3_hpcc.py                       # 16 and 64 hosts, both backends
    python benches/ns3_hpcc.py --hosts 16 --backend packet
    python benches/ns3_hpcc.py --ref ../shared/validation/ns3-hpcc

Each case also runs "payload-matched": the links at the rate that moves
payload as fast as ns-3's do. ns-3 HPCC's 1000 B payload travels in a 1,048 B
packet with no preamble, FCS or inter-frame gap, serialised in 83 ns (its
times are truncated to whole ns); fabriclab's 1,024 B payload in a real
RoCEv2 frame of 1,106 B on the wire. The same payload per second needs
1,106 x 8 / (1,024 x 0.083) = 104.1 Gb/s links in fabriclab. This is packet
arithmetic from the two formats, not a fit to the results
(docs/validation.md).

The packet backend also runs "payload+ACK-matched": links at (1,106 + 86)
x 8 / (1,024 x 0.087) = 107.0 Gb/s, so that a loaded link spends ns-3's
87 ns (an 83 ns data packet and, the other way, a 4 ns ACK) per 1,000 B of
payload. Inter-leaf flows take ns-3's ECMP paths (``Flow(via=...)``,
``ns3_spines``) unless ``--ecmp fabriclab``.

The reference files are read from ``--ref`` (default: the shared folder
beside this checkout). The parameter mapping is in docs/validation.md.
"""

from __future__ import annotations

import argparse
import gzip
import re
import sys
import time
from pathlib import Path

import numpy as np

import fabriclab

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_REF = ROOT.parent / "shared" / "validation" / "ns3-hpcc"
#: The reference folder in use (``--ref``).
REF = DEFAULT_REF
STATS = ("flows", "mean", "p50", "p90", "p99", "max")


def stats(fct_us: np.ndarray) -> dict[str, float]:
    """The summary both sides are compared on (numpy's linear percentiles)."""
    return {
        "flows": float(len(fct_us)),
        "mean": float(fct_us.mean()),
        "p50": float(np.percentile(fct_us, 50)),
        "p90": float(np.percentile(fct_us, 90)),
        "p99": float(np.percentile(fct_us, 99)),
        "max": float(fct_us.max()),
    }


def reference(ref: Path, hosts: int) -> tuple[dict[str, float], int]:
    """ns-3's FCT statistics and PFC pause count for the N-host case."""
    tag = f"p2_{hosts}h_topo_p2_{hosts}h_a2a_dcqcn"
    fct = np.loadtxt(ref / f"fct_{tag}.txt", usecols=6, dtype=np.float64) / 1e3
    pfc_path = ref / f"pfc_{tag}.txt"
    if not pfc_path.exists():
        pfc_path = ref / f"pfc_{tag}.txt.gz"
    opener = gzip.open if pfc_path.suffix == ".gz" else open
    with opener(pfc_path, "rt") as fh:
        pauses = sum(1 for line in fh if line.split() and line.split()[-1] == "1")
    return stats(fct), pauses


def flows_of(ref: Path, hosts: int, ns3_paths: bool = True) -> list[fabriclab.Flow]:
    """ns-3's flow file as fabriclab flows (its host ids are h<id>), each
    inter-leaf flow pinned through the spine ns-3 hashed it to (``via``),
    unless ``ns3_paths`` is false (fabriclab's own ECMP hash)."""
    lines = (ref / f"p2_{hosts}h_a2a.txt").read_text().split("\n")
    spine = ns3_spines(ref, hosts) if ns3_paths else []
    out = []
    for i, line in enumerate(lines[1 : 1 + int(lines[0])]):
        src, dst, _prio, _dport, size, _start = line.split()
        via, ack_via = spine[i] if spine else (None, None)
        out.append(fabriclab.Flow(f"h{src}", f"h{dst}", int(size), via=via, return_via=ack_via))
    return out


def murmur3_32(words: list[int], seed: int) -> int:
    """MurmurHash3 (x86, 32 bits) of a key of whole little-endian 32-bit
    words, as ns-3 HPCC's ``SwitchNode::EcmpHash``."""
    m = 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & m

    h = seed & m
    for k in words:
        k = rotl((k * 0xCC9E2D51) & m, 15) * 0x1B873593 & m
        h = (rotl(h ^ k, 13) * 5 + 0xE6546B64) & m
    h ^= 4 * len(words)
    h = ((h ^ (h >> 16)) * 0x85EBCA6B) & m
    h = ((h ^ (h >> 13)) * 0xC2B2AE35) & m
    return h ^ (h >> 16)


def ns3_topology(ref: Path, hosts: int) -> tuple[dict[int, int], list[int], list[int]]:
    """ns-3's leaf-spine from ``p2_<N>h_topo.txt`` (first line ``nodes
    switches links``, then the switch ids, then ``a b rate delay error``):
    each host's leaf, the leaves and the spines, by node id."""
    tok = (ref / f"p2_{hosts}h_topo.txt").read_text().split()
    n_sw, n_links = int(tok[1]), int(tok[2])
    switches = {int(x) for x in tok[3 : 3 + n_sw]}
    links = [(int(tok[3 + n_sw + 5 * i]), int(tok[4 + n_sw + 5 * i])) for i in range(n_links)]
    leaf_of = {min(a, b): max(a, b) for a, b in links if (a in switches) != (b in switches)}
    leaves = sorted(set(leaf_of.values()))
    return leaf_of, leaves, sorted(switches - set(leaves))


def ns3_spines(ref: Path, hosts: int) -> list[tuple[str | None, str | None]]:
    """The spines ns-3 HPCC routes each flow of the flow file through, its
    data's and its ACKs', as fabriclab switch names (None within a leaf),
    in the file's order. An ACK
    is hashed at the destination's leaf with the addresses and the ports
    swapped (``ReceiveUdp`` builds it so; ``GetOutDev`` hashes its header's
    ports). Read in the simulator's source
    (``scratch/third.cc``, ``switch-node.cc``; docs/validation.md): node ids
    in topology-file order; a host's address ``0x0b000001 + (id / 256) <<
    16 + (id % 256) << 8``; a QP's UDP source port from 10,000 per (source,
    destination) pair (the reference FCT files show 10,000 on every flow),
    its destination port the flow file's; a leaf picks ``next_hops[hash %
    len]`` with MurmurHash3 over (sip, dip, sport | dport << 16) seeded by
    its node id; its next-hop list holds the spines in the order of their
    objects' addresses, taken as descending id (the 64-host PFC log bears it
    out; a global relabelling of spines would not change any result)."""
    leaf_of, leaves, spines = ns3_topology(ref, hosts)
    order = spines[::-1]
    name = {sp: f"spine{k}" for k, sp in enumerate(spines)}

    def ip(i: int) -> int:
        return 0x0B000001 + (i // 256) * 0x10000 + (i % 256) * 0x100

    lines = (ref / f"p2_{hosts}h_a2a.txt").read_text().split("\n")
    sport: dict[tuple[int, int], int] = {}
    out: list[tuple[str | None, str | None]] = []
    for line in lines[1 : 1 + int(lines[0])]:
        s, d, _prio, dport, _size, _start = (int(float(x)) for x in line.split())
        port = sport.setdefault((s, d), 10000)
        sport[(s, d)] += 1
        if leaf_of[s] == leaf_of[d]:
            out.append((None, None))
            continue
        data = murmur3_32([ip(s), ip(d), port | (dport << 16)], leaf_of[s])
        ack = murmur3_32([ip(d), ip(s), dport | (port << 16)], leaf_of[d])
        out.append((name[order[data % len(order)]], name[order[ack % len(order)]]))
    return out


#: ns-3 HPCC: 1,000 B of payload per 83 ns on a "100 Gb/s" link.
NS3_NS_PER_PAYLOAD_BYTE = 83 / 1000
#: fabriclab: a 1,024 B RoCEv2 payload is 1,106 B on the wire.
WIRE_PER_PAYLOAD = 1106 / 1024
PAYLOAD_MATCHED_GBPS = WIRE_PER_PAYLOAD * 8 / NS3_NS_PER_PAYLOAD_BYTE
#: ns-3 HPCC: a data packet and, the other way, an ACK (60 B, 4 ns at its
#: whole-ns resolution) per 1,000 B of payload: 87 ns. fabriclab: 1,106 +
#: 86 B on the wire per 1,024 B. In an all-to-all every link carries data
#: one way and the ACKs of as much data the other, so this rate gives a
#: loaded link ns-3's time per payload byte with its ACK.
NS3_NS_PER_PAYLOAD_BYTE_WITH_ACK = 87 / 1000
ACK_MATCHED_GBPS = (1106 + 86) / 1024 * 8 / NS3_NS_PER_PAYLOAD_BYTE_WITH_ACK


def ns3_split(ref: Path, hosts: int) -> list[tuple[int, ...]]:
    """ns-3's ECMP split: inter-leaf flows on each leaf's uplinks, sorted
    per leaf (16 hosts: 26/38 and 28/36, borne out by the reference FCTs,
    each leaf's lighter uplink carrying its early completions)."""
    leaf_of, _, _ = ns3_topology(ref, hosts)
    lines = (ref / f"p2_{hosts}h_a2a.txt").read_text().split("\n")
    srcs = [int(line.split()[0]) for line in lines[1 : 1 + int(lines[0])]]
    per: dict[int, dict[str, int]] = {}
    for s, (sp, _ack) in zip(srcs, ns3_spines(ref, hosts)):
        if sp is not None:
            leaf = per.setdefault(leaf_of[s], {})
            leaf[sp] = leaf.get(sp, 0) + 1
    return [tuple(sorted(per[k].values())) for k in sorted(per)]


#: Wire bytes of a fabriclab data packet (1,024 B payload) and of an ACK.
DATA_WIRE, ACK_WIRE = 1106, 86


def fabric_of(hosts: int, ref: Path | None = None, derive: bool = False) -> str:
    """``validation/ns3_hpcc_<N>.toml``; for another case of the family
    (``p2_<N>h_*`` in the reference folder), the 64-host fabric with its
    ``[topology]`` counts read off ns-3's topology file."""
    path = ROOT / "validation" / f"ns3_hpcc_{hosts}.toml"
    if path.exists() and not derive:
        return path.read_text()
    ref = ref or REF
    leaf_of, leaves, spines = ns3_topology(ref, hosts)
    per_leaf = len(leaf_of) // len(leaves)
    # The fabric below is a regular leaf-spine of 100G, 1 us links with
    # hosts in order on the leaves: refuse a case that is not.
    tok = (ref / f"p2_{hosts}h_topo.txt").read_text().split()
    n_sw, n_links = int(tok[1]), int(tok[2])
    rates = {tuple(tok[5 + n_sw + 5 * i : 7 + n_sw + 5 * i]) for i in range(n_links)}
    regular = all(leaf_of[h] == leaves[h // per_leaf] for h in range(len(leaf_of)))
    if rates != {("100Gbps", "1000ns")} or not regular or len(leaf_of) != hosts:
        raise SystemExit(
            f"the {hosts}-host case is not a regular leaf-spine of 100G, 1 us links with hosts in order "
            f"(links {sorted(rates)}); write validation/ns3_hpcc_{hosts}.toml for it"
        )
    text = (ROOT / "validation" / "ns3_hpcc_64.toml").read_text()
    for key, value in (("spines", len(spines)), ("leaves", len(leaves)), ("hosts_per_leaf", per_leaf)):
        text = re.sub(rf"(?m)^{key} = \d+$", f"{key} = {value}", text)
    return text.replace('name = "ns3-hpcc-64"', f'name = "ns3-hpcc-{hosts}"')


def fabric_text(hosts: int, matched: bool | str) -> str:
    """The validation fabric; ``matched`` True (or "payload") at the
    payload-matched link rate, "ack" at the payload-and-ACK-matched one."""
    text = fabric_of(hosts)
    if matched:
        rate = f"{ACK_MATCHED_GBPS if matched == 'ack' else PAYLOAD_MATCHED_GBPS:.3f}"
        text = text.replace("host_link_gbps = 100", f"host_link_gbps = {rate}").replace("uplink_gbps = 100", f"uplink_gbps = {rate}")
    return text


def run_flows(hosts: int, backend: str, ref: Path, matched: bool | str, seed: int = 1, ns3_paths: bool = True) -> tuple[fabriclab.Result, float]:
    fabric = fabriclab.Fabric.from_toml(fabric_text(hosts, matched))
    t0 = time.perf_counter()
    r = fabriclab.flows(flows_of(ref, hosts, ns3_paths), fabric=fabric, backend=backend, seed=seed)
    wall = time.perf_counter() - t0
    if r.outcome != "Finished":
        raise SystemExit(f"{hosts} hosts on {backend}: the run ended {r.outcome}")
    return r, wall


def fcts(r: fabriclab.Result) -> np.ndarray:
    return ((r.df["completed_ps"] - r.df["start_ps"]) / 1e6).to_numpy(dtype=np.float64)


def run(hosts: int, backend: str, ref: Path, matched: bool | str = False, ns3_paths: bool = True) -> tuple[dict[str, float], int | None, float]:
    r, wall = run_flows(hosts, backend, ref, matched, ns3_paths=ns3_paths)
    pauses = int(r.ports["pause_starts"].sum()) if backend == "packet" else None
    return stats(fcts(r)), pauses, wall


def ecmp_split(r: fabriclab.Result, bytes_per_flow: int = 524_288) -> list[tuple[int, ...]]:
    """Inter-leaf flows per leaf uplink, sorted per leaf, from a packet run's
    port counters: an uplink's packets are data packets and ACKs (CNPs ride
    on ACKs and no PFC frame is sent in the 16-host case), so its data
    packets are (bytes - ACK x packets) / (data - ACK)."""
    p = r.ports
    up = p[p["node"].str.startswith("leaf") & p["peer"].str.startswith("spine")]
    out = []
    for _, ports in up.groupby("node", sort=True):
        data = (ports["tx_bytes"] - ACK_WIRE * ports["tx_packets"]) / (DATA_WIRE - ACK_WIRE)
        out.append(tuple(sorted(int(round(d * 1024 / bytes_per_flow)) for d in data)))
    return out


def seed_spread(ns3: dict[str, float], runs: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    """Per statistic, fabriclab's runs over seeds against ns-3's one run:
    min, mean and max of the difference (%), the standard deviation over
    the seeds (population sd, % of ns-3's value) and the rank of ns-3's
    value among the seeds (the percentage of seeds strictly below it: 50
    is the middle, 100 above every seed, 0 at or below every seed). ns-3's
    figure is one draw of its own random marks, so the rank says whether it
    is a draw fabriclab makes too. A NaN statistic makes its row NaN."""
    out = {}
    for k in STATS[1:]:
        ours = np.array([r[k] for r in runs], dtype=np.float64)
        diff = (ours / ns3[k] - 1) * 100
        out[k] = {
            "min": float(diff.min()),
            "mean": float(diff.mean()),
            "max": float(diff.max()),
            "sd": float(ours.std() / ns3[k] * 100),
            "rank": float((ours < ns3[k]).mean() * 100),
        }
    return out


def seed_study(ref: Path, hosts: list[int], seeds: int) -> None:
    """Each case over seeds 1..N with the whole mapping (ns-3's paths for
    data and ACKs, payload+ACK-matched links): the spread of each
    statistic against ns-3's single run. With every path pinned the seed
    still draws the ECN marks (and so the DCQCN cuts) and the QPs' ports."""
    print(f"\npacket, ns-3 paths, payload+ACK-matched, seeds 1-{seeds}: min / mean / max against ns-3 (sd over the seeds; rank of ns-3's run among them)\n")
    print("| hosts | mean | p50 | p90 | p99 | max |")
    print("|---|---|---|---|---|---|")
    for h in hosts:
        ns3, _ = reference(ref, h)
        runs = [stats(fcts(run_flows(h, "packet", ref, "ack", seed)[0])) for seed in range(1, seeds + 1)]
        spread = seed_spread(ns3, runs)
        cells = [f"{c['min']:+.1f} / {c['mean']:+.1f} / {c['max']:+.1f} % (sd {c['sd']:.1f} %; rank {c['rank']:.0f})" for c in spread.values()]
        print(f"| {h} | " + " | ".join(cells) + " |", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, action="append", help="case: p2_<N>h_* in the reference folder (repeatable; default 16 and 64)")
    ap.add_argument("--backend", choices=("packet", "flow"), action="append", help="default both")
    ap.add_argument("--ref", type=Path, default=DEFAULT_REF, help="folder of the ns-3 reference files")
    ap.add_argument("--seeds", type=int, default=0, help="also run each case over seeds 1..N (packet, whole mapping) and print the spread")
    ap.add_argument("--ecmp", choices=("ns3", "fabriclab"), default="ns3", help="inter-leaf paths: ns-3's hash, pinned with via (default), or fabriclab's own")
    a = ap.parse_args()
    if not (a.ref / "README.md").exists():
        raise SystemExit(f"no ns-3 reference files in {a.ref}: pass --ref")
    global REF
    REF = a.ref
    for hosts in a.hosts or []:
        if not (a.ref / f"p2_{hosts}h_topo.txt").exists():
            raise SystemExit(f"no {hosts}-host case in {a.ref} (p2_{hosts}h_topo.txt)")
    print("| hosts | run | flows | mean us | p50 us | p90 us | p99 us | max us | PFC pauses | wall s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for hosts in a.hosts or [16, 64]:
        ns3, ns3_pauses = reference(a.ref, hosts)
        print(f"| {hosts} | ns-3 HPCC | " + " | ".join(f"{ns3[k]:.1f}" if k != "flows" else f"{ns3[k]:.0f}" for k in STATS) + f" | {ns3_pauses} | |")
        for backend in a.backend or ["packet", "flow"]:
            # The flow backend has no ACKs: the ACK-matched rate means nothing there.
            for matched in (False, True, "ack") if backend == "packet" else (False, True):
                ours, pauses, wall = run(hosts, backend, a.ref, matched, ns3_paths=a.ecmp == "ns3")
                cells = [f"{ours['flows']:.0f}"] + [f"{ours[k]:.1f} ({(ours[k] / ns3[k] - 1) * 100:+.1f} %)" for k in STATS[1:]]
                pf = "not modelled" if pauses is None else str(pauses)
                label = f"fabriclab {backend}" + {
                    False: "",
                    True: f", payload-matched ({PAYLOAD_MATCHED_GBPS:.1f}G links)",
                    "ack": f", payload+ACK-matched ({ACK_MATCHED_GBPS:.1f}G links)",
                }[matched]
                print(f"| {hosts} | {label} | " + " | ".join(cells) + f" | {pf} | {wall:.1f} |", flush=True)
    if a.seeds:
        seed_study(a.ref, a.hosts or [16, 64], a.seeds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
