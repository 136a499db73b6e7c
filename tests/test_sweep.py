"""Parameter sweeps on Dask (fabriclab.sweep, ``fabriclab sweep``)."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import threading

import pandas as pd
import pytest

import fabriclab
from cluster_help import NoClient, assert_cli_error, local_client, main_in_process
from conftest import ROOT, run_cli
from fabriclab import sweep_checks, sweep_dask, sweep_writer
from fabriclab.cli_sweep import parse_values
from fabriclab.errors import InvalidArgumentError, ParseError, UnknownHostError
from fabriclab.scenario import load_scenario
from fabriclab.sweep_writer import open_writer
from fabriclab.sweeps import SweepPoint, expand_grid, sweep_points

# the module behind fabriclab.sweep (to monkeypatch it)
sweep_module = sys.modules["fabriclab.sweeps"]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

distributed = pytest.importorskip("distributed")

# Three hosts on one switch; a perftest beside background traffic and a
# 2-to-1 incast: DCQCN and the seed change the figures, each run takes
# milliseconds.
TEMPLATE = """
seed = @SEED@

[fabric]
name = "three-hosts"
[fabric.topology]
kind = "leaf_spine"
spines = 0
leaves = 1
hosts_per_leaf = 3
host_link_gbps = 100
uplink_gbps = 100
[fabric.ecn]
enabled = true
kmin_bytes = 5000
kmax_bytes = 50000
pmax = 0.2
[fabric.cc]
algorithm = "@CC@"

[[perftest]]
name = "bw"
test = "ib_write_bw"
client = "h0"
server = "h1"
size = 65536
iters = 50
report_gbits = true
background = [{src = "h2", dst = "h1", bytes = 65536, repeat = true}]

