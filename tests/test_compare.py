"""A/B comparisons with repetitions (fabriclab.compare, ``fabriclab compare``):
each side runs K times with seeds 1..K through the sweep machinery, and
every item, row and metric gets A's and B's min / avg / max, delta and %."""

from __future__ import annotations

import contextlib
import os

import pandas as pd
import pytest

import fabriclab
from browser import assert_renders, browser_or_skip, check_page
from cluster_help import NoClient, assert_cli_error, local_client, main_in_process
from conftest import ROOT, run_cli
from fabriclab import sweep_checks
from fabriclab.compare_html import write_html
from fabriclab.comparisons import compare_runs, row_label, run_sides
from fabriclab.errors import InvalidArgumentError, ParseError

distributed = pytest.importorskip("distributed")

HEPS = ROOT / "scenarios" / "heps.toml"

# Four hosts, two leaves, two spines: a perftest and two cross-leaf flows
# whose ECMP paths collide for some seeds (seed 1) and not others, so the
# runs of one side differ; DCQCN (or not) changes the flows' FCTs.
TINY = """
seed = 1

[fabric]
name = "four-hosts"
[fabric.topology]
kind = "leaf_spine"
spines = 2
leaves = 2
hosts_per_leaf = 2
host_link_gbps = 100
uplink_gbps = 100
[fabric.ecn]
enabled = true
kmin_bytes = 5000
kmax_bytes = 50000
pmax = 0.2
[fabric.cc]
algorithm = "dcqcn"

[[perftest]]
name = "bw"
test = "ib_write_bw"
client = "h0"
server = "h2"
size = 65536
iters = 50
report_gbits = true

[[flows]]
name = "cross"
flows = [{src = "h0", dst = "h2", bytes = 200000}, {src = "h1", dst = "h3", bytes = 200000}]
"""

FIGURES = ["a_min", "a_avg", "a_max", "b_min", "b_avg", "b_max", "delta", "pct", "a_runs", "b_runs"]


@pytest.fixture
def tiny(tmp_path):
    p = tmp_path / "tiny.toml"
    p.write_text(TINY)
    return p


@pytest.fixture(scope="module")
def client():
    """A 2-worker LocalCluster shared by the comparisons of this file."""
    with local_client() as c:
        yield c


def assert_arithmetic(df: pd.DataFrame) -> None:
    """delta = B avg - A avg and % = delta / A avg x 100, row by row."""
    for r in df.itertuples():
        assert r.delta == pytest.approx(r.b_avg - r.a_avg, abs=1e-9)
        assert r.pct == pytest.approx(100 * (r.b_avg - r.a_avg) / r.a_avg, abs=1e-9)
        assert r.a_min <= r.a_avg <= r.a_max and r.b_min <= r.b_avg <= r.b_max


# --------------------------------------------------------------------------
# From Python


