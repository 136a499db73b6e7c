"""HTML dashboards of port telemetry (fabriclab.dashboard, `fabriclab dashboard`)."""

from __future__ import annotations

import doctest
import html
import os
import re
import subprocess
import sys

import pandas as pd
import pytest

import fabriclab
from conftest import TWO_HOSTS_TOML, run_cli
from fabriclab.api import PORT_SAMPLE_COLUMNS
from fabriclab.dashboards import CAPTIONS, busiest_ports, check_port_samples, panels, port_rates

INCAST = [fabriclab.Flow(f"h{i}", "h0", 4 << 20) for i in range(4, 12)]  # 8:1 into h0, from other leaves


@pytest.fixture(scope="module")
def incast():
    """8 hosts on leaves 1-2 send 4 MiB each to h0 (leaf-spine), sampled every
    10 us until the flows complete (about 2.7 ms simulated)."""
    res = fabriclab.flows(INCAST, fabric="leaf-spine", sample_us=10)
    assert res.outcome == "Finished"
    return res


def tiny(rows):
    """Port samples from (time_us, node, port, peer, queue_bytes, tx_bytes, paused) tuples."""
    df = pd.DataFrame(rows, columns=PORT_SAMPLE_COLUMNS)
    df["time_ps"] = (df["time_ps"] * 1e6).astype("int64")
    return df


def images(text: str) -> list[str]:
    return re.findall(r"<img [^>]*>", text)


def assert_self_contained(text: str) -> None:
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", text, re.IGNORECASE), "external resource in the page"
    for img in images(text):
        assert 'src="data:image/png;base64,' in img


