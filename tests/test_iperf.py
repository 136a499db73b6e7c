"""iperf3 on a simulated fabric: the output formats against the real
iperf 3.12 samples (tests/golden/iperf3.*), the Python API and the
``fabriclab iperf`` command, errors included."""

from __future__ import annotations

import doctest
import json
import sys

import pytest

import fabriclab
import iperf_format
from conftest import GOLDEN, run_cli
from fabriclab.tcp import parse_rate, parse_size

GOLDEN_TXT = GOLDEN / "iperf3.txt"
GOLDEN_JSON = GOLDEN / "iperf3.json"
# The brief's reference run: two streams paced at 20 Gb/s for 10 ms.
PACED = dict(parallel=2, bitrate="20G", duration=0.01, interval=0.002)


@pytest.fixture(scope="module")
def paced():
    return fabriclab.iperf("h1", "h0", fabric="heps", **PACED)


@pytest.fixture(scope="module")
def like_golden():
    """One stream, two intervals, two-decimal times: the golden's shape."""
    return fabriclab.iperf("h1", "h0", fabric="heps", bitrate="1G", duration=0.2, interval=0.1)


# --------------------------------------------------------------------------
# The parsers, on the golden samples


def test_parser_on_the_golden_text():
    out = iperf_format.parse(GOLDEN_TXT.read_text())
    assert out.connecting == "Connecting to host 127.0.0.1, port 5299"
    assert [i["retr"] for i in out.intervals] == [12, 5]
    assert out.intervals[1]["cwnd"] == 1023 * 1024
    assert out.senders[0]["retr"] == 17 and out.receivers[0]["end"] == 2.0
    assert out.separators == 1 and out.sums == []


def test_parser_rejects_a_shifted_column():
    text = GOLDEN_TXT.read_text().replace("   12    895 KBytes", "  12    895 KBytes ")
    with pytest.raises(ValueError):
        iperf_format.parse(text)


# --------------------------------------------------------------------------
# Our output


def test_json_has_the_golden_key_structure_recursively(like_golden):
    ours = json.loads(like_golden.extras["json"])
    gold = json.loads(GOLDEN_JSON.read_text())
    assert iperf_format.structure(ours) == iperf_format.structure(gold)


def test_json_layout_matches_the_golden_line_by_line(like_golden):
    assert iperf_format.skeleton(like_golden.extras["json"]) == iperf_format.skeleton(GOLDEN_JSON.read_text())
    assert like_golden.extras["json"].endswith("}\n")


def test_json_of_several_streams_has_one_entry_per_stream(paced):
    doc = json.loads(paced.extras["json"])
    gold = json.loads(GOLDEN_JSON.read_text())
    assert iperf_format.structure(doc) == iperf_format.structure(gold)
    assert [c["socket"] for c in doc["start"]["connected"]] == [5, 7]
    assert len(doc["intervals"]) == 5
    assert all(len(iv["streams"]) == 2 for iv in doc["intervals"])
    assert doc["end"]["sum_sent"]["retransmits"] == 0
    assert doc["start"]["test_start"]["target_bitrate"] == 20_000_000_000


def test_text_layout_matches_the_golden_columns(like_golden):
    text = like_golden.text
    out = iperf_format.parse(text)
    gold = GOLDEN_TXT.read_text().split("\n")
    ours = text.split("\n")
    # Same lines in the same places: header, two intervals, separator,
    # summary header, sender, receiver, blank, "iperf Done.".
    assert len(ours) == len(gold)
    for g, o in zip(gold[2:], ours[2:]):
        assert len(g) == len(o), (g, o)
        if g.startswith("[  5]"):
            assert [i for i, c in enumerate(g) if c == " "][:3] == [i for i, c in enumerate(o) if c == " "][:3]
            assert g.index(" sec ") == o.index(" sec ")
            assert g.index("Bytes") == o.index("Bytes")
            assert g.index("bits/sec") == o.index("bits/sec")
    assert [(i["start"], i["end"]) for i in out.intervals] == [(0.0, 0.1), (0.1, 0.2)]


