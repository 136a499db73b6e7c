"""The Python API: fabrics, perftest, flows, bench, errors, determinism."""

from __future__ import annotations

import doctest
import json
from pathlib import Path

import pandas as pd
import pytest

import fabriclab
from conftest import MALFORMED_TOML, NEGATIVE_RATE_TOML, ROOT, TWO_HOSTS_TOML, ZERO_HOSTS_TOML
from fabriclab import errors
from fabriclab.api import FLOW_COLUMNS, PORT_COLUMNS, PORT_SAMPLE_COLUMNS, QP_COLUMNS, SAMPLE_COLUMNS


def test_presets():
    names = fabriclab.presets()
    assert names[0] == "heps"
    assert {"heps", "leaf-spine", "bench-a2a-32", "bench-a2a-128"} <= set(names)


def test_preset_fabric():
    f = fabriclab.Fabric.preset("heps")
    assert f.name == "heps"
    assert f.is_preset
    assert len(f.hosts) == 32 and f.hosts[0] == "h0" and f.hosts[-1] == "h31"
    assert f.switches == [f"leaf{i}" for i in range(8)] + ["spine0", "spine1"]
    assert isinstance(f.links, pd.DataFrame)
    assert list(f.links.columns) == ["a", "b", "gbps", "delay_ns"]
    # 32 host links + 8 leaves x 2 spines x 2 parallel links
    assert len(f.links) == 64
    assert (f.links.gbps == 100).all()
    assert "# HEPS data-center RoCE fabric" in f.toml  # comments kept
    assert "latency_ns = 790" in f.normalized_toml
    assert "heps" in repr(f)
    assert fabriclab.Fabric("heps").toml == f.toml


def test_fabric_from_toml_and_load(toml_file):
    f = fabriclab.Fabric.from_toml(TWO_HOSTS_TOML)
    assert f.hosts == ["a", "b"] and f.switches == ["sw"]
    assert f.links.delay_ns.tolist() == [10.0, 50.0]
    assert f.description == "two hosts on one switch"
    assert f.toml == TWO_HOSTS_TOML
    path = toml_file(TWO_HOSTS_TOML)
    g = fabriclab.Fabric.load(path)
    assert g.hosts == f.hosts and g.path == str(path)
    # A preset's TOML round-trips.
    h = fabriclab.Fabric.from_toml(fabriclab.Fabric.preset("heps").toml)
    assert h.hosts == fabriclab.Fabric.preset("heps").hosts


def test_fabric_arguments_are_equivalent(toml_file):
    path = toml_file(TWO_HOSTS_TOML)
    runs = [
        fabriclab.perftest("ib_write_lat", "a", "b", fabric=fab, iters=50).df
        for fab in (str(path), path, fabriclab.Fabric.load(path), fabriclab.Fabric.from_toml(TWO_HOSTS_TOML))
    ]
    for df in runs[1:]:
        pd.testing.assert_frame_equal(df, runs[0])
    heps = [
        fabriclab.perftest("ib_write_lat", "h0", "h4", fabric=fab, iters=50).df
        for fab in ("heps", fabriclab.Fabric.preset("heps"))
    ]
    pd.testing.assert_frame_equal(heps[0], heps[1])


def test_missing_fabric_file():
    with pytest.raises(FileNotFoundError):
        fabriclab.perftest("ib_write_bw", fabric="no/such/fabric.toml")
    with pytest.raises(FileNotFoundError):
        fabriclab.Fabric.load("no_such_fabric.toml")


def test_write_bw_heps():
    """The HEPS seed experiment: 92.6 Gb/s (1024 / (1024 + 82) x 100)."""
    res = fabriclab.perftest("ib_write_bw", "h0", "h4", fabric="heps", report_gbits=True)
    df = res.df
    assert list(df.columns) == fabriclab.BW_COLUMNS
    assert len(df) == 1
    row = df.iloc[0]
    assert row.bytes == 65536 and row.iters == 5000
    assert row.bw_avg_gbps == pytest.approx(92.6, abs=0.15)
    assert row.bw_avg == pytest.approx(row.bw_avg_gbps)  # --report_gbits
    assert df.attrs["bw_unit"] == "Gb/s"  # the unit of bw_peak and bw_avg, as perftest reports them
    assert row.bw_peak >= row.bw_avg - 1e-9
    assert row.msg_rate_mpps == pytest.approx(row.bw_avg_gbps * 1e3 / (65536 * 8), rel=1e-6)


