"""Scenario files (fabriclab.scenario) and the small TOML writer."""

from __future__ import annotations

import sys

import pytest

import fabriclab
from conftest import ROOT, TWO_HOSTS_TOML, run_cli
from fabriclab.errors import FabricError, InvalidArgumentError, ParseError, UnknownHostError
from fabriclab.scenario import Scenario, item_headers, load_scenario, toml_dumps

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def test_heps_scenario():
    results = fabriclab.run_scenario(ROOT / "scenarios" / "heps.toml")
    assert len(results) == 2
    bw, lat = results
    assert bw.name == "bandwidth" and lat.name == "latency"
    assert bw.df.bw_avg_gbps[0] == pytest.approx(92.6, abs=0.15)
    assert lat.df.t_typical_us[0] == pytest.approx(3.72, abs=0.01)
    assert bw.extras["options"]["client"] == "h0" and bw.extras["options"]["server"] == "h4"


def test_inline_fabric_order_and_seeds(toml_file):
    path = toml_file(
        """
seed = 4

[fabric]
name = "inline"
[fabric.topology]
kind = "explicit"
nodes = [{name = "a", kind = "host"}, {name = "b", kind = "host"}, {name = "sw", kind = "switch"}]
links = [{a = "a", b = "sw", gbps = 100}, {a = "b", b = "sw", gbps = 100, delay_ns = 50.0}]
[fabric.switch]
latency_ns = 500

[[flows]]
name = "first"
flows = [{src = "a", dst = "b", bytes = 100000}]
sample_us = 1.0

[[perftest]]
test = "ib_write_lat"
client = "a"
server = "b"
iters = 50
seed = 9

[[flows]]
flows = [{src = "b", dst = "a", bytes = 1000, op = "send"}]
""",
        "scenario.toml",
    )
    sc = load_scenario(path)
    assert sc.fabric.name == "inline" and sc.fabric.hosts == ["a", "b"]
    assert "latency_ns = 500" in sc.fabric.normalized_toml
    assert [(i.kind, i.name, i.seed) for i in sc.items] == [
        ("flows", "first", 4),
        ("perftest", None, 9),
        ("flows", None, 4),
    ]
    res = fabriclab.run_scenario(path)
    assert isinstance(res[0], fabriclab.Result) and res[0].name == "first"
    assert len(res[0].samples) > 0
    assert isinstance(res[1], fabriclab.Result) and list(res[1].df.columns) == fabriclab.LAT_COLUMNS
    assert isinstance(res[2], fabriclab.Result) and res[2].outcome == "Finished"
    r = run_cli("run", path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.index("=== [1] flows 'first'") < r.stdout.index("=== [2] perftest") < r.stdout.index("=== [3] flows")


def test_fabric_path_relative_to_scenario(tmp_path):
    (tmp_path / "fabrics").mkdir()
    (tmp_path / "fabrics" / "two.toml").write_text(TWO_HOSTS_TOML)
    sc = tmp_path / "exp.toml"
    sc.write_text('fabric = "fabrics/two.toml"\n[[perftest]]\ntest = "ib_send_bw"\nclient = "a"\nserver = "b"\niters = 50\n')
    (res,) = fabriclab.run_scenario(sc)
    assert res.extras["options"]["client"] == "a"
    assert res.df.bw_avg_gbps[0] > 0


def test_background_in_scenario(toml_file):
    path = toml_file(
        'fabric = "heps"\n[[perftest]]\ntest = "ib_write_bw"\nclient = "h0"\nserver = "h4"\niters = 200\n'
        'report_gbits = true\nbackground = [{src = "h1", dst = "h4", bytes = 1048576, repeat = true}]\n',
        "bg.toml",
    )
    (res,) = fabriclab.run_scenario(path)
    assert res.df.bw_avg_gbps[0] < 70


@pytest.mark.parametrize(
    "text, cls, words",
    [
        ('fabric = "heps"\ncolour = "red"\n', ParseError, "colour"),
        ('fabric = "heps"\n[[perftest]]\nclient = "h0"\n', ParseError, "missing test"),
        ('fabric = "heps"\n[[flows]]\nname = "x"\n', ParseError, "flows"),
        ('fabric = "heps"\n[[flows]]\nflows = []\nspeed = 1\n', ParseError, "speed"),
        ('fabric = "heps"\nseed = -1\n', ParseError, "seed"),
        ('fabric = "heps\n', ParseError, "scenario"),
        ('fabric = 3\n', ParseError, "fabric"),
        ('[fabric]\nname = "x"\n[fabric.topology]\nkind = "leaf_spine"\nspines = 0\nleaves = 1\nhosts_per_leaf = 0\nhost_link_gbps = 100\nuplink_gbps = 100\n', FabricError, "hosts"),
        ('fabric = "heps"\n[[perftest]]\ntest = "ib_write_bw"\nserver = "h99"\n', UnknownHostError, "h99"),
        # a key of the wrong type, in any kind of item: a clean error naming it
        ('fabric = "heps"\n[[cbench]]\ntest = "rotate"\nnp = "x"\n', ParseError, r"\[\[cbench\]\]: np"),
        ('fabric = "heps"\n[[imb]]\nbenchmarks = ["PingPong"]\nnp = "two"\n', ParseError, r"\[\[imb\]\]: np"),
        (
            'fabric = "heps"\n[[fio]]\nrw = "randwrite"\nbs = 4096\niodepth = "deep"\nclients = ["h0"]\ntargets = ["h4"]\n',
            ParseError,
            "iodepth",
        ),
    ],
)
def test_scenario_errors(text, cls, words, toml_file):
    path = toml_file(text, "bad_scenario.toml")
    with pytest.raises(cls, match=words):
        fabriclab.run_scenario(path)
    r = run_cli("run", path)
    assert r.returncode == 2 and "fabriclab: error:" in r.stderr and "Traceback" not in r.stderr


INLINE_FABRIC = """seed = 1

[fabric]
name = "two"
[fabric.topology]
kind = "leaf_spine"
spines = 0
leaves = 1
hosts_per_leaf = 2
host_link_gbps = 100
uplink_gbps = 100
{extra}
[[perftest]]
test = "ib_write_bw"
server = "h1"
"""


@pytest.mark.parametrize(
    "extra, cls, words",
    [
        ("[fabric.swich]\npfc = true\n", ParseError, "bad.toml: [fabric.swich]: unknown field `swich`, expected one of"),
        ('[fabric.nic]\nroce_mtu = "4096"\n', ParseError, 'bad.toml: fabric.nic.roce_mtu: invalid type: string "4096"'),
        ("hosts = 3\n", ParseError, "bad.toml: [fabric.topology] hosts: unknown field `hosts`"),
        ("[fabric.nic]\nroce_mtu = 4095\n", FabricError, "bad.toml: [fabric]: RoCE MTU 4095 is not one of"),
    ],
    ids=["table", "key", "topology-key", "value"],
)
def test_inline_fabric_errors_name_the_key_as_the_scenario_has_it(extra, cls, words, toml_file):
    # The core reads a TOML copy of the [fabric] table: its line numbers
    # and excerpt are the copy's, so the error names the table or key instead.
    path = toml_file(INLINE_FABRIC.format(extra=extra), "bad.toml")
    with pytest.raises(cls) as e:
        load_scenario(path)
    assert words in str(e.value) and "at line" not in str(e.value) and "^^^" not in str(e.value)
    r = run_cli("run", path)
    assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr


LATE_BAD = """fabric = "heps"
[[perftest]]
name = "fine"
test = "ib_write_bw"
client = "h0"
server = "h4"
iters = 100
[[imb]]
benchmarks = ["Allreduce"]
np = 4
[[perftest]]
name = "late"
test = "ib_write_bw"
client = "h0"
server = "h4"
iters = 0
"""


def test_a_bad_value_in_the_last_item_is_refused_before_the_first_runs(toml_file, monkeypatch):
    from fabriclab.kinds import Kind

    path = toml_file(LATE_BAD, "late.toml")
    ran: list[str] = []
    real = Kind.run

    def counting(self, *a, **k):
        ran.append(self.name)
        return real(self, *a, **k)

    monkeypatch.setattr(Kind, "run", counting)
    with pytest.raises(InvalidArgumentError, match=r"^item 3, \[\[perftest\]\] 'late': -n 0: perftest needs at least 5 iterations"):
        fabriclab.run_scenario(path)
    # each item was checked (a run that simulates nothing), none ran to its end
    assert ran == ["perftest", "imb", "perftest"]
    r = run_cli("run", path)
    assert r.returncode == 2 and r.stdout == "", r.stdout
    assert "fabriclab: error: item 3, [[perftest]] 'late': -n 0" in r.stderr and "Traceback" not in r.stderr


def test_dashboard_prefix_is_checked_before_the_runs(toml_file, tmp_path):
    path = toml_file(LATE_BAD.split("[[imb]]")[0], "one.toml")
    for bad, says in (("", "give a file name prefix"), (f"{tmp_path}/", "give a file name prefix")):
        r = run_cli("run", path, "--dashboard", bad)
        assert r.returncode == 2 and says in r.stderr and r.stdout == "", (r.stdout, r.stderr)
    (tmp_path / "d-1.html").mkdir()
    r = run_cli("run", path, "--dashboard", tmp_path / "d")
    assert r.returncode == 2 and "is a directory" in r.stderr and r.stdout == ""


def test_check_mode_runs_nothing_and_ends_with_the_call():
    from fabriclab import _core
    from fabriclab.precheck import check_call

    # a valid call: None, nothing simulated, and no result
    assert check_call(fabriclab.perftest, "ib_write_bw", client="h0", server="h4", iters=100) is None
    assert check_call(fabriclab.imb, benchmarks=["Alltoall"], np=8) is None
    with pytest.raises(InvalidArgumentError, match="-iter must be at least 1"):
        check_call(fabriclab.imb, benchmarks=["Alltoall"], np=8, iters=0)
    with pytest.raises(UnknownHostError, match="h99"):
        check_call(fabriclab.flows, [{"src": "h0", "dst": "h99", "bytes": 1000}])
    # the mode is over: the next call runs (also after an error)
    res = fabriclab.perftest("ib_write_bw", client="h0", server="h4", iters=100)
    assert res.df.bw_avg_gbps[0] > 0 and res.outcome == "Finished"
    # calls that are not runs answer as usual in check mode
    with fabriclab.precheck.check_mode():
        assert "heps" in _core.presets()


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "scenarios").glob("*.toml") if not p.name.endswith(".fabric.toml")))
def test_every_shipped_scenario_passes_its_check(name):
    from fabriclab.scenario import check_scenario

    check_scenario(load_scenario(ROOT / "scenarios" / name))