[[flows]]
name = "incast"
flows = [{src = "h0", dst = "h2", bytes = 300000}, {src = "h1", dst = "h2", bytes = 300000}]
"""

GRID = {"fabric.cc.algorithm": ["none", "dcqcn"], "seed": [1, 2]}


def scenario_text(seed: int = 1, cc: str = "dcqcn") -> str:
    return TEMPLATE.replace("@SEED@", str(seed)).replace("@CC@", cc)


@pytest.fixture
def scenario(tmp_path):
    p = tmp_path / "tiny.toml"
    p.write_text(scenario_text())
    return p


@pytest.fixture(scope="module")
def client():
    """A 2-worker LocalCluster shared by the tests that run sweeps."""
    with local_client() as c:
        yield c


# --------------------------------------------------------------------------
# Grids and paths (no cluster)


def test_expand_grid_product_and_points():
    np = pytest.importorskip("numpy")
    pts = expand_grid({"a.x": [1, 2], "seed": np.arange(3, 5), "b.y": [(0, 1)]})
    assert pts == [
        {"a.x": 1, "seed": 3, "b.y": [0, 1]},
        {"a.x": 1, "seed": 4, "b.y": [0, 1]},
        {"a.x": 2, "seed": 3, "b.y": [0, 1]},
        {"a.x": 2, "seed": 4, "b.y": [0, 1]},
    ]
    assert all(type(p["seed"]) is int for p in pts)
    assert expand_grid([{"seed": 1}, {"perftest.size": 8}]) == [{"seed": 1}, {"perftest.size": 8}]
    with pytest.raises(InvalidArgumentError, match=r"must be a list of values, e.g. \[3\]"):
        expand_grid({"seed": 3})
    with pytest.raises(InvalidArgumentError, match="is empty"):
        expand_grid({"seed": []})
    with pytest.raises(InvalidArgumentError, match="None is not a value"):
        expand_grid({"seed": [None]})
    with pytest.raises(InvalidArgumentError, match="no points"):
        expand_grid([])


def test_paths_apply_to_the_scenario(tmp_path):
    (tmp_path / "base.toml").write_text(scenario_text())
    text = scenario_text().replace(
        "[[flows]]", '[[perftest]]\nname = "lat"\ntest = "ib_write_lat"\nclient = "h0"\nserver = "h2"\n\n[[flows]]'
    )
    path = tmp_path / "two.toml"
    path.write_text(text)
    pts = sweep_points(
        path,
        [
            {
                "seed": 5,
                "fabric.cc.algorithm": "none",
                "fabric.ecn.kmax_bytes": 80000,
                "fabric.switch.latency_ns": 300,  # a section the fabric does not have yet
                "perftest.iters": 60,  # every [[perftest]]
                "perftest[1].size": 8,  # only the second
                "flows[0].flows[1].bytes": 1000,
                "flows.limit_us": 500.0,
            }
        ],
    )
    (pt,) = pts
    assert isinstance(pt, SweepPoint) and pt.index == 0
    doc = tomllib.loads(pt.toml)
    assert doc["seed"] == 5
    assert doc["fabric"]["cc"] == {"algorithm": "none"}
    assert doc["fabric"]["ecn"]["kmax_bytes"] == 80000 and doc["fabric"]["ecn"]["kmin_bytes"] == 5000
    assert doc["fabric"]["switch"] == {"latency_ns": 300}
    assert [t["iters"] for t in doc["perftest"]] == [60, 60]
    assert doc["perftest"][0]["size"] == 65536 and doc["perftest"][1]["size"] == 8
    assert doc["flows"][0]["flows"][1]["bytes"] == 1000 and doc["flows"][0]["limit_us"] == 500.0
    # The point's file is a scenario of its own, items in file order.
    point_file = tmp_path / "point.toml"
    point_file.write_text(pt.toml)
    sc = load_scenario(point_file)
    assert [(i.kind, i.name, i.seed) for i in sc.items] == [("perftest", "bw", 5), ("perftest", "lat", 5), ("flows", "incast", 5)]
    assert 'algorithm = "none"' in sc.fabric.normalized_toml
    assert pt.label() == (
        'point 0 (seed = 5, fabric.cc.algorithm = "none", fabric.ecn.kmax_bytes = 80000, '
        "fabric.switch.latency_ns = 300, perftest.iters = 60, perftest[1].size = 8, "
        "flows[0].flows[1].bytes = 1000, flows.limit_us = 500.0)"
    )


def test_preset_and_file_fabrics_are_inlined(tmp_path):
    fab = tmp_path / "fabrics" / "mine.toml"
    fab.parent.mkdir()
    fab.write_text(fabriclab.preset_toml("leaf-spine"))
    path = tmp_path / "s.toml"
    path.write_text('fabric = "fabrics/mine.toml"\n[[perftest]]\ntest = "ib_write_bw"\nclient = "h0"\nserver = "h4"\n')
    # A fabric file is inlined (points need no shared files) ...
    (pt,) = sweep_points(path, {"seed": [3]})
    doc = tomllib.loads(pt.toml)
    assert doc["fabric"]["name"] == "leaf-spine" and doc["seed"] == 3
    # ... a preset stays a name unless one of its settings is swept ...
    a, b = sweep_points(path, {"fabric": ["heps", "leaf-spine"]})
    assert tomllib.loads(a.toml)["fabric"] == "heps" and tomllib.loads(b.toml)["fabric"] == "leaf-spine"
    (c,) = sweep_points(path, {"fabric": ["heps"], "fabric.ecn.kmax_bytes": [200000]})
    heps = tomllib.loads(c.toml)["fabric"]
    assert heps["name"] == "heps" and heps["ecn"]["kmax_bytes"] == 200000 and heps["ecn"]["kmin_bytes"] == 7000


@pytest.mark.parametrize(
    "grid, error, words",
    [
        ({"fabrik.cc.algorithm": ["none"]}, ParseError, ["unknown sweep path 'fabrik.cc.algorithm'", "perftest, flows"]),
        ({"iperf.size": [1]}, ParseError, ["unknown sweep path 'iperf.size'"]),
        ({"imb.np": [2]}, ParseError, ["no [[imb]] tables", "it has [[perftest]], [[flows]]"]),
        ({"perftest[1].size": [1]}, InvalidArgumentError, ["1 [[perftest]] table(s)", "index must be 0"]),
        ({"perftest": [1]}, ParseError, ["say which key", "perftest.size"]),
        ({"fabric..cc": [1]}, ParseError, ["invalid sweep path"]),
        ({"seed": ["x"]}, ParseError, ['point 0 (seed = "x")', "seed must be a non-negative integer"]),
        # values the core rejects, with the point named
        ({"fabric.topology.spines": [0, "two"]}, ParseError, ['point 1 (fabric.topology.spines = "two")', '[fabric.topology] spines: invalid type: string "two", expected a whole number']),
        ({"fabric.cc.algorithm": ["none", "bogus"]}, ParseError, ["point 1", "unknown variant `bogus`"]),
        ({"fabric.cc.bogus": [1]}, ParseError, ["unknown field `bogus`"]),
        ({"fabric": ["no-such-preset"]}, InvalidArgumentError, ["no preset named"]),
        # what the core checks only when it runs is checked up front too
        ({"perftest.sise": [1]}, ParseError, ["point 0 (perftest.sise = 1)", "[[perftest]] number 1: unknown key 'sise' (did you mean 'size'?)"]),
        ({"perftest.size": ["big"]}, InvalidArgumentError, ["size must be an integer"]),
        ({"flows.bogus": [1]}, ParseError, ["unknown key 'bogus'"]),
        ({"perftest.server": ["h9"]}, UnknownHostError, ['server: the fabric has no host "h9"']),
        ({"flows[0].flows[2].bytes": [1]}, InvalidArgumentError, ["flows has 2 element(s)"]),
        ({"flows.flows.bytes": [1]}, InvalidArgumentError, ["flows is a list", "flows[0]"]),
    ],
)
def test_validation_errors_before_any_run(scenario, grid, error, words):
    with pytest.raises(error) as e:
        sweep_points(scenario, grid)
    for w in words:
        assert w in str(e.value), (w, str(e.value))
    with pytest.raises(error):  # sweep checks before it submits anything
        fabriclab.sweep(scenario, grid, client=NoClient())


def test_out_and_worker_errors(scenario, tmp_path, monkeypatch):
    with pytest.raises(InvalidArgumentError, match="write a .csv or a .parquet file"):
        fabriclab.sweep(scenario, GRID, client=NoClient(), out=tmp_path / "x.txt")
    monkeypatch.setattr(sweep_writer, "has_pyarrow", lambda: False)
    with pytest.raises(InvalidArgumentError, match=r"needs pyarrow \(pip install pyarrow\)"):
        fabriclab.sweep(scenario, GRID, client=NoClient(), out=tmp_path / "x.parquet")
    with pytest.raises(InvalidArgumentError, match="cannot write"):
        fabriclab.sweep(scenario, GRID, client=NoClient(), out=tmp_path / "no-dir" / "x.csv")
    with pytest.raises(InvalidArgumentError, match="a client or scheduler brings its own workers"):
        fabriclab.sweep(scenario, GRID, client=NoClient(), workers=2)
    with pytest.raises(InvalidArgumentError, match="positive integer"):
        fabriclab.sweep(scenario, GRID, workers=0)


def test_csv_written_incrementally(tmp_path):
    out = tmp_path / "rows.csv"
    w = open_writer(out, ["seed"])
    w.add([{"point": 2, "seed": 3, "item": "perftest[0]", "kind": "perftest", "name": None, "bytes": 8, "error": None}])
    first = pd.read_csv(out)
    assert list(first.columns) == ["point", "seed", "item", "kind", "name", "bytes", "error"]
    assert list(first.point) == [2]
    w.add([{"point": 0, "seed": 1, "item": "perftest[0]", "kind": "perftest", "name": None, "bytes": 16, "error": None}])
    assert list(pd.read_csv(out).point) == [2, 0]  # appended as it finished
    # a new column: the file is rewritten with it
    w.add([{"point": 1, "seed": 2, "item": "flows[0]", "kind": "flows", "name": None, "fct_us": 1.5, "error": None}])
    again = pd.read_csv(out)
    assert list(again.columns) == ["point", "seed", "item", "kind", "name", "bytes", "fct_us", "error"]
    assert list(again.point) == [2, 0, 1] and again.fct_us.iloc[2] == 1.5
    w.finish(again.sort_values("point"))
    assert list(pd.read_csv(out).point) == [0, 1, 2]


def test_parse_cli_values():
    assert parse_values("none,dcqcn") == ["none", "dcqcn"]
    assert parse_values("1,2.5,true,-3") == [1, 2.5, True, -3]
    assert parse_values("1..3,8") == [1, 2, 3, 8]
    assert parse_values("[0, 10],[0,20]") == [[0, 10], [0, 20]]
    assert parse_values('"a,b",c,{x = 1}') == ["a,b", "c", {"x": 1}]
    assert parse_values("fabrics/my.toml,heps") == ["fabrics/my.toml", "heps"]


def test_import_does_not_load_dask():
    r = subprocess.run(
        [sys.executable, "-c", "import sys, fabriclab; print('distributed' in sys.modules)"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.stdout.strip() == "False", r.stderr


# --------------------------------------------------------------------------
# Sweeps on a LocalCluster


def test_sweep_matches_direct_runs(scenario, tmp_path, client, capsys):
    df = fabriclab.sweep(scenario, GRID, client=client, progress=True)
    assert "4/4 points done" in capsys.readouterr().err
    lead = ["point", "fabric.cc.algorithm", "seed", "item", "kind", "name"]
    assert list(df.columns[: len(lead)]) == lead and df.columns[-1] == "error"
    assert df.error.isna().all() and df.attrs["failed"] == [] and df.attrs["points"] == 4
    assert df.attrs["params"] == ["fabric.cc.algorithm", "seed"]
    assert list(df.point) == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
    assert list(df.item[:3]) == ["perftest[0]", "flows[0]", "flows[0]"]
    for point, (cc, seed) in enumerate([("none", 1), ("none", 2), ("dcqcn", 1), ("dcqcn", 2)]):
        rows = df[df.point == point]
        assert set(rows["fabric.cc.algorithm"]) == {cc} and set(rows.seed) == {seed}
        direct = tmp_path / f"direct{point}.toml"
        direct.write_text(scenario_text(seed, cc))
        bw, fl = fabriclab.run_scenario(direct)
        got = rows[rows.kind == "perftest"]
        pd.testing.assert_frame_equal(
            got[fabriclab.BW_COLUMNS].reset_index(drop=True), bw.df[fabriclab.BW_COLUMNS], check_dtype=False
        )
        assert got.outcome.iloc[0] == bw.outcome and got.events.iloc[0] == bw.events
        got = rows[rows.kind == "flows"]
        cols = list(fl.df.columns)
        pd.testing.assert_frame_equal(got[cols].reset_index(drop=True), fl.df, check_dtype=False)
        assert set(got.outcome) == {fl.outcome} and set(got.sim_time_us) == {fl.sim_time_us}
    # the parameters matter here, so the comparison above means something
    bw = df[df.kind == "perftest"].set_index("point").bw_avg_gbps
    assert bw[0] == bw[1] and bw[2] != bw[0] and bw[2] != bw[3]
    # same grid, same seeds: the same table on one worker (a LocalCluster started and closed by sweep)
    pd.testing.assert_frame_equal(fabriclab.sweep(scenario, GRID, workers=1), df)


def test_bad_values_are_refused_before_any_point_runs(scenario):
    # perftest's -n 0, in point 1 of 3: found by the check of every point
    # (each item's run, simulating nothing), before a cluster starts
    with pytest.raises(InvalidArgumentError, match=r"^point 1 \(perftest\.iters = 0\): perftest\[0\]: -n 0: perftest needs at least 5 iterations"):
        fabriclab.sweep(scenario, [{"perftest.iters": 50}, {"perftest.iters": 0}, {"perftest.iters": 60}], client=NoClient())
    with pytest.raises(InvalidArgumentError, match=r"^point 0 \(flows\.limit_us = -1\.0\): flows\[0\]: time limit must be positive"):
        fabriclab.sweep(scenario, {"flows.limit_us": [-1.0]}, client=NoClient())


def test_failed_points_do_not_lose_the_others(scenario, client, monkeypatch):
    # With the up-front check of values off (as on fabrics above
    # CORE_CHECK_MAX_HOSTS hosts), perftest refuses -n 0 when it runs:
    # that item fails, the point's flows still run
    monkeypatch.setattr(sweep_checks, "CORE_CHECK_MAX_HOSTS", 0)
    df = fabriclab.sweep(scenario, [{"perftest.iters": 50}, {"perftest.iters": 0}, {"perftest.iters": 60}], client=client)
    assert df.attrs["failed"] == [1]
    bad = df[df.point == 1]
    assert list(bad.item) == ["perftest[0]", "flows[0]", "flows[0]"]
    assert "at least 5 iterations" in bad.error.iloc[0] and bad.error.iloc[0].startswith("InvalidArgumentError: ")
    assert bad.error.iloc[1:].isna().all() and bad.fct_us.iloc[1:].notna().all()
    assert df[df.point != 1].error.isna().all() and df[df.point == 2].iters.iloc[0] == 60

    # a point whose task fails outside the items (a worker lost, say): one error row
    real = sweep_dask.run_point

    def flaky(text, origin, audit=None):
        if "seed = 2" in text:
            raise RuntimeError("worker lost")
        return real(text, origin, audit)

    monkeypatch.setattr(sweep_dask, "run_point", flaky)
    df = fabriclab.sweep(scenario, {"seed": [1, 2, 3]}, client=client)
    assert df.attrs["failed"] == [1]
    lost = df[df.point == 1]
    assert len(lost) == 1 and pd.isna(lost.item.iloc[0]) and lost.error.iloc[0] == "RuntimeError: worker lost"
    assert len(df[df.point == 0]) == 3 and len(df[df.point == 2]) == 3


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_sweep_writes_out(scenario, tmp_path, client, suffix):
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    out = tmp_path / f"sweep{suffix}"
    df = fabriclab.sweep(scenario, {"seed": [1, 2], "perftest.size": [4096, 65536]}, client=client, out=out)
    back = pd.read_csv(out) if suffix == ".csv" else pd.read_parquet(out)
    assert list(back.columns) == list(df.columns) and len(back) == len(df) == 12
    assert list(back.point) == list(df.point)
    assert back.bw_avg_gbps.tolist()[::3] == pytest.approx(df.bw_avg_gbps.tolist()[::3])


# --------------------------------------------------------------------------
# The command line


def test_cli_sweep(scenario, tmp_path):
    out = tmp_path / "out.csv"
    r = run_cli("sweep", scenario, "--set", "fabric.cc.algorithm=none,dcqcn", "--set", "seed=1..2", "--workers", "2", "-o", out)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["point", "fabric.cc.algorithm", "seed", "item", "name", "result"]
    assert len(lines) == 1 + 4 * 2
    assert lines[1].split()[:5] == ["0", "none", "1", "perftest[0]", "bw"] and "Gb/s at 65536 B" in lines[1]
    assert "2 flow(s), fct max" in lines[2]
    assert "4/4 points done" in r.stderr and f"rows written to {out}" in r.stderr
    assert sorted(set(pd.read_csv(out).point)) == [0, 1, 2, 3]

    # a bad value: refused before anything runs, exit status 2
    r = run_cli("sweep", scenario, "--set", "perftest.iters=0,50", "--workers", "1", "--quiet")
    assert r.returncode == 2, r.stderr
    assert r.stdout == "" and "fabriclab: error: point 0 (perftest.iters = 0): perftest[0]: -n 0" in r.stderr
    assert "Traceback" not in r.stderr


def test_cli_sweep_failed_item(scenario, capsys, monkeypatch):
    # a failing item (the value check off, as on fabrics above
    # CORE_CHECK_MAX_HOSTS hosts): the table shows it, exit status 1
    monkeypatch.setattr(sweep_checks, "CORE_CHECK_MAX_HOSTS", 0)
    r = main_in_process(capsys, "sweep", scenario, "--set", "perftest.iters=0,50", "--workers", "1", "--quiet")
    assert r.returncode == 1, r.stderr
    assert "error: InvalidArgumentError: -n 0" in r.stdout and "1 of 2 points had errors" in r.stderr
    assert "Traceback" not in r.stderr


def test_cli_sweep_errors(scenario, capsys):
    def run(*args):
        return main_in_process(capsys, "sweep", *args)

    assert_cli_error(run(scenario, "--set", "fabrik.cc.algorithm=none"), "unknown sweep path")
    assert_cli_error(run(scenario, "--set", "seed"), "expected PATH=V1,V2")
    assert_cli_error(run(scenario, "--set", "perftest[3].size=8"), "index must be 0")
    assert_cli_error(run(scenario, "--set", "fabric.cc.algorithm=none,bogus"), "point 1", "unknown variant")
    # the generated fabric TOML's line numbers and excerpt are left out: the key is named
    r = run(scenario, "--set", "fabric.cc.algorithm=bogus")
    assert_cli_error(r, 'point 0 (fabric.cc.algorithm = "bogus"): scenario ', ": fabric.cc.algorithm: unknown variant `bogus`, expected `none` or `dcqcn`")
    assert "line" not in r.stderr and "^^^" not in r.stderr
    assert_cli_error(run(scenario, "--set", "seed=1", "--set", "seed=2"), "given twice")
    # two spellings of one setting: the last would win while the table
    # showed the first
    assert_cli_error(
        run(scenario, "--set", "backend=flow", "--set", "fabric.sim.backend=packet"),
        "sweep paths 'backend' and 'fabric.sim.backend' set the same thing; give one of them",
    )
    assert_cli_error(run(scenario, "--set", "perftest.size=8", "--set", "perftest[0].size=16"), "set the same thing")
    assert_cli_error(run(scenario, "--set", "seed=3..1"), "range '3..1' is empty")
    assert_cli_error(run(scenario, "--set", "seed=1", "--workers", "2", "--scheduler", "tcp://127.0.0.1:1"), "not allowed")
    assert_cli_error(run(scenario, "--set", "seed=1", "--scheduler", "login1"), "scheduler address 'login1'", "tcp://HOST:PORT")
    assert_cli_error(run("missing.toml", "--set", "seed=1"), "missing.toml: no such file")
    r = run(scenario, "--set", "seed=1,2", "--set", "perftest.size=8,64", "--dry-run")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0].split() == ["point", "seed", "perftest.size"] and len(r.stdout.splitlines()) == 5
    assert "4 point(s) checked; nothing run" in r.stderr
    # and as a program: the message, exit status 2, no traceback
    assert_cli_error(run_cli("sweep", scenario, "--set", "imb.np=2"), "no [[imb]] tables")


# --------------------------------------------------------------------------
# Slurm, through dask-jobqueue (no Slurm here: the job script is built, and
# its worker command is run on this machine in place of a Slurm job)


def test_slurm_cluster_job_script_and_scheduler(scenario):
    # dask-jobqueue 0.9 replaces the SIGINT handler when imported (its
    # runner module: Ctrl-C becomes sys.exit()); keep Python's for the
    # tests after this one, which send themselves SIGINT.
    before = signal.getsignal(signal.SIGINT)
    try:
        jq = pytest.importorskip("dask_jobqueue")
    finally:
        signal.signal(signal.SIGINT, before)
    with jq.SLURMCluster(
        queue="debug",
        account="proj",
        cores=2,
        processes=2,  # = cores: single-threaded workers, as docs/sweeps.md says
        memory="4GB",
        walltime="00:10:00",
        job_script_prologue=["source /opt/venvs/fabriclab/bin/activate"],
        scheduler_options={"host": "127.0.0.1", "dashboard_address": "127.0.0.1:0"},
    ) as cluster:
        script = cluster.job_script()
        for line in ("#SBATCH -p debug", "#SBATCH -A proj", "#SBATCH --cpus-per-task=2", "#SBATCH -t 00:10:00", "source /opt/venvs/fabriclab/bin/activate"):
            assert line in script, (line, script)
        command = script.strip().splitlines()[-1]
        assert "distributed.cli.dask_worker" in command and cluster.scheduler_address in command
        assert "--nthreads 1" in command and "--nworkers 2" in command

        worker = subprocess.Popen(
            shlex.split(command) + ["--host", "127.0.0.1", "--no-dashboard"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            with distributed.Client(cluster.scheduler_address, set_as_default=False) as c:
                c.wait_for_workers(2, timeout=60)
            r = run_cli("sweep", scenario, "--set", "seed=1,2", "--scheduler", cluster.scheduler_address)
            assert r.returncode == 0, r.stderr
            assert len(r.stdout.splitlines()) == 1 + 2 * 2 and "2/2 points done" in r.stderr
            assert f"on {cluster.scheduler_address} (2 worker(s) now)" in r.stderr
        finally:
            worker.terminate()
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:  # pragma: no cover
                worker.kill()
                worker.wait(timeout=30)


# --------------------------------------------------------------------------
# Sweeps that lose nothing


def test_a_killed_worker_loses_no_point(scenario, tmp_path):
    """kill -9 a worker process in the middle of a sweep on a real
    LocalCluster: its point runs again on a worker (up to
    RETRIES_ON_WORKER_DEATH more times), every point ends, the file is whole."""
    grid = [{"perftest.iters": 40000 + i} for i in range(6)]
    out = tmp_path / "killed.csv"
    with local_client() as c:
        pids = list(c.run(os.getpid).values())
        killer = threading.Timer(1.5, os.kill, (pids[0], signal.SIGKILL))
        killer.start()
        try:
            df = fabriclab.sweep(scenario, grid, client=c, out=out)
        finally:
            killer.cancel()
        alive = list(c.run(os.getpid).values())
    assert pids[0] not in alive, "the worker was killed during the sweep"
    assert df.attrs["failed"] == [] and df.error.isna().all()
    assert sorted(set(df.point)) == list(range(6))
    back = pd.read_csv(out)
    assert sorted(set(back.point)) == list(range(6)) and len(back) == len(df)
    # The killed point's results are those of an undisturbed run.
    again = fabriclab.sweep(scenario, grid[:1], workers=1)
    a = df[(df.point == 0) & (df.kind == "perftest")].bw_avg_gbps.iloc[0]
    assert a == again[again.kind == "perftest"].bw_avg_gbps.iloc[0]


def test_resume_runs_only_the_missing_and_failed_points(scenario, tmp_path, client, monkeypatch):
    out = tmp_path / "part.csv"
    full = fabriclab.sweep(scenario, GRID, client=client, out=out)
    # An interrupted sweep: points 1 and 3 missing, point 2 failed.
    part = pd.read_csv(out)
    part = part[~part.point.isin([1, 3])].copy()
    part["error"] = part["error"].astype(object)
    part.loc[part.point == 2, "error"] = "KilledWorker: ..."
    part.to_csv(out, index=False)
    ran: list[int] = []
    real = sweep_module.run_all

    def counting(c, points, *a, **k):
        ran.extend(p.index for p in points)
        return real(c, points, *a, **k)

    monkeypatch.setattr(sweep_module, "run_all", counting)
    df = fabriclab.sweep(scenario, GRID, client=client, out=out, resume=True)
    assert sorted(ran) == [1, 2, 3]
    pd.testing.assert_frame_equal(df.reset_index(drop=True), full.reset_index(drop=True), check_dtype=False)
    back = pd.read_csv(out)
    assert sorted(set(back.point)) == [0, 1, 2, 3] and back.error.isna().all()
    # Everything there: nothing runs.
    ran.clear()
    fabriclab.sweep(scenario, GRID, client=NoClient(), out=out, resume=True)
    assert ran == []


def test_resume_needs_the_same_sweeps_file(scenario, tmp_path, capsys):
    with pytest.raises(InvalidArgumentError, match="resume needs out="):
        fabriclab.sweep(scenario, GRID, client=NoClient(), resume=True)
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    with pytest.raises(InvalidArgumentError, match="not the output of this sweep"):
        fabriclab.sweep(scenario, GRID, client=NoClient(), out=other, resume=True)
    r = main_in_process(capsys, "sweep", str(scenario), "--set", "seed=1,2", "--resume")
    assert r.returncode == 2 and "--resume needs -o FILE" in r.stderr


def test_resume_refuses_another_scenario_and_a_grid_that_drops_points(scenario, tmp_path, client, capsys):
    out = tmp_path / "r.csv"
    grid = {"seed": [1, 2]}
    df = fabriclab.sweep(scenario, grid, client=client, out=out)
    shas = df.groupby("point").scenario_sha.unique()
    assert all(len(s) == 1 and len(s[0]) == 16 for s in shas) and shas[0][0] != shas[1][0]
    assert list(df.columns[-2:]) == ["scenario_sha", "error"]
    before = out.read_bytes()
    # Another scenario file with the same swept paths: refused.
    other = tmp_path / "other.toml"
    other.write_text(scenario_text(cc="none"))
    with pytest.raises(InvalidArgumentError, match=r"point 0 \(seed = 1\) run from another scenario"):
        fabriclab.sweep(other, grid, client=NoClient(), out=out, resume=True)
    r = main_in_process(capsys, "sweep", other, "--set", "seed=1,2", "-o", out, "--resume")
    assert r.returncode == 2 and "run from another scenario" in r.stderr and "Traceback" not in r.stderr
    # The same file, edited since: refused too.
    scenario.write_text(scenario_text().replace("iters = 50", "iters = 60"))
    with pytest.raises(InvalidArgumentError, match="or was edited since"):
        fabriclab.sweep(scenario, grid, client=NoClient(), out=out, resume=True)
    scenario.write_text(scenario_text())
    # A narrower grid would drop the rows of seed = 2 from the file.
    with pytest.raises(InvalidArgumentError, match=r"a point this grid does not have \(seed = 2\)"):
        fabriclab.sweep(scenario, {"seed": [1]}, client=NoClient(), out=out, resume=True)
    assert out.read_bytes() == before
    # A wider grid runs only the new point, and the dry run says so.
    r = main_in_process(capsys, "sweep", scenario, "--set", "seed=1..3", "-o", out, "--resume", "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "3 point(s) checked: 2 already in" in r.stderr and "1 to run" in r.stderr
    listed = [line.split()[0] for line in r.stdout.splitlines()[1:] if line.strip() and line.split()[0].isdigit()]
    assert listed == ["2"], r.stdout
    # A failed point counts too: the narrower grid would drop its rows.
    part = pd.read_csv(out)
    part["error"] = part["error"].astype(object)
    part.loc[part.point == 1, "error"] = "KilledWorker: ..."
    part.to_csv(out, index=False)
    with pytest.raises(InvalidArgumentError, match=r"a point this grid does not have \(seed = 2\)"):
        fabriclab.sweep(scenario, {"seed": [1]}, client=NoClient(), out=out, resume=True)
    # A file without the digests (an older fabriclab's) cannot be checked.
    old = pd.read_csv(out).drop(columns=["scenario_sha"])
    old.to_csv(out, index=False)
    with pytest.raises(InvalidArgumentError, match="has no column 'scenario_sha'"):
        fabriclab.sweep(scenario, grid, client=NoClient(), out=out, resume=True)


def test_a_ctrl_c_during_a_points_bookkeeping_is_raised_after_it():
    """The table and the file get a point together: a SIGINT that arrives
    while its rows are stored is raised once they are."""
    steps: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        with sweep_dask._sigint_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            steps.append("table")
            steps.append("file")
    assert steps == ["table", "file"]
    # Under a handler of the caller's own, or SIGINT ignored, nothing is deferred.
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with sweep_dask._sigint_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            steps.append("ignored")
    finally:
        signal.signal(signal.SIGINT, old)
    assert steps[-1] == "ignored"


def _stop_after_first_point(c, points, origin, writer, progress, done):
    """run_all stopped by Ctrl-C once its first point finished."""
    from fabriclab.sweep_rows import point_records, run_point

    p = points[0]
    done[p.index] = point_records(p, run_point(p.toml, origin))
    raise KeyboardInterrupt


@contextlib.contextmanager
def _no_cluster(client, workers):
    yield NoClient(), "no cluster"


def test_ctrl_c_hands_over_the_finished_points(scenario, capsys, monkeypatch):
    alone = fabriclab.sweep(scenario, {"seed": [1]}, workers=1)
    monkeypatch.setattr(sweep_module, "run_all", _stop_after_first_point)
    monkeypatch.setattr(sweep_module, "dask_client", _no_cluster)
    with pytest.raises(KeyboardInterrupt) as e:
        fabriclab.sweep(scenario, {"seed": [1, 2, 3]})
    part = e.value.result  # type: ignore[attr-defined]
    assert set(part.point) == {0} and part.attrs["points"] == 3 and part.error.isna().all()
    pd.testing.assert_frame_equal(part.reset_index(drop=True), alone.reset_index(drop=True), check_dtype=False)
    # The CLI prints the finished points' table, then says it stopped.
    r = main_in_process(capsys, "sweep", scenario, "--set", "seed=1..3", "--quiet")
    assert r.returncode == 130
    assert "perftest[0]" in r.stdout and "flows[0]" in r.stdout
    assert "interrupted; the table above is the 1 finished point(s) of 3" in r.stderr


def test_ctrl_c_in_a_terminal_stops_a_real_sweep_cleanly(scenario, tmp_path):
    """SIGINT to the whole process group, as a terminal sends it: the
    driver prints the finished points' table, the file holds them, exit
    130; the worker processes print no traceback."""
    import re
    import time

    out = tmp_path / "r.csv"
    p = subprocess.Popen(
        [sys.executable, "-m", "fabriclab.cli", "sweep", str(scenario), "--set", "seed=1..5000", "--workers", "1",
         "-o", str(out), "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and (not out.exists() or out.read_text().count("\n") < 10):
        time.sleep(0.2)
    os.killpg(p.pid, signal.SIGINT)
    stdout, stderr = p.communicate(timeout=90)
    assert p.returncode == 130, stderr
    assert "Traceback" not in stderr, stderr
    m = re.search(r"interrupted; the table above is the (\d+) finished point\(s\) of 5000; .* holds them", stderr)
    assert m, stderr
    n = int(m.group(1))
    assert n >= 2 and len({line.split()[0] for line in stdout.splitlines()[1:]}) == n
    assert pd.read_csv(out).point.nunique() == n


def _rows(n: int, start: int = 0) -> list[dict]:
    return [{"point": i, "x": i, "item": 0, "kind": "flows", "name": "a", "fct_us": 1.5 * i} for i in range(start, start + n)]


def _count_rewrites(monkeypatch, cls) -> dict[str, int]:
    """Count the whole-file writes of writer class ``cls``."""
    calls = {"n": 0}
    real = cls.rewrite

    def counted(self, df):
        calls["n"] += 1
        real(self, df)

    monkeypatch.setattr(cls, "rewrite", counted)
    return calls


def test_the_csv_file_grows_by_appends_not_rewrites(tmp_path, monkeypatch):
    # 200 points of the same columns: the CSV is written whole once (its
    # header), then appended; a point with a new column rewrites it once.
    calls = _count_rewrites(monkeypatch, sweep_writer.CsvWriter)
    csv = tmp_path / "r.csv"
    w = open_writer(csv, ["x"])
    for r in _rows(200):
        w.add([r])
    assert calls["n"] == 1
    w.add([{"point": 200, "x": 200, "item": 0, "kind": "flows", "name": "a", "fct_us": 1.0, "extra": 7}])
    assert calls["n"] == 2
    back = pd.read_csv(csv)
    assert len(back) == 201 and list(back["x"]) == list(range(201)) and back["extra"].iloc[-1] == 7


@pytest.mark.parametrize("n", [20, 200])
def test_the_parquet_file_grows_by_parts_not_rewrites(tmp_path, monkeypatch, n):
    # Every point's rows go to a part of their own (no wait between parts
    # here); the file itself is written once, when the sweep stops, however
    # many points there are. A point with a new column or a value of
    # another type is just another part.
    pytest.importorskip("pyarrow")
    calls = _count_rewrites(monkeypatch, sweep_writer.ParquetWriter)
    monkeypatch.setattr(sweep_writer, "PARQUET_EVERY_S", 0.0)
    monkeypatch.setattr(sweep_writer, "PARQUET_RUN_SHARE", 0.0)
    pq = tmp_path / "r.parquet"
    w = open_writer(pq, ["x"])
    for r in _rows(n - 2):
        w.add([r])
    w.add([{**_rows(1, n - 2)[0], "extra": 7}])  # a new column
    w.add([{**_rows(1, n - 1)[0], "x": "text"}])  # another type
    parts = tmp_path / "r.parquet.parts"
    assert calls["n"] == 0 and len(list(parts.iterdir())) == n and not pq.exists()
    # A killed driver leaves the parts: a resume reads them.
    done = sweep_writer.read_done(str(pq), ["x"])
    assert sorted(done["point"]) == list(range(n))
    # Stopped (Ctrl-C, an exception): one write, every row, no parts left.
    w.close()
    assert calls["n"] == 1 and not parts.exists()
    back = pd.read_parquet(pq)
    assert list(back["point"]) == list(range(n)) and back["extra"].iloc[-2] == 7
    assert list(back.columns) == ["point", "x", "item", "kind", "name", "fct_us", "extra", "error"]
    assert sorted(sweep_writer.read_done(str(pq), ["x"])["point"]) == list(range(n))


def test_parquet_parts_wait_and_resume_keeps_the_file_first(tmp_path):
    pytest.importorskip("pyarrow")
    pq = tmp_path / "r.parquet"
    w = open_writer(pq, ["x"])
    for r in _rows(50):
        w.add([r])  # within 2 s of the start: no part yet
    assert not (tmp_path / "r.parquet.parts").exists()
    w.write_part()
    w.finish(pd.DataFrame(_rows(50)))
    assert len(pd.read_parquet(pq)) == 50 and not (tmp_path / "r.parquet.parts").exists()
    # A resume starts from the kept rows; a part holding a point the file
    # also has (a resume killed as it started) does not double it.
    w = open_writer(pq, ["x"], keep=_rows(10))
    w.add(_rows(1, 5))
    w.write_part()
    w.add(_rows(1, 10))
    w.write_part()
    done = sweep_writer.read_done(str(pq), ["x"])
    assert sorted(done["point"]) == list(range(11))


def test_a_torn_last_line_is_dropped_with_its_point_on_resume(tmp_path):
    csv = tmp_path / "r.csv"
    csv.write_text("point,x,item,kind,name,fct_us,error\n0,0,0,flows,a,1.5,\n1,1,0,flows,a,2.5,\n1,1,1,flows,b,3.5,\n2,2,0,fl")
    done = sweep_writer.read_done(str(csv), ["x"])
    # Point 2 is torn; point 1 wrote the last whole line, so it runs again too.
    assert sorted(set(done["point"])) == [0]
    csv.write_text("point,x,item,kind,name,fct_us,error\n0,0,0,flows,a,1.5,\n1,1,0,flows,a,2.5,\n")
    assert sorted(set(sweep_writer.read_done(str(csv), ["x"])["point"])) == [0, 1]


def test_hosts_are_checked_with_the_tools_host_syntax(tmp_path):
    # An [[imb]] item's hosts take ranges as imb() does; a host the fabric
    # lacks is named before anything runs (the core checks hosts only when
    # an item runs).
    path = tmp_path / "imb.toml"
    path.write_text('fabric = "eantc-hpc"\n[[imb]]\nbenchmarks = ["PingPong"]\nnp = 2\nhosts = "h0-h1"\n')
    (pt,) = sweep_points(path, {"seed": [1]})
    assert tomllib.loads(pt.toml)["imb"][0]["hosts"] == "h0-h1"
    with pytest.raises(UnknownHostError, match=r'point 0 \(imb.hosts = "h0,h999"\): imb\[0\]: hosts: the fabric has no host "h999"'):
        sweep_points(path, {"imb.hosts": ["h0,h999"]})


def test_a_sweep_outside_the_main_guard_is_refused_with_the_fix(tmp_path):
    """Dask's worker processes re-run the main script: a sweep called at
    its top level, unguarded, gets the fix instead of "Nanny failed to
    start" (and no worker is started)."""
    import subprocess
    import sys

    scenario = ROOT / "scenarios" / "heps.toml"
    body = f'import fabriclab\nfabriclab.sweep({str(scenario)!r}, {{"seed": [1, 2]}}, workers=2)\n'
    script = tmp_path / "unguarded.py"
    script.write_text(body)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode != 0
    assert 'line 2: a sweep on a local Dask cluster must be started under `if __name__ == "__main__":`' in r.stderr, r.stderr
    assert "Nanny" not in r.stderr