def test_each_side_runs_seeds_1_to_k_and_the_figures_are_their_statistics(tiny, client):
    runs = run_sides(tiny, set={"fabric.cc.algorithm": "none"}, repeat=2, client=client)
    # the rows show every run: side A and side B, seeds 1 and 2, B with its override
    assert runs.attrs["seeds"] == [1, 2]
    assert sorted(set(zip(runs.side, runs.seed))) == [("A", 1), ("A", 2), ("B", 1), ("B", 2)]
    assert set(runs[runs.side == "B"]["fabric.cc.algorithm"]) == {"none"}
    assert runs[runs.side == "A"]["fabric.cc.algorithm"].isna().all()

    df = compare_runs(runs)
    assert list(df.columns) == ["item", "kind", "name", "bytes", "flow", "src", "dst", "metric", *FIGURES]
    assert list(zip(df.item, df.metric)) == [
        ("perftest[0]", "bw_avg_gbps"),
        ("flows[0]", "fct_us"),
        ("flows[0]", "fct_us"),
    ]
    assert [row_label(r) for r in df.to_dict("records")] == ["65536 B", "flow 0 h0->h2", "flow 1 h1->h3"]
    assert (df.a_runs == 2).all() and (df.b_runs == 2).all() and df.attrs["failed"] == []
    # each side's min / avg / max are those of its two runs
    for r in df.itertuples():
        for side, prefix in (("A", "a"), ("B", "b")):
            rows = runs[(runs.side == side) & (runs.item == r.item)]
            if r.kind == "flows":
                rows = rows.iloc[int(r.flow) :: 2]  # flow 0, flow 1 of each run
            values = rows[r.metric].astype(float)
            assert len(values) == 2
            assert getattr(r, f"{prefix}_min") == values.min() and getattr(r, f"{prefix}_max") == values.max()
            assert getattr(r, f"{prefix}_avg") == pytest.approx(values.mean())
    assert_arithmetic(df)
    flows = df[df.kind == "flows"]
    assert (flows.a_max > flows.a_min).all(), "seed 1 collides on a spine and seed 2 does not: seeds were used"
    assert (flows.delta < 0).all(), "without DCQCN the colliding flows finish sooner here"
    assert df.pct.iloc[0] == 0.0  # one perftest alone: DCQCN changes nothing

    # fabriclab.compare is the two steps in one, the same on one worker of its own LocalCluster
    again = fabriclab.compare(tiny, set={"fabric.cc.algorithm": "none"}, repeat=2, workers=1)
    pd.testing.assert_frame_equal(again, df)


def test_same_file_twice_gives_delta_zero(tiny, client):
    df = fabriclab.compare(tiny, tiny, repeat=2, client=client)
    assert len(df) == 3 and (df.delta == 0).all() and (df.pct == 0).all()
    assert (df.a_min == df.b_min).all() and (df.a_max == df.b_max).all()


def test_metric_choice_and_failed_runs(tiny, client, monkeypatch):
    # perftest's -n 0 is refused before anything runs, naming the side
    with pytest.raises(InvalidArgumentError, match=r"^side B \(perftest\.iters = 0, seed = 1\): perftest\[0\]: -n 0"):
        fabriclab.compare(tiny, set={"perftest.iters": 0}, repeat=1, client=NoClient())
    # With the up-front check of values off (fabrics above
    # CORE_CHECK_MAX_HOSTS hosts), perftest refuses -n 0 when it runs:
    # B's perftest failed, its figures are empty and the run is listed
    monkeypatch.setattr(sweep_checks, "CORE_CHECK_MAX_HOSTS", 0)
    df = fabriclab.compare(tiny, set={"perftest.iters": 0}, repeat=1, metric="sim_time_us,bw_peak", client=client)
    assert [(f["side"], f["seed"], f["item"]) for f in df.attrs["failed"]] == [("B", 1, "perftest[0]")]
    assert "at least 5 iterations" in df.attrs["failed"][0]["error"]
    pt = df[df.item == "perftest[0]"]
    assert set(pt.metric) == {"sim_time_us", "bw_peak"} and (pt.b_runs == 0).all() and pt.delta.isna().all()
    fl = df[df.item == "flows[0]"]
    assert set(fl.metric) == {"sim_time_us"} and (fl.delta == 0).all()