def test_missing_scenario():
    with pytest.raises(FileNotFoundError):
        fabriclab.run_scenario("no_such_scenario.toml")


def test_toml_dumps_round_trip():
    doc = {
        "name": 'quote " and \\ backslash\nnewline',
        "n": 3,
        "x": 0.1,
        "big": 1e300,
        "flag": True,
        "list": [1, 2, 3],
        "strs": ["a", "b"],
        "weird key": 1,
        "table": {"a": 1, "nested": {"b": [1.5, 2.5]}, "objs": [{"name": "h0", "kind": "host"}]},
        "empty": {},
    }
    assert tomllib.loads(toml_dumps(doc)) == doc


def test_toml_layout_gives_each_written_line_its_key_path():
    from fabriclab._toml import toml_layout

    doc = {"a": 1, "t": {"b": 2, "u": {"c": [{"d": 3}]}}, "v": {}}
    layout = toml_layout(doc)
    assert "\n".join(text for text, _ in layout) + "\n" == toml_dumps(doc)
    assert [path for _, path in layout] == [
        ("a",), ("t",), ("t",), ("t", "b"), ("t", "u"), ("t", "u"), ("t", "u", "c"), ("v",), ("v",)
    ]


def test_toml_dumps_fabric_round_trip():
    text = fabriclab.Fabric.preset("heps").normalized_toml
    doc = tomllib.loads(text)
    again = fabriclab.Fabric.from_toml(toml_dumps(doc))
    assert again.normalized_toml == text