def test_the_main_guard_is_read_from_the_script() -> None:
    import ast

    from fabriclab.sweep_dask import _guarded

    tree = ast.parse('import x\nx.run()\nif __name__ == "__main__":\n    x.run()\n\nif "__main__" == __name__:\n    x.run()\n')
    assert not _guarded(tree, 2)
    assert _guarded(tree, 4)
    assert _guarded(tree, 7)


def test_a_points_items_run_under_the_clients_audit_setting(tmp_path, monkeypatch):
    # A running cluster's workers do not inherit the client's environment:
    # the task carries FABRICLAB_AUDIT (`fabriclab --audit sweep ...`).
    from fabriclab import sweep_rows

    seen = []
    real = sweep_rows.run_item

    def recording(sc, item):
        seen.append(os.environ.get("FABRICLAB_AUDIT"))
        return real(sc, item)

    monkeypatch.setattr(sweep_rows, "run_item", recording)
    monkeypatch.delenv("FABRICLAB_AUDIT", raising=False)
    rows = sweep_rows.run_point(scenario_text(), str(tmp_path), "1")
    assert seen and set(seen) == {"1"} and "FABRICLAB_AUDIT" not in os.environ
    assert not any(r.get(sweep_rows.ERROR) for r in rows)
    seen.clear()
    sweep_rows.run_point(scenario_text(), str(tmp_path))
    assert set(seen) == {None}


