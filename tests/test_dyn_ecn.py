"""Dynamic ECN from Python and the CLI: ``[ecn] mode = "dynamic"`` moves the
thresholds of a queue that a sender fills without slowing (the port
counters show the new Kmin and Kmax), the eantc-hpc-dynamic preset
carries it, and bad settings get a FabricError (ParseError for an
unknown mode) and exit status 2."""

from __future__ import annotations

import pytest

import fabriclab
from fabriclab.errors import FabriclabError

# Three senders that ignore ECN onto h0: PFC keeps a standing queue of a
# few MB at leaf0 -> h0 that the 1 % marking barely touches.
BASE = """
[topology]
kind = "leaf_spine"
spines = 0
leaves = 1
hosts_per_leaf = 4
host_link_gbps = 100
uplink_gbps = 100
[cc]
algorithm = "none"
[ecn]
kmin_bytes = 100000
kmax_bytes = 40000000
pmax = 0.01
"""


def run(extra: str) -> fabriclab.Result:
    fab = fabriclab.Fabric.from_toml(BASE + extra)
    res = fabriclab.flows([fabriclab.Flow(f"h{i}", "h0", 8 << 20) for i in (1, 2, 3)], fabric=fab, limit_us=1500)
    assert res.outcome == "TimeLimit"
    return res


def test_a_standing_queue_gets_earlier_thresholds_in_the_port_counters():
    p = run('mode = "dynamic"\n').ports
    row = p[(p.node == "leaf0") & (p.peer == "h0")].iloc[0]
    # Three halvings (steps_down) in 1.5 ms of intervals of 200 us.
    assert (row.ecn_kmin_bytes, row.ecn_kmax_bytes, row.ecn_adjustments) == (12_500, 5_000_000, 3)
    # Host ports have no controller.
    assert p[p.node == "h0"].ecn_kmin_bytes.isna().all()
    # Static ECN has no such columns.
    assert "ecn_kmin_bytes" not in run("").ports.columns


def test_the_dynamic_preset_and_its_counters_in_the_cli(cli):
    assert "eantc-hpc-dynamic" in fabriclab.presets()
    r = cli("fabric", "show", "eantc-hpc-dynamic", "--toml")
    assert r.returncode == 0 and 'mode = "dynamic"' in r.stdout
    r = cli("flows", "--fabric", "eantc-hpc-dynamic", "--flow", "h1:h0:1048576", "--flow", "h2:h0:1048576", "--counters")
    assert r.returncode == 0, r.stderr
    assert "kmax_KB" in r.stdout


@pytest.mark.parametrize(
    "section, words",
    [
        ('[ecn.dynamic]\ninterval_us = 100\n', 'add mode = "dynamic"'),
        ('mode = "dynamic"\n[ecn.dynamic]\ninterval_us = 0\n', "ecn.dynamic.interval_us"),
        ('mode = "dynamic"\n[ecn.dynamic]\ntarget_utilization = 2\n', "target_utilization"),
        ('mode = "learned"\n', "mode"),
    ],
)
def test_bad_dynamic_ecn_settings(section, words, toml_file, cli):
    with pytest.raises(FabriclabError, match=words):
        fabriclab.Fabric.from_toml(BASE + section)
    r = cli("fabric", "show", str(toml_file(BASE + section)))
    assert r.returncode == 2 and words in r.stderr


def test_eantc_alltoall_is_faster_with_dynamic_ecn():
    # The seed's headline (AllToAll 256 KiB 35 % and large sizes 44 % lower
    # with dynamic ECN): here 64 KiB and 128 KiB AllToAll on 32 servers are
    # lower on every seed, by 21-26 % and 12-26 % over seeds 1-5
    # (2026-11-26, with switch queues counting stored frames; 256 KiB the
    # same and 512 KiB higher, docs/seeds.md). One seed's figure moves by
    # several points with any change of timing, so the mean of three is
    # held to a 15 % reduction. The 0-byte row does not touch the fabric.
    cuts: dict[int, list[float]] = {65536: [], 131072: []}
    for seed in (1, 2, 3):
        t = {}
        for fab in ("eantc-hpc", "eantc-hpc-dynamic"):
            res = fabriclab.imb(
                ["Alltoall"], np=32, npmin=32, msglog=(15, 17), fabric=fab, seed=seed
            )
            t[fab] = res.df.set_index("bytes").t_avg_us
        static, dynamic = t["eantc-hpc"], t["eantc-hpc-dynamic"]
        assert dynamic[0] == static[0]
        for size, c in cuts.items():
            assert dynamic[size] < static[size], (seed, size, static[size], dynamic[size])
            c.append(1 - dynamic[size] / static[size])
    for size, c in cuts.items():
        assert sum(c) / len(c) > 0.15, (size, c)
