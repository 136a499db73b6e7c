"""The Python side and the core's option schema agree.

The core lists the fields its JSON options accept (read from the Rust
types, `_core.option_fields`); every tool's keyword arguments, the
scenario keys of its ``[[kind]]`` tables and the groups that
``mpi.core_options`` nests must name the same fields, up to the renames
below. A field added on one side only fails here.
"""

from __future__ import annotations

import inspect
import json

import pytest

import fabriclab
from fabriclab import _core
from fabriclab.kinds import KINDS
from fabriclab.mpi import OPTION_GROUPS, core_options

#: Keyword arguments that are not tool options (the run's, not the tool's).
_RUN_ARGS = {"fabric", "seed", "progress", "backend"}

#: User-facing names that the core spells differently.
_RENAMES = {
    "imb": {"iters": "iter"},
    "hpl": {"dat": "hpl_dat"},
    "fio": {"runtime": "runtime_s", "ramp_time": "ramp_time_s"},
    "iperf": {"bitrate": "bitrate_bps", "duration": "time_s", "interval": "interval_s"},
    "nccl_tests": {
        "nccl_algo": "algo",
        "nccl_proto": "proto",
        "nccl_pxn_disable": "pxn_disable",
        "nccl_nvls_enable": "nvls_enable",
    },
}

#: Scenario keys of each kind (the registry's), and keys a scenario item
#: gives at its own level (``name`` and ``seed`` of every item).
_SCENARIO = {
    "imb": KINDS["imb"].keys,
    "osu": KINDS["osu"].keys,
    "cbench": KINDS["cbench"].keys,
    "hpl": KINDS["hpl"].keys,
    "fio": KINDS["fio"].keys | {"name"},
    "perftest": KINDS["perftest"].keys,
    "nccl_tests": KINDS["nccl"].keys,
}

TOOLS = ["perftest", "iperf", "imb", "osu", "cbench", "hpl", "fio", "nccl_tests"]


def _core_fields(tool: str) -> list[str]:
    fields: list[str] = json.loads(_core.option_fields(tool))
    return fields


def _renamed(tool: str, keys: set[str]) -> set[str]:
    renames = _RENAMES.get(tool, {})
    return {renames.get(k, k) for k in keys}


@pytest.mark.parametrize("tool", TOOLS)
def test_keyword_arguments_name_the_core_fields(tool: str) -> None:
    params = set(inspect.signature(getattr(fabriclab, tool)).parameters) - _RUN_ARGS
    core = {f.split(".")[-1] for f in _core_fields(tool)}
    assert _renamed(tool, params) == core


@pytest.mark.parametrize("tool", sorted(_SCENARIO))
def test_scenario_keys_name_the_core_fields(tool: str) -> None:
    core = {f.split(".")[-1] for f in _core_fields(tool)}
    assert _renamed(tool, set(_SCENARIO[tool])) == core


@pytest.mark.parametrize("tool", ["imb", "osu", "cbench", "hpl"])
def test_the_flat_keys_nest_where_the_core_reads_them(tool: str) -> None:
    fields = _core_fields(tool)
    flat = {f.split(".")[-1]: 1 for f in fields}
    nested = core_options(flat)
    for f in fields:
        if "." in f:
            group, key = f.split(".")
            assert key in OPTION_GROUPS[group] and key in nested[group], f
        else:
            assert f in nested, f


def test_an_unknown_tool_is_an_error() -> None:
    with pytest.raises(fabriclab.FabriclabError, match="no tool"):
        _core.option_fields("nccl")
