"""The fat-tree builder from Python and the CLI: the preset's shape,
a perftest across pods, and impossible radices as FabricError / exit 2."""

from __future__ import annotations

import pytest

import fabriclab
from conftest import run_cli
from fabriclab import errors

K4 = """
[topology]
kind = "fat_tree"
k = 4
host_link_gbps = 100
"""


def test_preset_shape():
    f = fabriclab.Fabric.preset("fat-tree")
    assert len(f.hosts) == 128 and f.hosts[-1] == "h127"
    assert f.switches[:2] == ["edge0", "edge1"] and f.switches[-1] == "core15"
    assert len(f.switches) == 32 + 32 + 16
    assert len(f.links) == 128 + 8 * (4 * 4 + 4 * 4)


def test_write_bw_across_pods():
    f = fabriclab.Fabric.from_toml(K4 + "[nic]\nroce_mtu = 4096\n")
    res = fabriclab.perftest("ib_write_bw", client="h0", server="h15", fabric=f, iters=200, report_gbits=True)
    df = res.df
    assert df.bw_avg_gbps[0] == pytest.approx(98.0, rel=0.01)  # RoCE MTU 4096 goodput at 100G


@pytest.mark.parametrize(
    "topology, words",
    [
        ('kind = "fat_tree"\nk = 3\nhost_link_gbps = 100\n', "even switch radix"),
        ('kind = "fat_tree"\nk = 4\nhosts_per_edge = 0\nhost_link_gbps = 100\n', "needs hosts"),
        ('kind = "fat_tree"\nk = 4\nhost_link_gbps = 0\n', "host_link_gbps"),
    ],
)
def test_impossible_fat_trees(topology, words, toml_file):
    text = "[topology]\n" + topology
    with pytest.raises(errors.FabricError, match=words):
        fabriclab.Fabric.from_toml(text)
    path = toml_file(text, "bad_fat_tree.toml")
    r = run_cli("fabric", "show", path)
    assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr
