"""The ns-3 HPCC cross-check's fabrics (validation/, benches/ns3_hpcc.py):
they load, and the 16-host all-to-all completes losslessly no faster than
its leaf-uplink bound."""

from __future__ import annotations

import pytest

import fabriclab
from conftest import ROOT


def test_the_16_host_ns3_fabric_runs_the_all_to_all_above_its_uplink_bound() -> None:
    fabric = fabriclab.Fabric.from_toml((ROOT / "validation" / "ns3_hpcc_16.toml").read_text())
    assert (len(fabric.hosts), len(fabric.switches)) == (16, 4)
    flows = [fabriclab.Flow(f"h{s}", f"h{d}", 524288) for s in range(16) for d in range(16) if s != d]
    r = fabriclab.flows(flows, fabric=fabric)
    assert r.outcome == "Finished"
    assert int(r.ports["drops"].sum()) == 0
    # Each leaf sends 8 x 8 x 512 KiB over two 100G uplinks: 1.342 ms of
    # payload alone (the ns-3 README's "ideal").
    bound_us = 8 * 8 * 524288 * 8 / 200e9 * 1e6
    last_us = float(r.df["completed_ps"].max()) / 1e6
    assert bound_us < last_us < 1.8 * bound_us, (last_us, bound_us)


def test_the_64_host_file_differs_only_in_its_topology() -> None:
    a = (ROOT / "validation" / "ns3_hpcc_16.toml").read_text().splitlines()
    b = (ROOT / "validation" / "ns3_hpcc_64.toml").read_text().splitlines()
    diff = {(x, y) for x, y in zip(a, b) if x != y}
    changed = {x.split("=")[0].strip() for x, _ in diff if "=" in x and not x.startswith("#")}
    assert changed <= {"name", "description", "spines", "leaves", "hosts_per_leaf"}, changed


def test_the_fabrics_map_ns3s_cnp_on_the_ack_and_its_cyclic_qp_order() -> None:
    for hosts in (16, 64):
        text = (ROOT / "validation" / f"ns3_hpcc_{hosts}.toml").read_text()
        assert "cnp_on_ack = true" in text and 'qp_arbitration = "cyclic"' in text


def test_the_bench_reads_the_ecmp_split_off_the_uplink_counters() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("ns3_bench", ROOT / "benches" / "ns3_hpcc.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    fabric = fabriclab.Fabric.from_toml((ROOT / "validation" / "ns3_hpcc_16.toml").read_text())
    flows = [fabriclab.Flow(f"h{s}", f"h{d}", 524288) for s in range(16) for d in range(16) if s != d]
    split = bench.ecmp_split(fabriclab.flows(flows, fabric=fabric))
    # Each leaf sends 8 x 8 flows to the other leaf over its two uplinks.
    assert len(split) == 2 and all(len(s) == 2 and sum(s) == 64 for s in split), split


def _bench():
    import importlib.util

    spec = importlib.util.spec_from_file_location("ns3_bench", ROOT / "benches" / "ns3_hpcc.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def test_the_seed_spread_ranks_ns3s_one_run_among_fabriclabs_seeds() -> None:
    bench = _bench()
    ns3 = {k: 100.0 for k in bench.STATS}
    # Four seeds at 90, 95, 105 and 110 % of ns-3 on every statistic but
    # the max, where all four are below it.
    runs = [{k: v for k in bench.STATS} for v in (90.0, 95.0, 105.0, 110.0)]
    for r, v in zip(runs, (80.0, 85.0, 90.0, 95.0)):
        r["max"] = v
    spread = bench.seed_spread(ns3, runs)
    assert spread["mean"]["min"] == pytest.approx(-10.0) and spread["mean"]["max"] == pytest.approx(10.0)
    assert spread["mean"]["mean"] == pytest.approx(0.0, abs=1e-12)
    # Population sd of 90, 95, 105, 110: sqrt((100 + 25 + 25 + 100) / 4).
    assert spread["p99"]["sd"] == pytest.approx(62.5**0.5)
    assert spread["p50"]["rank"] == 50.0
    assert spread["max"]["rank"] == 100.0 and spread["max"]["mean"] == pytest.approx(-12.5)


def test_the_bench_hashes_like_murmur3() -> None:
    # MurmurHash3_x86_32's published verification values (SMHasher), for
    # keys of one little-endian word and the empty key.
    h = _bench().murmur3_32
    assert h([0x87654321], 0) == 0xF55B516B
    assert h([0x87654321], 0x5082EDEE) == 0x2362F9DE
    assert h([0], 0) == 0x2362F9DE
    assert h([0xFFFFFFFF], 0) == 0x76293B50
    assert h([], 1) == 0x514E28B7


def test_ns3_paths_give_ns3s_split_when_the_reference_is_there() -> None:
    ref = ROOT.parent / "shared" / "validation" / "ns3-hpcc"
    if not (ref / "p2_16h_a2a.txt").exists():
        pytest.skip(f"no ns-3 reference files in {ref}")
    bench = _bench()
    assert bench.ns3_split(ref, 16) == [(26, 38), (28, 36)]
    # Pinned with via, fabriclab's uplinks carry that split.
    fabric = fabriclab.Fabric.from_toml((ROOT / "validation" / "ns3_hpcc_16.toml").read_text())
    r = fabriclab.flows(bench.flows_of(ref, 16), fabric=fabric)
    assert bench.ecmp_split(r) == [(26, 38), (28, 36)]


def test_a_larger_case_of_the_family_needs_only_its_topology_file(tmp_path) -> None:
    # A 3-leaf case the project has no fabric file for: hosts 0-11 on
    # leaves 12-14 (4 each), spines 15-16, in ns-3's topology format.
    links = [(h, 12 + h // 4) for h in range(12)] + [(leaf, sp) for leaf in (12, 13, 14) for sp in (15, 16)]
    lines = [f"17 5 {len(links)}", "12 13 14 15 16"] + [f"{a} {b} 100Gbps 1000ns 0" for a, b in links]
    (tmp_path / "p2_12h_topo.txt").write_text("\n".join(lines) + "\n")
    bench = _bench()
    text = bench.fabric_of(12, tmp_path)
    fabric = fabriclab.Fabric.from_toml(text)
    assert len(fabric.hosts) == 12 and "leaf2" in fabric.switches and "spine1" in fabric.switches
    # A case the fabric cannot express is refused, not approximated.
    (tmp_path / "p2_12h_topo.txt").write_text("\n".join(lines).replace("100Gbps", "40Gbps", 1) + "\n")
    with pytest.raises(SystemExit, match="not a regular leaf-spine"):
        bench.fabric_of(12, tmp_path)
    # Derived the same way, the 16-host case is the project's file.
    ref = ROOT.parent / "shared" / "validation" / "ns3-hpcc"
    if (ref / "p2_16h_topo.txt").exists():
        derived = fabriclab.Fabric.from_toml(bench.fabric_of(16, ref, derive=True))
        kept = fabriclab.Fabric.from_toml((ROOT / "validation" / "ns3_hpcc_16.toml").read_text())
        assert derived.hosts == kept.hosts and derived.switches == kept.switches
        assert len(derived.links) == len(kept.links)
