"""Link failures from Python and the CLI: a fabric file with a pulled
cable, its losses in the port counters, and clear errors for bad ones."""

from __future__ import annotations

import pandas as pd
import pytest

import fabriclab
from conftest import run_cli
from fabriclab.errors import FabricError
from test_cli import assert_cli_error

FABRIC = """
name = "two-spines"
[topology]
kind = "leaf_spine"
spines = 2
leaves = 3
hosts_per_leaf = 2
host_link_gbps = 100
uplink_gbps = 100
host_link_delay_ns = 1000
uplink_delay_ns = 1000
[nic]
roce_mtu = 4096
ack_timeout_exponent = 8
[cc]
algorithm = "none"
[failover]
detect_us = 50
converge_us = 200
"""

PULL = """
[[link_failures]]
a = "{spine}"
b = "leaf1"
down_us = 100
"""


def _spine_used() -> str:
    """The spine the h0 -> h2 data crosses (ECMP, seed 1)."""
    for spine in ("spine0", "spine1"):
        r = fabriclab.flows([{"src": "h0", "dst": "h2", "bytes": 1 << 22}], fabric=fabriclab.Fabric.from_toml(FABRIC + PULL.format(spine=spine)))
        if r.ports["lost_packets"].sum() > 0 and r.ports.query("node == @spine")["lost_packets"].sum() > 0:
            return spine
    raise AssertionError("neither spine carried the flow")


def test_pulled_cable_loses_packets_and_the_flow_still_finishes():
    base = fabriclab.flows([{"src": "h0", "dst": "h2", "bytes": 1 << 22}], fabric=fabriclab.Fabric.from_toml(FABRIC))
    spine = _spine_used()
    r = fabriclab.flows(
        [{"src": "h0", "dst": "h2", "bytes": 1 << 22}],
        fabric=fabriclab.Fabric.from_toml(FABRIC + PULL.format(spine=spine)),
    )
    assert r.outcome == "Finished"
    assert "lost_packets" in r.ports.columns and "lost_bytes" in r.ports.columns
    assert r.ports["lost_packets"].sum() > 0
    assert r.ports["drops"].sum() == 0  # lossless class: losses are the failure's only
    # The fabric routes around the link 300 us into the run; nothing gets
    # through before, so the flow ends after that, and later than without
    # the failure (348 us).
    done = float(r.df["delivered_ps"].iloc[0]) / 1e6
    assert done > 300.0
    assert done > float(base.df["delivered_ps"].iloc[0]) / 1e6 + 100.0
    assert int(r.qps["retx_packets"].sum()) > 0


def test_bad_failures_raise_fabric_errors():
    with pytest.raises(FabricError, match="no node named"):
        fabriclab.Fabric.from_toml(FABRIC + PULL.format(spine="spine7"))
    with pytest.raises(FabricError, match="up_us"):
        fabriclab.Fabric.from_toml(FABRIC + PULL.format(spine="spine0") + "up_us = 50\n")
    with pytest.raises(FabricError, match="for good"):
        iwarp = 'transport = "iwarp"\n' + FABRIC.replace("roce_mtu = 4096\nack_timeout_exponent = 8\n", "")
        fabriclab.Fabric.from_toml(iwarp + '[[link_failures]]\na = "h3"\nb = "leaf1"\ndown_us = 1\n')


def _cut_fabric() -> str:
    # FABRIC already has a [nic] table: put the retry count in it.
    return FABRIC.replace("ack_timeout_exponent = 8\n", "ack_timeout_exponent = 8\nretry_cnt = 2\n") + (
        '[[link_failures]]\na = "h3"\nb = "leaf1"\ndown_us = 1\n'
    )


def test_a_host_cut_off_for_good_fails_its_flows_with_a_transport_retry_error():
    fab = fabriclab.Fabric.from_toml(_cut_fabric())
    r = fabriclab.flows([fabriclab.Flow("h0", "h3", 65536), fabriclab.Flow("h0", "h4", 65536)], fabric=fab)
    assert r.outcome == "Finished"
    rows = r.df.set_index("dst")
    assert rows.loc["h3", "error"] == "transport retry counter exceeded"
    # Three timeouts of 4.096 us x 2^8: about 3.1 ms.
    assert 3000 < rows.loc["h3", "failed_ps"] / 1e6 < 3300
    assert rows.loc["h4", "fct_us"] > 0 and pd.isna(rows.loc["h4", "error"])
    (f,) = r.extras["qp_failures"]
    assert (f["host"], f["peer"], f["retries"]) == ("h0", "h3", 2)


