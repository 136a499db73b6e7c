"""The ``fabriclab`` command line.

::

    fabriclab fabric list
    fabriclab fabric show NAME_OR_PATH [--toml] [--links]
    fabriclab perftest TEST [--fabric F] [--client H] [--server H] [-s N] [-a]
                       [-n N] [-t N] [-b] [-D SECS] [-q N] [-Q N] [--mtu N]
                       [--report_gbits] [--out_json] [--out_json_file PATH]
                       [--seed N] [--background SRC:DST:BYTES[:repeat]]...
                       [--counters]
    fabriclab flows [--fabric F] --flow SRC:DST:BYTES[:START_US] ... [--seed N]
                    [--limit-us US] [--counters]
    fabriclab run SCENARIO.toml [--counters]
    fabriclab bench a2a-32|a2a-128|ns3-hpcc-64|... [--cc none|dcqcn] [--json]
    fabriclab iperf [-c H] [--server H] [-P N] [-b RATE] [-t SECS] [-i SECS]
                    [-l BYTES] [-C reno|cubic|dctcp] [-J] [--fabric F]
                    [--seed N] [--counters]
    fabriclab imb ... / osu ... / cbench ...  (see cli_mpi)
    fabriclab fio --rw randwrite --bs 4M --iodepth 32 --clients h0-h10 --targets h12-h15
    fabriclab hpl [--dat HPL.dat] [-N N ...] [--nb NB ...] [--grid PxQ ...] [-o FILE]
                  [--json] ...  (see cli_hpl)
    fabriclab sweep SCENARIO.toml --set PATH=V1,V2,... ...  (see cli_sweep)
    fabriclab compare A.toml [B.toml] [--set PATH=VALUE ...] [--repeat K]  (see cli_compare)
    fabriclab dashboard PORTS.csv [-o FILE.html] [--fabric F] [--title T]
    fabriclab lab list
    fabriclab lab run NAME ... | --all [--quick] [--html FILE] [--json]
                      [--workers N | --scheduler ADDRESS]  (see cli_lab)

Sizes (BYTES, -s) are integers, optionally with a K, M or G suffix (powers
of 1024). Errors print ``fabriclab: error: MESSAGE`` and exit with status 2;
a run that failed (a PFC deadlock, a transport retry error, flows that can
never finish) prints the same
and exits with status 3; ``--audit`` checks every run's books, and a
violation exits with status 4.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NoReturn, cast

from . import api, cli_compare, cli_dashboard, cli_fio, cli_hpl, cli_iperf, cli_lab, cli_mpi, cli_nccl, cli_sweep
from ._checks import check_out_path, command_inputs
from .errors import AuditError, FabriclabError, InvalidArgumentError, RunFailedError, TransportRetryError
from .kinds import kind_of
from .results import Result, print_notes, run_failed
from .scenario import check_scenario, load_scenario, run_item

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PROG = "fabriclab"
_OPS = ("write", "read", "send")


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors worded like every other error
    (``fabriclab: error: ...``, exit status 2) in subcommands too."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        if message.endswith(": expected one argument"):
            # "-msglog -1:2": argparse takes a value starting with "-" for
            # an option
            flag = message.removeprefix("argument ").split("/")[0].split(":")[0]
            message += f" (a value that starts with '-' goes as {flag}=VALUE)"
        self.exit(2, f"{PROG}: error: {message}\n")


def _flow_spec(text: str, what: str, allow_start: bool) -> dict[str, Any]:
    """SRC:DST:BYTES followed by optional fields: "repeat", an op (write,
    read, send), "via=SWITCH" (the data's path pinned through a switch),
    "return_via=SWITCH" (the ACKs' path) or (flows only) a start time in us."""
    parts = text.split(":")
    if len(parts) < 3 or not parts[0] or not parts[1]:
        form = "SRC:DST:BYTES[:START_US]" if allow_start else "SRC:DST:BYTES[:repeat]"
        raise argparse.ArgumentTypeError(f"invalid {what} {text!r}: expected {form}")
    flow: dict[str, Any] = {"src": parts[0], "dst": parts[1], "bytes": cli_mpi.size_arg(parts[2])}
    given: set[str] = set()
    for extra in parts[3:]:
        e = extra.strip().lower()
        field = e.split("=", 1)[0] if "=" in e else "op" if e in _OPS else "repeat" if e == "repeat" else "start_us"
        if field == "start_us" and not _is_number(e):
            field = ""  # not a start time: the branches below say what it is not
        if field and field in given:
            raise argparse.ArgumentTypeError(f"invalid {what} {text!r}: {field} is given twice; give it once")
        given.add(field)
        if e == "repeat":
            flow["repeat"] = True
        elif e.startswith("via="):
            flow["via"] = extra.strip()[4:]
        elif e.startswith("return_via="):
            flow["return_via"] = extra.strip()[11:]
        elif e in _OPS:
            flow["op"] = e
        elif allow_start:
            try:
                flow["start_us"] = float(e)
            except ValueError:
                raise argparse.ArgumentTypeError(
                    f"invalid {what} {text!r}: {extra!r} is not repeat, an op "
                    f"({', '.join(_OPS)}), via=SWITCH or a start time in us"
                ) from None
        else:
            raise argparse.ArgumentTypeError(
                f"invalid {what} {text!r}: {extra!r} is not repeat, an op ({', '.join(_OPS)}) or via=SWITCH"
            )
    return flow


def _background(text: str) -> dict[str, Any]:
    return _flow_spec(text, "background flow", allow_start=False)


def _flow(text: str) -> dict[str, Any]:
    return _flow_spec(text, "flow", allow_start=True)


#: One rule for the fabric a tool runs on when --fabric is not given.
DEFAULT_FABRIC_RULE = (
    "Without --fabric each tool runs on the fabric of the public report it reproduces: "
    "perftest, flows and iperf on heps; imb and hpl on eantc-hpc; osu on ihep-roce; "
    "cbench on sandia-iwarp; fio on eantc-storage (`fabriclab fabric list` shows them)."
)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG,
        description="Packet-level simulator of RDMA fabrics: perftest, IMB, OSU, Cbench, iperf3, fio, HPL, flows and benchmarks.",
        epilog=DEFAULT_FABRIC_RULE,
    )
    from fabriclab import __version__

    p.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    p.add_argument(
        "--audit",
        action="store_true",
        help="check every run's books (bytes in = out + dropped + lost + queued per switch and "
        "priority, no unexplained lossless drop, every message accounted for, XOFF/XON "
        "matched); a violation exits 4. Same as FABRICLAB_AUDIT=1",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    # fabric
    pf = sub.add_parser("fabric", help="list the presets or show a fabric")
    fsub = pf.add_subparsers(dest="fabric_command", metavar="SUBCOMMAND")
    fsub.required = True
    fsub.add_parser("list", help="the built-in presets")
    ps = fsub.add_parser("show", help="hosts, switches and links of a preset or fabric file")
    ps.add_argument("fabric", metavar="NAME_OR_PATH")
    ps.add_argument(
        "--toml",
        action="store_true",
        help="print the TOML (a preset's with its calibration comments; a file's with every default filled in)",
    )
    ps.add_argument("--links", action="store_true", help="list every link")

    # perftest
    pp = sub.add_parser("perftest", help="run a perftest program between two hosts")
    pp.add_argument("test", metavar="TEST", help=", ".join(api.TESTS))
    _fabric_opts(pp)
    pp.add_argument("--client", default="h0", help="client host (default h0)")
    pp.add_argument("--server", default="h1", help="server host (default h1)")
    pp.add_argument("-s", "--size", type=cli_mpi.size_arg, help="message size in bytes")
    pp.add_argument("-a", "--all", dest="all_sizes", action="store_true", help="every size from 2 B to 8 MiB")
    pp.add_argument("-n", "--iters", type=int, help="iterations")
    pp.add_argument("-t", "--tx-depth", dest="tx_depth", type=int, help="TX depth")
    pp.add_argument("-b", "--bidirectional", action="store_true", help="both directions (bw tests)")
    pp.add_argument("-D", "--duration", dest="duration_s", type=float, metavar="SECS", help="run for SECS of simulated time (fractions allowed; a bandwidth test counts the messages completed in the middle half, over the time between the completions that bound them)")
    pp.add_argument("-q", "--qp", dest="qps", type=int, default=1, help="number of QPs")
    pp.add_argument("-Q", "--cq-mod", dest="cq_mod", type=int, help="CQ moderation")
    pp.add_argument("--mtu", type=int, help="RoCE MTU (256 ... 4096)")
    pp.add_argument("--report_gbits", "--report-gbits", dest="report_gbits", action="store_true", help="bandwidth in Gb/s")
    pp.add_argument("--out_json", "--out-json", dest="out_json", action="store_true", help="write perftest_out.json")
    pp.add_argument("--out_json_file", "--out-json-file", dest="out_json_file", metavar="PATH", help="write the JSON document here")
    pp.add_argument(
        "--background",
        type=_background,
        action="append",
        default=[],
        metavar="SRC:DST:BYTES[:repeat]",
        help="other traffic during the test (repeatable; 'repeat' re-posts it for ever)",
    )
    pp.add_argument("--counters", action="store_true", help="also print the port and QP counters")
    pp.add_argument("--quiet", action="store_true", help="no progress bar or lines on stderr")

    # flows
    pl = sub.add_parser("flows", help="run flows until they complete")
    _fabric_opts(pl)
    pl.add_argument(
        "--flow",
        type=_flow,
        action="append",
        required=True,
        metavar="SRC:DST:BYTES[:START_US]",
        help="a flow (repeatable); optional fields: a start time in us, an op, 'repeat', "
        "'via=SWITCH' (pin the data's ECMP path through a switch by the QP's UDP source port), "
        "'return_via=SWITCH' (the same for the ACKs' path)",
    )
    pl.add_argument("--limit-us", "--limit_us", dest="limit_us", type=float, help="stop after this much simulated time")
    pl.add_argument("--quiet", action="store_true", help="no progress bar or lines on stderr")
    pl.add_argument("--counters", action="store_true", help="also print the port and QP counters")
    pl.add_argument(
        "--telemetry",
        metavar="PREFIX",
        help="sample every --sample-us and write PREFIX.ports.csv (queue, bytes sent, pause per port) "
        "and PREFIX.qps.csv (acked bytes, rate per QP)",
    )
    pl.add_argument(
        "--sample-us", "--sample_us", dest="sample_us", type=float, help="telemetry period with --telemetry, us (default 10)"
    )

    # run
    pr = sub.add_parser("run", help="run a scenario file")
    pr.add_argument("scenario", metavar="SCENARIO.toml")
    pr.add_argument("--counters", action="store_true", help="also print counters for each item")
    pr.add_argument("--quiet", action="store_true", help="no progress bar or lines on stderr")
    pr.add_argument(
        "--dashboard",
        metavar="PREFIX",
        help="draw the port samples of each item with telemetry_us (or sample_us) as PREFIX-<item>.html",
    )

    # bench
    pb = sub.add_parser("bench", help="run a simulator benchmark (wall-clock speed)")
    pb.add_argument(
        "name",
        choices=["a2a-32", "a2a-128", "ns3-hpcc-64", "a2a-1024", "perm-64k", "allreduce-1k", "allreduce-16k", "nccl-1024"],
        help="the benchmark; " + ", ".join(api.FLOW_BENCHES) + " run on the flow backend unless --backend packet",
    )
    pb.add_argument("--cc", choices=["none", "dcqcn"], default="", help="congestion control (default: the benchmark's)")
    pb.add_argument("--json", action="store_true", help="print the figures as JSON")
    pb.add_argument("--quiet", action="store_true", help="no progress bar or lines on stderr")

    # imb, osu
    cli_mpi.add_parsers(sub, _background)
    # nccl-tests
    cli_nccl.add_parser(sub)
    # iperf
    cli_iperf.add_parser(sub)
    # fio
    cli_fio.add_parser(sub)
    # hpl
    cli_hpl.add_parser(sub, _background)
    # sweep
    cli_sweep.add_parser(sub)
    # compare
    cli_compare.add_parser(sub)
    # dashboard
    cli_dashboard.add_parser(sub)
    # lab
    cli_lab.add_parser(sub)
    # --backend on every tool that runs a fabric (and run, bench)
    for name, sp in sub.choices.items():
        if name in ("dashboard", "lab"):
            continue
        if name in ("run", "bench") or any("--fabric" in a.option_strings for a in sp._actions):
            sp.add_argument("--backend", choices=list(api.BACKENDS), default=None, help=BACKEND_HELP)
    return p


#: What --backend says in every tool's --help.
BACKEND_HELP = (
    "simulation backend (default: the fabric's [sim] backend, else packet). 'flow' moves each "
    "message as a fluid flow at its max-min fair share on the packet engine's routes: fast at "
    "thousands of hosts, but no queues, PFC, ECN, DCQCN dynamics or drops; TCP (iperf) runs "
    "at its fair share (no slow start, losses, window dynamics or receive window; priorities "
    "ignored), InfiniBand credits are not modelled (a fabric whose credit loop would cap a "
    "link is refused; an HCA's drain rate is kept), telemetry is refused, and link failures "
    "approximated (flows stall, then re-route at convergence)"
)


def _fabric_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fabric", default="heps", help="preset name or fabric TOML file (default heps)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")


# --------------------------------------------------------------------------


def _out(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def _qps_text(df: Any) -> str:
    """The QPs that sent or received data, in the core's table layout."""
    lines = [
        f"{'qp':>5} {'host':<8} {'peer':<8} {'tx_payload':>14} {'rx_payload':>14} "
        f"{'retx':>8} {'cnps_rx':>8} {'cnps_tx':>8} {'rate_Gbps':>10}"
    ]
    def num(v: Any, spec: str = "") -> str:
        if v != v:  # NaN: not modelled (the flow backend)
            return "n/a"
        return format(v, spec) if spec else str(int(v))

    for q in df.itertuples(index=False):
        if q.tx_packets + q.rx_payload_bytes == 0:
            continue
        lines.append(
            f"{q.qp:>5} {q.host:<8} {q.peer:<8} {q.tx_payload_bytes:>14} {q.rx_payload_bytes:>14} "
            f"{num(q.retx_packets):>8} {num(q.cnps_rx):>8} {num(q.cnps_tx):>8} {num(q.rate_gbps, '.2f'):>10}"
        )
    return "\n".join(lines) + "\n"


def _cmd_fabric(a: argparse.Namespace) -> None:
    if a.fabric_command == "list":
        names = api.presets()
        width = max(len(n) for n in names) + 2  # long names do not break the column
        for name in names:
            f = api.Fabric.preset(name)
            _out(f"{name:<{width}}{f.description}")
        return
    fab = api.as_fabric(a.fabric)
    if a.toml:
        if fab.is_preset:
            # The preset's own file sets only some keys; say how to see them all.
            _out(
                f"# Preset {fab.name}, as written: only the keys it sets (the others take their "
                "defaults).\n# To edit: save this, give it a name and description of its own, then "
                "`fabriclab fabric show FILE --toml`\n# prints every key with its value.\n" + fab.toml
            )
        else:
            _out(fab.normalized_toml)
        return
    lines = [f"name:        {fab.name or '(unnamed)'}"]
    if fab.path:
        lines.append(f"file:        {fab.path}")
    if fab.description:
        lines.append(f"description: {fab.description}")
    lines.append(f"hosts:       {len(fab.hosts)}: {_names(fab.hosts)}")
    lines.append(f"switches:    {len(fab.switches)}: {_names(fab.switches)}")
    lines.append(f"links:       {len(fab.links)}")
    if len(fab.links):
        # Host links (a host at one end) apart from the links between
        # switches (leaf-spine uplinks, a fat tree's edge-aggregation and
        # aggregation-core links).
        hosts = set(fab.hosts)
        links = fab.links.assign(
            role=["host link" if x in hosts or y in hosts else "switch link" for x, y in zip(fab.links["a"], fab.links["b"])]
        )
        groups = links.groupby(["role", "gbps", "delay_ns"], sort=True).size()
        for (role, gbps, delay), n in cast("Iterable[tuple[tuple[str, float, float], int]]", groups.items()):
            lines.append(f"  {n:>4} x {gbps:g} Gb/s, {delay:g} ns: {role}s")
    lines.extend(_transport_lines(fab))
    if fab.backend == "flow":
        lines.append("backend:     flow (flow-level model: no queues, PFC, ECN, DCQCN or drops; see --help)")
    if fab.dcqcn is not None:
        lines.append("DCQCN:       " + _dcqcn_line(fab.dcqcn))
    _out("\n".join(lines))
    if a.links:
        _out(fab.links.to_string(index=False))


def _transport_lines(fab: Any) -> list[str]:
    """What the fabric runs, read off its normalised TOML: the transport,
    routing, link-level flow control, ECN and congestion control."""
    doc = tomllib.loads(fab.normalized_toml)
    transport = doc.get("transport", "roce")
    routing = doc.get("routing", {})
    mode = routing.get("mode", "ecmp")
    if mode == "adaptive":
        route = f"adaptive (least-loaded next hop, {routing.get('ordering', 'relaxed')} ordering)"
    elif transport == "infiniband":
        route = "D-mod-K (static, by destination)"
    else:
        route = "ECMP (5-tuple hash)"
    cc = doc.get("cc", {})
    if transport == "infiniband":
        link = "InfiniBand (credit-based flow control, no PFC)"
        ibcc = doc.get("ib", {}).get("cc", {})
        congestion = "IB CC (FECN/BECN, CCTI)" if ibcc.get("enabled") else "none"
        ecn = None
    else:
        name = "iWARP (RDMA over TCP)" if transport == "iwarp" else "RoCEv2"
        pfc = doc.get("pfc", {})
        prios = ", ".join(str(p) for p in pfc.get("priorities", [])) or "none"
        link = f"{name}, PFC {'on priorities ' + prios if pfc.get('enabled') else 'off'}"
        alg = cc.get("algorithm", "none")
        congestion = f"DCQCN ({cc.get('preset', 'connectx')} parameters)" if alg == "dcqcn" else alg
        e = doc.get("ecn", {})
        ecn = (
            f"{e.get('mode', 'static')}, Kmin {e.get('kmin_bytes')} B, Kmax {e.get('kmax_bytes')} B, Pmax {e.get('pmax')}"
            if e.get("enabled")
            else "off"
        )
    lines = [f"transport:   {link}", f"routing:     {route}"]
    if ecn is not None:
        lines.append(f"ECN:         {ecn}")
    lines.append(f"congestion:  {congestion}")
    return lines


def _dcqcn_line(p: dict[str, Any]) -> str:
    """The DCQCN parameters in force, in the units of their ``[cc]`` keys."""
    byte_counter = f"{p['byte_counter_bytes']} B" if p["byte_counter_bytes"] else "none"
    if p["cnp_interval_us"] > 0:
        cnps = f"CNPs at most every {p['cnp_interval_us']:g} us per {p['cnp_scope']}"
    else:
        cnps = "a CNP per marked packet"
    return (
        f"g {p['g']:.6g}, alpha per {p['alpha_update']} (period {p['alpha_period_us']:g} us, "
        f"initial {p['initial_alpha']:.6g}), cuts at most every {p['min_time_between_cuts_us']:g} us, "
        f"{cnps}{' on ACKs' if p['cnp_on_ack'] else ''}, increase timer {p['rate_increase_period_us']:g} us, "
        f"byte counter {byte_counter}, F {p['fast_recovery_steps']}, AI {p['rai_mbps']:g} / "
        f"HAI {p['rhai_mbps']:g} Mb/s, minimum {p['min_rate_mbps']:g} Mb/s, clamp target "
        f"{'always' if p['clamp_target_rate'] else 'after a timer increase' if p['clamp_target_rate_after_time_inc'] else 'after a byte-counter increase'}"
    )


def _names(names: Sequence[str], limit: int = 12) -> str:
    if len(names) <= limit:
        return " ".join(names)
    return " ".join(names[: limit - 2]) + " ... " + " ".join(names[-2:])


def _cmd_perftest(a: argparse.Namespace) -> None:
    if a.out_json_file is not None and not a.out_json_file.strip():
        raise InvalidArgumentError("--out_json_file needs a file name")
    if a.out_json or a.out_json_file:  # before the run, not after
        check_out_path(
            a.out_json_file or "perftest_out.json",
            "--out_json_file" if a.out_json_file else "--out_json",
            inputs=command_inputs(a),
        )
    res = api.perftest(
        a.test,
        a.client,
        a.server,
        fabric=a.fabric,
        seed=a.seed,
        size=a.size,
        all_sizes=a.all_sizes,
        iters=a.iters,
        tx_depth=a.tx_depth,
        bidirectional=a.bidirectional,
        duration_s=a.duration_s,
        mtu=a.mtu,
        report_gbits=a.report_gbits,
        qps=a.qps,
        cq_mod=a.cq_mod,
        background=a.background,
        progress=not a.quiet,
    )
    _print_perftest(res, a.counters)
    if a.out_json or a.out_json_file:
        path = a.out_json_file or "perftest_out.json"
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write(res.extras["out_json"].rstrip("\n") + "\n")
        except OSError as e:
            option = "--out_json_file" if a.out_json_file else "--out_json (to perftest_out.json)"
            raise InvalidArgumentError(f"cannot write {path} ({option}): {e.strerror or e}") from None
        print(f"JSON results written to {path}", file=sys.stderr)


def _print_perftest(res: Result, counters: bool, quiet: bool = False) -> None:
    _out(res.text or "")
    if counters:
        _out("\nPort counters:\n" + (res.ports_table or ""))
        _out("QP counters:\n" + res.extras["qps_table"])


def _print_flows(res: Result, counters: bool, quiet: bool = False) -> None:
    _out(res.summary())
    if counters:
        _out("\nPort counters:\n" + (res.ports_table or ""))
        _out("QP counters:\n" + _qps_text(res.qps))


def _cmd_flows(a: argparse.Namespace) -> None:
    if a.sample_us is not None and not a.telemetry:
        raise InvalidArgumentError("--sample-us sets the period of --telemetry; give --telemetry PREFIX too")
    sample_us = (10.0 if a.sample_us is None else a.sample_us) if a.telemetry else None
    if a.telemetry:  # the files, before the run rather than after it
        for what in ("ports", "qps"):
            check_out_path(f"{a.telemetry}.{what}.csv", "--telemetry", inputs=command_inputs(a))
    try:
        res = api.flows(a.flow, fabric=a.fabric, seed=a.seed, sample_us=sample_us, limit_us=a.limit_us, progress=not a.quiet)
    except KeyboardInterrupt as e:
        # Stopped: the flows as they stood (those done with their times,
        # the others without), then main says the run stopped.
        part = getattr(e, "result", None)
        if isinstance(part, Result):
            _print_flows(part, a.counters)
            e.printed = True  # type: ignore[attr-defined]
        raise
    _print_flows(res, a.counters)
    print_notes(res)
    if a.telemetry:
        for what, df in (("ports", res.port_samples), ("qps", res.samples)):
            assert df is not None  # flows always has both
            path = f"{a.telemetry}.{what}.csv"
            try:
                df.to_csv(path, index=False)
            except OSError as e:
                raise InvalidArgumentError(f"cannot write telemetry to {path}: {e.strerror or e}") from None
            _out(f"telemetry: {len(df)} samples of {what} in {path}")
    raise_failure(res)


def raise_failure(res: Result) -> None:
    """Fail the command (exit status 3) if the run failed although it
    returned what ran (flows: a PFC deadlock, a stall, a QP out of
    retries); call it once the result is printed and written."""
    failure = run_failed(res)
    if failure is not None:
        raise failure


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _cmd_run(a: argparse.Namespace) -> None:
    sc = load_scenario(a.scenario)
    if a.dashboard is not None:
        if not a.dashboard or a.dashboard.endswith(("/", os.sep)):
            raise InvalidArgumentError(f"--dashboard {a.dashboard!r}: give a file name prefix (PREFIX-1.html, ...)")
        for i in range(1, len(sc.items) + 1):  # before the runs, not after
            check_out_path(f"{a.dashboard}-{i}.html", "--dashboard", inputs=command_inputs(a))
    if a.backend is not None:
        sc.fabric = api.Fabric(api.fabric_arg(sc.fabric, backend=a.backend))
    check_scenario(sc)  # a bad value in the last item, before the first runs
    if sc.fabric.backend == "flow":  # --backend flow, or the fabric's [sim] backend
        _out(flow_header(sc.fabric))
    _out(f"scenario {a.scenario}: fabric {sc.fabric.name or '(unnamed)'}, {len(sc.items)} item(s)")
    for i, item in enumerate(sc.items, 1):
        what = item_what(item)
        label = f" {item.name!r}" if item.name else ""
        _out(f"\n=== [{i}] {item.kind}{label}: {what} (seed {item.seed}) ===")
        sys.stdout.flush()
        res = run_item(sc, item, progress=not a.quiet)
        print_item(item.kind, res, a.counters, a.quiet)
        if a.dashboard:
            _item_dashboard(a.dashboard, i, item, res, sc)
        raise_failure(res)  # as the item's tool fails: what ran is printed, then exit status 3


def item_what(item: Any) -> str:
    """A scenario item's settings in a few words (the header lines of
    ``fabriclab run`` and ``fabriclab lab run``)."""
    return kind_of(item.kind).what(item.options)


#: How each kind of scenario item's result is printed (every kind of
#: fabriclab.kinds has one: tests/test_kinds.py).
PRINTERS: dict[str, Callable[[Any, bool, bool], None]] = {
    "perftest": _print_perftest,
    "flows": _print_flows,
    "imb": cli_mpi.print_result,
    "osu": cli_mpi.print_result,
    "cbench": cli_mpi.print_result,
    "fio": cli_fio.print_result,
    "hpl": cli_hpl.print_result,
    "nccl": cli_mpi.print_result,
}


def print_item(kind: str, res: Any, counters: bool = False, quiet: bool = False) -> None:
    """A scenario item's result as its tool prints it (``fabriclab run``,
    ``fabriclab lab run``), then its notes, as the tool prints them;
    ``quiet``: no summary lines on stderr."""
    PRINTERS[kind](res, counters, quiet)
    print_notes(res)


def _item_dashboard(prefix: str, i: int, item: Any, res: Any, sc: Any) -> None:
    """``fabriclab run --dashboard PREFIX``: item ``i``'s port samples as
    PREFIX-<i>.html, if it has any."""
    ps = res.port_samples
    if ps is None or len(ps) == 0:
        _out(f"no dashboard for item {i}: it has no port samples (set telemetry_us, or sample_us for flows)")
        return
    from .dashboards import dashboard

    path = dashboard(ps, f"{prefix}-{i}.html", fabric=sc.fabric, title=f"{item.kind} {item.name or ''}".strip())
    print(f"dashboard written to {path}", file=sys.stderr)


_BENCH_ROWS = [
    ("name", "benchmark", "{}"),
    ("backend", "backend", "{}"),
    ("cc", "congestion control", "{}"),
    ("hosts", "hosts", "{}"),
    ("qps", "QPs", "{}"),
    ("bytes_per_flow", "bytes per flow", "{}"),
    ("outcome", "outcome", "{}"),
    ("build_s", "fabric build, s", "{:.3f}"),
    ("wall_s", "wall time, s", "{:.3f}"),
    ("events", "events", "{:,}"),
    ("events_per_s", "events / s", "{:,.0f}"),
    ("packets_forwarded", "packets forwarded", "{:,}"),
    ("packets_per_s", "packets / s", "{:,.0f}"),
    ("sim_time_us", "simulated time, us", "{:.3f}"),
    ("last_completion_us", "last completion, us", "{:.3f}"),
    ("peak_rss_mb", "peak RSS, MB", "{:.1f}"),
    ("peak_packets_in_flight", "peak packets in flight", "{:,}"),
    ("run_bytes_per_packet_in_flight", "run memory / packet, B", "{:.0f}"),
]


def _cmd_bench(a: argparse.Namespace) -> None:
    if not a.quiet:
        print(f"running {a.name} ...", file=sys.stderr, flush=True)
    r = api.bench(a.name, a.cc, progress=not a.quiet, backend=a.backend)
    if a.json:
        _out(json.dumps(r, indent=2))
        return
    for key, label, fmt in _BENCH_ROWS:
        if key not in r:
            continue
        if r[key] is None:  # not measured (the flow backend has no packets)
            _out(f"{label:<27} n/a")
        elif key.startswith("packets_") and r.get("backend") == "flow":
            _out(f"{label + ' (equiv.)':<27} {fmt.format(r[key])}")  # what the transfers amount to
        else:
            _out(f"{label:<27} {fmt.format(r[key])}")


def _cmd_lab(a: argparse.Namespace) -> int | None:
    return cli_lab.cmd_lab(a, item_what, print_item, print_notes)


#: Each command's function: it returns the exit status, or None for 0.
_COMMANDS: dict[str, Callable[[argparse.Namespace], int | None]] = {
    "fabric": _cmd_fabric,
    "perftest": _cmd_perftest,
    "flows": _cmd_flows,
    "run": _cmd_run,
    "bench": _cmd_bench,
    "imb": cli_mpi.cmd_imb,
    "osu": cli_mpi.cmd_osu,
    "nccl-tests": cli_nccl.cmd_nccl_tests,
    "cbench": cli_mpi.cmd_cbench,
    "iperf": cli_iperf.cmd_iperf,
    "fio": cli_fio.cmd_fio,
    "hpl": cli_hpl.cmd_hpl,
    "sweep": cli_sweep.cmd_sweep,
    "compare": cli_compare.cmd_compare,
    "dashboard": cli_dashboard.cmd_dashboard,
    "lab": _cmd_lab,
}


def _fail(message: str, status: int = 2) -> int:
    sys.stdout.flush()
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return status


#: An option error of the core: "perftest options: size: ...", "IMB
#: options: job.np: ...", "HPL options: n[0]: ...".
_OPTION_ERROR = re.compile(r"^(?P<what>[\w -]+ options|flows): (?P<path>[\w.\[\]]+): (?P<rest>.*)$", re.S)


#: An error of a tool's option in the tool's own NAME=VALUE form (fio's
#: "iodepth=0: use 1 to 4096", "target_write_mbps=0: ...").
_VALUE_ERROR = re.compile(r"^(?P<field>[a-z_]+)=(?P<value>\S*): (?P<rest>.*)$", re.S)


def _with_flags(message: str, sub: argparse.ArgumentParser) -> str:
    """An option error names the API's field (``size``, ``job.np``); on the
    command line, name the flag too (``-s/--size (size)``), found by the
    field's name among the command's argument destinations. A NAME=VALUE
    error names the flag in place of a field the command spells otherwise
    (``--target-write-mbps 0``; fio's ``iodepth=0`` stays as fio words it)."""
    actions = {a.dest: a.option_strings for a in sub._actions if a.option_strings}
    v = _VALUE_ERROR.match(message)
    if v and v["field"] in actions and f"--{v['field']}" not in actions[v["field"]]:
        return f"{'/'.join(actions[v['field']])} {v['value']}: {v['rest']}"
    m = _OPTION_ERROR.match(message)
    if not m:
        return message
    field = re.sub(r"\[\d+\]", "", m["path"]).split(".")[-1]
    if field not in actions:
        return message
    return f"{m['what']}: {'/'.join(actions[field])} ({m['path']}): {m['rest']}"


def _command_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The (sub)command's own parser: its usage is the one to show."""
    p = parser
    for dest in ("command", "fabric_command", "lab_command"):
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction) and action.dest == dest:
                name = getattr(args, dest, None)
                if name in action.choices:
                    p = action.choices[name]
                break
    return p


def _unrecognized(p: argparse.ArgumentParser, extra: Sequence[str]) -> str:
    """argparse's message for unknown arguments, with the closest option of
    the command for each mistyped one."""
    options = [o for a in p._actions for o in a.option_strings]
    hints: list[tuple[str, str]] = []
    for token in extra:
        name = token.split("=", 1)[0]
        close = difflib.get_close_matches(name, options, n=1, cutoff=0.6) if name.startswith("-") else []
        if close:
            hints.append((close[0], name))
    msg = "unrecognized arguments: " + " ".join(extra)
    if len(hints) == 1:
        return f"{msg} (did you mean {hints[0][0]}?)"
    if hints:
        return f"{msg} (did you mean " + ", ".join(f"{o} for {t}" for o, t in hints) + "?)"
    return msg


def _partial_text(e: KeyboardInterrupt) -> str | None:
    """The tool's text for what a stopped run completed: the ``result``
    that :func:`fabriclab.results.run_stoppable` puts on the interrupt
    (IMB, OSU, Cbench and perftest)."""
    result = getattr(e, "result", None)
    return result.text if isinstance(result, Result) else None


_PACKET_BOOKS = (
    "every switch and priority: bytes in = out + dropped + lost + queued; no unexplained "
    "lossless drop; XOFF/XON matched; every RC message completed, failed or in flight"
)
_FLOW_BOOKS = (
    "flow backend: every link within its capacity and every re-rated flow max-min "
    "bottlenecked at each rate recomputation; every flow's rates integrate to its bytes; "
    "every path host to host; every RC message completed or in flight"
)


def _audit_books(backend: str | None) -> str:
    """What ``--audit`` checked, for the backend that ran (both when the
    command's runs choose their own: scenarios, sweeps, labs)."""
    if backend == "flow":
        return _FLOW_BOOKS
    if backend == "packet":
        return _PACKET_BOOKS
    return f"packet runs: {_PACKET_BOOKS}; {_FLOW_BOOKS}"


def _fabric_doc(fabric: Any) -> dict[str, Any]:
    """A fabric argument's TOML document (empty if it cannot be read: the
    tool then says what is wrong), read without building the fabric."""
    try:
        text, _ = api.resolve_fabric(fabric)
        return tomllib.loads(text.lstrip("\ufeff"))
    except (ValueError, OSError):  # FabriclabError, TOMLDecodeError, UnicodeDecodeError
        return {}


def _fabric_backend(fabric: Any) -> str | None:
    """The ``[sim] backend`` a fabric argument's TOML asks for (None if it
    cannot be read, or does not say)."""
    sim = _fabric_doc(fabric).get("sim", {})
    backend = sim.get("backend") if isinstance(sim, dict) else None
    return backend if isinstance(backend, str) else None


#: What the flow backend makes of a fabric's ``[[link_failures]]``.
LINK_FAILURES_APPROXIMATED = (
    "link failures approximated: capacity 0 while down, flows re-routed at convergence "
    "(no detection, losses or retransmission)"
)


def flow_header(fabric: Any) -> str:
    """The line a flow-backend run's output starts with; it says how the
    fabric's ``[[link_failures]]`` are approximated, when it has some."""
    line = "# fabriclab: flow backend (flow-level model; see --help)"
    if _fabric_doc(fabric).get("link_failures"):
        line += f"; {LINK_FAILURES_APPROXIMATED}"
    return line


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0, 2 on an input error,
    3 on a run that failed: a PFC deadlock, a transport retry error; 4 when
    the conservation audit found a bug in the model; a
    command may return its own,
    e.g. 1 for a sweep or a comparison with failed runs)."""
    parser = _parser()
    args, extra = parser.parse_known_args(argv)  # exits 2 with "fabriclab: error: ..." on bad usage
    if extra:
        sub = _command_parser(parser, args)
        sub.error(_unrecognized(sub, extra))
    if args.audit:
        os.environ["FABRICLAB_AUDIT"] = "1"
    try:
        backend = getattr(args, "backend", None)
        if backend is not None and args.command not in ("run", "bench") and hasattr(args, "fabric"):
            # Every tool takes a Fabric wherever it takes a fabric name.
            args.fabric = api.Fabric(api.fabric_arg(args.fabric, backend=backend))
        elif backend is None and args.command not in ("run", "bench", "fabric") and getattr(args, "fabric", None) is not None:
            # The fabric file may choose the backend itself ([sim] backend).
            backend = _fabric_backend(args.fabric)
        if backend == "flow" and args.command != "run":  # run prints it with its scenario's fabric
            # A header line on the tool's text; beside JSON, on stderr.
            as_json = getattr(args, "json", False) or getattr(args, "output_format", "") == "json"
            print(flow_header(getattr(args, "fabric", None)), file=sys.stderr if as_json else sys.stdout, flush=True)
        status = _COMMANDS[args.command](args)
        if args.audit and args.command not in ("fabric", "dashboard") and getattr(args, "lab_command", "run") == "run":
            tool = hasattr(args, "fabric") and args.command not in ("run", "bench")
            print(f"{PROG}: audit: balanced ({_audit_books(backend or ('packet' if tool else None))})", file=sys.stderr)
    except AuditError as e:
        return _fail(str(e), status=4)
    except RunFailedError as e:
        if getattr(args, "counters", False) and isinstance(e, TransportRetryError) and e.ports_table is not None:
            # Where the packets were lost is what a failed run's user needs.
            _out("\nPort counters:\n" + e.ports_table)
            _out("QP counters:\n" + (e.qps_table or ""))
        if e.tool_output:
            sys.stdout.flush()
            print(e.tool_output, file=sys.stderr)
        return _fail(str(e), status=3)
    # Files first: MissingFileError and its kin are also FabriclabErrors.
    except FileNotFoundError as e:
        return _fail(f"{e.filename}: no such file" if e.filename else str(e))
    except IsADirectoryError as e:
        return _fail(f"{e.filename}: is a directory")
    except PermissionError as e:
        return _fail(f"{e.filename}: permission denied")
    except FabriclabError as e:
        return _fail(_with_flags(str(e), _command_parser(parser, args)))
    except UnicodeDecodeError as e:
        return _fail(f"not a UTF-8 text file ({e.reason})")
    except ImportError as e:
        if e.name != "matplotlib":  # an optional dependency (dashboards): say what to install
            raise
        return _fail(str(e))
    except ValueError as e:
        return _fail(str(e))
    except BrokenPipeError:
        # stdout closed early (| head): not an error of ours
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except OSError as e:
        # Any other failure to read or write a file the user named (a full
        # disk, /proc, an I/O error): the file and the reason.
        reason = str(e.strerror or e) or type(e).__name__
        return _fail(f"{e.filename}: {reason}" if e.filename is not None else reason)
    except KeyboardInterrupt as e:
        # A stopped MPI tool hands over what it completed (the tool's own
        # text for the measurements done): print it, then say it stopped.
        done = _partial_text(e)
        if done:
            print(done, end="" if done.endswith("\n") else "\n", flush=True)
        if done or getattr(e, "printed", False):
            sys.stdout.flush()
            print(f"{PROG}: interrupted; the output above is what completed", file=sys.stderr)
        else:
            print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    return status or 0


if __name__ == "__main__":
    sys.exit(main())
