"""iWARP fabrics from Python: perftest and OSU run unchanged on the
sandia-iwarp preset (an Ethernet link, jumbo-frame goodput), and a bad
[iwarp] option raises fabriclab.errors.FabricError with the core's message
naming the key to change."""

from __future__ import annotations

import pytest

import fabriclab
from fabriclab import errors

IWARP_TOML = """
transport = "iwarp"
[topology]
kind = "leaf_spine"
spines = 0
leaves = 1
hosts_per_leaf = 2
host_link_gbps = 10
uplink_gbps = 10
"""


def test_perftest_and_osu_run_on_sandia_iwarp():
    assert "sandia-iwarp" in fabriclab.presets()
    # 8 full FPDUs per message: 8928 B of payload in each 9038-byte frame.
    res = fabriclab.perftest(
        "ib_write_bw", "h0", "h12", fabric="sandia-iwarp", size=8 * 8928, iters=500, report_gbits=True
    )
    df = res.df
    assert df.bw_avg_gbps.iloc[0] == pytest.approx(10 * 8928 / 9038, rel=0.01)
    assert "Link type       : Ethernet" in res.text
    # The option the CLI has (--mtu), with perftest's name beside it.
    with pytest.raises(fabriclab.FabriclabError, match=r"--mtu 256 \(perftest's -m\) sets the RoCE"):
        fabriclab.perftest("ib_write_bw", "h0", "h12", fabric="sandia-iwarp", mtu=256)
    lat_res = fabriclab.osu("osu_latency", np=2, fabric="sandia-iwarp", hosts=["h0", "h12"], sizes=(0, 0))
    lat = lat_res.df
    assert lat.avg_us.iloc[0] == pytest.approx(7.4, rel=0.10)


@pytest.mark.parametrize(
    "extra, words",
    [
        ("[iwarp]\nmtu_bytes = 100000\n", "iwarp.mtu_bytes"),
        ("[cc]\nalgorithm = \"dcqcn\"\n", "iwarp.congestion"),
        ("[nic]\nroce_mtu = 4096\n", "iwarp.mtu_bytes"),
    ],
    ids=["mtu", "dcqcn", "roce_mtu"],
)
def test_bad_iwarp_options_raise_fabric_errors(extra, words):
    with pytest.raises(errors.FabricError, match=words):
        fabriclab.Fabric.from_toml(IWARP_TOML + extra)