def test_cli_perftest_prints_perftests_error_lines_and_exits_3(tmp_path):
    fab = tmp_path / "cut.toml"
    fab.write_text(_cut_fabric())
    r = run_cli("perftest", "ib_write_bw", "--fabric", str(fab), "--client", "h0", "--server", "h3", "-s", "65536", "-n", "50")
    assert r.returncode == 3, (r.returncode, r.stderr)
    assert " Completion with error at client\n Failed status 12: wr_id 0 syndrom 0x81\nscnt=" in r.stderr
    assert "fabriclab: error: perftest failed: transport retry counter exceeded on QP" in r.stderr
    assert "Traceback" not in r.stderr
    assert "Port counters" not in r.stdout
    # With --counters the failed run's counters are printed (they were
    # lost with the error): where the packets died is in `lost`.
    r = run_cli(
        "perftest", "ib_write_bw", "--fabric", str(fab), "--client", "h0", "--server", "h3",
        "-s", "65536", "-n", "50", "--counters",
    )
    assert r.returncode == 3, r.stderr
    assert "Port counters:" in r.stdout and "QP counters:" in r.stdout, r.stdout
    row = next(line.split() for line in r.stdout.splitlines() if line.startswith("leaf1") and " h3 " in line)
    assert int(row[-1]) > 0, row  # lost at leaf1's dead port to h3


def test_perftests_retry_error_carries_the_failed_runs_counters():
    fab = fabriclab.Fabric.from_toml(_cut_fabric())
    with pytest.raises(fabriclab.TransportRetryError) as e:
        fabriclab.perftest("ib_write_bw", "h0", "h3", fabric=fab, size=65536, iters=50)
    ports, qps = e.value.ports, e.value.qps
    lost = ports.set_index(["node", "peer"]).loc[("leaf1", "h3"), "lost_packets"]
    assert lost > 0 and ports.lost_packets.sum() >= lost
    assert qps.loc[qps.host == "h0", "retx_packets"].iloc[0] > 0
    assert "lost" in e.value.ports_table and "retx" in e.value.qps_table
    # The MPI tools keep them too.
    with pytest.raises(fabriclab.TransportRetryError) as m:
        fabriclab.imb(["PingPong"], np=2, hosts=["h0", "h3"], fabric=fab, msglog=(16, 16))
    assert m.value.ports.set_index(["node", "peer"]).loc[("leaf1", "h3"), "lost_packets"] > 0
    # An error raised without a run has none.
    assert fabriclab.TransportRetryError("x").ports is None


def test_cli_imb_prints_the_failed_runs_counters(tmp_path):
    fab = tmp_path / "cut.toml"
    fab.write_text(_cut_fabric())
    r = run_cli("imb", "PingPong", "--fabric", str(fab), "-np", "2", "--hosts", "h0,h3", "-msglog", "16:16", "--counters")
    assert r.returncode == 3, r.stderr
    assert "Port counters:" in r.stdout and "QP counters:" in r.stdout, r.stdout
    assert "Transport retry count exceeded" in r.stderr and "Traceback" not in r.stderr


def test_an_mpi_job_with_a_rank_cut_off_raises_transport_retry_error():
    fab = fabriclab.Fabric.from_toml(_cut_fabric())
    with pytest.raises(fabriclab.TransportRetryError, match="the MPI job failed") as e:
        fabriclab.imb(["PingPong"], np=2, hosts=["h0", "h3"], fabric=fab, msglog=(16, 16))
    assert "Transport retry count exceeded on mlx5_0:1/RoCE" in e.value.tool_output
    assert isinstance(e.value, fabriclab.RunFailedError) and e.value.kind == "TransportRetry"