def test_text_of_two_paced_streams(paced):
    out = iperf_format.parse(paced.text)
    assert len(out.intervals) == 10 and len(out.sums) == 5
    assert out.separators == 5  # between intervals, then before the summary
    assert [s["id"] for s in out.senders] == ["5", "7", "SUM"]
    for s in out.sums:
        assert abs(s["bps"] / 1e9 - 40) < 1.5
    assert abs(out.receivers[-1]["bps"] / 1e9 - 40) < 0.5


# --------------------------------------------------------------------------
# Python API


def test_api_returns_one_row_per_stream_and_interval(paced):
    df = paced.df
    assert list(df.columns) == fabriclab.IPERF_COLUMNS
    assert len(df) == 10
    assert sorted(set(df.socket)) == [5, 7]
    per = df.groupby("interval").bits_per_second.sum() / 1e9
    assert len(per) == 5 and ((per - 40).abs() < 1.1).all()
    sums = paced.extras["sums"]
    assert list(sums.bytes) == list(df.groupby("interval").bytes.sum())
    assert abs(paced.extras["sum_received"]["bits_per_second"] / 1e9 - 40) < 0.5
    assert paced.extras["congestion"] == "cubic"
    tcp = paced.extras["tcp"]
    assert len(tcp) == 2 and (tcp.rx_bytes > 0).all()
    # The fabric's port counters: the sender's NIC port carried at least
    # the payload the receiver got, with headers on top.
    ports = paced.ports
    assert list(ports.columns[: len(fabriclab.api.PORT_COLUMNS)]) == fabriclab.api.PORT_COLUMNS
    nic = ports[(ports.node == "h1") & (ports.port == 0)]
    assert len(nic) == 1 and int(nic.tx_bytes.iloc[0]) > int(tcp.rx_bytes.sum())


def test_api_congestion_and_sizes():
    res = fabriclab.iperf("h0", "h4", duration=0.002, interval=0.001, congestion="reno", length="64K")
    assert res.extras["congestion"] == "reno"
    assert json.loads(res.extras["json"])["start"]["test_start"]["blksize"] == 65536
    assert parse_rate("20G") == 20e9 and parse_rate("100M") == 100e6 and parse_rate(5) == 5.0
    assert parse_size("128K") == 131072


def test_module_docstring_examples_run():
    res = doctest.testmod(sys.modules["fabriclab.tcp"], verbose=False)
    assert res.attempted > 0 and res.failed == 0


def test_api_is_deterministic():
    a = fabriclab.iperf("h1", "h0", **PACED, seed=4)
    b = fabriclab.iperf("h1", "h0", **PACED, seed=4)
    assert a.extras["json"] == b.extras["json"]


@pytest.mark.parametrize(
    "kwargs, exc, words",
    [
        (dict(congestion="bbr"), fabriclab.InvalidArgumentError, "bbr"),
        (dict(bitrate=-5e9), fabriclab.InvalidArgumentError, "bitrate"),
        (dict(duration=0), fabriclab.InvalidArgumentError, "duration"),
        (dict(duration=-1), fabriclab.InvalidArgumentError, "duration"),
        (dict(duration=float("nan")), fabriclab.InvalidArgumentError, "duration must be a finite number, got nan"),
        (dict(interval=float("inf")), fabriclab.InvalidArgumentError, "interval must be a finite number, got inf"),
        (dict(interval=-0.1), fabriclab.InvalidArgumentError, "interval"),
        (dict(parallel=0), fabriclab.InvalidArgumentError, "parallel"),
        (dict(server="h99"), fabriclab.UnknownHostError, "h99"),
        (dict(server="h1", client="h1"), fabriclab.InvalidArgumentError, "h1"),
    ],
)
def test_api_errors(kwargs, exc, words):
    args = {"client": "h1", "server": "h0", "duration": 0.001, **kwargs}
    with pytest.raises(exc, match=words):
        fabriclab.iperf(**args)


