"""The registry of scenario item kinds (fabriclab.kinds): one entry per
``[[kind]]``, and what the scenario loader, ``fabriclab run`` and sweeps
take from it; unknown keys and wrong types are the user's errors, a
TypeError inside the code is a bug and is raised as it is."""

from __future__ import annotations

import dataclasses
import functools
import inspect

import pytest

from fabriclab import cli, comparisons
from fabriclab.errors import ParseError
from fabriclab.kinds import KINDS, NAMES, RUN_ARGS, kind_of
from fabriclab.scenario import Scenario, ScenarioItem, run_item
from fabriclab.sweep_paths import parse_path


def test_the_registry_covers_every_kind():
    assert NAMES == ("perftest", "flows", "imb", "osu", "cbench", "fio", "hpl", "nccl")
    # what is kept per kind elsewhere names the same kinds
    assert set(cli.PRINTERS) == set(NAMES)
    assert set(comparisons.KEY_COLUMNS) == set(NAMES) == set(comparisons.DEFAULT_METRICS)
    for name, kind in KINDS.items():
        assert kind.name == name and kind_of(name) is kind
        params = inspect.signature(kind.function).parameters
        # a table's keys are its function's keyword arguments
        assert kind.keys == set(params) - RUN_ARGS
        assert kind.example_key in kind.keys and all(k in kind.keys for k, _ in kind.required)
        assert parse_path(f"{name}.{kind.example_key}").root == name
        assert isinstance(kind.what({"test": "t", "np": 2, "flows": [], "n": [8]}), str)
    with pytest.raises(ParseError, match="unknown item kind 'gpus'"):
        kind_of("gpus")


def test_an_unknown_key_is_a_parse_error_naming_the_item_and_the_nearest_key():
    doc = {"fabric": "heps", "perftest": [{"test": "ib_write_bw", "sise": 8}]}
    with pytest.raises(ParseError, match=r"scenario s\.toml: \[\[perftest\]\] number 1: unknown key 'sise' \(did you mean 'size'\?\); the keys are all_sizes, "):
        Scenario.from_dict(doc, origin="s.toml")
    with pytest.raises(ParseError, match=r"unknown key 'zzz'; the keys are"):  # nothing near: no guess
        Scenario.from_dict({"flows": [{"flows": [], "zzz": 1}]})
    # an item made by hand is checked before its function is called
    sc = Scenario.from_dict({"fabric": "heps"})
    with pytest.raises(ParseError, match=r"\[\[imb\]\] 'mine': unknown key 'msglogg' \(did you mean 'msglog'\?\)"):
        run_item(sc, ScenarioItem("imb", "mine", 1, {"np": 2, "msglogg": [0, 3]}))


def test_a_value_of_the_wrong_type_is_a_parse_error_naming_the_item():
    sc = Scenario.from_dict({"fabric": "heps", "perftest": [{"name": "bw", "test": "ib_write_bw", "size": "big"}]})
    with pytest.raises(ParseError, match=r"\[\[perftest\]\] 'bw': size must be an integer, not str"):
        run_item(sc, sc.items[0])


def test_a_type_error_inside_an_api_function_propagates(monkeypatch):
    real = KINDS["perftest"]

    @functools.wraps(real.function)
    def buggy(*args, **kwargs):
        raise TypeError("a bug inside")

    monkeypatch.setitem(KINDS, "perftest", dataclasses.replace(real, function=buggy))
    sc = Scenario.from_dict({"fabric": "heps", "perftest": [{"test": "ib_write_bw"}]})
    with pytest.raises(TypeError, match="a bug inside") as e:
        run_item(sc, sc.items[0])
    assert not isinstance(e.value, ParseError)
