"""InfiniBand fabrics from Python and the CLI: the IB presets run the same
benchmarks, perftest reports an IB link, and bad IB input raises
fabriclab.errors.FabricError (CLI: exit status 2) with the core's message."""

from __future__ import annotations

import pytest

import fabriclab
from conftest import run_cli
from fabriclab import errors

IB_TOML = """
transport = "infiniband"
[topology]
kind = "leaf_spine"
spines = 1
leaves = 2
hosts_per_leaf = 2
host_link_gbps = 100
uplink_gbps = 100
"""


def test_ib_presets_are_listed_and_perftest_reports_an_ib_link():
    assert {"stackhpc-ib", "ihep-ib", "sandia-ib"} <= set(fabriclab.presets())
    res = fabriclab.perftest("ib_write_bw", "h0", "h1", fabric="ihep-ib", iters=200, report_gbits=True)
    df = res.df
    assert df.bw_avg_gbps.iloc[0] == pytest.approx(100 * 4096 / 4122, rel=0.01)
    assert "Link type       : IB" in res.text
    ports = res.ports
    assert "credit_stalled_ps" in ports.columns and (ports.pause_tx == 0).all()


def test_imb_pingpong_on_stackhpc_ib():
    imb_res = fabriclab.imb(["PingPong"], np=2, fabric="stackhpc-ib", msglog=(0, 0), iters=50)
    imb = imb_res.df
    # Calibrated (the HCA latencies were set from it): to its printed precision.
    assert imb.t_max_us.iloc[0] == pytest.approx(1.09, abs=0.005)


@pytest.mark.parametrize(
    "extra, words",
    [
        ("[pfc]\nenabled = true\n", "credit-based"),
        ("[ecn]\nenabled = true\n", "ib.cc"),
        ("[ib]\nvls = 16\n", "1 to 15"),
    ],
    ids=["pfc", "ecn", "vls"],
)
def test_bad_ib_fabrics_raise_fabric_errors(extra, words, toml_file):
    with pytest.raises(errors.FabricError, match=words):
        fabriclab.Fabric.from_toml(IB_TOML + extra)
    path = toml_file(IB_TOML + extra)
    r = run_cli("perftest", "ib_write_bw", "--fabric", path)
    assert r.returncode == 2 and "fabriclab: error:" in r.stderr and words in r.stderr


def test_unknown_transport_and_tcp_on_ib(toml_file):
    with pytest.raises(errors.FabricError, match="infiniband"):
        fabriclab.Fabric.from_toml(IB_TOML.replace("infiniband", "omnipath"))
    with pytest.raises(errors.InvalidArgumentError, match="IPoIB"):
        fabriclab.iperf("h1", "h0", duration=0.001, fabric=str(toml_file(IB_TOML)))
