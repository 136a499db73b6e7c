"""Runs too large for memory are refused before they allocate, with the
estimate, from Python and the CLI (the MPI job's schedules and queue pairs;
the fabric and flows workloads are covered in test_api / the Rust suite)."""

from __future__ import annotations

import os
import re

import pytest

import fabriclab
from conftest import run_cli

# 4,096 hosts; a linear Alltoall over them is 2 x 4,096 x 4,095 steps
# (33.5 M, about 4 GB of schedule) and 8.4 M queue pairs.
BIG = """
[topology]
kind = "leaf_spine"
spines = 8
leaves = 128
hosts_per_leaf = 32
host_link_gbps = 100
uplink_gbps = 100
"""


def test_an_mpi_job_over_the_memory_limit_is_refused_from_python(monkeypatch):
    monkeypatch.setenv("FABRICLAB_MEMORY_LIMIT", "2G")
    with pytest.raises(fabriclab.FabriclabError, match=r"4096 ranks\) needs about [0-9.]+ GB .*estimated before compiling"):
        fabriclab.imb(
            "Alltoall",
            np=4096,
            fabric=fabriclab.Fabric.from_toml(BIG),
            msglog=(10, 10),
            npmin=4096,
            algorithms={"alltoall": "linear"},
        )


def test_an_mpi_job_over_the_memory_limit_is_refused_from_the_cli(tmp_path):
    f = tmp_path / "big.toml"
    f.write_text(BIG)
    env = dict(os.environ, FABRICLAB_MEMORY_LIMIT="2G")
    r = run_cli(
        "imb", "Alltoall", "-np", "4096", "-npmin", "4096", "-msglog", "10:10",
        "--fabric", str(f), "--algorithm", "alltoall=linear", env=env,
    )
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert "fabriclab: error: this MPI job (4096 ranks) needs about" in r.stderr
    assert "estimated before compiling 1 x alltoall" in r.stderr
    assert "more than the 2.0 GB available" in r.stderr
    assert "Traceback" not in r.stderr


def test_the_same_job_within_the_limit_is_not_refused_by_the_estimate(monkeypatch):
    # A small job under the same limit runs as before.
    monkeypatch.setenv("FABRICLAB_MEMORY_LIMIT", "2G")
    res = fabriclab.imb("Alltoall", np=8, fabric="heps", msglog=(10, 10), npmin=8)
    df = res.df
    assert list(df["bytes"]) == [0, 1024] and df["t_avg_us"].iloc[1] > 0


def test_an_nccl_sweep_too_large_to_compile_is_refused_before_it_compiles(tmp_path):
    # 32 GPUs from 8 B to 64 GiB: the long sizes alone are tens of millions
    # of steps. Refused from their estimate, not after compiling the sweep
    # (which used to grow until the allocator aborted).
    env = dict(os.environ, FABRICLAB_MEMORY_LIMIT="1G")
    r = run_cli("nccl-tests", "all_reduce_perf", "-b", "8", "-e", "64G", "-f", "2", "--nodes", "4", "-c", "0", env=env)
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert "fabriclab: error: this NCCL job (32 ranks) needs about" in r.stderr
    assert "estimated before compiling, for the sizes from" in r.stderr
    assert "a smaller -e fits in less" in r.stderr
    assert "Traceback" not in r.stderr


def test_an_nccl_sweep_too_large_is_refused_from_python(monkeypatch):
    monkeypatch.setenv("FABRICLAB_MEMORY_LIMIT", "1G")
    with pytest.raises(fabriclab.FabriclabError, match=r"32 ranks\) needs about [0-9.]+ GB .*estimated before compiling"):
        fabriclab.nccl_tests("all_reduce_perf", nodes=4, min_bytes=8, max_bytes="64G", step_factor=2, check=0)


def test_parallel_links_count_in_the_fabric_estimate(tmp_path):
    # 2 x 2 leaves and spines joined by 400,000 cables each: 1.6 M links,
    # about 4.2 GB of ports at 1,312 B a link end. Counted at 640 B it was
    # 2.1 GB, under 3 GB, so not refused, and building it took 6.8 GB.
    f = tmp_path / "wide.toml"
    f.write_text(
        "[topology]\nkind = \"leaf_spine\"\nspines = 2\nleaves = 2\nhosts_per_leaf = 2\n"
        "host_link_gbps = 100\nuplink_gbps = 100\nlinks_per_pair = 400000\n"
        "[switch]\nbuffer_bytes = 1000000000000\n"
    )
    env = dict(os.environ, FABRICLAB_MEMORY_LIMIT="3G")
    r = run_cli("perftest", "ib_write_bw", "--fabric", str(f), "-n", "10", env=env)
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    m = re.search(r"this fabric \(4 hosts, 4 switches, 1600004 links\) needs about ([0-9.]+) GB", r.stderr)
    assert m, r.stderr
    # 4.2 GB of ports, 5.6 GB with the audit's counters (FABRICLAB_AUDIT=1,
    # as the test suite runs).
    audit = os.environ.get("FABRICLAB_AUDIT", "0") not in ("", "0")
    assert float(m.group(1)) == pytest.approx(5.66 if audit else 4.22, abs=0.01)
    assert "more than the 3.0 GB available" in r.stderr
