"""The fabriclab command line, run as a subprocess."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

import fabriclab
import perftest_format
from conftest import GOLDEN, MALFORMED_TOML, NEGATIVE_RATE_TOML, ROOT, ZERO_HOSTS_TOML, run_cli

GOLDEN_BW = GOLDEN / "perftest_ib_write_bw_a_gbits_SYNTHETIC.txt"
GOLDEN_LAT = GOLDEN / "perftest_ib_write_lat_a_SYNTHETIC.txt"
GOLDEN_JSON = GOLDEN / "perftest_ib_write_bw_out_json_SYNTHETIC.json"
ALL_SIZES = [float(2**k) for k in range(1, 24)]


def assert_cli_error(r: subprocess.CompletedProcess, *words: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "fabriclab: error:" in r.stderr
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout
    for w in words:
        assert w in r.stderr, (w, r.stderr)


# --------------------------------------------------------------------------
# The parser, on the golden samples


def test_parser_on_golden_bw():
    out = perftest_format.parse(GOLDEN_BW.read_text())
    assert out.title == "RDMA_Write BW Test"
    assert out.columns == ["#bytes", "#iterations", "BW peak[Gb/sec]", "BW average[Gb/sec]", "MsgRate[Mpps]"]
    assert out.column("#bytes") == ALL_SIZES
    assert out.rows[0] == [2, 5000, 0.15, 0.15, 9.5]
    assert out.settings["TX depth"] == "128" and out.settings["Mtu"] == "4096[B]"


def test_parser_on_golden_lat():
    out = perftest_format.parse(GOLDEN_LAT.read_text())
    assert out.title == "RDMA_Write Latency Test"
    assert out.columns == [
        "#bytes",
        "#iterations",
        "t_min[usec]",
        "t_max[usec]",
        "t_typical[usec]",
        "t_avg[usec]",
        "t_stdev[usec]",
        "99% percentile[usec]",
        "99.9% percentile[usec]",
    ]
    assert out.column("#bytes") == ALL_SIZES
    assert out.rows[-1] == [8388608, 1000, 163.69, 320.63, 168.75, 170.44, 0.02, 202.50, 270.00]


# --------------------------------------------------------------------------
# perftest


def _check_like_golden(ours_text: str, golden_path) -> perftest_format.PerftestOutput:
    ours = perftest_format.parse(ours_text)
    gold = perftest_format.parse(golden_path.read_text())
    assert ours.title == gold.title
    assert ours.columns == gold.columns
    assert len(ours.rows) == len(gold.rows)
    assert ours.column("#bytes") == gold.column("#bytes")
    # Our banner keys are the golden's (an IB link), plus the simulated host
    # pair and, on RoCE, the GID index.
    assert set(gold.settings) <= set(ours.settings)
    assert set(ours.settings) - {"Simulated hosts", "GID index"} <= set(gold.settings)
    return ours


def test_perftest_banner_and_address_lines_follow_the_real_tool():
    """What real perftest prints (public outputs of perftest 4.5-6.x): the
    CQ moderation in force (1 for one size above 8 KiB), the outstanding
    reads and a TX depth of 128 for READ, the default inline sizes, and the
    QP address exchange: one local and one remote line per QP, with OUT for
    READ, no RKey and VAddr for SEND, a GID line on RoCE, LIDs on IB."""
    r = run_cli("perftest", "ib_read_bw", "--client", "h0", "--server", "h4", "-n", "200", "-q", "2")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    out = perftest_format.parse(r.stdout)
    assert (out.settings["TX depth"], out.settings["CQ Moderation"], out.settings["Outstand reads"]) == ("128", "1", "16")
    assert out.settings["GID index"] == "3" and "Max inline data" not in out.settings
    addr = [x for x in lines if "address:" in x]
    assert [x.split()[0] for x in addr] == ["local", "local", "remote", "remote"]
    assert all(re.fullmatch(r" (local|remote) address: LID 0000 QPN 0x[0-9a-f]{4,6} PSN 0x[0-9a-f]{1,6} OUT 0x10 "
                            r"RKey 0x[0-9a-f]{6} VAddr 0x[0-9a-f]{14}", x) for x in addr), addr
    gids = [x for x in lines if x.startswith(" GID: ")]
    assert len(gids) == 4 and gids[0] == " GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:00:00:01"
    # Three dashed lines before the table: banner, addresses, then the header.
    header = next(i for i, x in enumerate(lines) if x.lstrip().startswith("#bytes"))
    assert sum(1 for x in lines[:header] if x.startswith("-----")) == 3
    r = run_cli("perftest", "ib_send_lat", "--fabric", "ihep-ib", "--client", "h0", "--server", "h1", "-n", "50")
    out = perftest_format.parse(r.stdout)
    assert out.settings["Max inline data"] == "236[B]" and "CQ Moderation" not in out.settings
    addr = [x for x in r.stdout.splitlines() if "address:" in x]
    assert addr[0].startswith(" local address: LID 0x01 QPN ") and "RKey" not in addr[0]
    assert addr[1].startswith(" remote address: LID 0x02 ") and "GID" not in r.stdout
    r = run_cli("perftest", "ib_write_lat", "--client", "h0", "--server", "h4", "-n", "50")
    assert perftest_format.parse(r.stdout).settings["Max inline data"] == "220[B]"
    # iWARP connects through the RDMA connection manager.
    r = run_cli("perftest", "ib_write_bw", "--fabric", "sandia-iwarp", "--client", "h0", "--server", "h1", "-n", "50")
    out = perftest_format.parse(r.stdout)
    assert " rdma_cm QPs\t : ON\n Data ex. method : rdma_cm\n" in r.stdout
    assert out.settings["Transport type"] == "IW" and "GID index" not in out.settings


def test_perftest_duration_mode_latency_prints_perftests_duration_table():
    r = run_cli("perftest", "ib_write_lat", "--fabric", "ihep-ib", "--client", "h0", "--server", "h1", "-D", "0.001")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    i = next(i for i, x in enumerate(lines) if x.lstrip().startswith("#bytes"))
    assert lines[i] == " #bytes        #iterations       t_avg[usec]    tps average"
    size, iters, t_avg, tps = lines[i + 1].split()
    assert size == "2" and int(iters) > 100
    # A transaction is a round trip, twice the half-round-trip t_avg.
    assert float(tps) == pytest.approx(1e6 / (2 * float(t_avg)), rel=0.01)


def test_perftest_out_json_has_perftests_layout(tmp_path):
    gold = GOLDEN_JSON.read_text()
    r = run_cli("perftest", "ib_write_bw", "--fabric", "ihep-ib", "--client", "h0", "--server", "h1", "-n", "100",
                "--out_json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    ours = (tmp_path / "perftest_out.json").read_text()
    key = re.compile(r'^"([^"]+)":', re.M)
    assert key.findall(ours) == key.findall(gold)
    assert re.search(r'^"BW_average": \d+\.\d\d,$', ours, re.M) and re.search(r'^"MsgRate": \d+\.\d{6}$', ours, re.M)


def test_cli_write_bw_all_sizes_like_golden():
    r = run_cli("perftest", "ib_write_bw", "--fabric", "heps", "--client", "h0", "--server", "h4", "-a", "--report_gbits", "-n", "5")
    assert r.returncode == 0, r.stderr
    ours = _check_like_golden(r.stdout, GOLDEN_BW)
    assert ours.column("#iterations") == [5.0] * 23
    # Large messages approach the HEPS goodput (92.6 Gb/s at RoCE MTU 1024).
    assert ours.column("BW average[Gb/sec]")[-1] == pytest.approx(92.6, abs=0.5)


def test_cli_write_lat_all_sizes_like_golden():
    r = run_cli("perftest", "ib_write_lat", "--client", "h0", "--server", "h4", "-a", "-n", "5")
    assert r.returncode == 0, r.stderr
    ours = _check_like_golden(r.stdout, GOLDEN_LAT)
    assert ours.rows[0][ours.columns.index("t_typical[usec]")] == pytest.approx(3.72, abs=0.01)


def test_cli_matches_api():
    r = run_cli("perftest", "ib_write_bw", "--client", "h0", "--server", "h4", "--report_gbits", "-n", "200", "--seed", "5")
    assert r.returncode == 0, r.stderr
    ours = perftest_format.parse(r.stdout)
    res = fabriclab.perftest("ib_write_bw", "h0", "h4", seed=5, iters=200, report_gbits=True)
    df = res.df
    assert r.stdout == res.text
    assert ours.rows == [[65536, 200, round(df.bw_peak[0], 2), round(df.bw_avg[0], 2), round(df.msg_rate_mpps[0], 6)]]


def test_cli_heps_default_experiment():
    r = run_cli("perftest", "ib_write_bw", "--fabric", "heps", "--client", "h0", "--server", "h4", "--report_gbits")
    assert r.returncode == 0, r.stderr
    out = perftest_format.parse(r.stdout)
    assert out.column("BW average[Gb/sec]")[0] == pytest.approx(92.6, abs=0.15)


def test_cli_out_json(tmp_path):
    gold = json.loads(GOLDEN_JSON.read_text())
    r = run_cli("perftest", "ib_write_bw", "--client", "h0", "--server", "h4", "-n", "100", "--report_gbits", "--out_json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "perftest_out.json").read_text())
    assert set(doc) == set(gold)
    assert set(doc["results"]) == set(gold["results"])
    assert set(doc["test_info"]) <= set(gold["test_info"])
    assert doc["test_info"]["test"] == gold["test_info"]["test"]
    assert doc["results"]["MsgSize"] == 65536 and doc["results"]["n_iterations"] == 100
    target = tmp_path / "sub.json"
    r = run_cli("perftest", "ib_write_lat", "-n", "100", "--out_json_file", target, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lat = json.loads(target.read_text())
    assert lat["test_info"]["test"] == "RDMA_Write_Latency_Test"
    assert "t_typical" in lat["results"]


def test_cli_counters_and_background():
    r = run_cli(
        "perftest", "ib_write_bw", "--client", "h0", "--server", "h4", "-n", "200", "--report_gbits",
        "--background", "h1:h4:1M:repeat", "--background", "h2:h4:65536", "--counters",
    )
    assert r.returncode == 0, r.stderr
    out = perftest_format.parse(r.stdout)
    assert out.column("BW average[Gb/sec]")[0] < 70
    assert "Port counters:" in r.stdout and "peak_buf_KB" in r.stdout
    assert "QP counters:" in r.stdout and "rate_Gbps" in r.stdout


def test_cli_flows():
    r = run_cli("flows", "--fabric", "heps", "--flow", "h0:h4:1M", "--flow", "h1:h4:1M:2.5", "--counters")
    assert r.returncode == 0, r.stderr
    assert "outcome: Finished" in r.stdout
    lines = [line for line in r.stdout.splitlines() if line.startswith(("h0 ", "h1 "))]
    assert lines[0].split()[:3] == ["h0", "h4", "1048576"]
    assert lines[1].split()[:4] == ["h1", "h4", "1048576", "2.500"]
    assert "Port counters:" in r.stdout and "QP counters:" in r.stdout


def test_cli_flows_telemetry_csv(tmp_path):
    # Two senders into h4 (heps, 2:1 on h4's port), sampled every 5 us: the
    # ports file has one row per port per tick, and h4's egress queue on
    # leaf1 is seen non-empty while the two share it.
    prefix = tmp_path / "incast"
    r = run_cli(
        "flows", "--fabric", "heps", "--flow", "h0:h4:1M", "--flow", "h1:h4:1M",
        "--telemetry", str(prefix), "--sample-us", "5",
    )
    assert r.returncode == 0, r.stderr
    ports = pd.read_csv(f"{prefix}.ports.csv")
    qps = pd.read_csv(f"{prefix}.qps.csv")
    assert list(ports.columns) == ["time_ps", "node", "port", "peer", "queue_bytes", "tx_bytes", "paused"]
    # Every 5 us, and a last sample at the run's end (where the flows end).
    times = sorted(ports.time_ps.unique())
    assert len(ports) % len(times) == 0 and all(t % 5_000_000 == 0 for t in times[:-1])
    assert 0 < times[-1] - times[-2] <= 5_000_000
    last = ports[ports.time_ps == times[-1]]
    assert last[(last.node == "h0")].tx_bytes.iloc[0] > 1 << 20  # the whole flow sent
    assert ports[(ports.node == "leaf1") & (ports.peer == "h4")].queue_bytes.max() > 0
    assert len(qps) > 0 and "telemetry:" in r.stdout
    # A place no file can go is refused before the run, not after it.
    bad = run_cli("flows", "--flow", "h0:h4:1M", "--telemetry", str(tmp_path / "no" / "such" / "x"))
    assert_cli_error(bad, "--telemetry", "no such directory")
    assert "outcome:" not in bad.stdout
    # A period without the telemetry it sets is a mistake, not ignored.
    assert_cli_error(run_cli("flows", "--flow", "h0:h4:1M", "--sample-us", "5"), "give --telemetry PREFIX too")


def test_cli_fabric_list_and_show():
    r = run_cli("fabric", "list")
    assert r.returncode == 0, r.stderr
    assert [line.split()[0] for line in r.stdout.splitlines()] == fabriclab.presets()
    r = run_cli("fabric", "show", "heps")
    assert r.returncode == 0, r.stderr
    assert "hosts:       32" in r.stdout and "switches:    10" in r.stdout and "links:       64" in r.stdout
    # Host links apart from switch links: 32 hosts at 100G, 8 leaves x 2 spines x 2 links.
    assert ": host links" in r.stdout and ": switch links" in r.stdout
    counts = {line.split(":")[-1].strip(): int(line.split("x")[0]) for line in r.stdout.splitlines() if line.strip().endswith("links")}
    assert counts == {"host links": 32, "switch links": 32}, counts
    # Long preset names keep the description column aligned.
    names = fabriclab.presets()
    lines = run_cli("fabric", "list").stdout.splitlines()
    width = max(len(n) for n in names) + 2
    assert all(line[width - 2 : width] == "  " and line[width] != " " for line in lines), lines
    r = run_cli("fabric", "show", "heps", "--toml")
    assert r.returncode == 0, r.stderr
    head, body = r.stdout.split("\n", 3)[:3], r.stdout.split("\n", 3)[3]
    assert body.rstrip("\n") == fabriclab.preset_toml("heps").rstrip("\n")
    assert head[0].startswith("# Preset heps, as written: only the keys it sets")
    assert "fabriclab fabric show FILE --toml" in head[1]
    assert "# HEPS" in r.stdout


def test_cli_fabric_show_file(toml_file):
    from conftest import TWO_HOSTS_TOML

    path = toml_file(TWO_HOSTS_TOML)
    r = run_cli("fabric", "show", path, "--links")
    assert r.returncode == 0, r.stderr
    assert "two-hosts" in r.stdout and "hosts:       2: a b" in r.stdout
    r = run_cli("fabric", "show", path, "--toml")
    assert r.returncode == 0, r.stderr
    assert 'kind = "explicit"' in r.stdout and "[switch]" in r.stdout  # defaults filled in


def test_cli_fabric_show_prints_the_dcqcn_parameters_in_force(toml_file):
    # The preset's values with the file's overrides resolved; none where
    # RoCE QPs do not run DCQCN.
    r = run_cli("fabric", "show", "heps")
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("DCQCN:"))
    assert "alpha per period (period 1 us" in line and "CNPs at most every 4 us per port" in line, line
    assert "byte counter 32767 B" in line and "minimum 1 Mb/s" in line, line
    # An interval of 0: every marked packet gets its CNP (the EANTC beds'
    # ConnectX-4), said as such, not as "at most every 0 us".
    eantc = run_cli("fabric", "show", "eantc-hpc").stdout
    line0 = next(x for x in eantc.splitlines() if x.startswith("DCQCN:"))
    assert "a CNP per marked packet" in line0 and "every 0 us" not in line0, line0
    assert fabriclab.Fabric.preset("heps").dcqcn["alpha_update"] == "period"
    text = fabriclab.preset_toml("heps") + '\n[cc]\nalpha_update = "cnp"\nbyte_counter_bytes = 0\n'
    if "[cc]" in fabriclab.preset_toml("heps"):
        text = fabriclab.preset_toml("heps").replace("[cc]", '[cc]\nalpha_update = "cnp"\nbyte_counter_bytes = 0', 1)
    r = run_cli("fabric", "show", toml_file(text))
    assert r.returncode == 0, r.stderr
    assert "alpha per cnp" in r.stdout and "byte counter none" in r.stdout, r.stdout
    r = run_cli("fabric", "show", "stackhpc-ib")
    assert r.returncode == 0, r.stderr
    assert "DCQCN:" not in r.stdout
    assert fabriclab.Fabric.preset("stackhpc-ib").dcqcn is None


def test_cli_run_scenario():
    r = run_cli("run", ROOT / "scenarios" / "heps.toml")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("RDMA_Write BW Test") == 1
    assert r.stdout.count("RDMA_Write Latency Test") == 1
    bw_part, lat_part = r.stdout.split("=== [2]")
    assert perftest_format.parse(bw_part).column("BW average[Gb/sec]")[0] == pytest.approx(92.6, abs=0.15)
    assert perftest_format.parse(lat_part).column("t_typical[usec]")[0] == pytest.approx(3.72, abs=0.01)


def test_console_script():
    exe = shutil.which("fabriclab")
    if exe is None:
        pytest.skip("the fabriclab console script is not on PATH")
    r = subprocess.run([exe, "fabric", "list"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "heps" in r.stdout
    r = subprocess.run([exe, "perftest", "ib_write_bw", "--server", "h99"], capture_output=True, text=True, timeout=60)
    assert_cli_error(r, "h99")


def test_cli_bench_json():
    r = run_cli("bench", "a2a-32", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["name"] == "a2a-32" and doc["outcome"] == "Finished"
    assert doc["build_s"] > 0  # the fabric build, timed apart from the loop
    r = run_cli("bench", "a2a-32", "--cc", "none")
    assert r.returncode == 0, r.stderr
    assert "events / s" in r.stdout and "fabric build, s" in r.stdout


@pytest.mark.parametrize(
    "fabric, words",
    [
        ("stackhpc-ib", ["transport:   InfiniBand", "routing:     D-mod-K", "congestion:  none"]),
        ("heps", ["transport:   RoCEv2, PFC on priorities 3", "routing:     ECMP", "ECN:         static, Kmin", "congestion:  DCQCN"]),
        ("sandia-iwarp", ["transport:   iWARP", "ECN:         off"]),
    ],
)
def test_fabric_show_says_what_the_fabric_runs(fabric, words, capsys):
    from cluster_help import main_in_process

    r = main_in_process(capsys, "fabric", "show", fabric)
    assert r.returncode == 0, r.stderr
    for w in words:
        assert w in r.stdout, r.stdout


def test_fabric_show_names_adaptive_routing_and_ib_cc(tmp_path, capsys):
    from cluster_help import main_in_process

    ar = tmp_path / "ar.toml"
    ar.write_text(
        '[topology]\nkind = "leaf_spine"\nspines = 2\nleaves = 2\nhosts_per_leaf = 2\nhost_link_gbps = 100\n'
        'uplink_gbps = 100\n[routing]\nmode = "adaptive"\n'
    )
    r = main_in_process(capsys, "fabric", "show", ar)
    assert r.returncode == 0 and "routing:     adaptive" in r.stdout, r.stdout + r.stderr


def test_the_scale_benchmarks_default_to_the_flow_backend(monkeypatch, capsys):
    """perm-64k on the packet engine took 6 minutes and 3.2 GB, nccl-1024
    was refused for 27 GB: the benchmarks of fabrics too large for it run
    on the flow backend unless --backend packet asks otherwise."""
    from cluster_help import main_in_process
    from fabriclab import api

    seen: list[tuple[str, str]] = []

    def fake(name, cc, progress, backend):
        seen.append((name, backend))
        return json.dumps({"name": name, "backend": backend})

    monkeypatch.setattr(api._core, "bench", fake)
    for name in ["a2a-32", "a2a-1024", "perm-64k", "allreduce-1k", "allreduce-16k", "nccl-1024"]:
        fabriclab.bench(name)
    fabriclab.bench("perm-64k", backend="packet")
    assert seen == [
        ("a2a-32", "packet"), ("a2a-1024", "flow"), ("perm-64k", "flow"), ("allreduce-1k", "flow"),
        ("allreduce-16k", "flow"), ("nccl-1024", "flow"), ("perm-64k", "packet"),
    ]
    seen.clear()
    assert main_in_process(capsys, "bench", "perm-64k", "--json", "--quiet").returncode == 0
    assert main_in_process(capsys, "bench", "perm-64k", "--backend", "packet", "--json", "--quiet").returncode == 0
    assert seen == [("perm-64k", "flow"), ("perm-64k", "packet")]


# --------------------------------------------------------------------------
# Errors: exit status 2, "fabriclab: error:", no traceback


@pytest.mark.parametrize(
    "args, words",
    [
        (["perftest", "ib_write_bw", "--client", "h0", "--server", "h99"], ["h99"]),
        (["perftest", "ib_write_bw", "--mtu", "1000"], ["MTU 1000"]),
        (["perftest", "ib_foo"], ["ib_foo"]),
        (["perftest", "ib_write_bw", "--fabric", "nope"], ["no preset named"]),
        (["perftest", "ib_write_bw", "-n", "2"], ["-n 2"]),
        (["perftest", "ib_write_bw", "--fabric", "missing/fabric.toml"], ["missing/fabric.toml"]),
        (["perftest", "ib_write_bw", "-s", "big"], ["big"]),
        (["perftest", "ib_write_bw", "--background", "h0:h4"], ["h0:h4"]),
        (["flows", "--flow", "h0:h99:100"], ["h99"]),
        (["fabric", "show", "nope"], ["no preset named"]),
        (["run", "missing-scenario.toml"], ["missing-scenario.toml"]),
        (["bench", "a2a-1"], ["a2a-1"]),
        (["frobnicate"], []),
    ],
)
def test_cli_errors(args, words):
    assert_cli_error(run_cli(*args), *words)


@pytest.mark.parametrize(
    "text, words",
    [
        (ZERO_HOSTS_TOML, ["hosts"]),
        (NEGATIVE_RATE_TOML, ["host_link_gbps"]),
        (MALFORMED_TOML, ["TOML"]),
    ],
    ids=["zero-hosts", "negative-rate", "malformed"],
)
def test_cli_bad_fabric_files(text, words, toml_file):
    path = toml_file(text)
    assert_cli_error(run_cli("perftest", "ib_write_bw", "--fabric", path), *words)
    assert_cli_error(run_cli("fabric", "show", path), *words)
    scenario = toml_file(f'fabric = "{path.name}"\n[[perftest]]\ntest = "ib_write_bw"\n', "scenario.toml")
    assert_cli_error(run_cli("run", scenario), *words)


def test_a_mistyped_option_gets_the_commands_usage_and_a_suggestion() -> None:
    r = run_cli("imb", "Allreduce", "-np", "4", "--ppm", "2")
    assert_cli_error(r, "unrecognized arguments: --ppm 2", "(did you mean --ppn?)")
    assert "usage: fabriclab imb" in r.stderr, r.stderr
    r = run_cli("fabric", "show", "heps", "--tomll")
    assert_cli_error(r, "did you mean --toml?")
    assert "usage: fabriclab fabric show" in r.stderr, r.stderr
    r = run_cli("perftest", "ib_write_bw", "--clinet", "h0", "--sever", "h4")
    assert_cli_error(r, "did you mean --client for --clinet, --server for --sever?")
    # Nothing close: argparse's words alone.
    assert_cli_error(run_cli("perftest", "ib_write_bw", "--zzzzzz"), "unrecognized arguments: --zzzzzz")


def test_a_fabric_file_that_is_not_toml_is_named(toml_file) -> None:
    path = toml_file('name = "x"\n[topology\n', "broken.toml")
    for args in (["perftest", "ib_write_bw", "--fabric", str(path)], ["fabric", "show", str(path)]):
        assert_cli_error(run_cli(*args), f"fabric file {path}:", "line 2")


def test_version() -> None:
    import fabriclab

    r = run_cli("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"fabriclab {fabriclab.__version__}", (r.stdout, r.stderr)


def test_the_default_fabric_rule_is_what_the_tools_do():
    """--help and the README state one rule for the default fabric; it is
    each tool's actual default."""
    from fabriclab.cli import DEFAULT_FABRIC_RULE, _parser

    sub = next(a for a in _parser()._actions if isinstance(a, __import__("argparse")._SubParsersAction))
    expected = {"perftest": "heps", "flows": "heps", "iperf": "heps", "imb": "eantc-hpc", "hpl": "eantc-hpc",
                "osu": "ihep-roce", "cbench": "sandia-iwarp", "fio": "eantc-storage"}
    for tool, fabric in expected.items():
        default = sub.choices[tool].get_default("fabric")
        assert default == fabric, (tool, default)
        assert f"{fabric}" in DEFAULT_FABRIC_RULE and tool in DEFAULT_FABRIC_RULE
    readme = " ".join((ROOT / "README.md").read_text().replace("`", "").split())
    rule = " ".join(DEFAULT_FABRIC_RULE.split(": ", 1)[1].split(" (")[0].split())
    assert rule in readme, rule


