"""The flow-level backend from Python and the CLI: backend= on the entry
points, --backend on the tools, what the results say, and the refusals."""

from __future__ import annotations

import json

import pytest

import fabriclab
from conftest import run_cli
from fabriclab.errors import FabriclabError, InvalidArgumentError


def _a2a(n: int, nbytes: int) -> list[fabriclab.Flow]:
    return [fabriclab.Flow(f"h{s}", f"h{d}", nbytes) for s in range(n) for d in range(n) if s != d]


def test_flows_on_both_backends_end_within_10_percent_and_say_which_ran() -> None:
    flows = _a2a(8, 256 * 1024)
    packet = fabriclab.flows(flows, fabric="leaf-spine")
    fluid = fabriclab.flows(flows, fabric="leaf-spine", backend="flow")
    assert (packet.backend, fluid.backend) == ("packet", "flow")
    assert packet.extras["flow_stats"] is None
    assert fluid.extras["flow_stats"]["flows"] == len(flows)
    end_p = packet.df["completed_ps"].max()
    end_f = fluid.df["completed_ps"].max()
    assert abs(end_f / end_p - 1) < 0.10, (end_p, end_f)
    # The hosts' links carry the same data on both backends, to the byte:
    # 56 WRITEs of 64 packets at RoCE MTU 4096, each 4,096 B + 82 B of
    # headers, FCS, preamble and gap, and a 16 B RETH on the first. The
    # packet core adds the ACKs the flow model leaves out: one per 16
    # packets (`ack_every_packets`), 4 per flow, 66 B + 20 B on the wire.
    tx = lambda r: r.ports[r.ports["node"].str.startswith("h")]["tx_bytes"].sum()  # noqa: E731
    assert tx(fluid) == 56 * (64 * (4096 + 82) + 16)
    assert tx(packet) - tx(fluid) == 56 * 4 * (66 + 20)


def test_a_latency_test_matches_the_packet_backend_on_an_idle_fabric() -> None:
    p_res = fabriclab.perftest("ib_write_lat", "h0", "h4", fabric="heps", iters=50)
    p = p_res.df
    f_res = fabriclab.perftest("ib_write_lat", "h0", "h4", fabric="heps", iters=50, backend="flow")
    f = f_res.df
    assert f_res.backend == "flow" and p_res.backend == "packet"
    assert f["t_avg_us"].iloc[0] == pytest.approx(p["t_avg_us"].iloc[0], rel=1e-6)


def test_mpi_tools_run_on_the_flow_backend() -> None:
    res = fabriclab.imb(["Alltoall"], fabric="eantc-hpc", np=8, msglog=(16, 17), backend="flow")
    packet = fabriclab.imb(["Alltoall"], fabric="eantc-hpc", np=8, msglog=(16, 17)).df
    df = res.df
    assert res.backend == "flow"
    assert df[["np", "bytes"]].equals(packet[["np", "bytes"]])
    moved = df["bytes"] > 0
    # 2 and 4 ranks share one leaf: no queue builds, the backends agree.
    # 8 ranks cross the 2:1 uplinks, where the packet core's queues and
    # DCQCN cuts (which the flow model leaves out) make it slower.
    few = moved & (df["np"] <= 4)
    ratio = df[few]["t_avg_us"].to_numpy() / packet[few]["t_avg_us"].to_numpy()
    assert ((ratio > 0.98) & (ratio < 1.02)).all(), ratio
    many = moved & (df["np"] == 8)
    assert (df[many]["t_avg_us"].to_numpy() <= packet[many]["t_avg_us"].to_numpy()).all()


def test_bad_backend_and_packet_only_features_are_errors() -> None:
    with pytest.raises(InvalidArgumentError, match="packet"):
        fabriclab.flows(_a2a(2, 1000), fabric="leaf-spine", backend="fluid")
    with pytest.raises(FabriclabError, match="telemetry"):
        fabriclab.flows(_a2a(2, 1000), fabric="leaf-spine", backend="flow", sample_us=1)


