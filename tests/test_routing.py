"""Adaptive routing from Python and the CLI: a [routing] section changes
where leaf-to-leaf flows go; bad sections get a fabriclab error (FabricError, or ParseError for an
unknown mode) and exit status 2."""

from __future__ import annotations

import pytest

import fabriclab
from fabriclab.errors import FabriclabError

BASE = """
[topology]
kind = "leaf_spine"
spines = 4
leaves = 2
hosts_per_leaf = 4
host_link_gbps = 100
uplink_gbps = 100
[nic]
roce_mtu = 4096
[cc]
algorithm = "none"
"""


def uplinks_used(routing: str, seed: int) -> int:
    fab = fabriclab.Fabric.from_toml(BASE + routing)
    res = fabriclab.flows([fabriclab.Flow(f"h{i}", f"h{i + 4}", 1 << 21) for i in range(4)], fabric=fab, seed=seed)
    assert res.outcome == "Finished"
    p = res.ports
    up = p[(p.node == "leaf0") & p.peer.str.startswith("spine")]
    return int((up.tx_bytes > 1 << 20).sum())


def test_adaptive_routing_uses_every_uplink_where_ecmp_collides():
    seed = next(s for s in range(1, 50) if uplinks_used("", s) < 4)
    assert uplinks_used('[routing]\nmode = "adaptive"\nordering = "strict"\n', seed) == 4


@pytest.mark.parametrize(
    "section, words",
    [
        ('[routing]\nmode = "random"\n', "ecmp"),
        ('[routing]\nordering = "strict"\n', 'set mode = "adaptive"'),
        ('[routing]\nmode = "adaptive"\nflowlet_gap_us = -1\n', "positive"),
    ],
)
def test_bad_routing_sections(section, words, toml_file, cli):
    with pytest.raises(FabriclabError, match=words):
        fabriclab.Fabric.from_toml(BASE + section)
    r = cli("fabric", "show", str(toml_file(BASE + section)))
    assert r.returncode == 2 and words in r.stderr
