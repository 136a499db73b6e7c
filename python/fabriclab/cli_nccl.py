"""The ``fabriclab nccl-tests`` command: nccl-tests' ``*_perf`` programs
with nccl-tests' own options, on a fabric of GPU servers."""

from __future__ import annotations

import argparse
from typing import Any

from . import gpu
from .cli_mpi import print_result
from .results import print_notes


def add_parser(sub: Any) -> None:
    """Add ``nccl-tests`` to ``sub``."""
    p = sub.add_parser(
        "nccl-tests",
        help="run an nccl-tests program (all_reduce_perf ...) on GPU servers",
        description=(
            "nccl-tests on the simulated fabric: NCCL's Ring, Tree, NVLS and NVLS-Tree collectives over NVLink inside each "
            "server and RDMA between servers (the fabric needs a [gpu] section, e.g. h100-rail-ib), with the "
            "algorithm and protocol NCCL 2.22's tuning model picks (NVLS where the servers "
            "have NVLink SHARP, gpu.nvls), each connection with NCCL's 8 buffer slots; LL and LL128 pass "
            "data on over NVLink in eighths of a step as it comes. Not modelled: CollNet and PAT, GPU compute "
            "contention, the slices within a Simple step, LL's line-by-line forwarding below an eighth of a "
            "step. With --backend flow, calls across servers run as one fluid coflow per channel (max-min "
            "shares, no messages; refuses background traffic and link failures); within 3 % of the packet "
            "core on large ring calls, 10 % on Broadcast and Reduce (one call on chains of 32-1,024 GPUs: "
            "9 %; back-to-back calls on 512-1,024 GPUs: up to 16 % slower; forced channel counts: up to "
            "21 % faster), trees up to 25 % apart on some fabrics; it has no DCQCN, so on RoCE where ring hops "
            "share uplinks it can read far above the packet core (PXN off on h100-rail-roce: 244.7 against "
            "187.5 GB/s busbw) (docs/nccl.md)."
        ),
    )
    p.add_argument("test", metavar="PROGRAM", help=" ".join(gpu.NCCL_TESTS))
    p.add_argument("--fabric", default="h100-rail-ib", help="preset name or fabric TOML file (default h100-rail-ib)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    p.add_argument("--nodes", type=int, default=1, help="GPU servers (default 1)")
    p.add_argument("--gpus-per-node", dest="gpus_per_node", type=int, help="GPUs per server (default: all)")
    p.add_argument("-g", "--ngpus", dest="ngpus", type=int, help="GPUs per process (printed; default 1)")
    p.add_argument("-b", "--minbytes", dest="min_bytes", help="first size, K/M/G suffixes (default 32M)")
    p.add_argument("-e", "--maxbytes", dest="max_bytes", help="last size (default 32M)")
    p.add_argument("-f", "--stepfactor", dest="step_factor", type=int, help="multiply the size by this (default: add -i)")
    p.add_argument("-i", "--stepbytes", dest="step_bytes", help="add this to the size (default 1M)")
    p.add_argument("-n", "--iters", dest="iters", type=int, help="timed iterations (default 20)")
    p.add_argument("-w", "--warmup_iters", dest="warmup_iters", type=int, help="warm-up iterations (default 5)")
    p.add_argument("-c", "--check", dest="check", type=int, help="check the data (default 1; 0 prints N/A)")
    p.add_argument("-d", "--datatype", dest="datatype", help="float, half, double, int8, ... (default float)")
    p.add_argument("-o", "--op", dest="op", help="sum, prod, min, max, avg (default sum)")
    p.add_argument("-r", "--root", dest="root", type=int, help="root of broadcast and reduce (default 0)")
    p.add_argument("--nccl-algo", dest="nccl_algo", metavar="ALGO", help="NCCL_ALGO: Ring, Tree, NVLS or NVLSTree (Tree, NVLSTree: AllReduce only)")
    p.add_argument("--nccl-proto", dest="nccl_proto", metavar="PROTO", help="NCCL_PROTO: LL, LL128 or Simple")
    p.add_argument("--nccl-min-nchannels", dest="min_nchannels", type=int, metavar="N", help="NCCL_MIN_NCHANNELS")
    p.add_argument("--nccl-max-nchannels", dest="max_nchannels", type=int, metavar="N", help="NCCL_MAX_NCHANNELS")
    p.add_argument(
        "--nccl-pxn-disable",
        dest="pxn_disable",
        action="store_true",
        default=None,
        help="NCCL_PXN_DISABLE=1: each GPU sends through its own NIC (no NVLink hop to the receiver's rail)",
    )
    p.add_argument(
        "--nccl-nvls-enable",
        dest="nvls_enable",
        type=int,
        choices=(0, 1),
        metavar="0|1",
        help="NCCL_NVLS_ENABLE: 0 turns NVLink SHARP (NVLS, NVLS-Tree) off (default 1 where the servers have it)",
    )
    p.add_argument(
        "--max-volume",
        dest="max_volume",
        type=int,
        metavar="BYTES",
        help="simulation budget: fewer timed calls where one size would move more than BYTES in all (default 1 GiB; 0 = -n)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar or lines on stderr")
    p.add_argument(
        "--counters",
        action="store_true",
        help="also print the port counters and transfer counters (eager_msgs: messages between servers, "
        "through a NIC; shm_msgs: inside a server, over NVLink)",
    )


def cmd_nccl_tests(a: argparse.Namespace) -> None:
    """``fabriclab nccl-tests``."""
    res = gpu.nccl_tests(
        a.test,
        fabric=a.fabric,
        seed=a.seed,
        nodes=a.nodes,
        gpus_per_node=a.gpus_per_node,
        ngpus=a.ngpus,
        min_bytes=a.min_bytes,
        max_bytes=a.max_bytes,
        step_factor=a.step_factor,
        step_bytes=a.step_bytes,
        iters=a.iters,
        warmup_iters=a.warmup_iters,
        check=a.check,
        datatype=a.datatype,
        op=a.op,
        root=a.root,
        nccl_algo=a.nccl_algo,
        nccl_proto=a.nccl_proto,
        min_nchannels=a.min_nchannels,
        max_nchannels=a.max_nchannels,
        nccl_pxn_disable=a.pxn_disable,
        nccl_nvls_enable=None if a.nvls_enable is None else bool(a.nvls_enable),
        max_volume=a.max_volume,
        progress=not a.quiet,
    )
    print_result(res, a.counters, a.quiet, counters_title="Transfer counters")
    print_notes(res)