def test_bad_input_is_refused_before_anything_runs(tiny, tmp_path):
    other = tmp_path / "other.toml"
    other.write_text(TINY.replace('name = "cross"', 'name = "crossing"'))
    with pytest.raises(InvalidArgumentError, match="flows\\[0\\] is named 'cross' in .* and 'crossing' in"):
        fabriclab.compare(tiny, other, client=NoClient())
    with pytest.raises(InvalidArgumentError, match="heps.toml has perftest\\[1\\], .*tiny.toml has not"):
        fabriclab.compare(HEPS, tiny, client=NoClient())
    with pytest.raises(ParseError, match="unknown sweep path 'fabrik.cc.algorithm'"):
        fabriclab.compare(tiny, set={"fabrik.cc.algorithm": "none"}, client=NoClient())
    for bad in (0, -1, True, 1.5, 1001, 10**23):
        with pytest.raises(InvalidArgumentError, match="repeat must be an integer from 1 to 1000"):
            fabriclab.compare(tiny, repeat=bad, client=NoClient())
    with pytest.raises(InvalidArgumentError, match="seed cannot be set"):
        fabriclab.compare(tiny, set={"seed": 3}, client=NoClient())
    with pytest.raises(InvalidArgumentError, match="metric 'gflops': no item of the scenario reports it"):
        fabriclab.compare(tiny, metric="gflops", client=NoClient())
    with pytest.raises(InvalidArgumentError, match="empty name between commas"):
        fabriclab.compare(tiny, metric="sim_time_us,,bw_peak", client=NoClient())
    with pytest.raises(InvalidArgumentError, match="a client or scheduler brings its own workers"):
        fabriclab.compare(tiny, client=NoClient(), workers=2)
    # One file and no overrides: B would be A, the same runs.
    with pytest.raises(InvalidArgumentError, match="B would be A itself"):
        fabriclab.compare(tiny, client=NoClient())


# --------------------------------------------------------------------------
# The command line


@pytest.fixture(scope="module")
def heps_cli(tmp_path_factory):
    """``fabriclab compare scenarios/heps.toml --set fabric.topology.host_link_gbps=25
    --repeat 2 --csv --html`` run once, as a program."""
    d = tmp_path_factory.mktemp("compare")
    csv, page = d / "heps.csv", d / "heps.html"
    r = run_cli(
        "compare", HEPS, "--set", "fabric.topology.host_link_gbps=25", "--repeat", "2", "--workers", "2",
        "--csv", csv, "--html", page,
    )
    return r, csv, page


def test_cli_compare_prints_the_table_and_writes_csv(heps_cli):
    r, csv, _ = heps_cli
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == f"A: {HEPS}" and lines[1] == f"B: {HEPS} with fabric.topology.host_link_gbps = 25"
    assert lines[2] == "2 run(s) each, seeds 1..2"
    head = lines[4].split()
    assert head == ["item", "name", "row", "metric", "A", "min", "A", "avg", "A", "max", "B", "min", "B", "avg", "B", "max", "delta", "%"]
    bw = lines[5].split()
    assert bw[:5] == ["perftest[0]", "bandwidth", "65536", "B", "bw_avg_gbps"] and bw[-2].startswith("-")
    assert lines[6].split()[:5] == ["perftest[1]", "latency", "2", "B", "t_typical_us"] and len(lines) == 7
    assert f"comparison written to {csv}" in r.stderr and "2/2 points done" in r.stderr

    df = pd.read_csv(csv)
    assert list(df.item) == ["perftest[0]", "perftest[1]"] and list(df.a_runs) == [2, 2]
    assert_arithmetic(df)
    # 25G host links: the bandwidth falls to about a quarter, the latency rises
    assert df.pct.iloc[0] == pytest.approx(-75, abs=3) and df.delta.iloc[1] > 0
    assert f"{df.pct.iloc[0]:+.1f} %" == bw[-2] + " " + bw[-1]


def test_cli_compare_html_renders_in_a_browser(heps_cli, tmp_path):
    r, _, page = heps_cli
    assert r.returncode == 0, r.stderr
    text = page.read_text()
    assert "A (without)" in text and "bw_avg_gbps" in text
    browser_or_skip()
    check = check_page(page)
    assert check.title == "fabriclab compare"
    assert_renders(check, min_images=0, min_tables=2)  # one table per item
    (tmp_path / "compare.png").write_bytes(check.screenshot_png)