def test_write_bw_attrs():
    res = fabriclab.perftest("ib_write_bw", "h0", "h4", iters=200)
    df = res.df
    assert res.extras["test"] == "ib_write_bw"
    assert res.outcome == "Finished"
    assert "RDMA_Write BW Test" in res.text and "BW average[MiB/sec]" in res.text
    doc = json.loads(res.extras["out_json"])
    assert doc["results"]["MsgSize"] == 65536
    assert doc["results"]["BW_average"] == pytest.approx(df.bw_avg.iloc[0], abs=0.01)
    assert isinstance(res.ports, pd.DataFrame) and list(res.ports.columns) == PORT_COLUMNS
    assert isinstance(res.qps, pd.DataFrame) and list(res.qps.columns) == QP_COLUMNS
    qp0 = res.qps.iloc[0]
    assert (qp0.host, qp0.peer) == ("h0", "h4")
    assert qp0.acked_bytes == 200 * 65536
    # MiB/s vs Gb/s, and the frame says which
    assert df.bw_avg.iloc[0] * 2**20 * 8 / 1e9 == pytest.approx(df.bw_avg_gbps.iloc[0])
    assert df.attrs["bw_unit"] == "MiB/s" and df.head(1).attrs["bw_unit"] == "MiB/s"
    assert res.extras["mtu"] == 1024 and res.extras["tx_depth"] == 128 and res.extras["iters"] == 200


def test_write_lat_heps():
    res = fabriclab.perftest("ib_write_lat", "h0", "h4", fabric="heps", iters=200)
    df = res.df
    assert list(df.columns) == fabriclab.LAT_COLUMNS
    row = df.iloc[0]
    assert row.bytes == 2 and row.iters == 200
    assert row.t_typical_us == pytest.approx(3.72, abs=0.01)
    assert row.t_min_us <= row.t_typical_us <= row.t_max_us
    assert "RDMA_Write Latency Test" in res.text
    assert "bw_unit" not in df.attrs  # no bandwidth columns


@pytest.mark.parametrize("test", fabriclab.TESTS)
def test_every_test_runs(test):
    res = fabriclab.perftest(test, "h0", "h4", iters=20, size=4096)
    df = res.df
    cols = fabriclab.BW_COLUMNS if test.endswith("_bw") else fabriclab.LAT_COLUMNS
    assert list(df.columns) == cols
    assert df.bytes.tolist() == [4096]
    assert res.outcome == "Finished"


def test_options():
    res = fabriclab.perftest("ib_write_bw", "h0", "h4", all_sizes=True, iters=20, mtu=4096, qps=2, tx_depth=16, cq_mod=4)
    df = res.df
    assert df.bytes.tolist() == [2**k for k in range(1, 24)]
    assert res.extras["mtu"] == 4096 and res.extras["tx_depth"] == 16
    assert "Number of qps   : 2" in res.text
    assert "CQ Moderation   : 4" in res.text
    bi = fabriclab.perftest("ib_write_bw", "h0", "h4", iters=50, bidirectional=True, report_gbits=True)
    assert "Bidirectional" in bi.text
    d_res = fabriclab.perftest("ib_write_bw", "h0", "h4", duration_s=0.002, report_gbits=True)
    d = d_res.df
    assert d.bw_avg_gbps.iloc[0] == pytest.approx(92.6, abs=1.0)


