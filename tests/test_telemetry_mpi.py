"""Port telemetry of MPI runs (imb, osu, cbench, hpl with ``telemetry_us``):
every port at every sample, the bytes at the end equal to the counters,
off by default, and the CLI's --telemetry-us / --telemetry-csv."""

from __future__ import annotations

import pandas as pd
import pytest

import fabriclab
from conftest import run_cli
from fabriclab.api import PORT_SAMPLE_COLUMNS
from fabriclab.errors import InvalidArgumentError


def _check(res: fabriclab.Result, period_us: float) -> pd.DataFrame:
    ps = res.port_samples
    assert list(ps.columns) == PORT_SAMPLE_COLUMNS
    times = sorted(ps.time_ps.unique())
    assert len(times) > 3
    # Every period, then a last sample at the run's end (less than one after).
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert set(gaps[:-1]) == {round(period_us * 1e6)} and 0 < gaps[-1] <= round(period_us * 1e6)
    ports = res.ports
    assert len(ps) == len(times) * len(ports)  # every port, every sample
    last = ps.groupby(["node", "port"]).tx_bytes.max()
    sent = ports.set_index(["node", "port"]).tx_bytes
    assert (last <= sent.reindex(last.index)).all()
    return ps


def test_imb_osu_cbench_and_hpl_sample_every_port():
    _check(fabriclab.imb(["Alltoall"], np=4, fabric="leaf-spine", msglog="10:11", telemetry_us=10), 10)
    _check(fabriclab.osu("osu_latency", np=2, fabric="leaf-spine", sizes="1:64", iterations=100, telemetry_us=5), 5)
    _check(fabriclab.cbench("rotate", np=4, fabric="leaf-spine", bytes=1 << 20, iterations=2, telemetry_us=20), 20)
    ps = _check(fabriclab.hpl("leaf-spine", n=1024, nb=128, grids="2x2", samples=0, telemetry_us=20), 20)
    assert ps.tx_bytes.max() > 0


def test_telemetry_is_off_by_default_and_checked():
    res = fabriclab.imb(["PingPong"], np=2, fabric="leaf-spine", msglog="0:2")
    assert res.port_samples.empty
    with pytest.raises(InvalidArgumentError, match="telemetry_us"):
        fabriclab.imb(["PingPong"], np=2, fabric="leaf-spine", msglog="0:2", telemetry_us=0)


def test_cli_writes_the_samples_and_wants_a_period(tmp_path):
    csv = tmp_path / "ports.csv"
    r = run_cli("osu", "osu_latency", "-np", "2", "--fabric", "leaf-spine", "-m", "1:8", "-i", "100", "--telemetry-us", "5", "--telemetry-csv", csv, "--quiet")
    assert r.returncode == 0, r.stderr
    df = pd.read_csv(csv)
    assert list(df.columns) == PORT_SAMPLE_COLUMNS and len(df) > 0
    r = run_cli("hpl", "-N", "512", "--grid", "1x2", "--fabric", "leaf-spine", "--dashboard", tmp_path / "d.html")
    assert r.returncode == 2 and "--telemetry-us" in r.stderr and "Traceback" not in r.stderr


def test_run_draws_a_dashboard_per_item_with_samples(tmp_path, toml_file):
    pytest.importorskip("matplotlib")
    path = toml_file(
        'fabric = "leaf-spine"\n'
        '[[hpl]]\nn = [1024]\nnb = [128]\ngrids = ["1x2"]\nsamples = 0\ntelemetry_us = 20\n'
        '[[imb]]\nbenchmarks = ["PingPong"]\nnp = 2\nmsglog = [0, 1]\n',
        "tel.toml",
    )
    prefix = tmp_path / "dash"
    r = run_cli("run", path, "--dashboard", prefix)
    assert r.returncode == 0, r.stderr
    html = (tmp_path / "dash-1.html").read_text()
    assert html.count("<img") == 5 and "http://" not in html
    assert not (tmp_path / "dash-2.html").exists()  # the PingPong item has no samples
    assert "no dashboard for item 2" in r.stdout
