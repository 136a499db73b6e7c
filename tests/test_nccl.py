"""nccl-tests from Python and the CLI: the DataFrame, the text, and bad
input as ``fabriclab: error: ...`` with exit 2."""

from __future__ import annotations

import pytest

import fabriclab
from fabriclab.errors import FabriclabError
from fabriclab.gpu import NCCL_COLUMNS, parse_bytes

SMALL = "[gpu]\ngpus_per_server = 4\n[topology]\nkind = \"rail_optimized\"\nservers = 2\nspines = 1\nnic_gbps = 100\n"


def test_python_api_returns_rows_and_the_tools_text() -> None:
    res = fabriclab.nccl_tests(
        "all_gather", fabric=SMALL, nodes=2, min_bytes="64K", max_bytes="256K", step_factor=4, iters=2, warmup_iters=0
    )
    assert list(res.df.columns) == NCCL_COLUMNS
    assert list(res.df["size"]) == [65536, 262144]
    # busbw = algbw x (n-1)/n on 8 ranks.
    ratio = res.df["busbw"] / res.df["algbw"]
    assert ratio.round(9).tolist() == [0.875, 0.875]
    assert res.text is not None and "# Avg bus bandwidth    :" in res.text
    assert res.extras["nranks"] == 8 and res.extras["avg_busbw"] > 0


def test_flow_backend_runs_the_same_program() -> None:
    res = fabriclab.nccl_tests("all_reduce", fabric=SMALL, nodes=2, min_bytes="1M", max_bytes="1M", iters=2, backend="flow")
    assert res.df["busbw"].iloc[0] > 0


def test_byte_suffixes() -> None:
    assert parse_bytes("b", "8G") == 8 << 30
    assert parse_bytes("b", 16) == 16
    with pytest.raises(FabriclabError):
        parse_bytes("b", "lots")


@pytest.mark.parametrize(
    "args, says",
    [
        (["all_reduce_perf", "--nodes", "3"], "--nodes"),
        (["all_reduce_perf", "-b", "6", "-e", "6"], "not a multiple of the float size"),
        (["all_reduce_perf", "--nccl-algo", "nvls"], "not modelled"),
        (["all_reduce_perf", "--fabric", "leaf-spine"], "[gpu]"),
        (["allreduce_perf"], "all_reduce_perf"),
    ],
)
def test_cli_bad_input_exits_2(args: list[str], says: str, tmp_path, cli) -> None:  # type: ignore[no-untyped-def]
    fab = tmp_path / "f.toml"
    fab.write_text(SMALL)
    if "--fabric" not in args:
        args = [*args, "--fabric", str(fab)]
    r = cli("nccl-tests", *args, "--quiet")
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("fabriclab: error:") and says in r.stderr, r.stderr