# --------------------------------------------------------------------------
# A flows item whose run failed; perftest's units; progress; 1e3


def test_a_flows_items_run_failure_has_its_own_column_and_each_flow_keeps_its_error(tmp_path):
    # The item's TransportRetryError was copied onto every flow's row,
    # over the flows' own `error`: the flow that finished read as failed.
    from fabriclab.cli_sweep import summary
    from fabriclab.sweep_rows import ITEM_ERROR, failed_rows, point_records, run_point
    from test_failures import CUT_FLOWS, _cut_fabric

    (tmp_path / "cut.fabric.toml").write_text(_cut_fabric())
    sc = tmp_path / "cut.toml"
    sc.write_text(
        'fabric = "cut.fabric.toml"\n[[perftest]]\ntest = "ib_write_bw"\nclient = "h0"\nserver = "h2"\n'
        f'size = 4096\niters = 20\n[[flows]]\nname = "cut"\n{CUT_FLOWS}'
    )
    pt = sweep_points(sc, {"seed": [1]})[0]
    df = pd.DataFrame(point_records(pt, run_point(pt.toml, str(sc))))
    flows = df[df.kind == "flows"].set_index("dst")
    assert flows.loc["h3", "error"] == "transport retry counter exceeded"
    assert pd.isna(flows.loc["h4", "error"]) and flows.loc["h4", "fct_us"] > 0
    assert flows[ITEM_ERROR].str.startswith("TransportRetryError: 1 flow(s) failed: transport retry counter exceeded").all()
    # perftest's rows say the unit of bw_avg and bw_peak (MiB/s without report_gbits)
    perf = df[df.kind == "perftest"]
    assert list(perf.bw_unit) == ["MiB/s"] and perf[ITEM_ERROR].isna().all() and perf.error.isna().all()
    assert list(failed_rows(df)) == [False, True, True]
    df.attrs["params"] = ["seed"]
    assert "error: TransportRetryError: 1 flow(s) failed" in summary(df)
    # a file whose point failed only so is run again by --resume
    out = tmp_path / "out.csv"
    df.to_csv(out, index=False)
    assert sweep_writer.read_rows(str(out), ["seed"])[1] == {0}


