"""IMB and OSU on simulated fabrics, from Python and the command line.

The simulator's output must be what the real tools print: every section
parses with the parsers written against the real samples (tests/golden),
column for column, with the tools' exact spacing; the figures in the text
are the DataFrame's; and the numbers obey the rules IMB and OSU compute
them by (repetitions, MB/s with 10^6 and t_max, half round trips).
"""

from __future__ import annotations

import pandas as pd
import pytest

import fabriclab
from conftest import run_cli
from fabriclab.errors import FabriclabError, InvalidArgumentError, UnknownHostError
from imb_format import check_imb_layout, parse_imb, parse_imb_header
from osu_format import check_osu_layout, column, parse_osu

SMALL = dict(msglog=(0, 6), iters=20)


@pytest.fixture(scope="module")
def imb_all():
    """Every IMB benchmark on 4 ranks of two hosts (2 per host), small sizes."""
    return fabriclab.imb(None, np=4, ppn=2, fabric="eantc-hpc", npmin=4, **SMALL)


def test_imb_text_parses_column_for_column(imb_all):
    text = imb_all.text
    check_imb_layout(text)
    head = parse_imb_header(text)
    assert head["benchmarks"] == list(fabriclab.IMB_BENCHMARKS)
    sections = parse_imb(text)
    assert [s["name"] for s in sections] == list(fabriclab.IMB_BENCHMARKS)
    for s in sections:
        rows = imb_all.df[imb_all.df.bench == s["name"]]
        assert len(rows) == len(s["rows"]), s["name"]
        cols = s["columns"]
        for printed, (_, r) in zip(s["rows"], rows.iterrows()):
            got = dict(zip(cols, printed))
            assert got["#repetitions"] == r.reps
            if "#bytes" in got:
                assert got["#bytes"] == r.bytes
            if "t_avg[usec]" in got:
                assert got["t_avg[usec]"] == pytest.approx(r.t_avg_us, abs=0.006)
                assert got["t_min[usec]"] <= got["t_avg[usec]"] <= got["t_max[usec]"]
            if "Mbytes/sec" in got:
                assert got["Mbytes/sec"] == pytest.approx(r.mbytes_per_sec, abs=0.006)


def test_imb_follows_imb_rules(imb_all):
    df = imb_all.df
    # Reductions run on MPI_FLOAT: no 1- or 2-byte rows.
    red = df[df.bench.isin(["Allreduce", "Reduce", "Reduce_scatter"])]
    assert set(red.bytes) == {0, 4, 8, 16, 32, 64}
    # Data movement: 0 and every power of two up to 2^6.
    mov = df[df.bench == "Alltoall"]
    assert list(mov.bytes) == [0, 1, 2, 4, 8, 16, 32, 64]
    assert (df.reps == 20).all()
    # MB/s uses 10^6 and t_max; Sendrecv counts both directions.
    sr = df[(df.bench == "Sendrecv") & (df.bytes == 64)].iloc[0]
    assert sr.mbytes_per_sec == pytest.approx(2 * 64 / sr.t_max_us)
    pp = df[(df.bench == "PingPong") & (df.bytes == 64)].iloc[0]
    assert pp.mbytes_per_sec == pytest.approx(64 / pp.t_max_us)
    # Collectives record the algorithm that ran.
    assert (df[df.bench == "Allreduce"].algorithm != "").all()


def test_imb_npmin_runs_doubling_process_counts_and_reports_waiting():
    res = fabriclab.imb(["Barrier", "PingPong"], np=8, fabric="eantc-hpc", msglog=(0, 2), iters=10)
    text = res.text
    secs = parse_imb(text)
    assert [(s["name"], s["np"], s["waiting"]) for s in secs] == [
        ("Barrier", 2, 6),
        ("Barrier", 4, 4),
        ("Barrier", 8, 0),
        ("PingPong", 2, 6),
    ]


def test_imb_repetitions_shrink_for_large_messages():
    res = fabriclab.imb(["Bcast"], np=2, fabric="eantc-hpc", msglog=(19, 20))
    df = res.df
    assert dict(zip(df.bytes, df.reps)) == {0: 1000, 1 << 19: 80, 1 << 20: 40}