def assert_cli_error(r: subprocess.CompletedProcess, *words: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "fabriclab: error:" in r.stderr and "Traceback" not in r.stderr + r.stdout
    for w in words:
        assert w in r.stderr, (w, r.stderr)


# --------------------------------------------------------------------------
# Rates and the busiest ports, by hand


def test_rate_is_bytes_sent_over_time_between_samples():
    # 125 000 bytes in 10 us is 100 Gb/s; the third sample is 20 us after
    # the second, so 125 000 more bytes there is 50 Gb/s; an idle port is 0.
    df = tiny(
        [
            (0, "h0", 0, "sw", 0, 0, False),
            (10, "h0", 0, "sw", 0, 125_000, False),
            (30, "h0", 0, "sw", 0, 250_000, False),
            (0, "h1", 0, "sw", 0, 7, False),
            (10, "h1", 0, "sw", 0, 7, False),
            (30, "h1", 0, "sw", 0, 7, False),
        ]
    )
    r = port_rates(df.sample(frac=1, random_state=3))  # row order does not matter
    assert list(r.columns) == ["time_ps", "node", "port", "peer", "gbps"]
    assert r[r.node == "h0"].set_index("time_ps")["gbps"].to_dict() == {10_000_000: 100.0, 30_000_000: 50.0}
    assert r[r.node == "h1"]["gbps"].tolist() == [0.0, 0.0]


def test_busiest_ports_by_hand():
    df = tiny(
        [
            (0, "h0", 0, "sw", 0, 1_000, False),
            (10, "h0", 0, "sw", 4_000, 126_000, True),
            (20, "h0", 0, "sw", 500, 251_000, False),
            (0, "sw", 1, "h0", 0, 0, False),
            (10, "sw", 1, "h0", 9_000, 1_000, True),
            (20, "sw", 1, "h0", 0, 2_000, True),
        ]
    )
    top = busiest_ports(df)
    assert top[["node", "port", "peer"]].values.tolist() == [["h0", 0, "sw"], ["sw", 1, "h0"]]
    h0 = top.iloc[0]
    assert h0.bytes_sent == 250_000 and h0.gb_sent == pytest.approx(250e-6)
    assert h0.avg_gbps == pytest.approx(100.0)  # 250 kB in 20 us
    assert h0.peak_queue_kb == pytest.approx(4.0) and h0.paused_share == pytest.approx(1 / 3)
    assert top.iloc[1].paused_share == pytest.approx(2 / 3) and top.iloc[1].peak_queue_kb == pytest.approx(9.0)
    assert len(busiest_ports(df, n=1)) == 1


@pytest.mark.parametrize(
    "change, words",
    [
        (lambda df: df.drop(columns=["tx_bytes", "paused"]), ["tx_bytes, paused", "--telemetry"]),
        (lambda df: df.iloc[0:0], ["no rows", "sample_us"]),
        (lambda df: df[df.time_ps == 0], ["one sample time"]),
        (lambda df: df.assign(tx_bytes=df.tx_bytes[::-1].to_numpy()), ["tx_bytes of h0:0 falls"]),
        (lambda df: pd.concat([df, df]), ["repeat port"]),
        (lambda df: df.assign(queue_bytes="lots"), ["queue_bytes"]),
        (lambda df: df.assign(paused="maybe"), ["paused"]),
        (lambda df: df.to_dict(), ["DataFrame"]),
    ],
    ids=["columns", "empty", "one-time", "falling", "repeated", "not-numeric", "not-bool", "not-a-frame"],
)
def test_bad_samples_are_invalid_arguments(change, words):
    df = tiny([(0, "h0", 0, "sw", 0, 0, False), (10, "h0", 0, "sw", 0, 100, False)])
    with pytest.raises(fabriclab.InvalidArgumentError) as e:
        check_port_samples(change(df))
    for w in words:
        assert w in str(e.value)
    with pytest.raises(fabriclab.InvalidArgumentError):
        fabriclab.dashboard(change(df), "never-written.html")


def test_module_examples():
    res = doctest.testmod(sys.modules["fabriclab.dashboards"], verbose=False)
    assert res.attempted >= 3 and res.failed == 0


# --------------------------------------------------------------------------
# A simulated incast


def test_busiest_ports_against_the_port_counters(incast):
    # The samples stop at the last 10 us tick before the run ends, so each
    # port sent at most its counter's bytes during them; h0's leaf port
    # carries all 8 flows (32 MiB of payload) and tops the table.
    top = busiest_ports(incast.port_samples, n=10_000)
    counters = incast.ports.set_index(["node", "port"])["tx_bytes"]
    sent = top.set_index(["node", "port"])["bytes_sent"]
    assert len(top) == len(counters) == 64
    assert (sent <= counters.reindex(sent.index)).all()
    assert (top.iloc[0].node, top.iloc[0].port, top.iloc[0].peer) == ("leaf0", 0, "h0")
    assert top.iloc[0].bytes_sent > 8 * (4 << 20)


def test_busiest_ports_equal_the_counters_when_sampled_to_the_end():
    # With a time limit on a 5 us tick the last sample is taken at the end:
    # bytes sent during the samples (from 0) are the port counters exactly.
    flows = [fabriclab.Flow("h4", "h0", 1 << 20, repeat=True), fabriclab.Flow("h8", "h13", 1 << 20, repeat=True)]
    res = fabriclab.flows(flows, fabric="heps", sample_us=5, limit_us=100)
    assert res.port_samples.time_ps.max() == 100_000_000
    top = busiest_ports(res.port_samples).set_index(["node", "port"])
    counters = res.ports.set_index(["node", "port"])
    assert (top["bytes_sent"] == counters.loc[top.index, "tx_bytes"]).all()
    assert top["bytes_sent"].iloc[0] > 1_000_000
    biggest = counters.sort_values("tx_bytes", ascending=False, kind="stable")["tx_bytes"].head(10)
    assert sorted(top["bytes_sent"]) == sorted(biggest)


def test_incast_pauses_ports_and_fills_a_queue(incast):
    p = panels(incast.port_samples, fabric="leaf-spine")
    assert p.paused_ports["switch ports"].max() > 0  # PFC holds back the spines' and leaves' up-links
    assert list(p.paused_ports.index) == list(p.times) and p.paused_ports.dtypes.eq("int64").all()
    assert p.queue_kb["max"].max() > 1000 and (p.queue_kb["99th percentile"] <= p.queue_kb["max"]).all()
    assert (p.busiest.peak_queue_kb > 0).any() and (p.busiest.paused_share > 0).any()
    # 16 hosts: one line each; the senders run near line rate at some point
    assert list(p.host_gbps.columns) == [f"h{i}" for i in range(16)]
    assert p.host_gbps[[f"h{i}" for i in range(4, 12)]].max().min() > 80
    # 16 leaf-spine links, each direction a row; in % (at most one packet over 100)
    assert len(p.link_heat) == 32 and p.link_unit == "% of link rate"
    assert p.link_heat.index[0] == "leaf0:4 → spine0" and p.link_heat.max().max() < 104
    assert (p.link_gbps["max"] >= p.link_gbps["mean"]).all()


def test_panels_without_fabric_use_names_and_gbps(incast):
    p = panels(incast.port_samples)
    assert p.hosts == [f"h{i}" for i in range(16)] and p.switches[0] == "leaf0" and p.fabric_name is None
    assert p.link_unit == "Gb/s" and p.link_heat.max().max() < 104
    with_fabric = panels(incast.port_samples, fabric=fabriclab.Fabric.preset("leaf-spine"))
    pd.testing.assert_frame_equal(p.host_gbps, with_fabric.host_gbps)  # 100G links: % = Gb/s here
    pd.testing.assert_frame_equal(p.link_heat, with_fabric.link_heat)


def test_more_than_16_hosts_become_mean_max_min():
    res = fabriclab.flows([fabriclab.Flow("h0", "h20", 1 << 20)], fabric="heps", sample_us=20)
    p = panels(res.port_samples, fabric="heps")
    assert list(p.host_gbps.columns) == ["mean of 32 hosts", "max of 32 hosts", "min of 32 hosts"]
    assert p.host_gbps["max of 32 hosts"].max() > 80 and p.host_gbps["min of 32 hosts"].max() == 0


def test_samples_of_another_fabric_are_refused(incast):
    with pytest.raises(fabriclab.InvalidArgumentError, match="does not have: h0, h1"):
        panels(incast.port_samples, fabric=fabriclab.Fabric.from_toml(TWO_HOSTS_TOML))


def test_samples_of_a_fabric_with_the_same_names_but_other_links_are_refused(incast):
    # sandia-iwarp has hosts h0-h15, leaves and spines of the same names, but
    # 12 hosts a leaf and 10G links: its rates would put the incast at ~1000 %.
    with pytest.raises(fabriclab.InvalidArgumentError) as e:
        panels(incast.port_samples, fabric="sandia-iwarp")
    msg = str(e.value)
    assert "not those of the fabric sandia-iwarp" in msg and "h4:0 goes to leaf1 in the samples, to leaf0 in the fabric" in msg
    assert "Pass the fabric (--fabric) of the run" in msg
    # a sampled port the fabric does not have at all (s0 has ports 0 and 1)
    df = tiny([(us, "s0", 2, "s1", 0, 0, False) for us in (0, 10)])
    with pytest.raises(fabriclab.InvalidArgumentError, match="s0:2 goes to s1 in the samples and is no port of the fabric"):
        panels(df, fabric=fabriclab.Fabric.from_toml(TWO_SWITCHES_TOML))


# --------------------------------------------------------------------------
# The page


@pytest.mark.parametrize("with_fabric", [True, False], ids=["fabric", "no-fabric"])
def test_dashboard_page(incast, tmp_path, with_fabric):
    out = fabriclab.dashboard(
        incast.port_samples,
        tmp_path / "dash.html",
        fabric="leaf-spine" if with_fabric else None,
        title="8:1 incast <leaf-spine>",
    )
    assert out == tmp_path / "dash.html" and out.exists()
    text = out.read_text(encoding="utf-8")
    assert_self_contained(text)
    for caption in CAPTIONS.values():
        assert html.escape(caption, quote=False) in text
    assert len(images(text)) == 5  # hosts, links, heat map, queues, PFC; the busiest ports are a table
    assert "<h1>8:1 incast &lt;leaf-spine&gt;</h1>" in text
    last_us = incast.port_samples["time_ps"].max() / 1e6  # the last sample: the run's end
    assert 2600 < last_us < 3400  # 32 MiB into one 100G port: 2.68 ms at line rate
    assert f"Samples every 10 us from 0 to {last_us:g} us" in text and "16 hosts, 6 switches, 64 ports" in text
    assert ("fabric leaf-spine" in text) == with_fabric
    assert text.count("<tr>") == 11 and "<td>leaf0</td><td>0</td><td>h0</td>" in text


def test_dashboard_without_switch_to_switch_links(tmp_path, toml_file):
    fabric = toml_file(TWO_HOSTS_TOML)
    res = fabriclab.flows([fabriclab.Flow("a", "b", 1 << 20)], fabric=fabric, sample_us=10)
    text = fabriclab.dashboard(res.port_samples, tmp_path / "d.html", fabric=fabric).read_text()
    assert "No switch-to-switch links" in text and len(images(text)) == 3
    assert "2 hosts, 1 switches, 4 ports" in text


TWO_SWITCHES_TOML = """
name = "two-switches"
[topology]
kind = "explicit"
nodes = [{name = "h0", kind = "host"}, {name = "s0", kind = "switch"}, {name = "s1", kind = "switch"}]
links = [{a = "h0", b = "s0", gbps = 100}, {a = "s0", b = "s1", gbps = 200}]
"""


def test_dashboard_of_a_long_run(tmp_path):
    # 2500 samples (25 ms): the time axis in ms and the heat map's columns
    # averaged in runs; a steady 50 Gb/s on the 200G link is 25 % throughout.
    t = range(0, 25_000, 10)
    rows = [(us, "s0", 1, "s1", 0, 62_500 * i, False) for i, us in enumerate(t)]
    rows += [(us, "s1", 0, "s0", 0, 0, False) for us in t] + [(us, "h0", 0, "s0", 0, 0, False) for us in t]
    df = tiny(rows)
    fabric = fabriclab.Fabric.from_toml(TWO_SWITCHES_TOML)
    p = panels(df, fabric=fabric)
    assert p.link_heat.shape == (2, 2499) and p.link_heat.loc["s0:1 → s1"].eq(25.0).all()
    text = fabriclab.dashboard(df, tmp_path / "d.html", fabric=fabric).read_text()
    assert len(images(text)) == 5 and "2500 sample times" in text


def test_dashboard_without_matplotlib(incast, tmp_path, monkeypatch):
    for name in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError, match=r"pip install 'fabriclab\[plot\]'"):
        fabriclab.dashboard(incast.port_samples, tmp_path / "d.html")
    assert not (tmp_path / "d.html").exists()
    assert len(busiest_ports(incast.port_samples)) == 10  # the tables need pandas only