def test_sweep_progress_takes_a_callable_and_refuses_anything_else(scenario, client):
    from fabriclab.errors import ArgumentTypeError

    with pytest.raises(ArgumentTypeError, match="progress must be True, False or a callable, not str"):
        fabriclab.sweep(scenario, {"seed": [1]}, client=NoClient(), progress="yes")
    seen: list = []
    fabriclab.sweep(scenario, {"seed": [1, 2]}, client=client, progress=seen.append)
    assert [(p.tool, p.unit, p.done, p.total) for p in seen] == [("sweep", "points", 1.0, 2.0), ("sweep", "points", 2.0, 2.0)]
    assert {p.label for p in seen} == {"point 0 (seed = 1)", "point 1 (seed = 2)"}


def test_sweep_progress_is_a_bar_on_a_terminal(monkeypatch, capsys):
    from fabriclab import progress

    monkeypatch.setattr(progress, "_terminal_columns", lambda file: 80)
    prog = sweep_dask.SweepProgress(2, True)
    prog.update(False, "point 0")
    prog.update(False, "point 1")
    err = capsys.readouterr().err
    assert "sweep" in err and "2/2" in err and "points done" not in err  # tqdm's, not the lines'


def test_a_whole_number_with_an_exponent_is_an_integer(capsys):
    values = parse_values("1e3,2.5e3,1E6,2.0,2.5,1e-3")
    assert values == [1000, 2500, 1000000, 2.0, 2.5, 0.001]
    assert [type(v) for v in values] == [int, int, int, float, float, float]
    r = main_in_process(capsys, "sweep", ROOT / "scenarios" / "heps.toml", "--set", "perftest.size=1e3", "--dry-run")
    assert r.returncode == 0 and "perftest.size" in r.stdout and "1000" in r.stdout, r.stderr


