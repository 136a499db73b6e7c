"""Rail-only fabrics from Python and the CLI: NCCL runs on them (PXN keeps
every network hop on one rail), and a tool that would need a path between
two rails stops with ``fabriclab: error:`` and exit 2, or a
``FabriclabError`` subclass in Python."""

import pytest

import fabriclab

RAIL_ONLY = (
    '[gpu]\ngpus_per_server = 4\n[topology]\nkind = "rail_only"\nservers = 4\n'
    "servers_per_su = 2\nspines = 1\nnic_gbps = 100\n"
)


def test_nccl_runs_and_rails_stay_apart(tmp_path) -> None:  # type: ignore[no-untyped-def]
    fab = tmp_path / "ro.toml"
    fab.write_text(RAIL_ONLY)
    res = fabriclab.nccl_tests(
        "alltoall_perf", fabric=str(fab), nodes=4, min_bytes="256K", max_bytes="256K", iters=2, warmup_iters=0
    )
    assert int(res.df["wrong"].iloc[0]) == 0
    with pytest.raises(fabriclab.FabriclabError, match="no network path between h0.nic0 and h1.nic1"):
        fabriclab.perftest("ib_write_bw", client="h0.nic0", server="h1.nic1", fabric=str(fab))


@pytest.mark.parametrize(
    "args",
    [
        ["perftest", "ib_write_bw", "--client", "h0.nic0", "--server", "h3.nic2"],
        ["imb", "PingPong", "-np", "2", "--hosts", "h0.nic1,h1.nic0"],
    ],
)
def test_cli_refuses_a_path_between_rails(args: list[str], tmp_path, cli) -> None:  # type: ignore[no-untyped-def]
    fab = tmp_path / "ro.toml"
    fab.write_text(RAIL_ONLY)
    r = cli(*args, "--fabric", str(fab))
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("fabriclab: error:") and "rail-only" in r.stderr, r.stderr


def test_the_preset_builds_without_spines() -> None:
    assert "h100-rail-only-ib" in fabriclab.presets()


def test_pxn_disable_from_the_cli(tmp_path, cli) -> None:  # type: ignore[no-untyped-def]
    fab = tmp_path / "ro.toml"
    fab.write_text(RAIL_ONLY)
    args = ["nccl-tests", "alltoall_perf", "-b", "64K", "-e", "64K", "--nodes", "2", "--quiet"]
    r = cli(*args, "--fabric", str(fab), "--nccl-pxn-disable")
    assert r.returncode == 2 and "NCCL_PXN_DISABLE" in r.stderr, r.stderr
    opt = tmp_path / "opt.toml"
    opt.write_text(RAIL_ONLY.replace('"rail_only"', '"rail_optimized"'))
    r = cli(*args, "--fabric", str(opt), "--nccl-pxn-disable")
    assert r.returncode == 0, r.stderr
    assert "# Out of bounds values : 0 OK" in r.stdout