def test_forcing_an_algorithm_changes_the_run():
    kw = dict(np=8, fabric="eantc-hpc", npmin=8, msglog=(16, 16), iters=5)
    a_res = fabriclab.imb(["Allreduce"], algorithms={"allreduce": "ring"}, **kw)
    a = a_res.df
    b_res = fabriclab.imb(["Allreduce"], algorithms={"allreduce": "recursive_doubling"}, **kw)
    b = b_res.df
    assert list(a.algorithm) == ["ring", "ring"]
    assert list(b.algorithm) == ["recursive_doubling"] * 2
    assert a.t_avg_us.iloc[-1] != b.t_avg_us.iloc[-1]


def test_imb_is_deterministic():
    kw = dict(np=4, fabric="eantc-hpc", msglog=(0, 12), iters=10, npmin=4)
    a = fabriclab.imb(["Alltoall", "Allreduce"], **kw)
    b = fabriclab.imb(["Alltoall", "Allreduce"], **kw)
    assert a.text == b.text


OSU_SMALL = {"sizes": (1, 64), "iterations": 20, "warmup": 2}


@pytest.mark.parametrize("test", fabriclab.OSU_TESTS)
def test_osu_output_parses(test):
    np = 2 if test in ("osu_latency", "osu_bw", "osu_bibw") else 4
    res = fabriclab.osu(test, np=np, ppn=2 if np == 4 else 1, fabric="ihep-roce", full=True, **OSU_SMALL)
    df = res.df
    text = res.text
    check_osu_layout(text)
    parsed = parse_osu(text)
    assert parsed["version"] == "7.4"
    if test == "osu_barrier":
        assert len(parsed["rows"]) == 1
        return
    assert column(parsed, "Size") == [1, 2, 4, 8, 16, 32, 64]
    assert list(df.bytes) == [1, 2, 4, 8, 16, 32, 64]
    if test in ("osu_bw", "osu_bibw"):
        assert column(parsed, "Bandwidth (MB/s)") == pytest.approx(list(df.mb_per_s), abs=0.006)
    elif test == "osu_mbw_mr":
        assert parsed["pairs"] == 2 and parsed["window_size"] == 64
        assert column(parsed, "MB/s") == pytest.approx(list(df.mb_per_s), abs=0.006)
    else:
        assert column(parsed, "Avg Latency(us)") == pytest.approx(list(df.avg_us), abs=0.006)
    if parsed["columns"][-1] == "Iterations":
        assert set(column(parsed, "Iterations")) == {20}


def test_osu_latency_is_half_a_round_trip_and_rises_with_hops():
    same_leaf_res = fabriclab.osu("latency", np=2, fabric="eantc-hpc", hosts="h0,h1", sizes=(8, 8), iterations=50)
    same_leaf = same_leaf_res.df
    across_res = fabriclab.osu("latency", np=2, fabric="eantc-hpc", hosts="h0,h4", sizes=(8, 8), iterations=50)
    across = across_res.df
    # osu_latency prints half the round trip, so the extra is the one-way
    # path's: two more cut-through switches (600 ns + 64 B at 100G = 5.12
    # ns each) and two 10 m uplinks (50 ns each) = 1.31024 us.
    extra = across.avg_us[0] - same_leaf.avg_us[0]
    assert extra == pytest.approx(2 * (0.600 + 64 * 8 / 100e3) + 2 * 0.050, abs=1e-6), extra