def test_a_sweep_started_afresh_refuses_a_file_that_holds_results(scenario, tmp_path, capsys):
    """Run again without resume, a sweep used to overwrite its finished
    points; now it says how to keep them, and the file is untouched."""
    out = tmp_path / "done.csv"
    out.write_text("point,seed,error\n0,1,\n")
    before = out.read_bytes()
    with pytest.raises(InvalidArgumentError, match=r"already exists.*resume"):
        fabriclab.sweep(scenario, GRID, client=NoClient(), out=out)
    for extra in ([], ["--dry-run"]):
        r = main_in_process(capsys, "sweep", str(scenario), "--set", "seed=1,2", "-o", str(out), *extra)
        assert r.returncode == 2 and "--resume" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert out.read_bytes() == before
    # The parts a stopped Parquet sweep left count as results too.
    pq = tmp_path / "done.parquet"
    os.mkdir(sweep_writer.parts_dir(str(pq)))
    with pytest.raises(InvalidArgumentError, match="holds the parts of a sweep"):
        fabriclab.sweep(scenario, GRID, client=NoClient(), out=pq)
    # An empty file (made by mktemp, say) is fine to write.
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    r = main_in_process(capsys, "sweep", str(scenario), "--set", "seed=1,2", "-o", str(empty), "--dry-run")
    assert r.returncode == 0, r.stderr


