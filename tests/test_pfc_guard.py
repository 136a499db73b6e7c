"""PFC deadlock detection, the PFC watchdog and PFC storms, from Python and
the command line (the models are tested in crates/fabriclab-core/tests/pfc_guard.rs)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import fabriclab
from conftest import run_cli


def ring(n: int = 5, extra: str = "") -> str:
    """``n`` switches in a ring, a host on each: shortest paths cross it."""
    t = 'name = "ring"\n[topology]\nkind = "explicit"\n'
    for i in range(n):
        t += f'[[topology.nodes]]\nname = "h{i}"\nkind = "host"\n'
    for i in range(n):
        t += f'[[topology.nodes]]\nname = "s{i}"\nkind = "switch"\n'
    for i in range(n):
        t += f'[[topology.links]]\na = "h{i}"\nb = "s{i}"\ngbps = 100\ndelay_ns = 1000\n'
        t += f'[[topology.links]]\na = "s{i}"\nb = "s{(i + 1) % n}"\ngbps = 100\ndelay_ns = 1000\n'
    return t + '[switch]\nbuffer_bytes = 1000000\n[cc]\nalgorithm = "none"\n' + extra


RING_FLOWS = [fabriclab.Flow(f"h{i}", f"h{(i + 2) % 5}", 8 << 20) for i in range(5)]


def test_flows_report_a_deadlock_as_their_outcome_with_the_cycle():
    r = fabriclab.flows(RING_FLOWS, fabric=fabriclab.Fabric.from_toml(ring()))
    assert r.outcome == "Deadlock"
    (d,) = r.extras["deadlocks"]
    assert d["priority"] == 3 and len(d["ports"]) == 5
    assert [p["node"] for p in d["ports"]] == ["s0", "s1", "s2", "s3", "s4"]
    assert [p["peer"] for p in d["ports"]] == ["s1", "s2", "s3", "s4", "s0"]
    assert "PFC deadlock on priority 3" in r.summary()
    assert "s4 -> s0" in (r.extras["deadlock_error"] or "")
    assert r.df["fct_us"].isna().all()
    assert {"wd_storms", "wd_restores", "wd_drops"} <= set(r.ports.columns)


def test_continue_records_the_deadlock_and_runs_to_the_limit():
    fab = fabriclab.Fabric.from_toml(ring(extra='[pfc.deadlock]\naction = "continue"\n'))
    r = fabriclab.flows(RING_FLOWS, fabric=fab, limit_us=3000)
    assert r.outcome == "TimeLimit" and len(r.extras["deadlocks"]) == 1 and r.extras["deadlock_error"] is None


def test_an_mpi_job_on_a_deadlocking_fabric_raises_deadlock_error():
    with pytest.raises(fabriclab.DeadlockError, match="PFC deadlock on priority 3") as e:
        fabriclab.imb(["Allgather"], np=5, npmin=5, fabric=fabriclab.Fabric.from_toml(ring()), msglog=(22, 22))
    assert isinstance(e.value, fabriclab.FabriclabError) and e.value.kind == "Deadlock"


def test_the_cli_prints_the_flows_then_fails_with_status_3(tmp_path: Path):
    fab = tmp_path / "ring.toml"
    fab.write_text(ring())
    args = [a for i in range(5) for a in ("--flow", f"h{i}:h{(i + 2) % 5}:8M")]
    r = run_cli("flows", "--fabric", str(fab), *args)
    assert r.returncode == 3, (r.returncode, r.stderr)
    assert "fabriclab: error: PFC deadlock on priority 3" in r.stderr
    assert "Traceback" not in r.stderr
    assert "outcome: Deadlock" in r.stdout and "h0" in r.stdout


def test_the_watchdog_drops_for_a_stuck_nic_and_the_bystanders_finish():
    fab = fabriclab.Fabric.from_toml(
        '[topology]\nkind = "leaf_spine"\nspines = 1\nleaves = 2\nhosts_per_leaf = 2\n'
        "host_link_gbps = 100\nuplink_gbps = 100\n[switch]\nbuffer_bytes = 2000000\n"
        '[cc]\nalgorithm = "none"\n[[pfc_storms]]\nhost = "h0"\nstart_us = 20\n'
        "[pfc.watchdog]\ndetection_us = 200\nrestoration_us = 400\npoll_us = 100\n"
    )
    flows = [fabriclab.Flow("h1", "h0", 4 << 20), fabriclab.Flow("h2", "h3", 4 << 20), fabriclab.Flow("h2", "h1", 4 << 20)]
    r = fabriclab.flows(flows, fabric=fab, limit_us=4000)
    ports = r.ports.set_index(["node", "peer"])
    assert ports.loc[("leaf0", "h0"), "wd_storms"] == 1
    assert ports.loc[("leaf0", "h0"), "wd_drops"] > 0
    done = r.df.set_index(["src", "dst"])["fct_us"]
    assert done[("h2", "h3")] > 0 and done[("h2", "h1")] > 0
    assert pd.isna(done[("h1", "h0")])


def test_bad_watchdog_and_storm_input_is_a_fabric_error():
    base = '[topology]\nkind = "leaf_spine"\nspines = 1\nleaves = 1\nhosts_per_leaf = 2\nhost_link_gbps = 100\nuplink_gbps = 100\n'
    with pytest.raises(fabriclab.FabricError, match='no host named "h7"'):
        fabriclab.flows(
            [fabriclab.Flow("h0", "h1", 1000)],
            fabric=fabriclab.Fabric.from_toml(base + '[[pfc_storms]]\nhost = "h7"\nstart_us = 1\n'),
        )
    with pytest.raises(fabriclab.FabricError, match="pfc.watchdog.detection_us"):
        fabriclab.Fabric.from_toml(base + "[pfc.watchdog]\ndetection_us = -5\n")


def test_sweeps_and_comparisons_list_a_deadlocked_run_as_failed(tmp_path):
    # flows reports a deadlock in its result rather than raising; a sweep
    # (and compare, which runs sweeps) must not take its rows for a result
    pytest.importorskip("distributed")
    from cluster_help import local_client

    (tmp_path / "ring.toml").write_text(ring())
    flows = ", ".join(f'{{src = "h{i}", dst = "h{(i + 2) % 5}", bytes = {8 << 20}}}' for i in range(5))
    sc = tmp_path / "ring_flows.toml"
    sc.write_text(f'fabric = "ring.toml"\n[[flows]]\nname = "ring"\nflows = [{flows}]\n')
    with local_client() as client:
        df = fabriclab.sweep(sc, {"seed": [1]}, client=client)
        assert df.attrs["failed"] == [0]
        # the run's failure in its own column; no flow failed on its own
        assert df.item_error.str.startswith("DeadlockError: ").all() and "s4 -> s0" in df.item_error.iloc[0]
        assert df.error.isna().all()
        cmp = fabriclab.compare(sc, set={"fabric.sim.backend": "flow"}, repeat=1, client=client)
    assert [(f["side"], f["item"]) for f in cmp.attrs["failed"]] == [("A", "flows[0]")]
    assert "DeadlockError" in cmp.attrs["failed"][0]["error"]