def test_osu_tail_latencies_in_osus_layout(cli):
    """-z: OSU's header (the golden sample's line), one column per
    percentile, ordered, equal to the mean on an idle fabric and spread
    under contention; refused where OSU's limits or our model end."""
    from conftest import GOLDEN

    r = cli("osu", "osu_latency", "-np", "2", "--hosts", "h0,h1", "-m", "1:4", "-i", "200", "-z")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    golden = (GOLDEN / "osu_latency_taillat.txt").read_text().splitlines()
    header = next(x for x in golden if x.startswith("# Size"))
    assert header in lines
    rows = [[float(v) for v in x.split()] for x in lines if x[:1].isdigit()]
    assert [row[0] for row in rows] == [1, 2, 4] and all(len(row) == 5 for row in rows)
    # One ping-pong on an idle fabric takes the same time every iteration.
    assert all(row[1] == row[2] == row[3] == row[4] for row in rows)
    busy = fabriclab.osu(
        "osu_latency", hosts="h0,h1", sizes=(4096, 4096), iterations=300, tail_lat=[50, 90, 99],
        background=[fabriclab.Flow("h2", "h1", 4 << 20, repeat=True), fabriclab.Flow("h4", "h0", 4 << 20, repeat=True)],
    ).df
    assert busy.p50_us[0] < busy.p90_us[0] < busy.p99_us[0]
    assert busy.p50_us[0] <= busy.avg_us[0] * 1.5 and busy.p99_us[0] > busy.avg_us[0]
    for args, words in (
        (["osu_bw", "-z"], "osu_latency only"),
        (["osu_latency", "-z", "1,2,3,4,5,6"], "1 to 5 whole percentiles"),
        (["osu_latency", "-z", "99.9"], "whole percentiles"),
        (["osu_latency", "-z", "50,50"], "twice"),
    ):
        r = cli("osu", args[0], "-np", "2", *args[1:])
        assert r.returncode == 2 and words in r.stderr, r.stderr


def test_bad_input_gets_clear_errors():
    with pytest.raises(InvalidArgumentError, match="unknown IMB benchmark"):
        fabriclab.imb(["PingPang"], np=2)
    with pytest.raises(InvalidArgumentError, match="hosts"):
        fabriclab.imb(["Barrier"], np=400, fabric="eantc-hpc")
    with pytest.raises(UnknownHostError):
        fabriclab.imb(["Barrier"], np=2, hosts="h0,h999")
    with pytest.raises(InvalidArgumentError, match="not an algorithm of allreduce"):
        fabriclab.imb(["Allreduce"], np=2, algorithms={"allreduce": "quantum"})
    with pytest.raises(InvalidArgumentError, match='"block" \\(or "slot"\\) or "round_robin"'):
        fabriclab.imb(["PingPong"], np=2, placement="foo")
    node = fabriclab.imb(["PingPong"], np=2, placement="node", msglog=(0, 1), iters=5)
    rr = fabriclab.imb(["PingPong"], np=2, placement="round_robin", msglog=(0, 1), iters=5)
    assert node.text == rr.text
    # The keyword is named, not the core's field (iter).
    with pytest.raises(InvalidArgumentError, match="^iters must be an integer"):
        fabriclab.imb(["PingPong"], np=2, iters=True)
    with pytest.raises(InvalidArgumentError, match="exactly 2"):
        fabriclab.osu("latency", np=3)
    with pytest.raises(InvalidArgumentError, match="unknown OSU test"):
        fabriclab.osu("osu_nope", np=2)
    with pytest.raises(FabriclabError):
        fabriclab.osu("allreduce", np=4, sizes=(64, 8))
    # sizes as the help's default shows them (1:4M), and a clear word when not
    a = fabriclab.osu("latency", np=2, sizes="4K", iterations=5)
    b = fabriclab.osu("latency", np=2, sizes=(1, 4096), iterations=5)
    assert a.text == b.text
    with pytest.raises(InvalidArgumentError, match="K, M or G suffix"):
        fabriclab.osu("latency", np=2, sizes="1:1.5M")


