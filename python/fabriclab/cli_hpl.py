"""The ``fabriclab hpl`` command: HPL 2.3 on a simulated fabric, its
settings from an HPL.dat (``--dat``) and/or options named after HPL.dat's
lines, and its own output::

    fabriclab hpl --dat HPL.dat --fabric eantc-hpc
    fabriclab hpl -N 8192 --nb 192 --grid 2x4 4x2 --bcast 1ringM 2ringM \\
        --hosts h0-h7 --dgemm-gflops 40 -o HPL.out

HPL's text goes to stdout, or where HPL.dat's device out line says
(``7`` stderr, anything but ``6`` the file its output-file line names, as
HPL does), or to ``-o FILE``, which wins; ``--json`` prints the report
instead; a per-test summary (Gflops, efficiency against P x Q x the DGEMM
rate, iterations simulated) follows on stderr. An ``[[hpl]]`` item of a
scenario (``fabriclab run``, labs) prints its text with the other items'
on stdout, whatever its HPL.dat says. Stopped by Ctrl-C after a test
ended, it prints and writes the tests that ended and exits 130.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Callable

from ._checks import check_out_path, command_inputs
from ._tables import tuples
from .cli_mpi import background_opts, check_telemetry, job_kwargs, telemetry_opts, write_telemetry
from .errors import InvalidArgumentError
from .linpack import HPL_BCASTS, hpl, parse_grids
from .mpi import MPI_COUNTER_KEYS
from .results import Result, print_notes


def _grid_arg(text: str) -> list[list[int]]:
    """``PxQ`` (or several, comma-separated) on the command line."""
    try:
        grids = parse_grids(text)
    except (ValueError, TypeError):
        grids = []
    if not grids:
        raise argparse.ArgumentTypeError(f"expected PxQ (e.g. 2x4), got {text!r}")
    return grids


def add_parser(sub: Any, background: Callable[[str], Any]) -> None:
    """Add the ``hpl`` subcommand to ``sub``; ``background`` parses a
    ``--background`` flow."""
    p = sub.add_parser("hpl", help="run HPL (High-Performance Linpack)")
    p.add_argument("--fabric", default="eantc-hpc", help="preset name or fabric TOML file (default eantc-hpc)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    p.add_argument(
        "--dat",
        metavar="FILE",
        help="an HPL.dat: its settings are the defaults of the options below, and its output lines say where "
        "HPL's text goes (device out 6 stdout, 7 stderr, else the file it names, in the working directory)",
    )
    p.add_argument("-N", "--n", dest="n", type=int, nargs="+", metavar="N", help="problem sizes (HPL.dat's Ns)")
    p.add_argument("--nb", type=int, nargs="+", metavar="NB", help="block sizes (default 192)")
    p.add_argument("--grid", type=_grid_arg, nargs="+", metavar="PxQ", help="process grids, e.g. 2x4 4x2")
    p.add_argument("-P", dest="ps", type=int, nargs="+", metavar="P", help="process rows (with -Q, as HPL.dat's Ps and Qs)")
    p.add_argument("-Q", dest="qs", type=int, nargs="+", metavar="Q", help="process columns")
    p.add_argument("--pmap", choices=("row", "column"), help="process mapping (default row)")
    p.add_argument("--pfact", nargs="+", metavar="NAME", help="panel factorisations: left crout right (default right)")
    p.add_argument("--nbmin", type=int, nargs="+", metavar="N", help="recursive stopping criteria (default 4)")
    p.add_argument("--ndiv", type=int, nargs="+", metavar="N", help="panels in recursion (default 2)")
    p.add_argument("--rfact", nargs="+", metavar="NAME", help="recursive panel factorisations (default crout)")
    p.add_argument("--bcast", nargs="+", metavar="NAME", help=" ".join(HPL_BCASTS) + " (default 1ringM)")
    p.add_argument("--depth", type=int, nargs="+", metavar="D", help="look-ahead depths, 0 or 1 (default 1)")
    p.add_argument("--swap", metavar="ALG", help="bin-exch, long or mix (default mix)")
    p.add_argument("--swap-threshold", dest="swap_threshold", type=int, metavar="COLS", help="mix: binary exchange up to COLS columns (default 64)")
    p.add_argument("-np", "--np", dest="np", type=int, help="ranks (default the largest P x Q)")
    p.add_argument("--ppn", type=int, help="ranks per host (default 1)")
    p.add_argument("--hosts", "--host", dest="hosts", metavar="HOSTS", help="hosts, e.g. h0-h7 or h0,h4 (default: the first ones)")
    p.add_argument(
        "--placement",
        "--map-by",
        dest="placement",
        choices=["block", "round_robin", "slot", "node"],
        default="block",
        help="rank order: block/slot fills a host first, round_robin/node deals ranks over hosts",
    )
    p.add_argument("--dgemm-gflops", dest="dgemm_gflops", type=float, metavar="GFLOPS", help="DGEMM rate per rank (default 50)")
    p.add_argument("--pfact-gflops", dest="pfact_gflops", type=float, metavar="GFLOPS", help="panel factorisation rate per rank (default a quarter of DGEMM's)")
    p.add_argument("--samples", type=int, metavar="K", help="strata of sampled iterations, 3 or more (default 8; 0 = simulate every iteration)")
    background_opts(p, background)
    telemetry_opts(p)
    p.add_argument("-o", "--output", metavar="FILE", help="write HPL's text to FILE instead of stdout (or of HPL.dat's device out)")
    p.add_argument(
        "--json",
        action="store_true",
        help="print the report as JSON instead of HPL's text (counters included; telemetry as one list per column)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar or lines on stderr")
    # Progress is on by default, as for every tool; --progress is kept so
    # that scripts written for the old opt-in flag still run.
    p.add_argument("--progress", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--counters", action="store_true", help="also print the port counters and MPI counters (of the last test)")


def _grids(a: argparse.Namespace) -> list[list[int]] | None:
    """``--grid``, or ``-P`` and ``-Q`` paired like HPL.dat's Ps and Qs."""
    if a.ps is None and a.qs is None:
        return None if a.grid is None else [g for grids in a.grid for g in grids]
    if a.grid is not None:
        raise InvalidArgumentError("give the grids with --grid or with -P and -Q, not both")
    if a.ps is None or a.qs is None or len(a.ps) != len(a.qs):
        raise InvalidArgumentError("-P and -Q take one value per grid: give both, with as many values each")
    return [[p, q] for p, q in zip(a.ps, a.qs)]