# --------------------------------------------------------------------------
# One progress switch for every tool that runs long


@pytest.mark.parametrize(
    "command",
    [["run"], ["bench"], ["lab", "run"], ["hpl"], ["imb"], ["osu"], ["cbench"], ["fio"], ["sweep"], ["compare"], ["flows"]],
)
def test_every_long_running_command_takes_quiet(command):
    r = run_cli(*command, "--help")
    assert r.returncode == 0, r.stderr
    assert "--quiet" in r.stdout and "no progress bar or lines on stderr" in r.stdout


def test_quiet_silences_progress_and_progress_is_on_by_default():
    hpl = ["hpl", "--fabric", "heps", "-np", "4", "--n", "2000", "--nb", "128"]
    loud, quiet = run_cli(*hpl), run_cli(*hpl, "--quiet")
    assert loud.returncode == quiet.returncode == 0, (loud.stderr, quiet.stderr)
    assert "calls done" in loud.stderr and "calls done" not in quiet.stderr
    assert loud.stdout == quiet.stdout
    # The old opt-in flag still parses.
    assert run_cli(*hpl, "--progress").returncode == 0
    flows = ["flows", "--fabric", "heps", "--flow", "h0:h4:1M", "--flow", "h1:h4:1M"]
    loud, quiet = run_cli(*flows), run_cli(*flows, "--quiet")
    assert "flows done" in loud.stderr and quiet.stderr == "", (loud.stderr, quiet.stderr)
    assert loud.stdout == quiet.stdout
    bench = run_cli("bench", "a2a-32", "--cc", "none", "--quiet", "--json")
    assert bench.returncode == 0 and bench.stderr == "", bench.stderr


