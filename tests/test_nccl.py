"""nccl-tests from Python and the CLI: the DataFrame, the text, and bad
input as ``fabriclab: error: ...`` with exit 2."""

from __future__ import annotations

from typing import Any

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
    # The same program on both backends: same algorithm, and a time within
    # 10 % (NVLS-Tree with 100G NICs; tests/nvls.rs covers the grid).
    runs = {
        b: fabriclab.nccl_tests("all_reduce", fabric=SMALL, nodes=2, min_bytes="1M", max_bytes="1M", iters=2, backend=b)
        for b in ("packet", "flow")
    }
    packet, flow = (runs[b].df.iloc[0] for b in ("packet", "flow"))
    assert flow["algo"] == packet["algo"] and flow["size"] == packet["size"] == 1 << 20
    assert flow["time_us"] == pytest.approx(packet["time_us"], rel=0.10)


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
        (["all_reduce_perf", "--nccl-algo", "collnet"], "not modelled"),
        (["all_reduce_perf", "--fabric", "leaf-spine"], "[gpu]"),
        (["allreduce_perf"], "all_reduce_perf"),
        # the flag the user gave, named in the message
        (["all_reduce_perf", "-e", "1x"], "-e/--maxbytes (max_bytes) must be a byte count"),
        (["all_reduce_perf", "--nodes", "0"], "--nodes 0: a communicator needs at least one server"),
        (["all_reduce_perf", "--gpus-per-node", "0"], "--gpus-per-node 0: "),
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


# --------------------------------------------------------------------------
# [[nccl]] items: scenario files, sweeps and the A/B comparison


def _scenario(tmp_path) -> str:  # type: ignore[no-untyped-def]
    (tmp_path / "gpu.toml").write_text(SMALL.replace("[gpu]", 'name = "small-gpu"\n[gpu]'))
    p = tmp_path / "nccl.toml"
    p.write_text(
        'fabric = "gpu.toml"\n\n[[nccl]]\nname = "ar"\ntest = "all_reduce_perf"\nnodes = 2\n'
        'min_bytes = "1M"\nmax_bytes = "1M"\niters = 2\nwarmup_iters = 0\n'
    )
    return str(p)


def test_a_scenario_item_runs_and_prints_like_the_tool(tmp_path, cli) -> None:  # type: ignore[no-untyped-def]
    (res,) = fabriclab.run_scenario(_scenario(tmp_path))
    assert res.tool == "nccl-tests" and list(res.df["size"]) == [1 << 20]
    r = cli("run", _scenario(tmp_path), "--quiet")
    assert r.returncode == 0, r.stderr
    assert "=== [1] nccl 'ar': all_reduce_perf, 2 server(s)" in r.stdout and "# Avg bus bandwidth" in r.stdout


def test_a_misspelt_key_names_the_nearest_one(tmp_path) -> None:  # type: ignore[no-untyped-def]
    p = tmp_path / "bad.toml"
    p.write_text('fabric = "h100-rail-ib"\n[[nccl]]\nnode = 2\n')
    with pytest.raises(FabriclabError, match="did you mean 'nodes'"):
        fabriclab.run_scenario(str(p))