def test_background_traffic_shares_the_link():
    alone_res = fabriclab.perftest("ib_write_bw", "h0", "h4", iters=200, report_gbits=True)
    alone = alone_res.df
    shared_res = fabriclab.perftest(
        "ib_write_bw",
        "h0",
        "h4",
        iters=200,
        report_gbits=True,
        background=[fabriclab.Flow("h1", "h4", 1 << 20, repeat=True)],
    )
    shared = shared_res.df
    as_dict_res = fabriclab.perftest(
        "ib_write_bw",
        "h0",
        "h4",
        iters=200,
        report_gbits=True,
        background=[{"src": "h1", "dst": "h4", "bytes": 1 << 20, "repeat": True}],
    )
    as_dict = as_dict_res.df
    pd.testing.assert_frame_equal(shared, as_dict)
    assert shared.bw_avg_gbps.iloc[0] < 0.75 * alone.bw_avg_gbps.iloc[0]


def test_flows():
    r = fabriclab.flows(
        [fabriclab.Flow("h0", "h4", 1 << 20), {"src": "h1", "dst": "h4", "bytes": 1 << 20, "start_us": 1.0}],
        fabric="heps",
        sample_us=5.0,
    )
    assert isinstance(r, fabriclab.Result)
    assert r.outcome == "Finished"
    assert list(r.df.columns) == FLOW_COLUMNS
    assert r.df.src.tolist() == ["h0", "h1"]
    assert r.df.start_ps.tolist() == [0, 1_000_000]
    assert (r.df.fct_us > 0).all()
    # FCT counts from each flow's own start: h1's starts at 1 us.
    assert r.df.fct_us.tolist() == pytest.approx(((r.df.completed_ps - r.df.start_ps) / 1e6).tolist())
    assert r.df.fct_us.iloc[1] == pytest.approx((r.df.completed_ps.iloc[1] - 1_000_000) / 1e6)
    assert r.sim_time_us == pytest.approx(r.df.completed_ps.max() / 1e6)
    assert list(r.ports.columns) == PORT_COLUMNS
    assert list(r.qps.columns)[: len(QP_COLUMNS)] == QP_COLUMNS
    assert list(r.samples.columns)[: len(SAMPLE_COLUMNS)] == SAMPLE_COLUMNS
    assert len(r.samples) > 0 and r.samples.time_ps.is_monotonic_increasing
    assert "h0" in r.summary() and "Finished" in r.summary()
    # Without sampling there are no samples, but the columns are there.
    q = fabriclab.flows([{"src": "h0", "dst": "h1", "bytes": 4096}])
    assert q.samples.empty and list(q.samples.columns) == SAMPLE_COLUMNS
    assert q.port_samples.empty and list(q.port_samples.columns) == PORT_SAMPLE_COLUMNS


def test_flows_port_telemetry_matches_the_counters():
    # A 1 MiB WRITE h0 -> h4 (leaf0 -> leaf1 on heps) sampled every 2 us:
    # every port is sampled at every tick, bytes sent only grow, and the
    # last sample of each port is at most its final tx counter; the path's
    # host port sends about 100 Gb/s x 2 us = 25 000 wire bytes per tick
    # while the transfer runs.
    r = fabriclab.flows([fabriclab.Flow("h0", "h4", 1 << 20)], fabric="heps", sample_us=2.0)
    ps = r.port_samples
    assert list(ps.columns) == PORT_SAMPLE_COLUMNS
    ticks = ps.time_ps.nunique()
    assert len(ps) == ticks * len(r.ports)
    assert ps.groupby(["node", "port"]).tx_bytes.apply(lambda s: s.is_monotonic_increasing).all()
    last = ps.groupby(["node", "port"]).tx_bytes.last()
    final = r.ports.set_index(["node", "port"]).tx_bytes
    assert (last <= final.loc[last.index]).all()
    host = ps[(ps.node == "h0") & (ps.peer == "leaf0")].tx_bytes.diff().dropna()
    busy = host[host > 0].iloc[1:-1]
    assert len(busy) > 10 and abs(busy.mean() - 25_000) < 500


def test_flows_time_limit():
    r = fabriclab.flows([fabriclab.Flow("h0", "h4", 1 << 16, repeat=True)], limit_us=50.0)
    assert r.outcome == "TimeLimit"
    assert r.sim_time_us == pytest.approx(50.0, abs=1.0)
    assert r.df.messages.iloc[0] >= 2