# --------------------------------------------------------------------------
# The command line


def test_cli_dashboard_from_telemetry_csv(tmp_path):
    prefix = tmp_path / "incast"
    flows = [a for i in range(4, 8) for a in ("--flow", f"h{i}:h0:1M")]
    r = run_cli("flows", "--fabric", "leaf-spine", *flows, "--telemetry", prefix, "--sample-us", "10")
    assert r.returncode == 0, r.stderr
    r = run_cli("dashboard", f"{prefix}.ports.csv", "-o", tmp_path / "d.html", "--fabric", "leaf-spine", "--title", "4:1")
    assert r.returncode == 0, r.stderr
    # the same node names on other links (10G): refused, not 1000 % utilisation
    r = run_cli("dashboard", f"{prefix}.ports.csv", "-o", tmp_path / "other.html", "--fabric", "sandia-iwarp")
    assert_cli_error(r, "h4:0 goes to leaf1 in the samples, to leaf0 in the fabric", "--fabric")
    assert not (tmp_path / "other.html").exists()
    text = (tmp_path / "d.html").read_text()
    assert "<h1>4:1</h1>" in text and len(images(text)) == 5
    assert_self_contained(text)
    # default output next to the CSV, titled by its name
    r = run_cli("dashboard", f"{prefix}.ports.csv")
    assert r.returncode == 0, r.stderr
    assert "<h1>incast.ports.csv</h1>" in (tmp_path / "incast.html").read_text()
    # the CSV holds the same samples as the API's frame
    res = fabriclab.flows([fabriclab.Flow(f"h{i}", "h0", 1 << 20) for i in range(4, 8)], fabric="leaf-spine", sample_us=10)
    pd.testing.assert_frame_equal(busiest_ports(pd.read_csv(f"{prefix}.ports.csv")), busiest_ports(res.port_samples))