def test_cli_reports_losses_and_refuses_bad_failures(tmp_path):
    good = tmp_path / "pull.toml"
    good.write_text(FABRIC + PULL.format(spine=_spine_used()))
    r = run_cli("flows", "--fabric", str(good), "--flow", "h0:h2:4M", "--counters")
    assert r.returncode == 0, r.stderr
    header = next(line for line in r.stdout.splitlines() if line.startswith("node ") and "peak_buf_KB" in line)
    assert header.split()[-1] == "lost"
    bad = tmp_path / "bad.toml"
    bad.write_text(FABRIC + '[[link_failures]]\na = "leaf0"\nb = "leaf1"\ndown_us = 1\n')
    assert_cli_error(run_cli("flows", "--fabric", str(bad), "--flow", "h0:h2:4M"), "no link between")


def test_cable_pull_scenario_loads_with_its_failure():
    from conftest import ROOT
    from fabriclab.scenario import load_scenario

    sc = load_scenario(ROOT / "scenarios" / "eantc_cable_pull.toml")
    assert sc.fabric.name == "eantc-hpc-cable-pull"
    assert "[[link_failures]]" in sc.fabric.normalized_toml
    assert 'a = "spine0"' in sc.fabric.normalized_toml
    assert [i.kind for i in sc.items] == ["imb"]


def test_a_flow_whose_own_host_link_is_down_for_good_fails_the_cli_and_names_the_link(tmp_path):
    # h0's own cable is out from the start and never comes back: its QP
    # waits for the link, nothing else happens, and the run stalls. The
    # table is printed (what ran is not lost) and the command fails (3),
    # naming the link rather than PFC.
    fab = tmp_path / "hostcable.toml"
    fab.write_text(FABRIC + '[[link_failures]]\na = "h0"\nb = "leaf0"\ndown_us = 0\n')
    r = fabriclab.flows([fabriclab.Flow("h0", "h2", 65536)], fabric=str(fab))
    assert r.outcome == "Stalled"
    assert "h0-leaf0" in r.extras["stall_error"] and "1 of 1 flow(s) never finished" in r.extras["stall_error"]
    c = run_cli("flows", "--fabric", str(fab), "--flow", "h0:h2:64K", "--quiet")
    assert c.returncode == 3, (c.returncode, c.stderr)
    assert "outcome: Stalled" in c.stdout
    assert "fabriclab: error: 1 of 1 flow(s) never finished" in c.stderr and "h0-leaf0" in c.stderr
    assert "PFC" not in c.stderr
    p = run_cli("perftest", "ib_write_bw", "--fabric", str(fab), "--client", "h0", "--server", "h2", "-n", "5")
    assert p.returncode == 2 and "the link of h0-leaf0 is down" in p.stderr, p.stderr


def test_a_flow_beyond_the_clock_on_the_flow_backend_is_an_error_not_a_time():
    # 2 GiB at 1 kb/s: 1.7e7 s, beyond the 106 days a flow may end at.
    # The flow backend used to report the clamped clock (2^63 ps) as the
    # flow's completion time.
    slow = FABRIC.replace("host_link_gbps = 100", "host_link_gbps = 0.000001").replace(
        "uplink_gbps = 100", "uplink_gbps = 0.000001"
    )
    r = fabriclab.flows([fabriclab.Flow("h0", "h2", 2 << 30)], fabric=fabriclab.Fabric.from_toml(slow), backend="flow")
    assert r.outcome == "Stalled" and r.df["fct_us"].isna().all()
    assert "beyond what the simulator's clock holds" in r.extras["stall_error"]


def test_links_too_slow_for_the_ack_timeout_are_named_as_the_cause(tmp_path):
    # 1 kb/s: one 4 KB frame takes 33 s, the ACK timeout is 1.05 ms; no
    # link failed, so the error says so instead of blaming an unreachable
    # peer on a link failure (audit finding).
    slow = FABRIC.replace("host_link_gbps = 100", "host_link_gbps = 0.000001").replace(
        "uplink_gbps = 100", "uplink_gbps = 0.000001"
    )
    fab = tmp_path / "slow.toml"
    fab.write_text(slow)
    r = fabriclab.flows([fabriclab.Flow("h0", "h2", 1024)], fabric=str(fab))
    (f,) = r.extras["qp_failures"]
    assert f["cause"].startswith("no link is down, but one ") and "raise nic.ack_timeout_exponent" in f["cause"]
    c = run_cli("flows", "--fabric", str(fab), "--flow", "h0:h2:1K", "--quiet")
    assert c.returncode == 3 and "the ACK timeout is 1048.576 us" in c.stderr, c.stderr
    # A cut cable is still named as one.
    cut = fabriclab.flows([fabriclab.Flow("h0", "h3", 65536)], fabric=fabriclab.Fabric.from_toml(_cut_fabric()))
    assert cut.extras["qp_failures"][0]["cause"] == "the peer's link h3-leaf1 is down"