def test_determinism():
    a_res = fabriclab.perftest("ib_write_bw", "h0", "h4", iters=200, seed=7, background=[fabriclab.Flow("h1", "h4", 65536, repeat=True)])
    a = a_res.df
    b_res = fabriclab.perftest("ib_write_bw", "h0", "h4", iters=200, seed=7, background=[fabriclab.Flow("h1", "h4", 65536, repeat=True)])
    b = b_res.df
    pd.testing.assert_frame_equal(a, b)
    assert a_res.text == b_res.text
    pd.testing.assert_frame_equal(a_res.ports, b_res.ports)
    pd.testing.assert_frame_equal(a_res.qps, b_res.qps)
    flows = [fabriclab.Flow(f"h{i}", "h4", 1 << 18) for i in (0, 1, 2, 8)]
    x = fabriclab.flows(flows, seed=3, sample_us=2.0)
    y = fabriclab.flows(flows, seed=3, sample_us=2.0)
    for part in ("df", "ports", "qps", "samples"):
        pd.testing.assert_frame_equal(getattr(x, part), getattr(y, part))


def test_bench():
    r = fabriclab.bench("a2a-32")
    assert r["name"] == "a2a-32" and r["hosts"] == 32 and r["qps"] == 992
    assert r["outcome"] == "Finished"
    # The same run as the core's pinned one (crates/fabriclab-core/src/bench.rs).
    assert r["events"] == 1_009_819 and r["wall_s"] > 0
    assert r["packets_forwarded"] == (128 + 8) * (3 * 992 - 2 * 32 * 3) and r["packets_estimated"] is False
    assert r["last_completion_us"] == pytest.approx(1595.60208)
    # On the flow backend the packets are what its transfers amount to.
    assert fabriclab.bench("a2a-32", backend="flow")["packets_estimated"] is True
    assert r["peak_packets_in_flight"] > 1000 and "run_bytes_per_packet_in_flight" in r


def test_doc_example():
    """The example in the package docstring runs and prints what it says."""
    res = doctest.testmod(fabriclab, verbose=False)
    assert res.attempted >= 4 and res.failed == 0


# --------------------------------------------------------------------------
# Errors


@pytest.mark.parametrize(
    "kwargs, cls",
    [
        (dict(test="ib_write_bw", client="h0", server="h99"), errors.UnknownHostError),
        (dict(test="ib_write_bw", client="nobody", server="h1"), errors.UnknownHostError),
        # The core classes an impossible RoCE MTU as a fabric setting.
        (dict(test="ib_write_bw", mtu=1000), errors.FabricError),
        (dict(test="ib_write_bw", fabric="nope"), errors.InvalidArgumentError),
        (dict(test="ib_foo"), errors.InvalidArgumentError),
        (dict(test="ib_write_bw", iters=2), errors.InvalidArgumentError),
        (dict(test="ib_write_lat", bidirectional=True), errors.InvalidArgumentError),
        (dict(test="ib_write_bw", background=[{"src": "h0", "dst": "h4", "bytes": 1, "colour": "red"}]), errors.InvalidArgumentError),
    ],
)
def test_perftest_errors(kwargs, cls):
    with pytest.raises(cls) as ei:
        fabriclab.perftest(**kwargs)
    assert isinstance(ei.value, errors.FabriclabError)
    assert isinstance(ei.value, ValueError)
    assert ei.value.kind == cls.kind
    assert str(ei.value)  # the core's message


@pytest.mark.parametrize(
    "text, cls, words",
    [
        (ZERO_HOSTS_TOML, errors.FabricError, "hosts"),
        (NEGATIVE_RATE_TOML, errors.FabricError, "host_link_gbps"),
        (MALFORMED_TOML, errors.ParseError, "TOML"),
        ("[topology]\nkind = 'leaf_spine'\nspines = 1\nleaves = 1\nhosts_per_leaf = 2\nhost_link_gbps = 100\nuplink_gbps = 100\ncolour = 'red'\n", errors.ParseError, "colour"),
    ],
    ids=["zero-hosts", "negative-rate", "malformed", "unknown-key"],
)
def test_fabric_errors(text, cls, words, toml_file):
    with pytest.raises(cls, match=words):
        fabriclab.Fabric.from_toml(text)
    path = toml_file(text)
    with pytest.raises(cls, match=words):
        fabriclab.Fabric.load(path)
    with pytest.raises(cls, match=words):
        fabriclab.perftest("ib_write_bw", fabric=str(path))
    with pytest.raises(cls, match=words):
        fabriclab.flows([{"src": "h0", "dst": "h1", "bytes": 1}], fabric=path)