def test_every_help_text_formats_without_a_stray_percent():
    # argparse %-formats help strings: a bare "%" crashed `fabriclab --help`;
    # a description is not formatted, so "%%" there prints as it is.
    import argparse

    from fabriclab.cli import _parser

    def walk(p: argparse.ArgumentParser):
        yield p
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for sub in a.choices.values():
                    yield from walk(sub)

    parsers = list(walk(_parser()))
    assert len(parsers) > 20
    for p in parsers:
        text = p.format_help()
        assert "%%" not in text, (p.prog, text)
    r = run_cli("--help")
    assert r.returncode == 0 and "usage:" in r.stdout and "Traceback" not in r.stderr, r.stderr


def test_bad_input_found_by_a_hunt_is_refused_with_exit_2(tmp_path):
    """Cases a bad-input hunt (2026-11-26) found ending in a traceback, a
    hang or a silent wrong result; each is now `fabriclab: error:`, exit 2."""
    bw = ("perftest", "ib_write_bw", "--client", "h0", "--server", "h4", "-s", "4096", "-n", "10")
    # A file that cannot be written (a full disk) or read (an I/O error).
    if Path("/dev/full").exists():
        assert_cli_error(run_cli(*bw, "--out_json_file", "/dev/full"), "cannot write /dev/full (--out_json_file)")
    assert_cli_error(run_cli(*bw, "--out_json_file", ""), "--out_json_file needs a file name")
    if Path("/proc/self/mem").exists():
        assert_cli_error(run_cli("run", "/proc/self/mem"), "/proc/self/mem")
    # Options past what perftest takes, or past any run.
    assert_cli_error(run_cli(*bw, "-Q", "0"), "-Q (CQ moderation) must be at least 1")
    assert_cli_error(run_cli("perftest", "ib_write_bw", "--client", "h0", "--server", "h4", "-D", "1e300"), "longer than any run")
    # Flows that never end (all repeat) or start past the clock.
    assert_cli_error(run_cli("flows", "--flow", "h0:h4:1K:repeat"), "every flow repeats", "--limit-us")
    r = run_cli("flows", "--flow", "h0:h4:1K:repeat", "--limit-us", "20")
    assert r.returncode == 0, r.stderr
    assert_cli_error(run_cli("flows", "--flow", "h0:h4:1K:1e30"), "later than any run")
    # fio with a host named twice ran it twice.
    assert_cli_error(run_cli("fio", "--clients", "h0,h0", "--targets", "h12"), "h0 is listed twice as a client")
    # A lab named twice, and an --html path that cannot be written, before anything runs.
    assert_cli_error(run_cli("lab", "run", "heps", "heps", "--quick"), "lab heps is named twice")
    r = run_cli("lab", "run", "heps", "--quick", "--html", str(tmp_path / "no" / "such" / "r.html"))
    assert r.returncode == 2 and "no such directory" in r.stderr and "ib_write_bw" not in r.stdout, r.stdout + r.stderr
    # A folder that exists but takes no file (/proc) is refused before the runs too.
    r = run_cli("lab", "run", "heps", "--quick", "--html", "/proc/fabriclab-report.html")
    assert r.returncode == 2 and "cannot write there" in r.stderr and "ib_write_bw" not in r.stdout, r.stdout + r.stderr
    assert_cli_error(run_cli("imb", "PingPong", "-np", "2", "--telemetry-us", "10", "--telemetry-csv", str(tmp_path)), "is a directory")
    # A sampling period that is no period is named by its flag, not the core's field.
    for bad in ("0", "-1", "nan"):
        r = run_cli("imb", "PingPong", "-np", "2", "--telemetry-us", bad)
        assert r.returncode == 2 and "--telemetry-us must be a sampling period" in r.stderr, r.stderr
        assert "telemetry_us" not in r.stderr, r.stderr
    # A flow option given twice kept the last; compare with nothing to compare.
    assert_cli_error(run_cli("flows", "--flow", "h0:h20:1K:via=spine0:via=spine1"), "via is given twice")
    assert_cli_error(run_cli("flows", "--flow", "h0:h4:1K:5:wirte"), "'wirte' is not repeat")
    # An option the core refuses is named by its flag on the command line.
    assert_cli_error(run_cli(*bw[:-4], "-s", "-1"), "invalid size '-1': expected a whole number of bytes")
    assert_cli_error(run_cli("imb", "PingPong", "-np", "-1"), "IMB options: -np/--np (job.np)")
    assert_cli_error(run_cli("hpl", "-N", "-5"), "HPL options: -N/--n (n[0])")
    tiny = tmp_path / "tiny.toml"
    tiny.write_text('fabric = "heps"\n[[flows]]\nflows = [{src = "h0", dst = "h4", bytes = 1024}]\n')
    assert_cli_error(run_cli("compare", str(tiny), "--repeat", "1"), "B would be A itself")