# --------------------------------------------------------------------------
# A flows item of a scenario or a lab fails as `fabriclab flows` does


CUT_FLOWS = 'flows = [{src = "h0", dst = "h3", bytes = 65536}, {src = "h0", dst = "h4", bytes = 65536}]\n'


def _cut_scenario(tmp_path):
    """A scenario whose flows item sends to h3, cut off for good (its QP
    runs out of retries after about 3 ms), and to h4, which finishes."""
    (tmp_path / "cut.fabric.toml").write_text(_cut_fabric())
    sc = tmp_path / "cut_flows.toml"
    sc.write_text(f'fabric = "cut.fabric.toml"\n[[flows]]\nname = "cut"\n{CUT_FLOWS}')
    return sc


def _last_error(stderr: str) -> str:
    return [line for line in stderr.splitlines() if line.startswith("fabriclab: error: ")][-1]


def test_run_fails_a_scenario_whose_flows_item_failed_as_flows_fails(tmp_path):
    # `fabriclab run` printed the table and exited 0 where `fabriclab
    # flows` with the same flows exits 3 (QA finding).
    sc = _cut_scenario(tmp_path)
    run = run_cli("run", sc, "--quiet")
    flows = run_cli("flows", "--fabric", tmp_path / "cut.fabric.toml", "--flow", "h0:h3:64K", "--flow", "h0:h4:64K", "--quiet")
    assert (run.returncode, flows.returncode) == (3, 3), run.stderr
    assert "outcome: Finished" in run.stdout and "h4" in run.stdout  # what ran is printed first
    assert _last_error(run.stderr) == _last_error(flows.stderr)
    assert _last_error(run.stderr).startswith("fabriclab: error: 1 flow(s) failed: transport retry counter exceeded on QP")
    assert "Traceback" not in run.stderr


def test_run_and_lab_run_print_a_flows_items_notes(capsys):
    from fabriclab.api import FLOW_COLUMNS
    from fabriclab.cli import print_item
    from fabriclab.results import Result

    note = "12 lossless frame(s) dropped when PFC headroom overflowed at leaf0"
    res = Result("flows", pd.DataFrame(columns=FLOW_COLUMNS), outcome="Finished", sim_time_us=1.0, events=1, extras={"notes": [note]})
    print_item("flows", res)
    out = capsys.readouterr()
    assert "outcome: Finished" in out.out and f"fabriclab: note: {note}\n" in out.err


LAB = """
[lab]
name = "cut"
seed = "test"
title = "a host cut off"
reproduces = "nothing: its run fails"

[[run]]
name = "cut"
fabric = "cut.fabric.toml"
[[run.flows]]
name = "flows"
FLOWS
[[metric]]
label = "h0 -> h4 FCT"
unit = "us"
published = 100
place = "nowhere"
kind = "compare"
tolerance_pct = 1000
select = {column = "fct_us", where = {dst = "h4"}}
""".replace("FLOWS", CUT_FLOWS)


def test_a_lab_whose_flows_run_failed_stops_with_the_error_and_no_verdict(tmp_path):
    # The lab computed "reproduced" from the good flow of a failed run.
    _cut_scenario(tmp_path)
    lab = tmp_path / "cut.toml"
    lab.write_text(LAB)
    r = run_cli("lab", "run", lab, "--quiet")
    assert r.returncode == 3, (r.returncode, r.stdout, r.stderr)
    assert "outcome: Finished" in r.stdout  # the tool's output first
    assert "verdicts:" not in r.stdout and "reproduced" not in r.stdout
    assert _last_error(r.stderr).startswith("fabriclab: error: lab cut: run 'cut' [1]: 1 flow(s) failed: transport retry")
    j = run_cli("lab", "run", lab, "--quiet", "--json")
    assert j.returncode == 3 and j.stdout == "", j.stdout
    with pytest.raises(fabriclab.TransportRetryError, match=r"^lab cut: run 'cut' \[1\]: 1 flow\(s\) failed"):
        fabriclab.lab_run(lab)