def test_unknown_preset():
    with pytest.raises(errors.InvalidArgumentError, match="no preset named"):
        fabriclab.Fabric.preset("nope")
    with pytest.raises(errors.InvalidArgumentError):
        fabriclab.preset_toml("nope")


def test_other_errors():
    with pytest.raises(errors.UnknownHostError):
        fabriclab.flows([{"src": "h0", "dst": "h99", "bytes": 100}])
    with pytest.raises(errors.InvalidArgumentError):
        fabriclab.flows([{"src": "h0", "dst": "h1", "bytes": 100, "op": "teleport"}])
    with pytest.raises(errors.InvalidArgumentError):
        fabriclab.flows([{"src": "h0", "dst": "h1", "bytes": 100}], sample_us=-1)
    with pytest.raises(errors.InvalidArgumentError):
        fabriclab.bench("nope")
    with pytest.raises(errors.InvalidArgumentError):
        fabriclab.bench("a2a-32", cc="bbr")


def test_type_errors():
    with pytest.raises(TypeError):
        fabriclab.perftest("ib_write_bw", size="big")
    with pytest.raises(TypeError):
        fabriclab.perftest("ib_write_bw", size=1.5)
    with pytest.raises(TypeError):
        fabriclab.perftest("ib_write_bw", report_gbits="yes")
    with pytest.raises(TypeError):
        fabriclab.perftest(42)
    with pytest.raises(TypeError):
        fabriclab.perftest("ib_write_bw", fabric=3)
    with pytest.raises(TypeError):
        fabriclab.flows({"src": "h0", "dst": "h1", "bytes": 1})
    with pytest.raises(TypeError):
        fabriclab.flows([("h0", "h1", 1)])


def test_error_classes():
    for cls in (errors.FabricError, errors.UnknownHostError, errors.InvalidArgumentError, errors.ParseError):
        assert issubclass(cls, errors.FabriclabError)
        assert getattr(fabriclab, cls.__name__) is cls
    assert issubclass(errors.FabriclabError, ValueError)


def test_the_type_stub_lists_every_core_function():
    """_core.pyi declares exactly what the extension exports (issue 15:
    the boundary is typed; a binding without a stub fails here)."""
    import ast

    import fabriclab._core as core

    stub = Path(__file__).resolve().parent.parent / "python" / "fabriclab" / "_core.pyi"
    declared = {n.name for n in ast.parse(stub.read_text()).body if isinstance(n, ast.FunctionDef)}
    exported = {n for n in dir(core) if not n.startswith("_") and callable(getattr(core, n))}
    assert declared == exported, (sorted(exported - declared), sorted(declared - exported))


def test_presets_and_toml_text_reach_the_core_through_separate_entry_points():
    # The core reads a fabric argument as TOML text only; a preset's text
    # comes from _core.preset_toml, so no string is guessed at.
    from fabriclab import _core

    with pytest.raises(fabriclab.ParseError, match="TOML"):
        _core.fabric_info("heps")
    assert "heps" in _core.fabric_info(_core.preset_toml("heps"))
    # A one-line fabric text needs no newline to be taken as text.
    line = (
        'topology = { kind = "leaf_spine", spines = 1, leaves = 1, hosts_per_leaf = 2, '
        "host_link_gbps = 100, uplink_gbps = 100 }"
    )
    f = fabriclab.Fabric.from_toml(line)
    assert (len(f.hosts), f.is_preset, f.toml) == (2, False, line)
    assert fabriclab.Fabric("heps").toml == fabriclab.preset_toml("heps")


