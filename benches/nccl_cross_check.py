"""NCCL on the flow backend against the packet engine: flow time / packet
time of nccl-tests calls, as the Markdown tables of ``docs/nccl.md``
("The flow backend: rings and trees as coflows")::

    python benches/nccl_cross_check.py            # the three tables
    python benches/nccl_cross_check.py --quick    # without 512 MiB
    python benches/nccl_cross_check.py --only long

The first table forces the algorithm and protocol on H100-like servers of
8 GPUs with 400G InfiniBand NICs (2 timed calls, no warm-up, as
``tests/nccl.rs``); the second is Broadcast and Reduce as NCCL picks them
on 100G NICs, one call and 20 back to back (nccl-tests' default ``-n``);
the third, long chains: a 64 MiB Broadcast on 64 to 1,024 GPUs of
``scenarios/h100_1024.fabric.toml``, a few calls back to back (about 1.5
minutes, most of it the packet core on 1,024 GPUs).
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import fabriclab


def fabric(servers: int, gpus: int, nic_gbps: int) -> str:
    return (
        'transport = "infiniband"\n[ib]\nmtu = 4096\n'
        f"[gpu]\ngpus_per_server = {gpus}\nnvlink_gbps = 3600\n"
        f'[topology]\nkind = "rail_optimized"\nservers = {servers}\n'
        f"spines = 2\nnic_gbps = {nic_gbps}\nlinks_per_pair = 4\n"
    )


def time_us(backend: str, test: str, fab: str, servers: int, size: int, iters: int, **kw: str) -> float:
    r = fabriclab.nccl_tests(
        test,
        fabric=fab,
        nodes=servers,
        min_bytes=size,
        max_bytes=size,
        iters=iters,
        warmup_iters=0,
        check=0,
        max_volume=0,
        backend=backend,
        **kw,
    )
    return float(r.df.iloc[0].time_us)


def ratio(test: str, fab: str, servers: int, size: int, iters: int, **kw: str) -> float:
    packet = time_us("packet", test, fab, servers, size, iters, **kw)
    flow = time_us("flow", test, fab, servers, size, iters, **kw)
    return flow / packet


FORCED = [
    (1, "all_reduce", "Ring", "Simple"),
    (2, "all_reduce", "Ring", "Simple"),
    (4, "all_reduce", "Ring", "Simple"),
    (2, "all_reduce", "Tree", "Simple"),
    (4, "all_reduce", "Tree", "Simple"),
    (2, "all_reduce", "Ring", "LL"),
    (4, "all_reduce", "Tree", "LL128"),
    (2, "all_gather", "Ring", "Simple"),
    (2, "broadcast", "Ring", "Simple"),
    (2, "reduce", "Ring", "Simple"),
    (2, "all_reduce", "NVLSTree", "Simple"),
    (4, "all_reduce", "NVLSTree", "Simple"),
]

CHAINS = [(2, 8), (4, 4), (8, 8)]

# Long chains: (servers, timed calls) on the 1,024-GPU fabric.
LONG = [(8, 1), (8, 5), (16, 1), (16, 5), (64, 1), (64, 5), (128, 1), (128, 2), (128, 5)]
H100_1024 = str(pathlib.Path(__file__).resolve().parent.parent / "scenarios" / "h100_1024.fabric.toml")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="leave out the 512 MiB column")
    ap.add_argument("--only", choices=["forced", "chains", "long"], help="print one of the three tables")
    args = ap.parse_args()
    sizes = [8 << 10, 1 << 20, 64 << 20] + ([] if args.quick else [512 << 20])
    names = {8 << 10: "8 KiB", 1 << 20: "1 MiB", 8 << 20: "8 MiB", 64 << 20: "64 MiB", 512 << 20: "512 MiB"}
    if args.only in (None, "forced"):
        forced(sizes, names)
        print()
    if args.only in (None, "chains"):
        chains(names)
        print()
    if args.only in (None, "long"):
        long_chains()
    return 0


def forced(sizes: list[int], names: dict[int, str]) -> None:
    print("| servers | program | algo/proto | " + " | ".join(names[s] for s in sizes) + " |")
    print("|---|---|---|" + "---|" * len(sizes))
    for servers, test, algo, proto in FORCED:
        fab = fabric(servers, 8, 400)
        cells = [
            ratio(test, fab, servers, s, 2, nccl_algo=algo, nccl_proto=proto) for s in sizes
        ]
        print(
            f"| {servers} | {test} | {algo}/{proto} | " + " | ".join(f"{c:.3f}" for c in cells) + " |",
            flush=True,
        )


def chains(names: dict[int, str]) -> None:
    print("| program | servers x GPUs | size | NCCL's choice | 1 call | 20 calls |")
    print("|---|---|---|---|---|---|")
    for test in ("broadcast", "reduce"):
        for servers, gpus in CHAINS:
            fab = fabric(servers, gpus, 100)
            for size in (1 << 20, 8 << 20, 64 << 20):
                r = fabriclab.nccl_tests(
                    test, fabric=fab, nodes=servers, min_bytes=size, max_bytes=size,
                    iters=1, warmup_iters=0, check=0, max_volume=0,
                )
                algo = r.df.iloc[0].algo
                one = ratio(test, fab, servers, size, 1)
                twenty = ratio(test, fab, servers, size, 20)
                print(
                    f"| {test} | {servers} x {gpus} | {names[size]} | {algo} | {one:.3f} | {twenty:.3f} |",
                    flush=True,
                )


def long_chains() -> None:
    print("| servers | calls | packet | flow | flow / packet |")
    print("|---|---|---|---|---|")
    for servers, calls in LONG:
        packet = time_us("packet", "broadcast", H100_1024, servers, 64 << 20, calls)
        flow = time_us("flow", "broadcast", H100_1024, servers, 64 << 20, calls)
        print(f"| {servers} | {calls} | {packet:,.1f} | {flow:,.1f} | {flow / packet:.3f} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