@pytest.mark.parametrize(
    "body, want",
    [
        ('cc = "none"\n', "expected a table of keys (a [section] of its own), not a single value"),
        ("topology = 3\n", "expected the [topology] table, with its kind"),
        ("[switch]\nbar = 2\n", "unknown field `bar`"),
    ],
)
def test_a_bad_fabric_file_is_named_and_its_error_in_words(tmp_path, body, want):
    f = tmp_path / "bad.toml"
    topo = "" if body.startswith("topology") else (
        '[topology]\nkind = "leaf_spine"\nspines = 1\nleaves = 2\nhosts_per_leaf = 2\nhost_link_gbps = 100\nuplink_gbps = 100\n'
    )
    f.write_text(body + topo if body.startswith("cc") else topo + body)
    r = run_cli("perftest", "ib_write_bw", "--fabric", str(f))
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(f"fabriclab: error: fabric file {f}: "), r.stderr
    assert want in r.stderr and "Traceback" not in r.stderr
    for rust in ("CcSpec", "TopologySpec", "struct", "internally tagged"):
        assert rust not in r.stderr
    with pytest.raises(fabriclab.FabriclabError, match=f"fabric file {re.escape(str(f))}: "):
        fabriclab.perftest("ib_write_bw", "h0", "h1", fabric=str(f))
