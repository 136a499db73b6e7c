"""Fuzzing the Python layer's argument handling and its parsers (issue 16,
point 1): whatever a user passes, a call ends in a result or a
:class:`fabriclab.FabriclabError`, never another exception, a crash or a hang.

Each example calls one entry point with its usual arguments and one to three
of them replaced by values that break assumptions (wrong types, negative,
zero, 2^32, 2^64, 1e308, NaN, infinity, host names that look like ranges,
empty containers). A call gets 3 s of wall time: a legal argument may ask
for a long run, so a stop at the budget (the core raises KeyboardInterrupt
for the alarm) counts as an ending. Scenario files are fuzzed by deleting,
duplicating and altering their lines.

CI runs a few dozen examples per test; the long run is
``HYPOTHESIS_PROFILE=long python -m pytest -q tests/test_fuzz.py`` (figures
in docs/benchmarks.md).
"""

from __future__ import annotations

import inspect
import math
import os
import signal
from pathlib import Path
from typing import Any, Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fabriclab
from fabriclab.scenario import load_scenario

ROOT = Path(__file__).resolve().parent.parent

settings.register_profile(
    "ci", max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)
settings.register_profile("long", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

WEIRD: list[Any] = [
    None,
    True,
    -1,
    0,
    1,
    0.5,
    -0.0,
    2**31,
    2**32,
    2**63,
    2**64,
    10**30,
    1e308,
    -1e308,
    1e-300,
    math.nan,
    math.inf,
    -math.inf,
    "",
    "x",
    "h0-h3",
    "h99",
    "leaf0",
    "1e308",
    [],
    [1, 2],
    ["h0", "h0"],
    (1,),
    {},
    {"a": 1},
    b"x",
    object(),
]

FABRIC = "leaf-spine"

#: Each entry point with arguments that run it quickly.
CALLS: dict[str, tuple[Callable[..., Any], dict[str, Any]]] = {
    "perftest": (fabriclab.perftest, dict(test="ib_write_bw", client="h0", server="h1", size=4096, iters=5)),
    "flows": (fabriclab.flows, dict(flows=[fabriclab.Flow("h0", "h1", 1000)], limit_us=2000)),
    "imb": (fabriclab.imb, dict(benchmarks=["PingPong"], np=2, msglog=(0, 3), iters=2)),
    "osu": (fabriclab.osu, dict(test="osu_latency", np=2, sizes=(1, 64), iterations=2, warmup=1)),
    "cbench": (fabriclab.cbench, dict(test="rotate_latency", np=4, iterations=2)),
    "hpl": (fabriclab.hpl, dict(n=[2000], nb=[200], grids=["1x2"])),
    "fio": (fabriclab.fio, dict(rw="randwrite", bs=4096, iodepth=2, runtime=0.001, clients="h0", targets="h1")),
    "iperf": (fabriclab.iperf, dict(client="h0", server="h1", duration=0.001, interval=0.001)),
}


class _Budget(Exception):
    """The call's wall-time budget ran out."""


def _alarm(_signum: int, _frame: Any) -> None:
    raise _Budget()


def _bounded(f: Callable[[], Any], seconds: float = 3.0) -> None:
    """Run ``f``; a FabriclabError or the budget running out is an ending,
    anything else propagates (and fails the example)."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        f()
    except fabriclab.FabriclabError as e:
        assert str(e).strip(), "an error without a message"
    except (_Budget, KeyboardInterrupt):
        pass
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _params(f: Callable[..., Any]) -> list[str]:
    return [p for p in inspect.signature(f).parameters if p not in ("progress",)]


@st.composite
def _call(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    name = draw(st.sampled_from(sorted(CALLS)))
    f, base = CALLS[name]
    kwargs = dict(base, fabric=FABRIC)
    for _ in range(draw(st.integers(1, 3))):
        param = draw(st.sampled_from(_params(f)))
        kwargs[param] = draw(st.sampled_from(WEIRD))
    return name, kwargs


def test_the_bases_run():
    for f, base in CALLS.values():
        f(**base, fabric=FABRIC)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(_call())
def test_every_entry_point_ends_in_a_result_or_a_fabriclab_error(call: tuple[str, dict[str, Any]]):
    name, kwargs = call
    f, _ = CALLS[name]
    _bounded(lambda: f(**kwargs))


@given(st.text(max_size=400))
def test_any_text_is_a_fabric_or_a_fabriclab_error(text: str):
    _bounded(lambda: fabriclab.Fabric.from_toml(text))


SCENARIOS = sorted((ROOT / "scenarios").glob("*.toml"))


@st.composite
def _scenario_text(draw: st.DrawFn) -> tuple[Path, str]:
    path = draw(st.sampled_from(SCENARIOS))
    lines = path.read_text().splitlines()
    for _ in range(draw(st.integers(1, 3))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.integers(0, 2))
        if op == 0:
            del lines[i]
        elif op == 1:
            lines.insert(i, lines[i])
        elif "=" in lines[i]:
            key = lines[i].split("=", 1)[0]
            value = draw(st.sampled_from(["-1", "0", "4294967296", "1e308", "nan", "inf", '"x"', '"h0-h3"', "[]", "{}", "true"]))
            lines[i] = f"{key}= {value}"
    return path, "\n".join(lines) + "\n"


@given(_scenario_text())
def test_mutated_scenario_files_load_or_raise_a_fabriclab_error(case: tuple[Path, str]):
    path, text = case
    # Next to the originals, so that their relative fabric paths resolve.
    out = path.parent / f".fuzz-{os.getpid()}-{path.name}"
    try:
        out.write_text(text)
        _bounded(lambda: load_scenario(out))
    finally:
        out.unlink(missing_ok=True)