def dat_output(text: str) -> tuple[str, int] | None:
    """HPL.dat's lines 3 and 4: the output file name and the device out
    (6 stdout, 7 stderr, else the file); None if they cannot be read (the
    core then says what is wrong with the file)."""
    lines = text.lstrip("\ufeff").splitlines()
    try:
        name = lines[2].split()[0]
        device = int(lines[3].split()[0])
    except (IndexError, ValueError):
        return None
    return name, device


def _destination(a: argparse.Namespace) -> str:
    """Where HPL's text goes: ``-o FILE``; else HPL.dat's device out (a
    file name, ``"-"`` for stdout, ``"2"`` for stderr); else stdout."""
    if a.output:
        return str(a.output)
    if a.dat is None:
        return "-"
    try:
        with open(a.dat, encoding="utf-8") as f:
            out = dat_output(f.read())
    except (OSError, UnicodeDecodeError):
        return "-"  # the run reports the file's problem
    if out is None or out[1] == 6:
        return "-"
    if out[1] == 7:
        return "2"
    return out[0]


def cmd_hpl(a: argparse.Namespace) -> int:
    """``fabriclab hpl``; 130 when stopped (Ctrl-C) after a test ended,
    with the tests that ended printed and written as a whole run's."""
    check_telemetry(a)
    dest = _destination(a)
    if dest not in ("-", "2"):
        # -o, or HPL.dat's output file: checked before the run, not after.
        what = "-o/--output" if a.output else f"HPL.dat's output file (device out, in {a.dat})"
        check_out_path(dest, what, inputs=command_inputs(a))
    try:
        res = hpl(
            dat=a.dat,
            n=a.n,
            nb=a.nb,
            grids=_grids(a),
            pmap=a.pmap,
            pfact=a.pfact,
            nbmin=a.nbmin,
            ndiv=a.ndiv,
            rfact=a.rfact,
            bcast=a.bcast,
            depth=a.depth,
            swap=a.swap,
            swap_threshold=a.swap_threshold,
            dgemm_gflops=a.dgemm_gflops,
            pfact_gflops=a.pfact_gflops,
            samples=a.samples,
            **job_kwargs(a, collectives=False),
        )
    except KeyboardInterrupt as e:
        part = getattr(e, "result", None)
        if not isinstance(part, Result):
            raise
        _emit(a, part, dest)
        where = "the output above is" if dest in ("-", "2") else f"{dest} holds"
        print(f"fabriclab: interrupted; {where} the {len(part.df)} test(s) that ended", file=sys.stderr)
        return 130
    _emit(a, res, dest)
    return 0


