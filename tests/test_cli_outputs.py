"""Output options never overwrite a command's inputs: a fabric file, an
HPL.dat, a telemetry CSV or a scenario named as an output is refused
before the run, with the file left as it was; and ``sweep --dry-run``
checks every option a real sweep would."""

from __future__ import annotations

import pytest

from conftest import ROOT, run_cli

FABRIC = """
[topology]
kind = "leaf_spine"
spines = 1
leaves = 2
hosts_per_leaf = 2
host_link_gbps = 100
uplink_gbps = 100
"""


@pytest.fixture
def fabric(tmp_path):
    f = tmp_path / "fabric.toml"
    f.write_text(FABRIC)
    return f


def _refused(r, option: str, path) -> None:
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert f"fabriclab: error: {option} {path}: that is an input of this command, which it would overwrite" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize(
    "args, option",
    [
        (["perftest", "ib_write_bw", "--out_json_file", "@"], "--out_json_file"),
        (["imb", "PingPong", "-np", "2", "--telemetry-us", "10", "--telemetry-csv", "@"], "--telemetry-csv"),
        (["imb", "PingPong", "-np", "2", "--telemetry-us", "10", "--dashboard", "@"], "--dashboard"),
        (["osu", "osu_latency", "-np", "2", "--telemetry-us", "10", "--telemetry-csv", "@"], "--telemetry-csv"),
        (["hpl", "-N", "1000", "-P", "1", "-Q", "2", "-o", "@"], "-o/--output"),
    ],
)
def test_an_output_naming_the_fabric_file_is_refused(fabric, args, option):
    r = run_cli(*[str(fabric) if x == "@" else x for x in args], "--fabric", str(fabric))
    _refused(r, option, fabric)
    assert fabric.read_text() == FABRIC


def test_a_dashboard_over_its_own_samples_is_refused(tmp_path):
    csv = tmp_path / "x.csv"
    csv.write_text("t_us,port\n")
    r = run_cli("dashboard", str(csv), "-o", str(csv))
    _refused(r, "-o/--output", csv)
    assert csv.read_text() == "t_us,port\n"


def test_hpl_output_over_its_dat_is_still_refused(tmp_path):
    dat = tmp_path / "HPL.dat"
    dat.write_text((ROOT / "tests" / "golden" / "hpl_HPL.dat").read_text())
    before = dat.read_text()
    r = run_cli("hpl", "--dat", str(dat), "-o", str(dat))
    _refused(r, "-o/--output", dat)
    assert dat.read_text() == before


SCENARIO = ROOT / "scenarios" / "heps.toml"


@pytest.mark.parametrize(
    "extra, message",
    [
        (["-o", "results.txt"], "-o 'results.txt': write a .csv or a .parquet file"),
        (["--workers", "0"], "workers must be a positive integer, got 0"),
        (["--resume"], "--resume needs -o FILE"),
        (["-o", "@dir/x.csv"], "no such directory"),
    ],
)
def test_a_dry_run_checks_what_a_sweep_would(tmp_path, extra, message):
    args = [x.replace("@dir", str(tmp_path / "missing")) for x in extra]
    r = run_cli("sweep", str(SCENARIO), "--set", "seed=1,2", "--dry-run", *args, cwd=tmp_path)
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert message in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "results.txt").exists()


def test_a_dry_run_with_good_options_checks_and_runs_nothing(tmp_path):
    r = run_cli("sweep", str(SCENARIO), "--set", "seed=1,2", "--dry-run", "-o", "out.csv", "--workers", "2", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "2 point(s) checked; nothing run (--dry-run)" in r.stderr
    assert not (tmp_path / "out.csv").exists()
