"""The ``fabriclab imb``, ``fabriclab osu`` and ``fabriclab cbench``
commands: IMB-MPI1 and OSU micro-benchmarks with their own option spellings
(``-np``, ``-msglog``, ``-npmin``, ``-iter``, ``-root_shift on``; ``-m``,
``-i``, ``-x``, ``-f``), Cbench rotate (its compiled-in constants as
options), plus mpirun-like placement (``--ppn``, ``--hosts``, ``--map-by``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

from . import mpi
from ._checks import check_out_paths, command_inputs, size_bytes
from .bisection import CBENCH_TESTS, cbench
from .errors import InvalidArgumentError
from .results import Result, print_notes


def size_arg(text: str) -> int:
    """A byte count option (``8M``), for argparse's ``type=``."""
    try:
        return size_bytes(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _forced(text: str) -> tuple[str, str]:
    coll, sep, alg = text.partition("=")
    if not sep or not coll or not alg:
        raise argparse.ArgumentTypeError(f"expected COLLECTIVE=ALGORITHM (e.g. allreduce=ring), got {text!r}")
    return coll.strip(), alg.strip()


def _on_off(text: str) -> bool:
    if text.lower() in ("on", "1", "yes", "true"):
        return True
    if text.lower() in ("off", "0", "no", "false"):
        return False
    raise argparse.ArgumentTypeError(f"expected on or off, got {text!r}")


def _iperf_bg(text: str) -> dict[str, Any]:
    parts = text.split(":")
    if len(parts) not in (3, 4) or not parts[0] or not parts[1]:
        raise argparse.ArgumentTypeError(f"expected CLIENT:SERVER:RATE[:STREAMS] (e.g. h2:h19:20G), got {text!r}")
    out: dict[str, Any] = {"client": parts[0], "server": parts[1], "bitrate": parts[2], "duration": 1e3}
    if len(parts) == 4:
        try:
            out["parallel"] = int(parts[3])
        except ValueError:
            raise argparse.ArgumentTypeError(f"STREAMS must be an integer, got {parts[3]!r}") from None
    return out


def _job_opts(p: argparse.ArgumentParser, default_fabric: str, background: Callable[[str], Any], collectives: bool = True) -> None:
    p.add_argument("--fabric", default=default_fabric, help=f"preset name or fabric TOML file (default {default_fabric})")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    p.add_argument("-np", "--np", dest="np", type=int, required=True, help="number of ranks")
    p.add_argument("--ppn", type=int, help="ranks per host (default 1)")
    p.add_argument("--hosts", "--host", dest="hosts", help="comma-separated hosts (default: the first ones)")
    p.add_argument(
        "--map-by",
        dest="placement",
        choices=["block", "round_robin", "slot", "node"],
        default="block",
        help="rank order: block/slot fills a host first, round_robin/node deals ranks over hosts",
    )
    if collectives:
        p.add_argument("--library", choices=["openmpi", "mpich"], help="collective selection rules (default: the fabric's)")
        p.add_argument(
            "--show-algorithm",
            action="store_true",
            help="after the tool's output, list the collective algorithm each size ran (the library's choice or the forced one)",
        )
        p.add_argument(
            "--max-volume",
            dest="max_volume",
            type=int,
            metavar="BYTES",
            help="simulation budget: fewer repetitions where one size would move more than BYTES in all, each message "
            "counting at least 64 B (default 1 GiB; 0 = the tool's counts)",
        )
    background_opts(p, background)
    telemetry_opts(p)
    p.add_argument("--quiet", action="store_true", help="no progress bar or lines on stderr")
    p.add_argument("--counters", action="store_true", help="also print the port counters and MPI counters")


def background_opts(p: argparse.ArgumentParser, background: Callable[[str], Any]) -> None:
    """``--background`` flows and ``--background-iperf`` runs beside a job."""
    p.add_argument(
        "--background",
        type=background,
        action="append",
        default=[],
        metavar="SRC:DST:BYTES[:repeat]",
        help="other traffic during the run (repeatable; 'repeat' re-posts it for as long as the job runs)",
    )
    p.add_argument(
        "--background-iperf",
        dest="background_iperf",
        type=_iperf_bg,
        action="append",
        default=[],
        metavar="CLIENT:SERVER:RATE[:STREAMS]",
        help="iperf3 TCP traffic beside the job, e.g. h2:h19:20G (repeatable)",
    )


def placement(a: argparse.Namespace) -> str:
    """``--map-by``'s value in the core's words (slot is block, node is round_robin)."""
    given: str = a.placement
    return {"slot": "block", "node": "round_robin"}.get(given, given)


def telemetry_opts(p: argparse.ArgumentParser) -> None:
    """``--telemetry-us``, ``--telemetry-csv`` and ``--dashboard``."""
    p.add_argument(
        "--telemetry-us",
        dest="telemetry_us",
        type=float,
        metavar="US",
        help="sample every port's queue, bytes sent and PFC state every US microseconds",
    )
    p.add_argument("--telemetry-csv", dest="telemetry_csv", metavar="FILE", help="write the port samples to FILE (CSV; needs --telemetry-us)")
    p.add_argument("--dashboard", metavar="FILE.html", help="draw the port samples as an HTML dashboard (needs --telemetry-us)")


def check_telemetry(a: argparse.Namespace) -> None:
    """Outputs of telemetry need a sampling period: say so before running."""
    us = a.telemetry_us
    if us is not None and not us >= 0.001:
        raise InvalidArgumentError(f"--telemetry-us must be a sampling period of at least 0.001 us, got {us:g}")
    if (a.telemetry_csv or a.dashboard) and us is None:
        raise InvalidArgumentError("--telemetry-csv and --dashboard need --telemetry-us (the sampling period in us)")
    check_out_paths(((a.telemetry_csv, "--telemetry-csv"), (a.dashboard, "--dashboard")), inputs=command_inputs(a))


def write_telemetry(a: argparse.Namespace, res: Result, title: str) -> None:
    """Write ``--telemetry-csv`` and ``--dashboard`` from ``res.port_samples``."""
    ps = res.port_samples
    if ps is None:
        return
    if a.telemetry_csv:
        try:
            ps.to_csv(a.telemetry_csv, index=False)
        except OSError as e:
            raise InvalidArgumentError(f"cannot write telemetry to {a.telemetry_csv}: {e.strerror or e}") from None
        print(f"telemetry: {len(ps)} port samples in {a.telemetry_csv}", file=sys.stderr)
    if a.dashboard:
        from .dashboards import dashboard

        dashboard(ps, a.dashboard, fabric=a.fabric, title=title)
        print(f"dashboard written to {a.dashboard}", file=sys.stderr)


def add_parsers(sub: Any, background: Callable[[str], Any]) -> None:
    """Add the ``imb`` and ``osu`` subcommands to ``sub``; ``background``
    parses a ``--background`` flow."""
    pi = sub.add_parser("imb", help="run Intel MPI Benchmarks (IMB-MPI1)")
    pi.add_argument("benchmarks", metavar="BENCH", nargs="*", help=" ".join(mpi.IMB_BENCHMARKS) + " (default: all)")
    _job_opts(pi, "eantc-hpc", background)
    pi.add_argument("-msglog", "--msglog", dest="msglog", metavar="[MIN:]MAX", help="message lengths 0 and 2^MIN..2^MAX (default 0:22)")
    pi.add_argument("-npmin", "--npmin", dest="npmin", type=int, help="smallest process count for collectives (default 2)")
    pi.add_argument("-iter", "--iter", dest="iters", type=int, help="repetitions for short messages (default 1000)")
    pi.add_argument("-root_shift", "--root-shift", dest="root_shift", type=_on_off, default=False, metavar="on|off", help="rotate the root of rooted collectives")
    pi.add_argument(
        "--algorithm",
        type=_forced,
        action="append",
        default=[],
        metavar="COLL=ALG",
        help="force a collective's algorithm, e.g. allreduce=ring (repeatable)",
    )

    po = sub.add_parser("osu", help="run an OSU micro-benchmark")
    po.add_argument("test", metavar="TEST", help=" ".join(mpi.OSU_TESTS))
    _job_opts(po, "ihep-roce", background)
    po.add_argument("-m", "--message-size", dest="sizes", metavar="[MIN:]MAX", help="message sizes, from MIN doubling up to MAX as OSU runs them (default 1:4M point-to-point, 1:1M collectives; 0 adds the 0-byte message point-to-point); :MAX or MIN: sets one end only, as OSU's -m does")
    po.add_argument("-i", "--iterations", dest="iterations", type=int, help="iterations")
    po.add_argument("-x", "--warmup", dest="warmup", type=int, help="warm-up iterations")
    po.add_argument("-f", "--full", dest="full", action="store_true", help="print min, max and iterations")
    po.add_argument("--algorithm", metavar="ALG", help="force the collective's algorithm")
    po.add_argument(
        "-z",
        "--tail-lat",
        dest="tail_lat",
        nargs="?",
        const=True,
        metavar="P1,P2,...",
        help="osu_latency: tail latencies at these whole percentiles, at most 5 (default 50,90,99)",
    )

    pc = sub.add_parser("cbench", help="run Sandia Cbench rotate (bisection bandwidth) or rotate_latency")
    pc.add_argument("test", metavar="TEST", help=" ".join(CBENCH_TESTS))
    _job_opts(pc, "sandia-iwarp", background, collectives=False)
    pc.add_argument("--bytes", type=size_arg, help="message size, e.g. 8M (Cbench: 8388608 for rotate, 0 for rotate_latency)")
    pc.add_argument("--iterations", type=int, help="messages or round trips per test (Cbench: 10 / 10000)")
    pc.add_argument("--tests", type=int, help="tests per rotation, best kept (Cbench: 3 / 1)")
    pc.add_argument("--rotations", type=int, help="run only the first N bisections (default all np/2)")


def show_algorithms(df: Any, keys: list[str]) -> None:
    """The collective algorithms that ran, one line per run of sizes with
    the same algorithm (point-to-point rows have none)."""
    lines = []
    for _, g in (df.groupby(keys, sort=False) if keys else [((), df)]):
        g = g[g["algorithm"].fillna("") != ""]
        run: list[Any] = []
        for _, row in g.iterrows():
            if run and row["algorithm"] != run[-1]["algorithm"]:
                lines.append(run)
                run = []
            run.append(row)
        if run:
            lines.append(run)
    if not lines:
        sys.stdout.write("\n# No collective ran (point-to-point only): no algorithm to show.\n")
        return
    sys.stdout.write("\n# Collective algorithms that ran:\n")
    for run in lines:
        head = " ".join(str(run[0][k]) if k == "bench" else f"{k} {run[0][k]}" for k in keys)
        sizes = f"{run[0]['bytes']} B" if len(run) == 1 else f"{run[0]['bytes']}-{run[-1]['bytes']} B"
        sys.stdout.write(f"#   {head + ', ' if head else ''}{sizes}: {run[0]['algorithm']}\n")


def print_result(res: Result, counters: bool, quiet: bool = False, counters_title: str = "MPI counters") -> None:
    """Print an IMB/OSU result: the tool's text, then counters if asked
    (under ``counters_title``); on stderr a note where the run differs
    from what was asked, and (unless ``quiet``) the simulated and wall
    time."""
    text = res.text or ""
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    for i, t in enumerate(res.extras.get("iperf_text", [])):
        sys.stdout.write(f"\n--- background iperf {i + 1} ---\n" + t)
    if counters:
        sys.stdout.write("\nPort counters:\n" + (res.ports_table or ""))
        m = res.extras["mpi"]
        rows = "".join(f"  {k:<12} {m[k]}\n" for k in mpi.MPI_COUNTER_KEYS)
        sys.stdout.write(f"\n{counters_title}:\n" + rows)
    note = mpi.lowered_note(res)
    if note:
        print(note, file=sys.stderr)
    if not quiet:
        print(
            f"simulated {(res.sim_time_us or 0.0) / 1e6:.6f} s in {res.wall_s or 0.0:.1f} s of wall time ({res.events or 0:,} events)",
            file=sys.stderr,
        )


def job_kwargs(a: argparse.Namespace, collectives: bool = True) -> dict[str, Any]:
    """The keywords ``imb``, ``osu`` (and, without the collectives' two,
    ``cbench`` and ``hpl``) take alike from the command line."""
    check_telemetry(a)
    kw: dict[str, Any] = dict(
        np=a.np,
        fabric=a.fabric,
        seed=a.seed,
        ppn=a.ppn,
        hosts=a.hosts,
        placement=placement(a),
        background=a.background,
        background_iperf=a.background_iperf,
        telemetry_us=a.telemetry_us,
        progress=not a.quiet,
    )
    if collectives:
        kw.update(library=a.library, max_volume=a.max_volume)
    return kw


def cmd_imb(a: argparse.Namespace) -> None:
    """``fabriclab imb``."""
    res = mpi.imb(
        a.benchmarks or None,
        msglog=a.msglog,
        npmin=a.npmin,
        iters=a.iters,
        root_shift=a.root_shift,
        algorithms=dict(a.algorithm),
        **job_kwargs(a),
    )
    print_result(res, a.counters, a.quiet)
    print_notes(res)
    if a.show_algorithm:
        show_algorithms(res.df, ["bench", "np"])
    write_telemetry(a, res, f"IMB on {a.fabric}")
    # The core ignores a forced algorithm of a collective the run does not
    # have: say so, or a typo (reduce for allreduce) goes unnoticed.
    note = mpi.algorithm_note(a.benchmarks or None, dict(a.algorithm))
    if note:
        print(note, file=sys.stderr)


def _percentiles(text: str | bool | None) -> list[int] | bool | None:
    """``-z``'s list, e.g. ``50,90,99``; a bare ``-z`` is OSU's default."""
    if text is None or isinstance(text, bool):
        return text
    try:
        return [int(p) for p in text.split(",")]
    except ValueError:
        raise InvalidArgumentError(f"-z {text}: give whole percentiles separated by commas, e.g. -z 50,90,99") from None


def cmd_osu(a: argparse.Namespace) -> None:
    """``fabriclab osu``."""
    res = mpi.osu(
        a.test,
        sizes=a.sizes,
        iterations=a.iterations,
        warmup=a.warmup,
        full=a.full,
        algorithm=a.algorithm,
        tail_lat=_percentiles(a.tail_lat),
        **job_kwargs(a),
    )
    print_result(res, a.counters, a.quiet)
    print_notes(res)
    if a.show_algorithm:
        show_algorithms(res.df, [])
    write_telemetry(a, res, f"OSU on {a.fabric}")


def cmd_cbench(a: argparse.Namespace) -> None:
    """``fabriclab cbench``."""
    res = cbench(
        a.test,
        bytes=a.bytes,
        iterations=a.iterations,
        tests=a.tests,
        rotations=a.rotations,
        **job_kwargs(a, collectives=False),
    )
    print_result(res, a.counters, a.quiet)
    print_notes(res)
    write_telemetry(a, res, f"Cbench on {a.fabric}")