def test_cli_compare_runs_on_a_scheduler_and_exits_1_on_failed_runs(tiny, client, capsys, monkeypatch):
    # the up-front check of values off, as on fabrics above CORE_CHECK_MAX_HOSTS hosts
    monkeypatch.setattr(sweep_checks, "CORE_CHECK_MAX_HOSTS", 0)
    address = client.scheduler.address
    r = main_in_process(capsys, "compare", tiny, "--set", "perftest.iters=0", "--repeat", "1", "--scheduler", address)
    assert r.returncode == 1, r.stderr
    assert "side B, seed 1, perftest[0]: InvalidArgumentError" in r.stderr
    assert "1 run(s) of an item failed" in r.stderr
    assert "flows[0]" in r.stdout


def test_html_of_failed_runs_and_empty_sides(tiny, client, tmp_path, monkeypatch):
    monkeypatch.setattr(sweep_checks, "CORE_CHECK_MAX_HOSTS", 0)  # -n 0 fails when it runs
    df = fabriclab.compare(tiny, set={"perftest.iters": 0}, repeat=1, client=client)
    text = write_html(df, tmp_path / "c.html").read_text()
    assert "Runs that failed" in text and "at least 5 iterations" in text and "0 / 1" not in text
    assert "1 / 0" in text  # the perftest: A's run, none of B's


def test_cli_compare_errors(tiny, tmp_path, capsys):
    def run(*args):
        return main_in_process(capsys, "compare", *args)

    other = tmp_path / "other.toml"
    other.write_text(TINY.replace("[[flows]]", "[[perftest]]\nname = \"crossing\"\ntest = \"ib_write_lat\"\n\n[[flows]]"))
    assert_cli_error(run(tiny, other), "differ in their items", "other.toml has perftest[1], ", "perftest[1] 'crossing'")
    assert_cli_error(run(tiny, HEPS), "differ in their items")
    assert_cli_error(run(tiny, "--set", "fabrik.cc.algorithm=none"), "unknown sweep path 'fabrik.cc.algorithm'")
    assert_cli_error(run(tiny, "--set", "perftest[3].size=8"), "index must be 0")
    assert_cli_error(run(tiny, "--repeat", "0"), "repeat must be an integer from 1 to 1000")
    assert_cli_error(run(tiny, "--repeat", "99999999999999999999999"), "repeat must be an integer from 1 to 1000")
    for bad_client in (5, "x"):
        with pytest.raises(InvalidArgumentError, match="client must be a distributed.Client|scheduler address"):
            fabriclab.compare(tiny, set={"perftest.size": 8}, repeat=1, client=bad_client)
    assert_cli_error(run(tiny, "--set", "fabric.cc.algorithm=none,dcqcn"), "one value per path", "fabriclab sweep")
    assert_cli_error(run(tiny, "--set", "seed=2"), "seed cannot be set")
    assert_cli_error(run(tiny, "--set", "perftest.iters=0"), "side B (perftest.iters = 0, seed = 1): perftest[0]: -n 0")
    assert_cli_error(run(tiny, "--metric", "iops"), "metric 'iops'", "bw_avg_gbps")
    assert_cli_error(run(tiny, "--csv", tmp_path / "no" / "x.csv"), "--csv", "no such directory")
    # outputs never overwrite the inputs, nor each other, and have names
    assert_cli_error(run(tiny, "--set", "perftest.size=8", "--csv", tiny), "--csv", "input of this command")
    assert_cli_error(run(tiny, "--set", "perftest.size=8", "--html", tiny), "--html", "input of this command")
    out = tmp_path / "out.csv"
    assert_cli_error(run(tiny, "--set", "perftest.size=8", "--csv", out, "--html", out), "--csv and --html both name")
    assert_cli_error(run(tiny, "--set", "perftest.size=8", "--csv", ""), "--csv: give a file name")
    empty = tmp_path / "empty.toml"
    empty.write_text('fabric = "heps"\n')
    assert_cli_error(run(empty, "--set", "fabric.cc.algorithm=none"), "runs nothing")
    assert_cli_error(run(tiny, "--workers", "2", "--scheduler", "tcp://127.0.0.1:1"), "not allowed")
    assert_cli_error(run(tmp_path / "missing.toml"), "missing.toml: no such file")
    # and as a program: the message, exit status 2, no traceback
    assert_cli_error(run_cli("compare", tiny, "--set", "imb.np=2"), "no [[imb]] tables")


