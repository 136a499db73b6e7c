"""The conservation audit over every scenario in ``scenarios/`` (issue 16,
point 5), in quick variants: the same fabrics and item kinds with smaller
sizes, fewer iterations and shorter runtimes. conftest.py turns the audit on
for the whole suite (``FABRICLAB_AUDIT=1``), so a run whose books do not
balance raises :class:`fabriclab.AuditError` here and anywhere else.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import fabriclab
from conftest import run_cli
from fabriclab._checks import size_bytes
from fabriclab.scenario import ScenarioItem, load_scenario, run_item

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = sorted(p for p in (ROOT / "scenarios").glob("*.toml") if not p.name.endswith(".fabric.toml"))


def quick(item: ScenarioItem) -> ScenarioItem:
    """A short run of the same item."""
    o: dict[str, Any] = dict(item.options)
    if item.kind == "perftest":
        o.update(all_sizes=False, size=min(int(o.get("size", 65536)), 65536), iters=min(int(o.get("iters", 20)), 20))
        o.pop("duration", None)
    elif item.kind == "flows":
        o["flows"] = [dict(f, bytes=min(int(f["bytes"]), 256 * 1024)) for f in o["flows"]]
        o["limit_us"] = min(float(o.get("limit_us") or 2000.0), 2000.0)
    elif item.kind == "imb":
        o.update(msglog=(0, 12), iters=2)
        if "np" in o:
            o["npmin"] = o["np"]
    elif item.kind == "osu":
        o.update(sizes=(1, 4096), iterations=2, warmup=1)
    elif item.kind == "cbench":
        o.update(iterations=2, bytes=min(int(o.get("bytes", 4096)), 4096))
        o.pop("rotations", None)
    elif item.kind == "fio":
        # 2 ms must see I/Os complete (fio refuses a test that sees none):
        # blocks of at most 64 KiB
        bs = o.get("bs", 4096)
        o.update(runtime=0.002, ramp_time=0.0, bs=min(size_bytes(bs) if isinstance(bs, str) else int(bs), 65536))
    elif item.kind == "hpl":
        for k in ("dat",):
            o.pop(k, None)
        o.update(n=[4000], nb=[200], samples=3)
        np_ = int(o.get("np", 4))
        o["grids"] = ["1x2"] if np_ < 4 else ["2x2"]
    return ScenarioItem(kind=item.kind, name=item.name, seed=item.seed, options=o)


def test_the_suite_runs_with_the_audit_on():
    assert os.environ.get("FABRICLAB_AUDIT") == "1"


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_every_scenario_balances(path: Path):
    sc = load_scenario(path)
    for item in sc.items:
        run_item(sc, quick(item))


def test_a_lossless_drop_fails_the_audit_with_the_switch_named():
    fab = fabriclab.Fabric.from_toml(
        '[topology]\nkind = "leaf_spine"\nspines = 0\nleaves = 1\nhosts_per_leaf = 16\n'
        'host_link_gbps = 100\nuplink_gbps = 100\nhost_link_delay_ns = 1000\n[cc]\nalgorithm = "none"\n'
        "[switch]\nheadroom_bytes = 10000\nbuffer_bytes = 2000000\n"
    )
    flows = [fabriclab.Flow(f"h{i}", "h0", 1 << 20) for i in range(1, 16)]
    with pytest.raises(fabriclab.AuditError, match="switch leaf0 dropped .* lossless priority 3"):
        fabriclab.flows(flows, fabric=fab, limit_us=300)


def test_without_the_audit_lossless_drops_are_a_note_of_the_flows_command(tmp_path: Path):
    # The same overflow without the audit: a fabric may be configured so
    # (a real switch with too little headroom drops too), so the run goes
    # on, and the command says what happened on stderr (audit finding: it
    # used to say nothing).
    fab = tmp_path / "small_headroom.toml"
    fab.write_text(
        '[topology]\nkind = "leaf_spine"\nspines = 0\nleaves = 1\nhosts_per_leaf = 16\n'
        'host_link_gbps = 100\nuplink_gbps = 100\nhost_link_delay_ns = 1000\n[cc]\nalgorithm = "none"\n'
        "[switch]\nheadroom_bytes = 10000\nbuffer_bytes = 2000000\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "FABRICLAB_AUDIT"}
    args = [a for i in range(1, 16) for a in ("--flow", f"h{i}:h0:1M")]
    r = run_cli("flows", "--fabric", str(fab), *args, "--limit-us", "300", "--quiet", env=env)
    assert r.returncode == 0, r.stderr
    assert "fabriclab: note: " in r.stderr and "of lossless priorities were dropped" in r.stderr
    assert "first at leaf0 from h" in r.stderr and "whose headroom is 10000 B" in r.stderr
    # The derived headroom drops nothing, and there is no note.
    fab.write_text(fab.read_text().replace("headroom_bytes = 10000\n", ""))
    r = run_cli("flows", "--fabric", str(fab), *args, "--limit-us", "300", "--quiet", env=env)
    assert r.returncode == 0 and "note:" not in r.stderr, r.stderr


def test_cli_audit_flag_prints_the_balanced_books(tmp_path: Path):
    env = dict(os.environ)
    env.pop("FABRICLAB_AUDIT", None)
    r = run_cli("--audit", "flows", "--fabric", "leaf-spine", "--flow", "h0:h5:1M", "--flow", "h1:h5:1M", env=env)
    assert r.returncode == 0, r.stderr
    assert "audit: balanced" in r.stderr
    assert "XOFF/XON matched" in r.stderr and "flow backend" not in r.stderr


def test_cli_audit_flag_on_the_flow_backend_says_what_it_checked():
    # The flow backend has no switches' queues or PFC to balance: the line
    # names its own books (net/flow/audit.rs), not the packet engine's.
    env = dict(os.environ)
    env.pop("FABRICLAB_AUDIT", None)
    args = ("--flow", "h0:h5:1M", "--flow", "h1:h5:1M", "--backend", "flow")
    r = run_cli("--audit", "flows", "--fabric", "leaf-spine", *args, env=env)
    assert r.returncode == 0, r.stderr
    assert "audit: balanced (flow backend: every link within its capacity" in r.stderr
    assert "XOFF" not in r.stderr
