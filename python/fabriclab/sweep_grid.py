"""Sweep grids: the points a sweep runs, from a mapping of override paths to
value lists (their cartesian product) or from a list of points.

:func:`expand_grid` turns a grid into points (each a dict of path ->
value, values made plain TOML values); :class:`SweepPoint` is one point
with its scenario text. Left out: what the paths mean
(:mod:`fabriclab.sweep_paths`) and building a point's scenario
(:mod:`fabriclab.sweep_scenario`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import numbers
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Union

from ._toml import toml_value
from .errors import InvalidArgumentError

__all__ = ["Grid", "SweepPoint", "expand_grid", "plain_value"]

#: Grid: a mapping of override paths to lists of values (their cartesian
#: product), or a list of points (each a mapping of paths to values).
Grid = Union[Mapping[str, Iterable[Any]], Sequence[Mapping[str, Any]]]


@dataclasses.dataclass(frozen=True)
class SweepPoint:
    """One point of a sweep."""

    #: Position in the expanded grid, from 0.
    index: int
    #: The overrides: path -> value.
    params: dict[str, Any]
    #: The point's scenario file, standalone (its fabric is a preset name or
    #: an inline table): ``fabriclab run`` runs it as it is.
    toml: str

    def digest(self) -> str:
        """The first 16 hex digits of the SHA-256 of :attr:`toml`: which
        scenario a row of the results came from (``scenario_sha``), so that
        a resume can tell an edited or another scenario from this one."""
        return hashlib.sha256(self.toml.encode()).hexdigest()[:16]

    def label(self) -> str:
        """``point 3 (seed = 2, fabric.cc.algorithm = "none")``."""
        inner = ", ".join(f"{k} = {toml_value(v)}" for k, v in self.params.items())
        return f"point {self.index} ({inner})" if inner else f"point {self.index}"


def plain_value(v: Any, where: str) -> Any:
    """``v`` as a plain TOML-compatible Python value (numpy scalars and
    tuples converted); :class:`InvalidArgumentError` if TOML cannot hold it."""
    if isinstance(v, bool) or type(v).__name__ == "bool_":
        return bool(v)
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        return float(v)
    if isinstance(v, str):
        return v
    if isinstance(v, Mapping):
        return {str(k): plain_value(x, where) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain_value(x, where) for x in v]
    what = "None" if v is None else f"a {type(v).__name__}"
    raise InvalidArgumentError(
        f"{where}: {what} is not a value a scenario can hold; use an int, float, bool, string, list or table"
    )


def _path_key(k: Any) -> str:
    if not isinstance(k, str):
        raise InvalidArgumentError(
            f"grid keys are override paths (strings like 'fabric.cc.algorithm'), got {k!r}"
        )
    return k.strip()


def _value_list(path: str, values: Any) -> list[Any]:
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
        raise InvalidArgumentError(
            f"grid[{path!r}] must be a list of values, e.g. [{values!r}], not a {type(values).__name__}"
        )
    out = [plain_value(v, f"grid[{path!r}]") for v in values]
    if not out:
        raise InvalidArgumentError(f"grid[{path!r}] is empty: give at least one value")
    return out


def expand_grid(grid: Grid) -> list[dict[str, Any]]:
    """The points of ``grid``: the cartesian product of a mapping of paths to
    value lists (the last path varying fastest), or a list of points (each a
    mapping of paths to single values) as given. Values are normalised
    (numpy scalars to Python numbers, tuples to lists)."""
    if isinstance(grid, Mapping):
        paths = [_path_key(k) for k in grid]
        lists = [_value_list(p, v) for p, v in zip(paths, grid.values())]
        return [dict(zip(paths, combo)) for combo in itertools.product(*lists)]
    given: object = grid  # callers need not be typed: checked here
    if isinstance(given, (str, bytes)) or not isinstance(given, Iterable):
        raise InvalidArgumentError(
            f"grid must be a mapping of paths to value lists or a list of points, not {type(grid).__name__}"
        )
    points: list[dict[str, Any]] = []
    for n, point in enumerate(grid):
        if not isinstance(point, Mapping):
            raise InvalidArgumentError(
                f"grid point {n} must be a mapping of paths to values, not {type(point).__name__}"
            )
        points.append({_path_key(k): plain_value(v, f"grid point {n}, {k!r}") for k, v in point.items()})
    if not points:
        raise InvalidArgumentError("the grid has no points")
    return points