def test_api_rejects_a_bad_rate_text():
    with pytest.raises(ValueError, match="bitrate"):
        fabriclab.iperf("h1", "h0", bitrate="fast")


# --------------------------------------------------------------------------
# Command line


def test_cli_text_and_json():
    args = ["iperf", "-c", "h0", "--from", "h1", "-P", "2", "-b", "20G", "-t", "0.01", "-i", "0.002"]
    r = run_cli(*args)
    assert r.returncode == 0, r.stderr
    out = iperf_format.parse(r.stdout)
    assert len(out.sums) == 5
    r = run_cli(*args, "-J", "-C", "cubic")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert len(doc["intervals"]) == 5
    assert abs(doc["end"]["sum_received"]["bits_per_second"] / 1e9 - 40) < 0.5


def test_cli_counters():
    r = run_cli("iperf", "-c", "h0", "--from", "h1", "-t", "0.001", "--counters")
    assert r.returncode == 0, r.stderr
    assert "TCP counters:" in r.stdout and "Port counters:" in r.stdout


@pytest.mark.parametrize(
    "args, words",
    [
        (["-C", "bbr"], "bbr"),
        (["--bitrate=-5G"], "bitrate"),
        (["-t", "0"], "duration"),
        (["-t", "-1"], "duration"),
        (["--server", "h99"], "h99"),
        (["--server", "h1"], "h1"),
        (["-b", "20X"], "20X"),
        (["-P", "0"], "parallel"),
    ],
)
def test_cli_errors_exit_2(args, words):
    r = run_cli("iperf", "-c", "h0", "--from", "h1", "-t", "0.001", *args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "fabriclab: error:" in r.stderr
    assert "Traceback" not in r.stderr
    assert words in r.stderr


def test_the_servers_figures_never_exceed_the_goodput_from_python_and_the_cli():
    # Issue 14: the client's first interval (bytes written into the socket,
    # as iperf3 counts them) may exceed the line rate; what the server read
    # may not exceed the TCP goodput, interval by interval or in sum.
    goodput = 100e9 * 1448 / 1538  # MSS 1448 per 1538 wire bytes at MTU 1500
    res = fabriclab.iperf("h0", "h4", duration=0.01, interval=0.002, congestion="reno", get_server_output=True)
    df = res.df
    srv = res.extras["server_intervals"]
    assert len(srv) == 5 and (srv["bits_per_second"] <= goodput * 1.0001).all(), srv
    assert res.extras["sum_received"]["bits_per_second"] <= goodput
    assert df["bits_per_second"].iloc[0] > 100e9  # the send buffer's fill
    doc = json.loads(res.extras["json"])
    assert doc["server_output_json"]["end"]["sum_received"]["bytes"] == doc["end"]["sum_received"]["bytes"]
    r = run_cli("iperf", "-c", "h4", "--from", "h0", "-t", "0.01", "-i", "0.002", "-C", "reno", "--get-server-output")
    assert r.returncode == 0, r.stderr
    assert "\nServer output:\n" in r.stdout and "Server listening on 5201 (test #1)" in r.stdout
    plain = run_cli("iperf", "-c", "h4", "--from", "h0", "-t", "0.002", "-i", "0.001")
    assert plain.returncode == 0 and "Server output:" not in plain.stdout


def test_dash_c_names_the_server_as_in_iperf3():
    r = run_cli("iperf", "-c", "h4", "--from", "h2", "-t", "0.001", "-i", "0")
    assert r.returncode == 0, r.stderr
    assert "Connecting to host h4, port 5201" in r.stdout and "local h2 port" in r.stdout
    # The old form (-c the sender, --server the receiver) is refused, not
    # silently swapped.
    old = run_cli("iperf", "-c", "h1", "--server", "h0", "-t", "0.001")
    assert old.returncode == 2 and "-c names the server" in old.stderr and "-c h0 --from HOST" in old.stderr
