"""HPL from Python, the CLI, scenario files and sweeps: the output has the
real HPL 2.3's layout (tests/golden/hpl_sample.txt) and differs from it
only where documented; Gflops follow from HPL's operation count; HPL.dat
settings are defaults that keywords override; sampled iterations agree
with simulating every one; bad input gets clear errors."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

import fabriclab
from cluster_help import assert_cli_error, main_in_process
from conftest import GOLDEN, run_cli
from fabriclab.errors import FabriclabError, InvalidArgumentError, ParseError, UnknownHostError
from hpl_format import check_hpl_layout, comparable, parse_hpl

DAT = GOLDEN / "hpl_HPL.dat"


def hpl_flops(n: int) -> float:
    return 2 / 3 * n**3 + 3 / 2 * n**2


@pytest.fixture(scope="module")
def golden_run():
    return fabriclab.hpl("heps", dat=DAT)


# --------------------------------------------------------------------------
# The format


def test_the_checker_reads_the_real_sample():
    text = (GOLDEN / "hpl_sample.txt").read_text()
    check_hpl_layout(text)
    p = parse_hpl(text)
    assert [(t["p"], t["q"], t["time_s"], t["gflops"]) for t in p["tests"]] == [(1, 2, 0.18, 30.302), (2, 1, 0.29, 18.72)]
    assert p["params"]["P"] == ["1", "2"] and p["params"]["BCAST"] == ["1ringM"]
    assert (p["finished"], p["passed"], p["failed"], p["unchecked"]) == (2, 2, 0, None)


def test_the_checker_rejects_a_wrong_layout():
    text = (GOLDEN / "hpl_sample.txt").read_text()
    with pytest.raises(AssertionError):  # Gflops one column to the left
        check_hpl_layout(text.replace("0.18             3.0302e+01", "0.18            3.0302e+01 "))
    with pytest.raises(AssertionError):  # %.3e instead of %.4e
        check_hpl_layout(text.replace("3.0302e+01", " 3.030e+01"))
    with pytest.raises(AssertionError):  # a parameter field 7 wide
        check_hpl_layout(text.replace("P      :       1        2 ", "P      :      1        2  "))


def test_the_golden_dat_gives_the_samples_tests_and_layout(golden_run):
    df = golden_run.df
    assert list(df.columns) == fabriclab.HPL_COLUMNS
    assert [(r.p, r.q) for r in df.itertuples()] == [(1, 2), (2, 1)]
    assert set(df.variant) == {"WR11C2R4"} and set(df.n) == {2000} and set(df.nb) == {128}
    text = golden_run.text
    check_hpl_layout(text)
    # Only the documented differences: no residual check, figures and dates.
    assert comparable(text) == comparable((GOLDEN / "hpl_sample.txt").read_text())
    p = parse_hpl(text)
    assert (p["finished"], p["unchecked"], p["skipped"], p["passed"]) == (2, 2, 0, None)
    assert [t["time_s"] for t in p["tests"]] == [round(t, 2) for t in df.time_s]
    assert [t["gflops"] for t in p["tests"]] == [float(f"{g:.4e}") for g in df.gflops]
    assert p["tests"][0]["start"] == "Thu Jan  1 00:00:00 1970"  # the simulated clock


def test_long_parameter_lists_wrap_as_hpl_wraps_them():
    res = fabriclab.hpl("leaf-spine", n=[64 * i for i in range(1, 10)], nb=32, grids="1x2", samples=0)
    df = res.df
    text = res.text
    check_hpl_layout(text)
    assert "\n             576 \n" in text  # the 9th N on a line of its own, indented 8
    assert parse_hpl(text)["params"]["N"] == [str(64 * i) for i in range(1, 10)]
    assert len(df) == 9


# --------------------------------------------------------------------------
# The figures


def test_gflops_follow_from_hpls_operation_count(golden_run):
    for r in golden_run.df.itertuples():
        assert r.gflops == pytest.approx(hpl_flops(r.n) / r.time_s / 1e9, rel=1e-9)
        assert r.peak_gflops == pytest.approx(r.p * r.q * 50.0)
        assert 0 < r.efficiency <= 1
        assert r.efficiency == pytest.approx(r.gflops / r.peak_gflops)
        assert r.iterations == 16 and r.net_bytes > 0


def test_keywords_override_the_dat():
    res = fabriclab.hpl("heps", dat=DAT, n=1024, grids="2x2", bcast="2ringM", depth=0)
    df = res.df
    assert len(df) == 1
    r = df.iloc[0]
    assert (r.n, r.nb, r.p, r.q, r.bcast, r.depth) == (1024, 128, 2, 2, "2ringM", 0)
    assert r.variant == "WR03C2R4"  # row-major, depth 0, bcast 3, Crout/2, Right/4
    assert parse_hpl(res.text)["params"]["BCAST"] == ["2ringM"]


def test_scalars_and_lists_are_the_same_settings():
    one_res = fabriclab.hpl("leaf-spine", n=1024, nb=128, grids=(1, 2), bcast="1ring", depth=0, samples=0)
    one = one_res.df
    for grids in ("1x2", ["1x2"], [[1, 2]], [(1, 2)]):
        other_res = fabriclab.hpl("leaf-spine", n=[1024], nb=[128], grids=grids, bcast=["1ring"], depth=[0], samples=0)
        other = other_res.df
        pd.testing.assert_frame_equal(one, other)
    codes_res = fabriclab.hpl("leaf-spine", n=1024, nb=128, grids="1x2", bcast=0, depth=0, samples=0)
    codes = codes_res.df
    pd.testing.assert_frame_equal(one, codes)


def test_the_same_seed_gives_the_same_run():
    a_res = fabriclab.hpl("leaf-spine", n=2048, nb=128, grids="2x2", samples=4, seed=3)
    a = a_res.df
    b_res = fabriclab.hpl("leaf-spine", n=2048, nb=128, grids="2x2", samples=4, seed=3)
    b = b_res.df
    pd.testing.assert_frame_equal(a, b)
    pd.testing.assert_frame_equal(a_res.extras["samples"], b_res.extras["samples"])
    assert a_res.text == b_res.text


def test_sampled_iterations_agree_with_every_iteration():
    exact_res = fabriclab.hpl("heps", n=4096, nb=64, grids="2x2", samples=0)
    exact = exact_res.df
    sampled_res = fabriclab.hpl("heps", n=4096, nb=64, grids="2x2")
    sampled = sampled_res.df
    e, s = exact.iloc[0], sampled.iloc[0]
    assert e.simulated_iterations == e.iterations == 64 and exact_res.extras["samples"].empty
    assert s.simulated_iterations < s.iterations
    assert s.time_s == pytest.approx(e.time_s, rel=0.02)
    smp = sampled_res.extras["samples"]
    assert list(smp.columns) == fabriclab.HPL_SAMPLE_COLUMNS and len(smp) == 8
    assert (smp.measured == 2).all()  # Q consecutive iterations per stratum
    assert smp.weight.sum() == s.iterations and set(smp.test) == {0}
    assert (smp.n_left == 4096 - smp.k * 64).all()
    # less trailing matrix, less work per iteration
    assert smp.time_s.iloc[0] > smp.time_s.iloc[-1]


def test_hosts_take_ranges():
    res = fabriclab.hpl("heps", n=512, nb=64, grids="2x2", hosts="h4-h7", samples=0)
    assert res.extras["rank_hosts"] == ["h4", "h5", "h6", "h7"]


# --------------------------------------------------------------------------
# Errors


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(n=0, grids="1x2"), "N = 0"),
        (dict(n=512, grids="1x2", depth=2), "look-ahead depth 2"),
        (dict(n=512, grids="2x2", np=2), "needs 4 processes"),
        (dict(n=512, grids="1x2", bcast="3ring"), "unknown broadcast"),
        (dict(n=512), "process grid"),
        (dict(n=512, grids="2y2"), "write PxQ"),
        (dict(dat="no/such/HPL.dat"), "no/such/HPL.dat: no such file"),
    ],
)
def test_bad_settings_are_fabriclab_errors(kwargs, words):
    with pytest.raises(InvalidArgumentError, match=words.replace(".", r"\.")):
        fabriclab.hpl("heps", **kwargs)


def test_other_errors():
    with pytest.raises(UnknownHostError):
        fabriclab.hpl("heps", n=512, grids="1x2", hosts="h0,h99")
    with pytest.raises(TypeError, match="n must be an integer"):
        fabriclab.hpl("heps", n="512", grids="1x2")


def test_a_broken_dat_is_named_with_its_line(tmp_path):
    bad = tmp_path / "HPL.dat"
    bad.write_text(DAT.read_text().replace("2000         Ns", "2k           Ns"))
    with pytest.raises(FabriclabError, match=rf"HPL\.dat file {bad} line 6: Ns must be a number"):
        fabriclab.hpl("heps", dat=bad)


# --------------------------------------------------------------------------
# The command line


def test_cli_prints_hpls_text_then_a_summary(capsys):
    r = main_in_process(capsys, "hpl", "-N", "1024", "--nb", "128", "--grid", "1x2", "2x1", "--samples", "0", "--fabric", "heps")
    assert r.returncode == 0, r.stderr
    check_hpl_layout(r.stdout)
    assert [(t["p"], t["q"]) for t in parse_hpl(r.stdout)["tests"]] == [(1, 2), (2, 1)]
    assert "Gflops, " in r.stderr and "% of 1x2 x 50 Gflops DGEMM, 8 of 8 iterations simulated" in r.stderr
    r = main_in_process(capsys, "hpl", "--dat", DAT, "-N", "512", "-P", "1", "-Q", "2", "--json", "--fabric", "heps")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert [(t["n"], t["p"], t["q"]) for t in rep["tests"]] == [(512, 1, 2)]


def test_cli_output_file(tmp_path, capsys):
    out = tmp_path / "HPL.out"
    r = main_in_process(capsys, "hpl", "--dat", DAT, "--fabric", "heps", "-o", out)
    assert r.returncode == 0, r.stderr
    assert "T/V" not in r.stdout and f"HPL output written to {out}" in r.stderr
    check_hpl_layout(out.read_text())
    assert len(parse_hpl(out.read_text())["tests"]) == 2


def _dat_with_device(tmp_path, name: str, device: int):
    lines = DAT.read_text().splitlines()
    lines[2] = f"{name}      output file name (if any)"
    lines[3] = f"{device}            device out (6=stdout,7=stderr,file)"
    p = tmp_path / "HPL.dat"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_cli_follows_the_dats_device_out(tmp_path, capsys, monkeypatch):
    """HPL.dat's line 4: 6 stdout, 7 stderr, anything else the file named
    on line 3 (relative to the working directory, as HPL opens it); -o
    still wins."""
    monkeypatch.chdir(tmp_path)
    args = ("-N", "512", "-P", "1", "-Q", "2", "--fabric", "heps", "--quiet")
    r = main_in_process(capsys, "hpl", "--dat", _dat_with_device(tmp_path, "mine.out", 6), *args)
    assert r.returncode == 0 and "T/V" in r.stdout and not (tmp_path / "mine.out").exists()
    r = main_in_process(capsys, "hpl", "--dat", _dat_with_device(tmp_path, "mine.out", 7), *args)
    assert r.returncode == 0 and "T/V" not in r.stdout and "T/V" in r.stderr
    check_hpl_layout(r.stderr)
    r = main_in_process(capsys, "hpl", "--dat", _dat_with_device(tmp_path, "mine.out", 8), *args)
    assert r.returncode == 0 and "T/V" not in r.stdout + r.stderr
    assert "HPL output written to mine.out" in r.stderr
    check_hpl_layout((tmp_path / "mine.out").read_text())
    r = main_in_process(capsys, "hpl", "--dat", _dat_with_device(tmp_path, "mine.out", 8), *args, "-o", "other.out")
    assert r.returncode == 0 and (tmp_path / "other.out").exists()
    # The file is checked before the run, as -o is.
    r = main_in_process(capsys, "hpl", "--dat", _dat_with_device(tmp_path, "HPL.dat", 8), *args)
    assert r.returncode == 2 and "HPL.dat's output file" in r.stderr and "input" in r.stderr
    r = main_in_process(capsys, "hpl", "--dat", _dat_with_device(tmp_path, "no/such/dir/x.out", 8), *args)
    assert r.returncode == 2 and "no/such/dir" in r.stderr


def test_quiet_prints_nothing_on_stderr(capsys):
    r = main_in_process(capsys, "hpl", "-N", "512", "-P", "1", "-Q", "2", "--fabric", "heps", "--quiet")
    assert r.returncode == 0 and r.stderr == "" and "T/V" in r.stdout


def test_ctrl_c_keeps_the_tests_that_ended(tmp_path):
    """SIGINT while the second of two tests runs: exit 130, HPL's text of
    the first test (up to its end time, no closing lines) in the -o file."""
    import os
    import signal
    import subprocess
    import sys
    import threading

    out = tmp_path / "HPL.out"
    p = subprocess.Popen(
        [sys.executable, "-m", "fabriclab.cli", "hpl", "-N", "16384", "--nb", "192", "--grid", "4x8", "8x4",
         "--dgemm-gflops", "40", "-o", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    seen: list[str] = []
    first_done = threading.Event()

    def read() -> None:
        assert p.stderr is not None
        for line in p.stderr:
            seen.append(line)
            if "calls done, at done" in line:
                first_done.set()

    reader = threading.Thread(target=read)
    reader.start()
    assert first_done.wait(300), "".join(seen)
    os.killpg(p.pid, signal.SIGINT)
    p.wait(120)
    reader.join(10)
    p.stderr.close()
    err = "".join(seen)
    assert p.returncode == 130, err
    assert "Traceback" not in err
    assert f"interrupted; {out} holds the 1 test(s) that ended" in err
    text = out.read_text()
    assert text.count("HPL_pdgesv() end time") == 1 and "End of Tests." not in text
    rows = [line.split() for line in text.splitlines() if line.startswith("WR")]
    assert [r[1:5] for r in rows] == [["16384", "192", "4", "8"]]


@pytest.mark.parametrize(
    "args, words",
    [
        (["-N", "512", "--grid", "1x2", "--depth", "2"], "look-ahead depth 2"),
        (["--dat", "missing/HPL.dat"], "missing/HPL.dat: no such file"),
        (["-N", "512", "--grid", "2y2"], "expected PxQ"),
        (["-N", "512", "-P", "1", "2", "-Q", "2"], "-P and -Q"),
        (["-N", "0", "--grid", "1x2"], "N = 0"),
    ],
)
def test_cli_bad_input(args, words, capsys):
    assert_cli_error(main_in_process(capsys, "hpl", *args), words)


def test_cli_as_a_program_exits_2_without_a_traceback():
    assert_cli_error(run_cli("hpl", "-N", "512", "--grid", "4x4", "-np", "8"), "needs 16 processes")


# --------------------------------------------------------------------------
# Scenarios and sweeps


def hpl_scenario(tmp_path, extra: str = "") -> str:
    """A scenario with an [[hpl]] item reading an HPL.dat beside it."""
    shutil.copy(DAT, tmp_path / "HPL.dat")
    sc = tmp_path / "hpl.toml"
    sc.write_text(f'fabric = "heps"\n\n[[hpl]]\nname = "lu"\ndat = "HPL.dat"\nn = 1024\n{extra}')
    return str(sc)


def test_scenario_items_run(tmp_path, capsys):
    sc = hpl_scenario(tmp_path)
    (res,) = fabriclab.run_scenario(sc)
    assert list(res.df.n) == [1024, 1024] and res.name == "lu"
    r = main_in_process(capsys, "run", sc)
    assert r.returncode == 0, r.stderr
    assert "=== [1] hpl 'lu': HPL.dat HPL.dat, N 1024 (seed 1) ===" in r.stdout
    assert len(parse_hpl(r.stdout[r.stdout.index("=====") :])["tests"]) == 2


def test_scenario_errors(tmp_path, capsys):
    sc = hpl_scenario(tmp_path, "nloop = 3\n")
    assert_cli_error(main_in_process(capsys, "run", sc), "unknown key 'nloop'")
    sc = hpl_scenario(tmp_path)
    (tmp_path / "HPL.dat").unlink()
    assert_cli_error(main_in_process(capsys, "run", sc), "HPL.dat: no such file")
    (tmp_path / "t.toml").write_text("[[hpl]]\ngrids = [[1, 2]]\n")
    with pytest.raises(ParseError, match="missing n"):
        fabriclab.run_scenario(tmp_path / "t.toml")
    (tmp_path / "t.toml").write_text('[[hpl]]\nn = "big"\ngrids = ["1x2"]\n')
    assert_cli_error(main_in_process(capsys, "run", tmp_path / "t.toml"), "n must be an integer")


def test_sweep_points_over_hpl_keys(tmp_path, capsys):
    from fabriclab.sweeps import sweep_points

    sc = hpl_scenario(tmp_path)
    points = sweep_points(sc, {"hpl.bcast": ["1ring", "2ringM"], "hpl.samples": [0, 4]})
    assert len(points) == 4
    assert f'dat = "{tmp_path / "HPL.dat"}"' in points[0].toml  # the point's scenario is written elsewhere
    r = main_in_process(capsys, "sweep", sc, "--set", "hpl.bcast=1ring,blongM", "--dry-run")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0].split() == ["point", "hpl.bcast"] and "2 point(s) checked" in r.stderr
    assert_cli_error(main_in_process(capsys, "sweep", sc, "--set", "hpl.hosts=h0-h99", "--dry-run"), 'no host "h32"')


def test_a_sweep_runs_hpl_items(tmp_path):
    pytest.importorskip("distributed")
    from fabriclab.cli_sweep import summary

    sc = hpl_scenario(tmp_path, 'grids = ["2x2"]\n')
    df = fabriclab.sweep(sc, {"hpl.bcast": ["1ring", "2ringM"]}, workers=1)
    assert df.error.isna().all() and list(df.bcast) == ["1ring", "2ringM"]
    direct_res = fabriclab.hpl("heps", dat=DAT, n=1024, grids="2x2", bcast="2ringM")
    direct = direct_res.df
    assert df.gflops.iloc[1] == direct.gflops.iloc[0]
    lines = summary(df).splitlines()
    assert "Gflops (" in lines[1] and "at N=1024 NB=128 2x2 1ring" in lines[1]


def test_module_doc_example_runs():
    import doctest

    import fabriclab.linpack as mod  # HPL's module; fabriclab.hpl is the function
    res = doctest.testmod(mod)
    assert res.attempted >= 2 and res.failed == 0
