"""fabriclab: a packet-level simulator of RDMA fabrics, driven from Python.

The simulator (in Rust) models leaf-spine fabrics with shared-buffer
switches, PFC, ECN and RoCEv2 NICs with DCQCN, and runs the benchmarks
people run on such fabrics: perftest, IMB and OSU on a model of an MPI
library (:func:`imb`, :func:`osu`, Cbench's rotate bisection tests
:func:`cbench`), HPL (Linpack, :func:`hpl`), fio against storage
targets (:func:`fio`), and iperf3 over a Linux-like TCP that runs beside
RDMA in its own class (:func:`iperf`). Every tool returns a
:class:`Result` (:mod:`fabriclab.results`): its main table ``res.df`` (a
pandas DataFrame), the tool's own text output ``res.text``, counter tables
(``res.ports``, ``res.qps``), telemetry (``res.port_samples``), the run's
figures (``res.outcome``, ``res.sim_time_us``, ``res.events``) and what
only that tool has in ``res.extras``::

    >>> import fabriclab
    >>> fabriclab.presets()
    ['heps', 'leaf-spine', 'fat-tree', 'eantc-hpc', 'eantc-hpc-dynamic', 'eantc-storage', 'eantc-storage-dynamic', 'ihep-roce', 'stackhpc-roce', 'stackhpc-ib', 'ihep-ib', 'sandia-ib', 'sandia-iwarp', 'h100-rail-ib', 'h100-rail-roce', 'h100-rail-only-ib', 'bench-a2a-32', 'bench-a2a-128']
    >>> bw = fabriclab.perftest("ib_write_bw", client="h0", server="h4",
    ...                         fabric="heps", report_gbits=True)
    >>> round(float(bw.df.bw_avg_gbps[0]), 1)
    92.5
    >>> lat = fabriclab.perftest("ib_write_lat", "h0", "h4", iters=200)
    >>> round(float(lat.df.t_typical_us[0]), 2)
    3.72
    >>> print(bw.text)                   # doctest: +SKIP
    >>> r = fabriclab.flows([fabriclab.Flow("h0", "h4", 1 << 20),
    ...                      fabriclab.Flow("h1", "h4", 1 << 20)])
    >>> r.outcome, list(r.df.dst)
    ('Finished', ['h4', 'h4'])
    >>> imb = fabriclab.imb(["PingPong"], np=2, hosts="h0,h4", fabric="eantc-hpc",
    ...                     msglog=(0, 3), iters=100)
    >>> list(imb.df.bytes)
    [0, 1, 2, 4, 8]
    >>> print(imb.text)                  # doctest: +SKIP
    >>> ip = fabriclab.iperf("h1", "h0", parallel=2, bitrate="20G",
    ...                      duration=0.01, interval=0.002)
    >>> round(ip.extras["sum_received"]["bits_per_second"] / 1e9)
    40

A fabric is a preset name, the path of a fabric TOML file or a
:class:`Fabric` (``Fabric.preset("heps")``, ``Fabric.load(path)``,
``Fabric.from_toml(text)``). Errors are :class:`FabriclabError` subclasses
(see :mod:`fabriclab.errors`). Scenario files (:mod:`fabriclab.scenario`)
and the ``fabriclab`` command line (:mod:`fabriclab.cli`) sit on the same
API; :func:`sweep` runs a scenario over a grid of parameters on Dask
(this machine's cores, or a cluster such as Slurm through dask-jobqueue);
:func:`compare` runs two configurations K times each (seeds 1..K) and
tabulates min / avg / max, delta and % per item, size and metric.
:func:`dashboard` turns a run's port telemetry (``port_samples``) into one
static HTML page of figures (needs ``pip install 'fabriclab[plot]'``).
:func:`lab_run` runs one of the seed experiments (:func:`lab_list`) and
compares it with the published figures, verdict by verdict.

Each function's module holds the rest of its API under a name of its own,
so that no submodule hides behind a function: :mod:`fabriclab.sweeps`
(:func:`sweep`), :mod:`fabriclab.comparisons` (:func:`compare`),
:mod:`fabriclab.dashboards` (:func:`dashboard`), :mod:`fabriclab.lab_runs`
(:func:`lab_run`, :func:`lab_list`), :mod:`fabriclab.tcp` (:func:`iperf`),
:mod:`fabriclab.storage` (:func:`fio`), :mod:`fabriclab.linpack`
(:func:`hpl`), :mod:`fabriclab.bisection` (:func:`cbench`) and
:mod:`fabriclab.mpi` (:func:`imb`, :func:`osu`).
"""

# The version is written once, in Cargo.toml ([workspace.package]): the
# extension is compiled with it and the wheel's metadata takes it from there
# (pyproject's dynamic version).
from ._core import __version__ as __version__
from .api import (
    BW_COLUMNS,
    LAT_COLUMNS,
    TESTS,
    Fabric,
    Flow,
    bench,
    flows,
    perftest,
    preset_toml,
    presets,
)
from .bisection import CBENCH_COLUMNS, CBENCH_TESTS, cbench
from .comparisons import compare
from .dashboards import dashboard
from .errors import (
    ArgumentTypeError,
    AuditError,
    DeadlockError,
    FabricError,
    FabriclabError,
    InvalidArgumentError,
    ParseError,
    RunFailedError,
    TransportRetryError,
    UnknownHostError,
)
from .gpu import NCCL_TESTS, nccl_tests
from .lab_runs import LAB_COLUMNS, lab_list, lab_run
from .linpack import HPL_COLUMNS, HPL_SAMPLE_COLUMNS, hpl
from .mpi import IMB_BENCHMARKS, OSU_TESTS, imb, osu
from .results import Result
from .scenario import run_scenario
from .storage import FIO_COLUMNS, FIO_RW, fio
from .sweeps import sweep
from .tcp import IPERF_COLUMNS, iperf

__all__ = [
    "BW_COLUMNS",
    "LAT_COLUMNS",
    "TESTS",
    "Fabric",
    "Flow",
    "Result",
    "bench",
    "flows",
    "perftest",
    "preset_toml",
    "presets",
    "run_scenario",
    "sweep",
    "compare",
    "lab_run",
    "lab_list",
    "LAB_COLUMNS",
    "dashboard",
    "fio",
    "FIO_COLUMNS",
    "FIO_RW",
    "hpl",
    "HPL_COLUMNS",
    "HPL_SAMPLE_COLUMNS",
    "imb",
    "osu",
    "nccl_tests",
    "NCCL_TESTS",
    "cbench",
    "CBENCH_TESTS",
    "CBENCH_COLUMNS",
    "iperf",
    "IPERF_COLUMNS",
    "IMB_BENCHMARKS",
    "OSU_TESTS",
    "FabriclabError",
    "FabricError",
    "UnknownHostError",
    "InvalidArgumentError",
    "ParseError",
    "ArgumentTypeError",
    "DeadlockError",
    "RunFailedError",
    "TransportRetryError",
    "AuditError",
]