def test_a_flow_pinned_through_a_spine_crosses_it(cli):
    # heps: h0 on leaf0, h20 on leaf5; the data leaves spine1 towards leaf5
    # and no other spine carries any of it.
    r = fabriclab.flows([fabriclab.Flow("h0", "h20", 1 << 20, via="spine1")], fabric="heps")
    p = r.ports
    down = p[p.node.str.startswith("spine") & (p.peer == "leaf5")].groupby("node").tx_bytes.sum()
    assert down["spine1"] > 1 << 20
    assert (down.drop("spine1") == 0).all()
    with pytest.raises(fabriclab.FabriclabError, match='no switch "spine99"'):
        fabriclab.flows([fabriclab.Flow("h0", "h20", 4096, via="spine99")], fabric="heps")
    with pytest.raises(fabriclab.FabriclabError, match="no ECMP path from h0 to h1"):
        fabriclab.flows([fabriclab.Flow("h0", "h1", 4096, via="spine0")], fabric="heps")
    # The ACKs come back through spine0 (spine0's downlink to leaf0 carries
    # only them: 1 MiB of data is over 250 ACKs).
    r = fabriclab.flows([fabriclab.Flow("h0", "h20", 1 << 20, via="spine1", return_via="spine0")], fabric="heps")
    p = r.ports
    back = p[p.node.str.startswith("spine") & (p.peer == "leaf0")].groupby("node").tx_bytes.sum()
    assert back["spine0"] > 0 and (back.drop("spine0") == 0).all()
    ok = cli("flows", "--fabric", "heps", "--flow", "h0:h20:1M:via=spine1:return_via=spine0")
    assert ok.returncode == 0 and "Finished" in ok.stdout, ok.stderr
    bad = cli("flows", "--fabric", "heps", "--flow", "h0:h20:1M:via=spine99")
    assert bad.returncode == 2 and bad.stderr.startswith("fabriclab: error:") and "spine99" in bad.stderr


def test_tables_are_built_from_rows_or_from_columns():
    from fabriclab._tables import frame

    rows = [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]
    cols = {"a": [1, 2], "b": ["x", "y"]}
    pd.testing.assert_frame_equal(frame(rows, ["b", "a"]), frame(cols, ["b", "a"]))
    # The core's column tables: numbers (made NumPy arrays first), floats,
    # booleans, lists, a group some rows lack (null), a column of nulls:
    # the same frame, dtypes included, as from one object per row.
    cols = {
        "n": [1, 2, 3],
        "f": [0.5, 1.0, 2.5],
        "ok": [True, False, True],
        "by_prio": [[0] * 8, [1] * 8, [2] * 8],
        "kmin": [None, 12_500, 50_000],
        "error": [None, None, None],
        "node": ["h0", "leaf0", "spine0"],
    }
    rows = [{k: v[i] for k, v in cols.items() if v[i] is not None or k == "error"} for i in range(3)]
    got, want = frame(cols, list(cols)), frame(rows, list(cols))
    pd.testing.assert_frame_equal(got, want)
    assert got["n"].dtype == "int64" and got["kmin"].dtype == "float64" and got["ok"].dtype == "bool"
    for empty in ([], {}, {"a": [], "b": []}):
        df = frame(empty, ["a", "b"])
        assert df.empty and list(df.columns) == ["a", "b"]


def test_missing_files_are_fabriclab_errors_and_os_errors(tmp_path):
    """A file the user named that is absent, a folder or unreadable is a
    FabriclabError (the project's rule) and still the OSError Python code
    expects (a bad-input hunt, 2026-11-26)."""
    from fabriclab.lab import load_lab
    from fabriclab.scenario import load_scenario

    missing = tmp_path / "nope.toml"
    for call in (
        lambda: fabriclab.Fabric.load(missing),
        lambda: fabriclab.run_scenario(missing),
        lambda: load_scenario(missing),
        lambda: load_lab(missing),
        lambda: fabriclab.sweep(missing, {"seed": [1]}),
    ):
        with pytest.raises(errors.MissingFileError) as e:
            call()
        assert isinstance(e.value, FileNotFoundError) and isinstance(e.value, errors.FabriclabError)
        assert e.value.filename == str(missing)
    with pytest.raises(errors.DirectoryGivenError):
        fabriclab.sweep(tmp_path, {"seed": [1]})
    with pytest.raises(IsADirectoryError):
        fabriclab.run_scenario(tmp_path)
    with pytest.raises(errors.InvalidArgumentError, match="at least one flow"):
        fabriclab.flows([])
    with pytest.raises(errors.ArgumentTypeError, match="out must be a path"):
        fabriclab.sweep(ROOT / "scenarios" / "heps.toml", {"seed": [1]}, out=5)  # type: ignore[arg-type]