def test_the_flow_backend_header_says_link_failures_are_approximated(tmp_path):
    sc = _cut_scenario(tmp_path)
    approx = "link failures approximated: capacity 0 while down, flows re-routed at convergence"
    r = run_cli("run", sc, "--backend", "flow", "--quiet")
    head = r.stdout.splitlines()[0]
    assert head.startswith("# fabriclab: flow backend (flow-level model; see --help)") and approx in head
    assert r.returncode == 3 and "never finished" in r.stderr  # h3 stalls on its own cable
    # the fabric's own [sim] backend, and a tool's header
    (tmp_path / "cut.fabric.toml").write_text(_cut_fabric() + '[sim]\nbackend = "flow"\n')
    assert approx in run_cli("run", sc, "--quiet").stdout.splitlines()[0]
    f = run_cli("flows", "--fabric", tmp_path / "cut.fabric.toml", "--flow", "h0:h4:64K", "--quiet")
    assert f.returncode == 0 and approx in f.stdout.splitlines()[0]
    # without [[link_failures]], the header says nothing of them
    plain = run_cli("flows", "--fabric", "heps", "--flow", "h0:h4:64K", "--backend", "flow", "--quiet")
    assert plain.stdout.splitlines()[0] == "# fabriclab: flow backend (flow-level model; see --help)"


def test_a_flow_run_with_link_failures_notes_that_they_were_approximated():
    # From Python too: the result's notes say how many link events the flow
    # backend approximated, and where to see the transient.
    spine = "spine0"
    fab = fabriclab.Fabric.from_toml(FABRIC + PULL.format(spine=spine) + "up_us = 300\n")
    r = fabriclab.flows([{"src": "h0", "dst": "h2", "bytes": 1 << 22}], fabric=fab, backend="flow")
    assert r.outcome == "Finished"
    notes = [n for n in r.extras["notes"] if "approximated" in n]
    # one cable, down then up: two directions, twice
    assert len(notes) == 1 and "(4 capacity changes, one per direction" in notes[0], r.extras["notes"]
    assert "--backend packet" in notes[0]
    plain = fabriclab.flows([{"src": "h0", "dst": "h2", "bytes": 1 << 22}], fabric=fab)
    assert not [n for n in plain.extras["notes"] if "approximated" in n]


def test_an_mpi_job_that_waited_on_timeouts_says_so(tmp_path):
    """IMB's tables show a stall only inside a timed loop: a job that lost
    packets and waited on RC timeouts gets notes saying so (it used to
    end with the same tables and no word of them)."""
    both = "".join(
        f'[[link_failures]]\na = "{s}"\nb = "leaf1"\ndown_us = 100\nup_us = 1500\n' for s in ("spine0", "spine1")
    )
    fab = fabriclab.Fabric.from_toml(FABRIC + both)
    res = fabriclab.imb(["PingPong"], np=2, hosts=["h0", "h2"], fabric=fab, msglog=(16, 16))
    notes = res.extras["notes"]
    assert any("lost to link failures" in n for n in notes), notes
    assert any("retransmission timeout(s)" in n and "1048.576 us each" in n for n in notes), notes
    clean = fabriclab.imb(["PingPong"], np=2, hosts=["h0", "h2"], fabric=fabriclab.Fabric.from_toml(FABRIC), msglog=(16, 16))
    assert clean.extras["notes"] == []
    path = tmp_path / "both.toml"
    path.write_text(FABRIC + both)
    r = run_cli("imb", "PingPong", "--fabric", str(path), "-np", "2", "--hosts", "h0,h2", "-msglog", "16:16")
    assert r.returncode == 0 and "fabriclab: note: " in r.stderr and "retransmission timeout" in r.stderr, r.stderr