def test_cli_imb_and_osu(cli):
    r = cli("imb", "PingPong", "Allreduce", "--fabric", "eantc-hpc", "-np", "4", "--ppn", "2",
            "-msglog", "0:4", "-iter", "10", "-npmin", "4", "--quiet")
    assert r.returncode == 0, r.stderr
    check_imb_layout(r.stdout)
    assert [s["name"] for s in parse_imb(r.stdout)] == ["PingPong", "Allreduce"]
    r = cli("osu", "osu_allreduce", "-np", "4", "--ppn", "2", "-m", "1:16", "-i", "10", "-f", "--quiet")
    assert r.returncode == 0, r.stderr
    check_osu_layout(r.stdout)
    r = cli("osu", "osu_latency", "-np", "4")
    assert r.returncode == 2 and "fabriclab: error:" in r.stderr and "exactly 2" in r.stderr
    r = cli("imb", "Allreduce", "-np", "2", "--algorithm", "allreduce")
    assert r.returncode == 2 and "COLLECTIVE=ALGORITHM" in r.stderr
    r = cli("imb", "Allreduce", "-np", "2", "-msglog", "a:b")
    assert r.returncode == 2 and "MIN:MAX" in r.stderr
    # a value that argparse takes for an option: the message says how to give it
    r = cli("imb", "Allreduce", "-np", "2", "-msglog", "-1:2")
    assert r.returncode == 2 and "expected one argument (a value that starts with '-' goes as -msglog=VALUE)" in r.stderr
    r = cli("imb", "Allreduce", "-np", "2", "-msglog=-1:2")
    assert r.returncode == 2 and "-msglog" in r.stderr and "Traceback" not in r.stderr


def test_a_forced_algorithm_of_a_collective_not_in_the_run_gets_a_note(capsys):
    """The core ignores --algorithm for a collective the benchmarks do not
    run: the CLI says so on stderr (a note: the run succeeds), naming the
    collective and the benchmarks that ran."""
    from cluster_help import main_in_process

    run = ("imb", "-np", "2", "-msglog", "0:1", "-iter", "5", "--quiet")
    r = main_in_process(capsys, *run, "PingPong", "--algorithm", "allreduce=ring")
    assert r.returncode == 0, r.stderr
    assert "fabriclab: note: --algorithm allreduce=ring not used: the run has no allreduce (benchmarks that ran: PingPong)" in r.stderr
    # forced barrier: used by every collective run (IMB times calls between barriers)
    r = main_in_process(capsys, *run, "Allreduce", "--algorithm", "allreduce=ring", "--algorithm", "barrier=linear")
    assert r.returncode == 0 and "note: --algorithm" not in r.stderr, r.stderr
    r = main_in_process(capsys, *run, "PingPong", "--algorithm", "barrier=linear")
    assert "--algorithm barrier=linear not used" in r.stderr


def test_module_doc_example_runs():
    import doctest

    import fabriclab.mpi

    res = doctest.testmod(fabriclab.mpi)
    assert res.attempted >= 2 and res.failed == 0


def test_scenario_with_imb_and_osu(tmp_path, cli):
    sc = tmp_path / "mpi.toml"
    sc.write_text(
        'fabric = "eantc-hpc"\n'
        '[[imb]]\nbenchmarks = ["Allreduce"]\nnp = 4\nnpmin = 4\nmsglog = [0, 4]\niters = 10\n'
        '[[osu]]\ntest = "osu_bcast"\nnp = 4\nsizes = [1, 8]\niterations = 10\n'
    )
    res = fabriclab.run_scenario(sc)
    assert [len(r.df) for r in res] == [4, 4]
    r = cli("run", str(sc))
    assert r.returncode == 0, r.stderr
    assert "# Benchmarking Allreduce" in r.stdout and "# OSU MPI Broadcast Latency Test v7.4" in r.stdout
    bad = tmp_path / "bad.toml"
    bad.write_text('[[imb]]\nnp = 4\nbogus = 1\n')
    r = cli("run", str(bad))
    assert r.returncode == 2 and "unknown key 'bogus'" in r.stderr


def test_background_traffic_beside_an_mpi_job(cli):
    kw = dict(np=2, fabric="eantc-hpc", hosts="h0,h1", sizes=(65536, 65536), iterations=20)
    quiet_res = fabriclab.osu("latency", **kw)
    quiet = quiet_res.df
    bg = [fabriclab.Flow(src, "h1", 1 << 20, repeat=True) for src in ("h4", "h5", "h8")]
    busy_res = fabriclab.osu("latency", background=bg, **kw)
    busy = busy_res.df
    assert busy.avg_us[0] > 1.3 * quiet.avg_us[0]
    r = cli("imb", "PingPong", "-np", "2", "--hosts", "h0,h1", "-msglog", "16:16", "-iter", "10",
            "--background", "h4:h1:1048576:repeat", "--quiet")
    assert r.returncode == 0, r.stderr