def test_a_scenario_loads_from_a_dict_as_from_its_file(tmp_path):
    (tmp_path / "fabrics").mkdir()
    (tmp_path / "fabrics" / "two.toml").write_text(TWO_HOSTS_TOML)
    text = (
        'fabric = "fabrics/two.toml"\nseed = 3\n'
        '[[flows]]\nname = "f"\nflows = [{src = "a", dst = "b", bytes = 1000}]\n'
        '[[perftest]]\ntest = "ib_send_bw"\nclient = "a"\nserver = "b"\nseed = 7\n'
        '[[flows]]\nflows = [{src = "b", dst = "a", bytes = 10}]\n'
    )
    path = tmp_path / "exp.toml"
    path.write_text(text)
    from_file = load_scenario(path)
    doc = tomllib.loads(text)
    kept = tomllib.loads(text)
    sc = Scenario.from_dict(doc, origin=path, order=item_headers(text))
    assert doc == kept  # not changed
    assert sc.path == str(path) and sc.fabric.toml == from_file.fabric.toml
    assert sc.items == from_file.items
    assert [(i.kind, i.name, i.seed) for i in sc.items] == [("flows", "f", 3), ("perftest", None, 7), ("flows", None, 3)]
    # Without an order: kind by kind, in the document's order; relative
    # paths from base_dir.
    sc = Scenario.from_dict(doc, base_dir=tmp_path)
    assert [i.kind for i in sc.items] == ["flows", "flows", "perftest"] and sc.path is None
    # Errors name the origin, as they name the file.
    with pytest.raises(ParseError, match=r"scenario mine\.toml: unknown key 'colour'"):
        Scenario.from_dict({"fabric": "heps", "colour": "red"}, origin="mine.toml")
    # perftest's word for its -n, suggested as our key (not 'duration_s')
    with pytest.raises(ParseError, match=r"unknown key 'iterations' \(did you mean 'iters'\?\)"):
        Scenario.from_dict({"perftest": [{"test": "ib_write_bw", "client": "h0", "server": "h4", "iterations": 10}]})
    with pytest.raises(ParseError, match=r"scenario mine\.toml: \[\[imb\]\] number 1: missing np"):
        Scenario.from_dict({"imb": [{"benchmarks": ["PingPong"]}]}, origin="mine.toml")
    with pytest.raises(ParseError, match="a scenario is a table"):
        Scenario.from_dict(["fabric"])  # type: ignore[arg-type]