def test_cli_without_matplotlib_says_what_to_install(tmp_path):
    blocked = tmp_path / "site" / "matplotlib"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text("raise ImportError('matplotlib blocked for this test')\n")
    ports = tmp_path / "p.csv"
    ports.write_text("time_ps,node,port,peer,queue_bytes,tx_bytes,paused\n0,h0,0,sw,0,0,False\n10,h0,0,sw,0,9,False\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocked.parent), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run(
        [sys.executable, "-m", "fabriclab.cli", "dashboard", str(ports)],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )
    assert_cli_error(r, "pip install 'fabriclab[plot]'")


def test_cli_dashboard_errors(tmp_path):
    assert_cli_error(run_cli("dashboard", tmp_path / "missing.ports.csv", "-o", tmp_path / "d.html"), "no such file")
    qps = tmp_path / "x.qps.csv"
    qps.write_text("time_ps,qp,acked_bytes,rate_bps\n0,0,0,100\n")
    assert_cli_error(run_cli("dashboard", qps, "-o", tmp_path / "d.html"), "lack column(s) node")
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert_cli_error(run_cli("dashboard", empty), "not a port telemetry CSV")
    ports = tmp_path / "p.csv"
    ports.write_text("time_ps,node,port,peer,queue_bytes,tx_bytes,paused\n0,h0,0,leaf0,0,0,False\n10,h0,0,leaf0,0,9,False\n")
    assert_cli_error(run_cli("dashboard", ports, "-o", tmp_path / "no" / "d.html"), "-o/--output", "no such directory")
    assert not (tmp_path / "d.html").exists()