def test_background_iperf_beside_imb(cli):
    bg = [{"client": "h2", "server": "h19", "bitrate": "20G", "duration": 1000.0, "interval": 0.0}]
    res = fabriclab.imb(["Allreduce"], np=4, hosts="h0,h1,h4,h5", fabric="eantc-hpc", npmin=4,
                       msglog=(3, 6), iters=20, background_iperf=bg)
    assert len(res.extras["iperf_text"]) == 1
    assert "sender" in res.extras["iperf_text"][0]
    assert len(res.extras["tcp"]) == 1 and res.extras["tcp"][0]["tx_bytes"] > 0
    r = cli("imb", "Allreduce", "-np", "4", "--hosts", "h0,h1,h4,h5", "-msglog", "3:4", "-iter", "10",
            "--background-iperf", "h2:h19:20G:2", "--quiet")
    assert r.returncode == 0, r.stderr
    assert "--- background iperf 1 ---" in r.stdout
    # A bad field is named as the user wrote it, not as iperf's flag.
    r = cli("imb", "Allreduce", "-np", "4", "--background-iperf", "h2:h3:10G:0", "--quiet")
    assert r.returncode == 2 and "background iperf h2:h3: -P 0" in r.stderr and "STREAMS is -P" in r.stderr, r.stderr
    r = cli("imb", "Allreduce", "-np", "4", "--background-iperf", "h2", "--quiet")
    assert r.returncode == 2 and "CLIENT:SERVER:RATE" in r.stderr


def test_host_ranges_work_for_every_mpi_tool() -> None:
    # h3-h4 is h3 and h4 for imb, osu and cbench, as for hpl and fio: on
    # eantc-hpc (4 hosts per leaf) that pair crosses the spine, which the
    # default placement (h0, h1, one leaf) does not, so a range read wrong
    # shows in the times.
    def same(run, rng, listed, default):
        a, b, c = run(rng).df, run(listed).df, run(default).df
        pd.testing.assert_frame_equal(a, b)
        assert not a.equals(c)

    same(
        lambda h: fabriclab.imb(["PingPong"], np=2, fabric="eantc-hpc", hosts=h, msglog=(0, 1)),
        "h3-h4",
        "h3,h4",
        "h0,h1",
    )
    same(
        lambda h: fabriclab.osu("osu_latency", np=2, fabric="eantc-hpc", hosts=h, sizes=(8, 8)),
        "h3-h4",
        "h3,h4",
        "h0,h1",
    )
    same(
        lambda h: fabriclab.cbench("rotate", np=4, hosts=h, fabric="eantc-hpc", rotations=1),
        "h2-h5",
        "h2,h3,h4,h5",
        "h0,h1,h2,h3",
    )
    r = run_cli("osu", "osu_latency", "-np", "2", "--hosts", "h0-h1", "-m", "8:8")
    assert r.returncode == 0, r.stderr


def test_a_budget_that_lowers_repetitions_says_so():
    # IMB asks min(1000, 40 MiB / size) = 40 repetitions at 1 MiB; a 1 MiB
    # budget runs one. The result and the CLI say so; max_volume=0 runs
    # IMB's counts and says nothing.
    res = fabriclab.imb(["Alltoall"], np=4, msglog=(20, 20), max_volume=1 << 20)
    df = res.df
    low = res.extras["lowered"]
    assert low and all(x["ran"] < x["asked"] for x in low)
    assert {"label": "Alltoall np=4 1048576 B", "asked": 40, "ran": 1} in low
    row = df[(df.bytes == 1 << 20) & (df.np == 4)].iloc[0]
    assert row.reps == 1
    assert fabriclab.imb(["PingPong"], np=2, msglog=(0, 4), max_volume=0).extras["lowered"] == []
    r = run_cli("imb", "-np", "4", "-msglog", "20:20", "Alltoall", "--max-volume", "1048576", "--quiet")
    assert r.returncode == 0 and "fabriclab: note: the simulation budget" in r.stderr and "1 of 40" in r.stderr
    r = run_cli("osu", "osu_latency", "-np", "2", "-m", "1:64", "--quiet")
    assert "note" not in r.stderr


