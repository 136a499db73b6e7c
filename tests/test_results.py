"""Every tool returns one result type, fabriclab.Result, with the documented
attributes; its table's attrs hold scalars only, so pandas' copies of
them on every operation stay cheap."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

import fabriclab
from fabriclab import Result
from fabriclab.kinds import KINDS

#: Each tool, with small options.
TOOLS: dict[str, Callable[[], Result]] = {
    "perftest": lambda: fabriclab.perftest("ib_write_bw", "h0", "h4", size=65536, iters=100),
    "flows": lambda: fabriclab.flows([fabriclab.Flow("h0", "h4", 1 << 16)], sample_us=5.0),
    "imb": lambda: fabriclab.imb(["PingPong"], np=2, msglog=(0, 2), iters=10, telemetry_us=50.0),
    "osu": lambda: fabriclab.osu("osu_latency", np=2, sizes=(1, 4), iterations=10, warmup=1),
    "cbench": lambda: fabriclab.cbench("rotate_latency", np=4, iterations=10),
    "hpl": lambda: fabriclab.hpl("leaf-spine", n=256, nb=64, grids="1x2", samples=0),
    "fio": lambda: fabriclab.fio("randwrite", bs=4096, runtime=0.002),
    "iperf": lambda: fabriclab.iperf("h1", "h0", duration=0.002, interval=0.001),
    "nccl": lambda: fabriclab.nccl_tests(
        nodes=2, gpus_per_node=2, min_bytes="64K", max_bytes="64K", iters=2, warmup_iters=0, telemetry_us=5.0
    ),
}
#: The tool's name where it is not the kind's.
TOOL_NAME = {"nccl": "nccl-tests"}

#: Where each tool's attributes are: text (None for flows), the counter
#: tables, the telemetry tables and the figures it reports.
HAS_TEXT = set(TOOLS) - {"flows"}
HAS_PORTS = set(TOOLS)
HAS_QPS = {"perftest", "flows", "imb", "osu", "cbench", "hpl", "nccl"}
HAS_PORT_SAMPLES = {"flows", "imb", "osu", "cbench", "hpl", "nccl"}
HAS_OUTCOME = {"perftest", "flows", "fio", "iperf"}
HAS_WALL = {"imb", "osu", "cbench", "hpl", "nccl"}
#: Extras each tool documents.
EXTRAS = {
    "perftest": {"test", "out_json", "qps_table", "options", "mtu", "tx_depth", "iters"},
    "flows": {"deadlocks", "deadlock_error", "stall_error", "notes", "qp_failures", "flow_stats"},
    "imb": {"mpi", "lowered", "iperf_text", "tcp", "notes"},
    "osu": {"mpi", "lowered", "iperf_text", "tcp", "test", "notes"},
    "cbench": {"mpi", "lowered", "iperf_text", "tcp", "test", "rotations", "summary", "notes"},
    "hpl": {"mpi", "iperf_text", "tcp", "samples", "settings", "rank_hosts", "report", "notes"},
    "fio": {"json"},
    "nccl": {"mpi", "lowered", "iperf_text", "tcp", "test", "avg_busbw", "nranks", "notes"},
    "iperf": {"json", "sums", "server_intervals", "sum_sent", "sum_received", "end_streams", "congestion", "tcp", "tcp_table", "options"},
}


@pytest.fixture(scope="module")
def results() -> dict[str, Result]:
    return {name: run() for name, run in TOOLS.items()}


def test_every_kind_of_item_is_covered() -> None:
    assert set(TOOLS) == set(KINDS) | {"iperf"}


@pytest.mark.parametrize("tool", list(TOOLS))
def test_every_tool_returns_a_result(results: dict[str, Result], tool: str) -> None:
    res = results[tool]
    assert isinstance(res, Result) and res.tool == TOOL_NAME.get(tool, tool)
    assert isinstance(res.df, pd.DataFrame) and len(res.df) > 0
    assert res.backend == "packet"
    assert res.fabric is not None and res.name is None
    assert isinstance(res.text, str) if tool in HAS_TEXT else res.text is None
    for attr, has in (("ports", HAS_PORTS), ("qps", HAS_QPS), ("port_samples", HAS_PORT_SAMPLES)):
        t = getattr(res, attr)
        assert isinstance(t, pd.DataFrame) if tool in has else t is None, attr
    assert isinstance(res.samples, pd.DataFrame) if tool == "flows" else res.samples is None
    assert isinstance(res.outcome, str) if tool in HAS_OUTCOME else res.outcome is None
    assert isinstance(res.sim_time_us, float) and res.sim_time_us > 0
    assert isinstance(res.events, int) and res.events > 0
    assert isinstance(res.wall_s, float) if tool in HAS_WALL else res.wall_s is None
    assert set(res.extras) == EXTRAS[tool]


@pytest.mark.parametrize("tool", list(TOOLS))
def test_df_attrs_hold_scalars_only(results: dict[str, Result], tool: str) -> None:
    res = results[tool]
    # perftest's bandwidth table also says its columns' unit (MiB/s or Gb/s)
    unit = {"bw_unit": "MiB/s"} if tool == "perftest" else {}
    assert res.df.attrs == {"tool": TOOL_NAME.get(tool, tool), "backend": "packet", "fabric": res.fabric, **unit}
    for v in res.df.attrs.values():
        assert v is None or isinstance(v, (str, int, float, bool))
    # The scalars follow the table through pandas' operations, cheaply.
    assert res.df.head(1).attrs == res.df.attrs
    assert copy.deepcopy(res.df).attrs == res.df.attrs


@pytest.mark.parametrize("tool", list(TOOLS))
def test_figures_and_tables(results: dict[str, Result], tool: str) -> None:
    res = results[tool]
    figures = res.figures()
    assert figures["sim_time_us"] == res.sim_time_us and figures["events"] == res.events
    assert all(isinstance(v, (str, int, float, bool)) and "\n" not in str(v) for v in figures.values())
    tables = res.tables()
    assert tables["result"] is res.df
    assert all(isinstance(t, pd.DataFrame) for t in tables.values())
    if res.ports is not None:
        assert tables["ports"] is res.ports


def test_copying_a_result_table_does_not_copy_nested_frames(results: dict[str, Result]) -> None:
    """The old attrs held the port table, samples and texts: every pandas
    operation deep-copied them. Now a copy costs the table alone."""
    res = results["imb"]
    calls: list[Any] = []
    original = pd.DataFrame.__deepcopy__

    def spy(self: pd.DataFrame, memo: Any = None) -> pd.DataFrame:
        calls.append(self)
        return original(self, memo)

    pd.DataFrame.__deepcopy__ = spy  # type: ignore[method-assign]
    try:
        res.df.copy()
        res.df[res.df.bytes > 0]
        res.df.assign(x=1)
    finally:
        pd.DataFrame.__deepcopy__ = original  # type: ignore[method-assign]
    assert calls == []


def test_repr_and_notebook_html(results: dict[str, Result]) -> None:
    res = results["perftest"]
    r = repr(res)
    assert r.startswith("<Result perftest: 1 rows, fabric heps, packet backend, Finished,")
    assert "bw_avg" in r and "extras['out_json']" in r
    h = res._repr_html_()
    assert "&lt;Result perftest" in h and "<table" in h and "bw_avg" in h


def test_summary_is_the_text_or_the_flows_table(results: dict[str, Result]) -> None:
    assert results["perftest"].summary() == results["perftest"].text
    s = results["flows"].summary()
    assert s.splitlines()[0].split() == ["src", "dst", "bytes", "start_us", "fct_us", "messages"]
    assert "outcome: Finished" in s


def test_scenario_items_are_results_with_their_names(tmp_path: Any) -> None:
    p = tmp_path / "s.toml"
    p.write_text(
        'fabric = "heps"\n'
        '[[perftest]]\nname = "bw"\ntest = "ib_write_bw"\nclient = "h0"\nserver = "h4"\nsize = 4096\niters = 20\n'
        '[[flows]]\nname = "one"\nflows = [{src = "h0", dst = "h4", bytes = 4096}]\n'
    )
    bw, one = fabriclab.run_scenario(p)
    assert isinstance(bw, Result) and isinstance(one, Result)
    assert (bw.name, one.name) == ("bw", "one")
    assert bw.df.attrs["name"] == "bw" and one.df.attrs["name"] == "one"
    assert bw.fabric == "heps"


def test_an_output_path_is_probed_and_left_as_it_was(tmp_path):
    """The up-front check of an output file opens it as the command will:
    a new file is not left behind, an existing one keeps its bytes, and a
    place that takes no file is refused with the option's name."""
    from fabriclab._checks import check_out_path
    from fabriclab.errors import InvalidArgumentError

    new = tmp_path / "new.csv"
    check_out_path(str(new), "--csv")
    assert not new.exists()
    old = tmp_path / "old.csv"
    old.write_bytes(b"kept\n")
    check_out_path(str(old), "--csv")
    assert old.read_bytes() == b"kept\n"
    with pytest.raises(InvalidArgumentError, match=r"--html /proc/x\.html: cannot write there"):
        check_out_path("/proc/x.html", "--html")