# --------------------------------------------------------------------------
# Units, items that failed everywhere, inputs, Ctrl-C


def test_a_metric_in_another_unit_on_each_side_is_refused(capsys):
    # perftest's bw_avg is in MiB/s without report_gbits, Gb/s with it:
    # "+11820 %" was a change of unit. Refused before anything runs ...
    with pytest.raises(InvalidArgumentError, match=r"perftest\[0\] bw_avg: side A reports it in Gb/s, side B in MiB/s") as e:
        fabriclab.compare(HEPS, set={"perftest.report_gbits": False}, metric="bw_avg", client=NoClient())
    assert "give both sides the same report_gbits" in str(e.value) and "bw_avg_gbps" in str(e.value)
    assert_cli_error(
        main_in_process(capsys, "compare", HEPS, "--set", "perftest.report_gbits=false", "--metric", "bw_avg,bw_peak"),
        "side A reports it in Gb/s, side B in MiB/s", "--set perftest.report_gbits=true",
    )
    # ... and by compare_runs, from the sweep rows' bw_unit
    row = {"point": 0, "seed": 1, "item": "perftest[0]", "kind": "perftest", "name": None, "bytes": 65536, "error": None}
    runs = pd.DataFrame([
        {"side": "A", **row, "bw_avg": 92.5, "bw_unit": "Gb/s"},
        {"side": "B", **row, "bw_avg": 11030.0, "bw_unit": "MiB/s"},
    ])
    with pytest.raises(InvalidArgumentError, match="side A reports it in Gb/s, side B in MiB/s"):
        compare_runs(runs, metric="bw_avg")
    runs.loc[1, "bw_unit"] = "Gb/s"
    assert compare_runs(runs, metric="bw_avg").b_avg.iloc[0] == 11030.0


def test_an_item_that_failed_on_both_sides_is_a_row_with_no_runs(tmp_path, client, capsys, monkeypatch):
    # It disappeared from the table and the CSV.
    monkeypatch.setattr(sweep_checks, "CORE_CHECK_MAX_HOSTS", 0)  # -n 0 fails when it runs
    bad = tmp_path / "bad.toml"
    bad.write_text(TINY.replace("iters = 50", "iters = 0"))
    csv = tmp_path / "c.csv"
    r = main_in_process(
        capsys, "compare", bad, "--set", "fabric.cc.algorithm=none", "--repeat", "1",
        "--scheduler", client.scheduler.address, "--csv", csv, "--html", tmp_path / "c.html",
    )
    assert r.returncode == 1, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("perftest[0]"))
    assert line.split()[2:] == ["-"] * 10  # row, metric, six figures, delta, %
    df = pd.read_csv(csv)
    pt = df[df.item == "perftest[0]"]
    assert len(pt) == 1 and pt.a_runs.iloc[0] == 0 and pt.b_runs.iloc[0] == 0 and pt.a_avg.isna().all()
    assert list(df.item) == ["perftest[0]", "flows[0]", "flows[0]"]  # in file order
    assert "0 / 0" in (tmp_path / "c.html").read_text()
    # with --metric, one row per metric asked that the item's tool has
    runs = pd.DataFrame([
        {"side": s, "point": 0, "seed": 1, "item": "perftest[0]", "kind": "perftest", "name": None, "error": "RuntimeError: x"}
        for s in ("A", "B")
    ])
    df = compare_runs(runs, metric="sim_time_us,bw_peak")
    assert list(df.metric) == ["sim_time_us", "bw_peak"] and (df.a_runs == 0).all() and (df.b_runs == 0).all()
    assert row_label(df.to_dict("records")[0]) == "-"


