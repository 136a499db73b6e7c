"""Smoke tests of the Python layer: DataFrames, the HEPS figures, error
classes, the CLI's exit code, determinism."""

import subprocess
import sys

import pytest

import fabriclab
from fabriclab import errors


def test_write_bw_on_heps_returns_a_dataframe_near_92_gbps():
    res = fabriclab.perftest("ib_write_bw", client="h0", server="h4", fabric="heps",
                            iters=200, report_gbits=True)
    df = res.df
    assert {"bytes", "bw_avg", "bw_peak"} <= set(df.columns)
    assert abs(df["bw_avg"].iloc[0] - 92.0) / 92.0 < 0.03
    assert "tx_bytes" in res.ports.columns


def test_write_lat_on_heps_is_3_72_us():
    res = fabriclab.perftest("ib_write_lat", client="h0", server="h4", fabric="heps", iters=100)
    df = res.df
    assert abs(df["t_avg_us"].iloc[0] - 3.72) < 0.05


@pytest.mark.parametrize("kwargs, exc", [
    (dict(server="h99"), errors.UnknownHostError),
    (dict(mtu=1000), errors.FabriclabError),
    (dict(fabric="no-such-preset"), errors.FabriclabError),
])
def test_bad_input_raises_a_fabriclab_error(kwargs, exc):
    args = dict(client="h0", server="h4", fabric="heps", iters=10)
    args.update(kwargs)
    with pytest.raises(exc):
        fabriclab.perftest("ib_write_bw", **args)


def test_cli_bad_host_exits_2_without_traceback():
    p = subprocess.run([sys.executable, "-m", "fabriclab.cli", "perftest", "ib_write_bw",
                        "--fabric", "heps", "--client", "h0", "--server", "h99"],
                       capture_output=True, text=True)
    assert p.returncode == 2
    assert "fabriclab: error:" in p.stderr and "Traceback" not in p.stderr


def test_same_seed_same_result():
    a_res = fabriclab.perftest("ib_write_bw", client="h0", server="h4", fabric="heps", iters=50, seed=3)
    a = a_res.df
    b_res = fabriclab.perftest("ib_write_bw", client="h0", server="h4", fabric="heps", iters=50, seed=3)
    b = b_res.df
    assert a.equals(b)