def test_files_saved_with_a_byte_order_mark_load_as_without(tmp_path):
    """Some Windows editors start UTF-8 files with a byte-order mark;
    fabric, scenario and lab files read the same with one."""
    from fabriclab.scenario import load_scenario

    text = fabriclab.preset_toml("leaf-spine")
    bom = tmp_path / "bom.toml"
    bom.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert fabriclab.Fabric.load(bom).hosts == fabriclab.Fabric.from_toml(text).hosts
    assert fabriclab.Fabric.from_toml("\ufeff" + text).hosts == fabriclab.Fabric.from_toml(text).hosts
    scenario = (ROOT / "scenarios" / "heps.toml").read_bytes()
    (tmp_path / "s.toml").write_bytes(b"\xef\xbb\xbf" + scenario)
    (tmp_path / "plain.toml").write_bytes(scenario)
    a, b = load_scenario(tmp_path / "s.toml"), load_scenario(tmp_path / "plain.toml")
    assert [i.kind for i in a.items] == [i.kind for i in b.items] and len(a.items) > 0
    from fabriclab.lab import _lab_path, load_lab

    lab = Path(_lab_path("heps")).read_bytes()
    (tmp_path / "heps.toml").write_bytes(b"\xef\xbb\xbf" + lab)
    assert load_lab(tmp_path / "heps.toml").metrics == load_lab("heps").metrics


def test_bad_argument_types_found_by_a_hunt_are_fabriclab_errors(tmp_path):
    """Arguments that reached Python's own errors (2026-11-26): an integer
    taken for a file descriptor (Fabric.load(1) closed stdout), a
    non-UTF-8 fabric file, a title or metric of the wrong type, a circular
    argument."""
    import sys

    for bad in (1, 0, None, 2.5):
        with pytest.raises(errors.ArgumentTypeError, match="fabric file must be a path"):
            fabriclab.Fabric.load(bad)
    assert not sys.stdout.closed
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b"\xff\xfe\x00name = 1")
    with pytest.raises(errors.ParseError, match=f"fabric file {binary}: not a UTF-8 text file"):
        fabriclab.Fabric.load(binary)
    with pytest.raises(errors.ArgumentTypeError, match="scenario file must be a path"):
        fabriclab.run_scenario(None)
    loop: list = []
    loop.append(loop)
    with pytest.raises(errors.InvalidArgumentError, match="refers to itself"):
        fabriclab.perftest("ib_write_bw", "h0", "h4", iters=10, background=[{"src": "h1", "dst": "h4", "bytes": 10, "x": loop}])
    from fabriclab.comparisons import _metric_list

    with pytest.raises(errors.ArgumentTypeError, match="metric must be"):
        _metric_list(5)  # type: ignore[arg-type]
    with pytest.raises(errors.ArgumentTypeError, match="metric must be"):
        _metric_list([1, 2])  # type: ignore[list-item]
    samples = pd.DataFrame({c: [] for c in PORT_SAMPLE_COLUMNS})
    with pytest.raises(errors.ArgumentTypeError, match="title must be a string"):
        fabriclab.dashboard(samples, tmp_path / "d.html", title=5)  # type: ignore[arg-type]
    with pytest.raises(errors.InvalidArgumentError, match="is a directory"):
        fabriclab.dashboard(samples, tmp_path)
    with pytest.raises(errors.ArgumentTypeError, match="quick must be True or False"):
        fabriclab.lab_run("heps", quick="yes")  # type: ignore[arg-type]
    empty = tmp_path / "empty.toml"
    empty.write_text('fabric = "heps"\n')
    with pytest.raises(errors.ParseError, match="it runs nothing"):
        fabriclab.run_scenario(empty)