def test_outputs_never_overwrite_a_fabric_file_the_inputs_name(tmp_path, capsys):
    from argparse import Namespace

    from fabriclab._checks import command_inputs

    fab = tmp_path / "my.fabric.toml"
    fab.write_text('name = "mine"\n')
    dat = tmp_path / "HPL.dat"
    dat.write_text("HPL\n")
    sc = tmp_path / "sc.toml"
    sc.write_text('fabric = "my.fabric.toml"\n[[hpl]]\ndat = "HPL.dat"\n')
    other = tmp_path / "other.toml"
    other.write_text("x = 1\n")
    found = command_inputs(Namespace(a=str(sc), b=None, sets=[("fabric", ["heps", "other.toml"])]))
    assert {os.path.realpath(p) for p in found} == {os.path.realpath(p) for p in (sc, fab, dat, other)}
    before = fab.read_text()
    # a fabric file named in the scenario, in --set fabric=FILE
    assert_cli_error(main_in_process(capsys, "compare", sc, "--set", "seed=2", "--csv", fab), "--csv", "input of this command")
    assert_cli_error(
        main_in_process(capsys, "compare", HEPS, "--set", f"fabric={fab}", "--html", fab), "--html", "input of this command"
    )
    assert fab.read_text() == before


def _fake_sides(monkeypatch, stop_on_call: int):
    """compare's two sweeps run in this process (no cluster), the
    ``stop_on_call``-th (1: side A, 2: side B) stopped by Ctrl-C after its
    first point, handing that point over as a sweep does."""
    import fabriclab.comparisons as comparisons
    from fabriclab.sweep_rows import point_records, run_point

    calls: list[str] = []

    def run_points(origin, points, *, client=None, progress=False, **_):
        calls.append(origin)
        stop = len(calls) == stop_on_call
        done = points[:1] if stop else points
        df = pd.DataFrame([r for p in done for r in point_records(p, run_point(p.toml, origin))])
        if stop:
            e = KeyboardInterrupt()
            e.result = df
            raise e
        return df

    @contextlib.contextmanager
    def dask_client(client, n, what=""):
        yield NoClient(), "this process"

    monkeypatch.setattr(comparisons, "run_points", run_points)
    monkeypatch.setattr(comparisons, "dask_client", dask_client)


def test_ctrl_c_keeps_the_comparison_of_the_seeds_both_sides_finished(tiny, tmp_path, capsys, monkeypatch):
    _fake_sides(monkeypatch, stop_on_call=2)  # B stopped after seed 1
    with pytest.raises(KeyboardInterrupt) as e:
        fabriclab.compare(tiny, set={"fabric.cc.algorithm": "none"}, repeat=3)
    part = e.value.result
    assert part.attrs["seeds"] == [1] and len(part) == 3
    assert (part.a_runs == 1).all() and (part.b_runs == 1).all()
    _fake_sides(monkeypatch, stop_on_call=2)
    csv = tmp_path / "c.csv"
    r = main_in_process(capsys, "compare", tiny, "--set", "fabric.cc.algorithm=none", "--repeat", "3", "--csv", csv)
    assert r.returncode == 130, r.stderr
    assert "1 run(s) each, seeds 1..1" in r.stdout and "perftest[0]" in r.stdout
    assert "interrupted; the comparison above covers only the seed(s) both sides finished (1) of 1..3" in r.stderr
    assert list(pd.read_csv(csv).b_runs) == [1, 1, 1]
    # stopped in side A: nothing comparable, nothing written
    _fake_sides(monkeypatch, stop_on_call=1)
    with pytest.raises(KeyboardInterrupt) as e:
        fabriclab.compare(tiny, set={"fabric.cc.algorithm": "none"}, repeat=3)
    assert e.value.result is None
    _fake_sides(monkeypatch, stop_on_call=1)
    csv.unlink()
    r = main_in_process(capsys, "compare", tiny, "--set", "fabric.cc.algorithm=none", "--repeat", "3", "--csv", csv)
    assert r.returncode == 130 and r.stdout == ""
    assert "no seed finished on both sides, so nothing comparable was kept and nothing is written" in r.stderr
    assert not csv.exists()