def test_sweep_and_compare_over_nccl_items(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from cluster_help import local_client

    path = _scenario(tmp_path)
    with local_client(1) as client:
        df = fabriclab.sweep(path, {"nccl.nodes": [1, 2]}, client=client)
        cmp = fabriclab.compare(path, set={"fabric.topology.nic_gbps": 50}, repeat=1, client=client)
    one, two = (df[df["nccl.nodes"] == n]["busbw"].iloc[0] for n in (1, 2))
    assert one > two > 0  # NVLink inside one server, 100G NICs across two
    row = cmp[cmp["metric"] == "busbw"].iloc[0]
    # Halving the NICs slows the 2-server all-reduce, which the NICs limit.
    assert row["b_avg"] < row["a_avg"] and row["pct"] < -20


def test_the_nccl_lab_puts_published_figures_beside_fabriclabs() -> None:
    # Inside a server Ring follows NVLink, across two the NICs: both within
    # 5 % of NVIDIA's figures; so does NVLS on one server (NCCL's default
    # at 8 GiB on H100); the 2-server 8 B time inside the published range.
    # The 1-server 8 B time is 40 % high: it stays "not reproduced".
    df = fabriclab.lab_run("nccl-h100", quick=True).set_index("metric")
    v = df.verdict.to_dict()
    assert v["1 server, Ring busbw at 128 MiB"] == "reproduced"
    assert v["2 servers, Ring busbw at 512 MiB"] == "reproduced"
    assert v["2 servers, all_reduce 8 B, time"] == "reproduced"
    assert v["1 server, busbw at 8 GiB, NCCL's default algorithm (NVLS)"] == "reproduced"
    assert v["1 server, all_reduce 8 B, time"] == "not reproduced"
    assert v["2 servers, busbw at 8 GiB, NCCL's default algorithm (NVLS-Tree)"] == "not compared (quick)"
    assert df.attrs["lab"]["seed"] == "nccl"


def test_nvls_is_nccls_choice_at_large_sizes_and_can_be_turned_off(cli) -> None:  # type: ignore[no-untyped-def]
    # One H100 server, 256 MiB: NCCL's model picks NVLS (NVSwitch reduces
    # in the switch), about 1.3 x the ring's bus bandwidth; with
    # NCCL_NVLS_ENABLE=0 the ring runs.
    kw: dict[str, Any] = {"min_bytes": "256M", "max_bytes": "256M", "iters": 2, "warmup_iters": 0}
    on = fabriclab.nccl_tests("all_reduce_perf", "h100-rail-ib", **kw)
    off = fabriclab.nccl_tests("all_reduce_perf", "h100-rail-ib", nccl_nvls_enable=False, **kw)
    assert on.df["algo"].iloc[0] == "NVLS/Simple"
    assert off.df["algo"].iloc[0].startswith("Ring/")
    assert on.df["busbw"].iloc[0] > 1.2 * off.df["busbw"].iloc[0]
    r = cli("nccl-tests", "all_reduce_perf", "-b", "1M", "-e", "1M", "--nccl-nvls-enable", "0", "--quiet")
    assert r.returncode == 0, r.stderr
    r = cli("nccl-tests", "all_reduce_perf", "--nccl-nvls-enable", "2", "--quiet")
    assert r.returncode == 2 and "invalid choice" in r.stderr


def test_the_wrong_column_is_float_whatever_was_checked():
    """nccl-tests' #wrong: NaN where not checked (N/A, or -c 0), the count
    where checked; one dtype whatever the sizes asked (it was int64,
    float64 or object)."""
    kw = dict(nodes=1, iters=2, warmup_iters=0)
    one = fabriclab.nccl_tests("all_reduce_perf", min_bytes=1 << 20, max_bytes=1 << 20, **kw).df.wrong
    unchecked = fabriclab.nccl_tests("all_reduce_perf", min_bytes=1 << 20, max_bytes=1 << 20, check=0, **kw).df.wrong
    assert one.dtype == unchecked.dtype == "float64"
    assert list(one) == [0.0] and unchecked.isna().all()


def test_cli_counters_are_the_transfer_counters_on_both_backends(cli) -> None:  # type: ignore[no-untyped-def]
    # Titled for NCCL, not MPI; the flow backend splits network and NVLink
    # messages as the packet core does (it counted NVLink chunks as
    # network messages).
    args = ["nccl-tests", "all_reduce_perf", "-b", "16M", "-e", "16M", "--nodes", "2", "-n", "1", "-w", "0"]
    outs = []
    for backend in ("packet", "flow"):
        r = cli(*args, "--backend", backend, "--counters", "--quiet")
        assert r.returncode == 0, r.stderr
        assert "Transfer counters:" in r.stdout and "MPI counters" not in r.stdout
        outs.append(r.stdout.split("Transfer counters:")[1])
    assert outs[0] == outs[1]
