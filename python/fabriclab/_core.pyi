"""Type stub of fabriclab._core, the Rust extension (PyO3).

Every function takes strings and returns a JSON document as a string;
``fabric`` is fabric TOML text (a preset's comes from :func:`preset_toml`). Errors are raised as the
classes of :mod:`fabriclab.errors` (``FabricError``, ``UnknownHostError``,
``InvalidArgumentError``, ``ParseError``). The simulator runs with the GIL
released.
"""

from collections.abc import Callable

__version__: str

#: A progress callback: called as ``(sim_us, events, done, total, unit,
#: label)`` every 2^20 events or so and at the end of a long run; an
#: exception it raises stops the run and is raised.
OnTick = Callable[[float, int, float, float | None, str, str], None]

def set_check_only(on: bool) -> None:
    """Turn check-only mode on or off for the calling thread: a tool's
    call then checks its input and builds its fabric, simulates nothing,
    and raises its input error or ``fabriclab.errors.CheckPassed``."""

def presets() -> str:
    """JSON list of the preset names."""

def nccl_tests_programs() -> list[str]:
    """The nccl-tests programs the core runs, in nccl-tests' order."""

def option_fields(tool: str) -> str:
    """JSON list of the option fields of ``tool`` (perftest, iperf, imb,
    osu, cbench, hpl, fio), nested groups as ``group.field``."""

def preset_toml(name: str) -> str:
    """TOML text of a preset, calibration comments included."""

def fabric_info(fabric: str) -> str:
    """JSON {name, description, hosts, switches, links: [{a, b, gbps,
    delay_ns}], toml}."""

def perftest(fabric: str, options: str, seed: int = 1, progress: OnTick | None = None) -> str:
    """Run perftest. ``options``: JSON object with the keys test, client,
    server, size, all_sizes, iters, tx_depth, bidirectional, duration_s,
    mtu, report_gbits, qps, cq_mod, background (all optional); ``progress``
    is called with the iterations completed. Returns JSON
    {test, text, out_json, ports_table, qps_table, report}."""

def flows(
    fabric: str,
    flows: str,
    seed: int = 1,
    sample_us: float | None = None,
    limit_us: float | None = None,
    progress: OnTick | None = None,
) -> str:
    """Run a JSON list of flows ({src, dst, bytes, op, start_us, priority,
    repeat, via, return_via}). Returns JSON {outcome, sim_time_ps, events,
    flows, ports, qps, samples, port_samples, ports_table}; samples and
    port_samples are one list per column."""

def bench(name: str, cc: str = "", progress: OnTick | None = None, backend: str = "") -> str:
    """Run benchmark "a2a-32", "a2a-128", "ns3-hpcc-64", "a2a-1024",
    "allreduce-1k" or "allreduce-16k" with cc "", "none" or
    "dcqcn" on backend "" (packet) or "flow".
    Returns JSON of the figures."""

def fabric_check(fabric: str) -> None:
    """Check fabric TOML text as every run does (sections and graph)."""

def fabric_with_backend(fabric: str, backend: str) -> str:
    """The TOML text of ``fabric`` with ``[sim] backend`` set."""

def imb(fabric: str, options: str, seed: int = 1, progress: OnTick | None = None) -> str:
    """Run Intel MPI Benchmarks; ``options`` is JSON. Returns JSON with the
    IMB text and the report."""

def osu(fabric: str, options: str, seed: int = 1, progress: OnTick | None = None) -> str:
    """Run an OSU micro-benchmark; ``options`` is JSON. Returns JSON with
    the OSU text and the report."""
def cbench(fabric: str, options: str, seed: int = 1, progress: OnTick | None = None) -> str:
    """Run a Cbench rotate test; ``options`` is JSON. Returns JSON with
    the Cbench text and the report."""

def nccl_tests(fabric: str, options: str, seed: int = 1, progress: OnTick | None = None) -> str:
    """Run an nccl-tests program; JSON report."""
    ...

def hpl(fabric: str, options: str, seed: int = 1, progress: OnTick | None = None) -> str:
    """Run HPL. ``options``: JSON object with the keys hpl_dat (an HPL.dat's
    text), n, nb, grids ([[P, Q], ...]), pmap, pfact, nbmin, ndiv, rfact,
    bcast, depth, swap, swap_threshold, np, ppn, hosts, placement,
    dgemm_gflops, pfact_gflops, samples, background, background_iperf
    (all optional; N and a grid from them or hpl_dat). Returns JSON {text,
    iperf_text, ports_table, report: {settings, tests, interrupted,
    rank_hosts, ports, qps, mpi, iperf}}."""

def iperf(fabric: str, options: str, seed: int = 1) -> str:
    """Run iperf3 (TCP). ``options``: JSON object with the keys client,
    server, parallel, bitrate_bps, time_s, interval_s, length, congestion,
    background (all optional). Returns JSON {text, json, ports_table,
    tcp_table, report}."""

def fio(fabric: str, options: str, seed: int = 1, progress: OnTick | None = None) -> str:
    """Run fio against storage targets. ``options``: JSON object with the
    keys name, rw, bs, iodepth, numjobs, runtime_s, ramp_time_s, clients,
    targets and the target model (target_write_mbps, target_read_mbps,
    target_latency_us, submit_us, avg_time_ms). Returns JSON with fio's
    text and JSON output, the port table and the report."""
