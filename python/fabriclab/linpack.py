"""HPL (High-Performance Linpack 2.3) on a simulated fabric: the tests an
HPL.dat asks for (every combination of N, NB, process grid, look-ahead
depth, panel broadcast and factorisation variant, in HPL's order), each
timed by running its block-cyclic LU iterations' messages and DGEMM time
over the fabric, and reported as HPL prints them.

The node is a DGEMM rate per rank (``dgemm_gflops``, default 50) and a
panel factorisation rate (``pfact_gflops``, default a quarter of it);
efficiency is relative to P x Q x ``dgemm_gflops``. By default 8 strata
of iterations are sampled (in each, Q consecutive iterations after one
lead-in, all run back to back; within about 1 % of the full run);
``samples=0`` simulates every iteration. Left
out: the residual check (the output is that of a run "without checking")
and the backward solve; HPL's start and end times are on a simulated
clock that starts at the Unix epoch.

A :class:`fabriclab.Result` whose ``df`` has one row per test;
``res.text`` is HPL's output and ``res.extras["samples"]`` the sampled
iterations::

    >>> import fabriclab
    >>> res = fabriclab.hpl("leaf-spine", n=1024, nb=128, grids="1x2", samples=0)
    >>> list(res.df.columns[:5])
    ['variant', 'n', 'nb', 'p', 'q']
    >>> print(res.text)                  # doctest: +SKIP
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Union

import pandas as pd

from . import _core
from ._checks import as_float, as_int, as_seed, as_str, dumps
from ._tables import frame
from .api import FabricLike, Flow, fabric_arg, fabric_label, with_backend
from .errors import ArgumentTypeError, FabriclabError, InvalidArgumentError, ParseError
from .mpi import add_extras, add_job, core_options, mpi_result
from .progress import ProgressArg, progress_callback
from .results import Result, run_stoppable

__all__ = ["hpl", "read_dat", "parse_grids", "HPL_COLUMNS", "HPL_SAMPLE_COLUMNS", "HPL_BCASTS"]

#: HPL's panel broadcasts, in HPL.dat's order (codes 0..5).
HPL_BCASTS = ("1ring", "1ringM", "2ring", "2ringM", "blong", "blongM")
#: Columns of :func:`hpl`'s DataFrame, one row per test (HPL's T/V line).
HPL_COLUMNS = [
    "variant",
    "n",
    "nb",
    "p",
    "q",
    "bcast",
    "depth",
    "time_s",
    "gflops",
    "peak_gflops",
    "efficiency",
    "iterations",
    "simulated_iterations",
    "net_bytes",
]
#: Columns of ``res.extras["samples"]``: the test (row of the DataFrame), the
#: first measured iteration ``k``, how many consecutive iterations were
#: measured from it, the trailing matrix's order at k, the time per
#: iteration (s, mean over the measured iterations and the ranks) and how
#: many iterations it stands for.
HPL_SAMPLE_COLUMNS = ["test", "k", "measured", "n_left", "time_s", "weight"]

#: A process grid: ``(P, Q)``, ``"PxQ"``, or a list of them.
GridsLike = Union[str, Sequence[int], Sequence[Union[str, Sequence[int]]]]

#: Fields of the core's tests that are elsewhere: in ``res.extras["samples"]``,
#: summed in ``events`` and ``wall_s``, or (``start_s``) in the report.
_NOT_COLUMNS = ("samples", "events", "wall_s", "start_s")
_GRID = re.compile(r"\s*(\d+)\s*[xX]\s*(\d+)\s*")
_SPLIT = re.compile(r"[\s,]+")


def read_dat(path: str | os.PathLike[str]) -> str:
    """The text of HPL.dat file ``path``; :class:`InvalidArgumentError` naming
    the path if it cannot be read, :class:`ParseError` if it is not text."""
    if not isinstance(path, (str, os.PathLike)):
        raise ArgumentTypeError(f"dat must be the path of an HPL.dat file, not {type(path).__name__}")
    shown = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        raise InvalidArgumentError(f"HPL.dat file {shown}: no such file") from None
    except IsADirectoryError:
        raise InvalidArgumentError(f"HPL.dat file {shown}: is a directory") from None
    except UnicodeDecodeError as e:
        raise ParseError(f"HPL.dat file {shown}: not a text file ({e.reason})") from None
    except OSError as e:
        raise InvalidArgumentError(f"HPL.dat file {shown}: {e.strerror or e}") from None


def _grid(value: Any) -> list[int]:
    """One grid: ``"2x4"`` or ``(2, 4)``."""
    if isinstance(value, str):
        m = _GRID.fullmatch(value)
        if not m:
            raise InvalidArgumentError(f"grid {value!r}: write PxQ, e.g. 2x4")
        return [int(m.group(1)), int(m.group(2))]
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return [as_int("grid P", value[0]), as_int("grid Q", value[1])]
    raise ArgumentTypeError(f"a grid must be 'PxQ' or a (P, Q) pair, not {value!r}")


def parse_grids(value: GridsLike) -> list[list[int]]:
    """Process grids as ``[[P, Q], ...]`` from ``"2x4"``, ``"2x4,4x2"``,
    ``(2, 4)``, ``["2x4", "4x2"]`` or ``[(2, 4), (4, 2)]``."""
    if isinstance(value, str):
        return [_grid(g) for g in _SPLIT.split(value.strip()) if g]
    if isinstance(value, (list, tuple)):
        if len(value) == 2 and not any(isinstance(v, (str, list, tuple)) for v in value):
            return [_grid(value)]  # one (P, Q) pair
        return [_grid(g) for g in value]
    raise ArgumentTypeError(f"grids must be 'PxQ', a (P, Q) pair or a list of them, not {type(value).__name__}")


def _ints(name: str, value: int | Iterable[int]) -> list[int]:
    """A list of integers from one or several."""
    if isinstance(value, (str, bytes)):
        raise ArgumentTypeError(f"{name} must be an integer or a list of integers, not str")
    if isinstance(value, Iterable):
        return [as_int(name, v) for v in value]
    return [as_int(name, value)]


def _names(name: str, value: str | int | Iterable[str | int]) -> list[str]:
    """A list of names (or HPL's codes) from one, a list, or text with
    several separated by commas or spaces."""
    items = _SPLIT.split(value.strip()) if isinstance(value, str) else value
    if not isinstance(items, Iterable):
        items = [items]
    out = []
    for v in items:
        if isinstance(v, int) and not isinstance(v, bool):
            out.append(str(v))  # HPL.dat's code, e.g. bcast 1
        elif v != "":
            out.append(as_str(name, v))
    return out


def _code(name: str, value: str | int) -> str:
    """One setting HPL gives as a name or a code (pmap, swap)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return as_str(name, value)


def _options(
    dat_text: str | None,
    lists: Mapping[str, Any],
    single: Mapping[str, Any],
    job: Mapping[str, Any],
    rates: Mapping[str, Any],
) -> dict[str, Any]:
    """The core's option object (type-checked; the core checks values)."""
    opts: dict[str, Any] = {}
    if dat_text is not None:
        opts["hpl_dat"] = dat_text
    for key, value in lists.items():
        if value is None:
            continue
        if key == "grids":
            opts[key] = parse_grids(value)
        elif key in ("pfact", "rfact", "bcast"):
            opts[key] = _names(key, value)
        else:
            opts[key] = _ints(key, value)
    for key, value in single.items():
        if value is not None:
            opts[key] = _code(key, value) if key in ("pmap", "swap") else as_int(key, value)
    add_job(opts, job["np"], job["ppn"], job["hosts"], job["placement"])
    for key, value in rates.items():
        if value is not None:
            opts[key] = as_float(key, value)
    return opts


def _samples(tests: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    rows = [{"test": i, **s} for i, t in enumerate(tests) for s in t["samples"]]
    return frame(rows, HPL_SAMPLE_COLUMNS)


def _result(df: pd.DataFrame, out: Mapping[str, Any], label: str | None) -> Result:
    """HPL's text, the report and the counters of the last test (as
    :func:`fabriclab.imb`'s result has them, and HPL's own extras)."""
    rep = out["report"]
    tests = rep["tests"]
    last = tests[-1] if tests else {"start_s": 0.0, "time_s": 0.0}
    return mpi_result(
        "hpl",
        df,
        out,
        label,
        samples=_samples(tests),
        settings=rep["settings"],
        rank_hosts=rep["rank_hosts"],
        report=rep,
        sim_time_us=(last["start_s"] + last["time_s"]) * 1e6,
        events=sum(t["events"] for t in tests),
        wall_s=sum(t["wall_s"] for t in tests),
    )


def _run(fabric: FabricLike, opts: Mapping[str, Any], seed: int, progress: ProgressArg, dat: Any) -> str:
    """Call the core (its JSON); its HPL.dat errors name the file ``dat``."""
    try:
        return _core.hpl(fabric_arg(fabric), dumps(core_options(opts)), as_seed(seed), progress_callback("HPL", progress))
    except FabriclabError as e:
        if dat is not None and str(e).startswith("HPL.dat"):
            raise type(e)(f"HPL.dat file {os.fspath(dat)}{str(e)[len('HPL.dat'):]}") from None
        raise


def hpl(
    fabric: FabricLike = "eantc-hpc",
    *,
    dat: str | os.PathLike[str] | None = None,
    n: int | Iterable[int] | None = None,
    nb: int | Iterable[int] | None = None,
    grids: GridsLike | None = None,
    pmap: str | None = None,
    pfact: str | Iterable[str] | None = None,
    nbmin: int | Iterable[int] | None = None,
    ndiv: int | Iterable[int] | None = None,
    rfact: str | Iterable[str] | None = None,
    bcast: str | Iterable[str] | None = None,
    depth: int | Iterable[int] | None = None,
    swap: str | None = None,
    swap_threshold: int | None = None,
    np: int | None = None,
    ppn: int | None = None,
    hosts: Sequence[str] | str | None = None,
    placement: str = "block",
    dgemm_gflops: float | None = None,
    pfact_gflops: float | None = None,
    samples: int | None = None,
    background: Iterable[Flow | Mapping[str, Any]] | None = None,
    background_iperf: Iterable[Mapping[str, Any]] | None = None,
    telemetry_us: float | None = None,
    seed: int = 1,
    progress: ProgressArg = False,
    backend: str | None = None,
) -> Result:
    """Run HPL on ``fabric``: every test of the settings, in HPL's order.

    ``dat`` is the path of an HPL.dat file; its settings are the defaults
    of the keywords, which are HPL.dat's lines: ``n`` (Ns), ``nb`` (NBs,
    default 192), ``grids`` (``"2x4"``, ``(2, 4)`` or a list of them;
    default the squarest grid of ``np``), ``pmap`` (``"row"`` or
    ``"column"``), ``pfact``, ``rfact`` (``"left"``, ``"crout"``,
    ``"right"``), ``nbmin``, ``ndiv``, ``bcast`` (:data:`HPL_BCASTS`),
    ``depth`` (0 or 1), ``swap`` (``"bin-exch"``, ``"long"``, ``"mix"``)
    and ``swap_threshold``. A list keyword takes one value or a list;
    names may also be HPL's codes (``bcast=1``). N and a grid must come
    from the keywords or ``dat``. HPL.dat's output-file and device-out
    lines are not followed here: the text is ``res.text`` (the CLI,
    ``fabriclab hpl --dat``, writes it where they say).

    The job: ``np`` ranks (default the largest P x Q), ``ppn``, ``hosts``
    (a list or text like ``"h0-h15"``), ``placement`` (``"block"`` or
    ``"round_robin"``). The node: ``dgemm_gflops`` per rank (default 50)
    and ``pfact_gflops`` (default a quarter of it). ``samples``: strata of
    sampled iterations (default 8; 0 simulates every iteration).
    ``background``, ``background_iperf``, ``telemetry_us`` (of the last
    test) and ``progress`` as :func:`fabriclab.imb`.

    Stopped by Ctrl-C after a test ended, it raises ``KeyboardInterrupt``
    with ``result``: the tests that ended, as a whole run's result (its
    text ends after their lines, as real HPL's does when killed; the
    report's ``interrupted`` is true).

    Returns a :class:`fabriclab.Result` with ``tool="hpl"``: ``df`` has
    one row per test with :data:`HPL_COLUMNS`; ``text`` is HPL's output
    (HPL.out); ``ports``, ``qps`` and ``port_samples`` are the last
    test's, ``sim_time_us``, ``events`` and ``wall_s`` of all tests.
    ``extras``: ``samples`` (a DataFrame of :data:`HPL_SAMPLE_COLUMNS`,
    empty when every iteration ran), ``settings`` (the resolved HPL.dat
    settings), ``rank_hosts``, ``report`` (the core's whole report; each
    test's ``start_s`` on the simulated clock, ``events`` and ``wall_s``
    are there), and the last test's ``mpi``, ``iperf_text``, ``tcp``.
    """
    label = fabric_label(fabric)
    fabric = with_backend(fabric, backend)
    opts = _options(
        None if dat is None else read_dat(dat),
        {"n": n, "nb": nb, "grids": grids, "pfact": pfact, "nbmin": nbmin, "ndiv": ndiv, "rfact": rfact, "bcast": bcast, "depth": depth},
        {"pmap": pmap, "swap": swap, "swap_threshold": swap_threshold, "samples": samples},
        {"np": np, "ppn": ppn, "hosts": hosts, "placement": placement},
        {"dgemm_gflops": dgemm_gflops, "pfact_gflops": pfact_gflops},
    )
    add_extras(opts, None, None, background, background_iperf, telemetry_us)
    # Stopped after a test ended, those tests ride on the interrupt.
    return run_stoppable(lambda: _run(fabric, opts, seed, progress, dat), lambda out: _built(out, label))


def _built(out: Mapping[str, Any], label: str | None) -> Result:
    tests = out["report"]["tests"]
    rows = [{k: v for k, v in t.items() if k not in _NOT_COLUMNS} for t in tests]
    return _result(frame(rows, HPL_COLUMNS), out, label)