def _emit(a: argparse.Namespace, res: Result, dest: str) -> None:
    """HPL's text to ``dest`` (a file, ``"-"`` stdout, ``"2"`` stderr),
    or the JSON report; the summary; telemetry."""
    to_file = dest not in ("-", "2")
    if to_file:
        _write(dest, res.text or "")
    elif dest == "2" and not a.json:
        out = res.text or ""
        sys.stderr.write(out if out.endswith("\n") else out + "\n")
    if a.json:
        sys.stdout.write(json.dumps(res.extras["report"], indent=2) + "\n")
        sys.stdout.flush()
        if not a.quiet:
            sys.stderr.write(summary(res))
    else:
        print_result(res, a.counters, a.quiet, text=dest == "-")
    print_notes(res)
    if to_file:
        print(f"HPL output written to {dest}", file=sys.stderr)
    write_telemetry(a, res, f"HPL on {a.fabric}")


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text if text.endswith("\n") else text + "\n")
    except OSError as e:
        raise InvalidArgumentError(f"cannot write HPL's output to {path}: {e.strerror or e}") from None


def summary(res: Result) -> str:
    """One line per test: Gflops, efficiency against P x Q x the DGEMM
    rate, iterations simulated of all; then the simulated and wall time."""
    dgemm = res.extras["settings"]["dgemm_gflops"]
    lines = []
    for t in tuples(res.df, index=False):
        lines.append(
            f"{t.variant} N={t.n} NB={t.nb} {t.p}x{t.q}: {t.gflops:.4g} Gflops, "
            f"{100 * t.efficiency:.1f} % of {t.p}x{t.q} x {dgemm:g} Gflops DGEMM, "
            f"{t.simulated_iterations} of {t.iterations} iterations simulated"
        )
    lines.append(
        f"simulated {(res.sim_time_us or 0.0) / 1e6:.6f} s in {res.wall_s or 0.0:.1f} s of wall time ({res.events or 0:,} events)"
    )
    return "\n".join(lines) + "\n"


def print_result(res: Result, counters: bool, quiet: bool = False, text: bool = True) -> None:
    """Print an HPL result: HPL's text (unless ``text`` is False), the
    background iperf texts and counters if asked, and the summary on
    stderr (unless ``quiet``)."""
    if text:
        out = res.text or ""
        sys.stdout.write(out if out.endswith("\n") else out + "\n")
    for i, t in enumerate(res.extras.get("iperf_text", [])):
        sys.stdout.write(f"\n--- background iperf {i + 1} ---\n" + t)
    if counters:
        sys.stdout.write("\nPort counters:\n" + (res.ports_table or ""))
        m = res.extras["mpi"]
        sys.stdout.write("\nMPI counters:\n" + "".join(f"  {k:<12} {m[k]}\n" for k in MPI_COUNTER_KEYS))
    sys.stdout.flush()
    if not quiet:
        sys.stderr.write(summary(res))