def test_show_algorithm_lists_the_collective_algorithms_that_ran():
    r = run_cli("imb", "-np", "4", "-msglog", "10:12", "Allreduce", "--show-algorithm", "--quiet")
    assert r.returncode == 0, r.stderr
    tail = r.stdout.split("# Collective algorithms that ran:\n")[1]
    res = fabriclab.imb(["Allreduce"], np=4, msglog=(10, 12))
    df = res.df
    for alg in set(df["algorithm"]):
        assert f": {alg}\n" in tail, (alg, tail)
    assert "Allreduce np 4, " in tail
    plain = run_cli("imb", "-np", "4", "-msglog", "10:12", "Allreduce", "--quiet")
    assert "algorithms that ran" not in plain.stdout
    r = run_cli("osu", "osu_latency", "-np", "2", "-m", "1:8", "--show-algorithm", "--quiet")
    assert "point-to-point only" in r.stdout


def test_osu_sizes_double_from_min_as_osus_loop(capsys):
    """-m MIN:MAX runs MIN, 2 MIN, ... up to MAX (OSU's `size = size ? size
    * 2 : 1`); -m 0 the 0-byte message alone; an empty range is an error."""
    from cluster_help import main_in_process

    def sizes(*m: str) -> list[int]:
        r = main_in_process(capsys, "osu", "osu_latency", "-np", "2", "-m", *m, "-i", "2", "-x", "0", "--quiet")
        assert r.returncode == 0, r.stderr
        return [int(v) for v in column(parse_osu(r.stdout), "Size")]

    assert sizes("3:40") == [3, 6, 12, 24]
    assert sizes("3:3") == [3]
    assert sizes("0") == [0]
    assert sizes("0:2") == [0, 1, 2]
    r = main_in_process(capsys, "osu", "osu_allreduce", "-np", "2", "-m", "0:0", "--quiet")
    assert r.returncode == 2 and "has no 0-byte call" in r.stderr


def test_osu_sizes_take_either_half_as_osu_7_does(capsys):
    """OSU 7's set_message_size(): -m :MAX sets the max only (as -m MAX),
    -m MIN: the min only, the max staying the default (4M point-to-point,
    1M collectives); IMB's -msglog keeps its two forms."""
    from cluster_help import main_in_process

    def sizes(test: str, m: str) -> list[int]:
        r = main_in_process(capsys, "osu", test, "-np", "2", "-m", m, "-i", "2", "-x", "0", "--quiet")
        assert r.returncode == 0, r.stderr
        return [int(v) for v in column(parse_osu(r.stdout), "Size")]

    assert sizes("osu_latency", ":8") == sizes("osu_latency", "8") == [1, 2, 4, 8]
    assert sizes("osu_latency", ":0") == [0]
    assert sizes("osu_latency", "1M:") == [1 << 20, 2 << 20, 4 << 20]
    assert sizes("osu_allreduce", "256K:") == [256 << 10, 512 << 10, 1 << 20]
    r = main_in_process(capsys, "osu", "osu_allreduce", "-np", "2", "-m", "4M:", "--quiet")
    assert r.returncode == 2 and "above the default largest size (1048576 B)" in r.stderr
    for bad in (":", "1:2:3"):
        r = main_in_process(capsys, "osu", "osu_latency", "-np", "2", "-m", bad, "--quiet")
        assert r.returncode == 2 and "MIN:MAX, MAX, :MAX or MIN:" in r.stderr, r.stderr
    with pytest.raises(InvalidArgumentError, match="msglog must look like MIN:MAX or MAX"):
        fabriclab.imb(["PingPong"], np=2, msglog=":3")