def test_a_results_file_that_cannot_be_written_loses_no_point(scenario, tmp_path, client, monkeypatch, capsys):
    """A full disk under -o used to end the sweep with exit 2 and no table:
    the points that ran were lost with the file. Now the sweep goes on and
    hands every point over with the error."""
    calls = {"n": 0}
    real = sweep_writer.CsvWriter.add

    def full_after_one(self, records):
        calls["n"] += 1
        if calls["n"] > 1:
            raise OSError(28, "No space left on device")
        return real(self, records)

    monkeypatch.setattr(sweep_writer.CsvWriter, "add", full_after_one)
    with pytest.raises(InvalidArgumentError, match="could not be written .No space left on device.") as e:
        fabriclab.sweep(scenario, GRID, client=client, out=tmp_path / "full.csv")
    df = e.value.result
    assert sorted(df.point.unique()) == [0, 1, 2, 3] and df.error.isna().all()
    calls["n"] = 0
    r = main_in_process(
        capsys, "sweep", str(scenario), "--set", "seed=1,2", "-o", str(tmp_path / "full2.csv"),
        "--scheduler", client.scheduler.address, "--quiet",
    )
    assert r.returncode == 2 and "could not be written" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert "point" in r.stdout and len(r.stdout.splitlines()) >= 3, r.stdout
