"""Link failures from Python and the CLI: a fabric file with a pulled
cable, its losses in the port counters, and clear errors for bad ones."""

from __future__ import annotations

import pytest
from conftest import run_cli
from test_cli import assert_cli_error

import fabriclab
from fabriclab.errors import FabricError

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
    done = float(r.flows["delivered_ps"].iloc[0]) / 1e6
    assert done > 300.0
    assert done > float(base.flows["delivered_ps"].iloc[0]) / 1e6 + 100.0
    assert int(r.qps["retx_packets"].sum()) > 0


def test_bad_failures_raise_fabric_errors():
    with pytest.raises(FabricError, match="no node named"):
        fabriclab.Fabric.from_toml(FABRIC + PULL.format(spine="spine7"))
    with pytest.raises(FabricError, match="up_us"):
        fabriclab.Fabric.from_toml(FABRIC + PULL.format(spine="spine0") + "up_us = 50\n")
    with pytest.raises(FabricError, match="for good"):
        fabriclab.Fabric.from_toml(FABRIC + '[[link_failures]]\na = "h3"\nb = "leaf1"\ndown_us = 1\n')


def test_cli_reports_losses_and_refuses_bad_failures(tmp_path):
    good = tmp_path / "pull.toml"
    good.write_text(FABRIC + PULL.format(spine=_spine_used()))
    r = run_cli("flows", "--fabric", str(good), "--flow", "h0:h2:4M", "--counters")
    assert r.returncode == 0, r.stderr
    header = next(l for l in r.stdout.splitlines() if l.startswith("node ") and "peak_buf_KB" in l)
    assert header.split()[-1] == "lost"
    bad = tmp_path / "bad.toml"
    bad.write_text(FABRIC + '[[link_failures]]\na = "leaf0"\nb = "leaf1"\ndown_us = 1\n')
    assert_cli_error(run_cli("flows", "--fabric", str(bad), "--flow", "h0:h2:4M"), "no link between")


def test_cable_pull_scenario_loads_with_its_failure():
    from conftest import ROOT

    from fabriclab.scenario import load_scenario

    sc = load_scenario(ROOT / "scenarios" / "eantc_cable_pull.toml")
    assert sc.fabric.name == "eantc-hpc"
    assert "[[link_failures]]" in sc.fabric.normalized_toml
    assert 'a = "spine0"' in sc.fabric.normalized_toml
    assert [i.kind for i in sc.items] == ["imb"]