def test_cli_backend_option() -> None:
    r = run_cli("bench", "a2a-32", "--backend", "flow", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["backend"] == "flow" and out["outcome"] == "Finished"
    # no packets on the flow backend: not measured, not 0
    assert out["peak_packets_in_flight"] is None and out["run_bytes_per_packet_in_flight"] is None
    r = run_cli("bench", "a2a-32", "--backend", "flow")
    assert "peak packets in flight      n/a" in r.stdout and "packets forwarded (equiv.)" in r.stdout
    r = run_cli("imb", "PingPong", "--fabric", "eantc-hpc", "-np", "2", "-msglog", "0:2", "--backend", "flow")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("# fabriclab: flow backend")
    r = run_cli("imb", "PingPong", "--backend", "fluid")
    assert r.returncode == 2 and "invalid choice" in r.stderr
    r = run_cli("iperf", "-c", "h0", "--from", "h1", "-t", "0.001", "--backend", "flow")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("# fabriclab: flow backend") and "receiver" in r.stdout


def test_iperf_runs_at_its_fair_share_on_the_flow_backend() -> None:
    # Two streams from one client share its 100G link: the TCP goodput
    # (1,448 B of payload in 1,538 B on the wire), half each.
    res = fabriclab.iperf("h0", "h4", parallel=2, duration=0.004, interval=0.002, fabric="heps", backend="flow")
    df = res.df
    assert res.backend == "flow"
    goodput = 100 * 1448 / 1538
    second = df[df["interval"] == 1]  # the first also fills the send buffers
    assert len(second) == 2 and second["retransmits"].isna().all()  # not modelled
    block = 131072 * 8 / 0.002 / 1e9  # whole writes per interval
    for gbps in second["bits_per_second"] / 1e9:
        assert abs(gbps - goodput / 2) <= block, (gbps, goodput / 2)


def test_what_the_flow_backend_does_not_model_is_nan_or_n_a_never_zero(tmp_path) -> None:
    from fabriclab.results import FLOW_NOT_MODELLED

    packet = fabriclab.perftest("ib_write_bw", "h0", "h4", fabric="heps", iters=50)
    flow = fabriclab.perftest("ib_write_bw", "h0", "h4", fabric="heps", iters=50, backend="flow")
    for res in (packet, flow):
        assert res.ports is not None and res.qps is not None
    cols = [c for c in FLOW_NOT_MODELLED["ports"] if c in packet.ports.columns]
    assert packet.ports[cols].notna().all().all() and flow.ports[cols].isna().all().all()
    # InfiniBand's own counters (credits, flow-control packets, FECN, VL
    # buffers) too: they read 0 on the flow backend until 2026-11-29.
    ib_cols = ["credit_stalled_ps", "credit_stalls", "fcp_tx", "fcp_rx", "fecn_marks", "peak_vl_buffer_bytes", "peak_vl_queue_bytes"]
    ib_packet = fabriclab.perftest("ib_write_bw", fabric="stackhpc-ib", iters=10)
    ib_flow = fabriclab.perftest("ib_write_bw", fabric="stackhpc-ib", iters=10, backend="flow")
    assert ib_packet.ports is not None and ib_flow.ports is not None
    assert ib_packet.ports[ib_cols].notna().all().all() and ib_flow.ports[ib_cols].isna().all().all()
    assert (flow.ports["tx_bytes"] > 0).any(), "what it models stays"
    q = list(FLOW_NOT_MODELLED["qps"])
    assert packet.qps[q].notna().all().all() and flow.qps[q].isna().all().all()
    assert "n/a" in (flow.ports_table or "") and "n/a" not in (packet.ports_table or "")
    ip = fabriclab.iperf("h0", "h4", duration=0.002, interval=0.001, fabric="heps", backend="flow")
    assert ip.df["retransmits"].isna().all() and ip.extras["tcp"]["cwnd_bytes"].isna().all()
    assert (ip.df["bits_per_second"] > 0).all()
    assert ip.ports is not None and ip.ports[cols].isna().all().all() and (ip.ports["tx_bytes"] > 0).any()
    # The CLI: n/a in the tables, and the backend said when the fabric file chooses it.
    fab = tmp_path / "flow.toml"
    fab.write_text(fabriclab.api.fabric_arg("heps", backend="flow"))
    assert fabriclab.Fabric.load(fab).backend == "flow" and fabriclab.Fabric.load(fab).dcqcn is None
    r = run_cli("perftest", "ib_write_bw", "--fabric", fab, "--client", "h0", "--server", "h4", "-n", "50", "--counters")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("# fabriclab: flow backend")
    qp_rows = r.stdout.split("QP counters:\n")[1].splitlines()[1:]
    assert qp_rows and all(line.split()[5:] == ["n/a"] * 4 for line in qp_rows)
    r = run_cli("fabric", "show", fab)
    assert "backend:     flow" in r.stdout and "DCQCN:" not in r.stdout


def test_backend_is_a_sweep_axis(tmp_path) -> None:
    from conftest import ROOT
    from fabriclab.sweeps import sweep_points

    pts = sweep_points(ROOT / "scenarios" / "heps.toml", {"backend": ["packet", "flow"]})
    assert [p.params["backend"] for p in pts] == ["packet", "flow"]
    assert 'backend = "flow"' in pts[1].toml
    out = tmp_path / "b.csv"
    r = run_cli("sweep", ROOT / "scenarios" / "heps.toml", "--set", "backend=packet,flow", "--workers", "1", "-o", out, "--quiet")
    assert r.returncode == 0, r.stderr
    import pandas as pd

    df = pd.read_csv(out)
    assert set(df["backend"]) == {"packet", "flow"}
    assert "error" not in df.columns or df["error"].isna().all()


def test_a_fabric_too_large_for_memory_is_refused_before_building(tmp_path) -> None:
    # 65,536 hosts under 4,096 leaves and 8,192 spines: 33.5 M links and
    # 6 GB of routing tables, tens of GB, refused with the estimate, from
    # Python and the CLI.
    text = (
        '[topology]\nkind = "leaf_spine"\nleaves = 4096\nhosts_per_leaf = 16\nspines = 8192\n'
        "host_link_gbps = 100\nuplink_gbps = 100\n[sim]\nbackend = \"flow\"\n"
    )
    with pytest.raises(FabriclabError, match="needs about"):
        fabriclab.Fabric.from_toml(text)
    path = tmp_path / "huge.toml"
    path.write_text(text)
    r = run_cli("flows", "--fabric", path, "--flow", "h0:h1:1000")
    assert r.returncode == 2 and "needs about" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_a_scenario_runs_on_the_flow_backend() -> None:
    from conftest import ROOT

    r = run_cli("run", ROOT / "scenarios" / "heps.toml", "--backend", "flow")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("# fabriclab: flow backend")
    # ib_write_bw at the goodput of MTU 1024 on 100G, as on the packet engine.
    assert " 92.5" in r.stdout


def test_iperf_on_the_flow_backend_leaves_out_what_tcp_info_would_give() -> None:
    # Text: no Retr or Cwnd columns (iperf3's own layout without TCP_INFO);
    # JSON: no retransmits, window or RTT fields rather than zeros.
    r = run_cli("iperf", "-c", "h0", "--from", "h1", "-t", "0.002", "-i", "0.001", "--backend", "flow")
    assert r.returncode == 0, r.stderr
    assert "Retr" not in r.stdout and "Cwnd" not in r.stdout and "KBytes       " not in r.stdout
    r = run_cli("iperf", "-c", "h0", "--from", "h1", "-t", "0.002", "-i", "0.001", "--backend", "flow", "-J")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout[r.stdout.index("{") :])
    assert "retransmits" not in doc["end"]["sum_sent"]
    assert all("snd_cwnd" not in s for iv in doc["intervals"] for s in iv["streams"])
    assert "max_snd_cwnd" not in doc["end"]["streams"][0]["sender"]


def test_iperf_congestion_control_on_the_flow_backend_is_refused() -> None:
    r = run_cli("iperf", "-c", "h0", "--from", "h1", "-t", "0.002", "-C", "dctcp", "--backend", "flow")
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "fabriclab: error: -C dctcp: the flow backend" in r.stderr and "--backend packet" in r.stderr
    assert "Traceback" not in r.stderr
    with pytest.raises(fabriclab.FabriclabError, match="-C dctcp"):
        fabriclab.iperf("h0", "h4", duration=0.002, congestion="dctcp", fabric="heps", backend="flow")
