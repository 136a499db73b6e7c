"""Type checks of the arguments users pass, and their JSON for the core.

The core checks every value and words the errors; these functions only
catch what the JSON form cannot carry or would silently change (a bool
where a count goes, a string where a number goes, a NaN), as
:class:`~fabriclab.errors.ArgumentTypeError` naming the argument. Each
takes the argument's name (for the message) and its value, and returns the
value as the plain Python type the JSON needs.

Left out: value ranges and domains (the core's), and anything about
fabrics or options of one tool (their own modules).
"""

from __future__ import annotations

import dataclasses
import json
import math
import operator
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .errors import (
    ArgumentTypeError,
    DirectoryGivenError,
    FilePermissionError,
    InvalidArgumentError,
    MissingFileError,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["size_bytes", "SIZE_HELP", "as_int", "as_seed", "as_float", "as_bool", "as_str", "as_list", "as_mapping", "as_path", "check_out_path", "check_out_paths", "command_inputs", "document_files", "override_files", "dumps", "read_file"]


def as_int(name: str, value: Any) -> int:
    """An integer (numpy integers too; not a bool)."""
    if isinstance(value, bool):
        raise ArgumentTypeError(f"{name} must be an integer, not bool")
    try:
        return operator.index(value)
    except TypeError:
        raise ArgumentTypeError(f"{name} must be an integer, not {type(value).__name__}") from None


def as_seed(value: Any) -> int:
    """A run seed: an integer in 0 .. 2^64 - 1 (the core's u64)."""
    seed = as_int("seed", value)
    if not 0 <= seed < 1 << 64:
        raise InvalidArgumentError(f"seed must be between 0 and 2^64 - 1, got {seed}")
    return seed


def as_float(name: str, value: Any) -> float:
    """A finite number (an int or a float; not a bool or a string; NaN and
    infinities are an InvalidArgumentError naming ``name``)."""
    if isinstance(value, (bool, str, bytes)) or not hasattr(value, "__float__"):
        raise ArgumentTypeError(f"{name} must be a number, not {type(value).__name__}")
    x = float(value)
    if not math.isfinite(x):
        raise InvalidArgumentError(f"{name} must be a finite number, got {x}")
    return x


def as_bool(name: str, value: Any) -> bool:
    """True or False (numpy's too)."""
    if isinstance(value, bool):
        return value
    if type(value).__name__ == "bool_":  # numpy
        return bool(value)
    raise ArgumentTypeError(f"{name} must be True or False, not {type(value).__name__}")


def as_str(name: str, value: Any) -> str:
    """A string."""
    if not isinstance(value, str):
        raise ArgumentTypeError(f"{name} must be a string, not {type(value).__name__}")
    return value


def as_list(name: str, value: Any, what: str) -> list[Any]:
    """``value`` as a list, or an ArgumentTypeError saying it must be a list
    of ``what`` (a string, a mapping or a scalar is not)."""
    if isinstance(value, (str, bytes, Mapping)):
        raise ArgumentTypeError(f"{name} must be a list of {what}, not {type(value).__name__}")
    try:
        return list(value)
    except TypeError:
        raise ArgumentTypeError(f"{name} must be a list of {what}, not {type(value).__name__}") from None


def as_path(name: str, value: Any) -> str:
    """A file's path: a string or an ``os.PathLike`` (not an integer, which
    ``open`` would take for a file descriptor), as a string."""
    if isinstance(value, (bool, int)) or not isinstance(value, (str, os.PathLike)):
        raise ArgumentTypeError(f"{name} must be a path (str or os.PathLike), not {type(value).__name__}")
    return os.fspath(value)


#: The OSErrors of a file the user named, as FabriclabErrors of the same kind.
_FILE_ERRORS: dict[type[OSError], type[OSError]] = {
    FileNotFoundError: MissingFileError,
    IsADirectoryError: DirectoryGivenError,
    PermissionError: FilePermissionError,
}


def read_file(path: str) -> bytes:
    """The bytes of file ``path``; an error while reading (``/proc``, a
    device) names the file, as an error while opening it does. A missing
    file, a folder or an unreadable file is a :class:`FabriclabError` that
    is also the matching :class:`OSError` (:class:`MissingFileError`, ...)."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        cls = _FILE_ERRORS.get(type(e))
        if cls is not None:
            err = cls(e.strerror or str(e))
            err.errno, err.strerror, err.filename = e.errno, e.strerror, path
            raise err from None
        if e.filename is None:
            raise OSError(e.errno, e.strerror or str(e), path) from None
        raise


#: What a byte count may look like, for messages.
SIZE_HELP = "a whole number of bytes, optionally with a K, M or G suffix (powers of 1024), e.g. 4096, 64K or 1M"

_SIZE_SUFFIX = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def size_bytes(text: str) -> int:
    """A byte count as the real tools read one: a whole number, or with a
    K, M or G suffix in powers of 1024 (``"64K"``). ValueError otherwise,
    with :data:`SIZE_HELP` and a hint for the usual slips."""
    t = text.strip()
    mult = 1
    if t and t[-1].lower() in _SIZE_SUFFIX:
        mult = _SIZE_SUFFIX[t[-1].lower()]
        t = t[:-1]
        if t.lower().endswith("i"):
            raise ValueError(f"invalid size {text!r}: write 64K, not 64Ki ({SIZE_HELP})")
    if not t.isdigit():
        raise ValueError(f"invalid size {text!r}: expected {SIZE_HELP}")
    return int(t) * mult


#: The parsed options whose values name files a command reads.
_INPUT_OPTIONS = ("fabric", "scenario", "dat", "ports_csv", "a", "b", "names")
#: The options among them that name scenario files, which name files too.
_SCENARIO_OPTIONS = ("scenario", "a", "b")


def command_inputs(a: Any) -> list[str]:
    """The files a CLI command reads, from its parsed options (an
    ``argparse.Namespace``): what its outputs must not overwrite. Besides
    the files the options name, those a scenario file names (its fabric
    file, an ``[[hpl]]`` item's ``dat``) and those its ``--set`` overrides
    name (``fabric=FILE``, ``hpl.dat=FILE``), both relative to the
    scenario's folder. A preset name, which is no file, is left out."""
    found: list[str] = []
    for name in _INPUT_OPTIONS:
        value = getattr(a, name, None)
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, str) and os.path.isfile(v):
                found.append(v)
    scenarios = [v for v in (getattr(a, name, None) for name in _SCENARIO_OPTIONS) if isinstance(v, str) and os.path.isfile(v)]
    folders = [os.path.dirname(os.path.abspath(v)) for v in scenarios]
    for path, folder in zip(scenarios, folders):
        found += document_files(_toml_doc(path), folder)
    found += override_files(getattr(a, "sets", None) or [], folders)
    return found


def _toml_doc(path: str) -> Mapping[str, Any]:
    """The TOML document of file ``path``; empty if it cannot be read (the
    command that reads it says what is wrong)."""
    try:
        with open(path, "rb") as f:
            doc = tomllib.loads(f.read().decode("utf-8-sig"))
    except (OSError, ValueError):  # TOMLDecodeError, UnicodeDecodeError
        return {}
    return doc


def document_files(doc: Mapping[str, Any], folder: str) -> list[str]:
    """The files a scenario document (or a lab's run) names, relative to
    ``folder``: its fabric file and its items' ``dat`` files (those that
    exist)."""
    named: list[Any] = [doc.get("fabric")]
    for tables in doc.values():
        if isinstance(tables, list):
            named += [t.get("dat") for t in tables if isinstance(t, Mapping)]
    return _existing(named, [folder])


def override_files(overrides: Iterable[tuple[str, Any]], folders: Sequence[str]) -> list[str]:
    """The files named by sweep overrides (``(path, value or values)``):
    a whole ``fabric``'s file and ``dat`` files, relative to any of
    ``folders`` (the scenario files' folders)."""
    named: list[Any] = []
    for path, value in overrides:
        if path.strip() == "fabric" or path.strip().split(".")[-1] == "dat":
            named += value if isinstance(value, list) else [value]
    return _existing(named, folders)


def _existing(names: Iterable[Any], folders: Sequence[str]) -> list[str]:
    """The strings of ``names`` that are files, taken relative to each of
    ``folders`` (an absolute name as it is)."""
    return [p for n in names if isinstance(n, str) and n for p in (os.path.join(f, n) for f in folders) if os.path.isfile(p)]


def check_out_path(path: str, option: str, inputs: Iterable[str | os.PathLike[str] | None] = ()) -> None:
    """An output file a command writes when its runs end: an empty name, a
    path that is a folder, in a folder that does not exist or where no file
    can be written, or that is one of the command's ``inputs`` (a scenario
    or lab file it would overwrite) is refused before they start, not
    after."""
    if not path:
        raise InvalidArgumentError(f"{option}: give a file name (it is empty)")
    target = os.path.realpath(path)
    for src in inputs:
        if src is not None and os.path.realpath(os.fspath(src)) == target:
            raise InvalidArgumentError(f"{option} {path}: that is an input of this command, which it would overwrite; give another file name")
    if os.path.isdir(path):
        raise InvalidArgumentError(f"{option} {path}: is a directory; give a file name")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise InvalidArgumentError(f"{option} {path}: no such directory {folder}")
    _probe_writable(path, option)


def _probe_writable(path: str, option: str) -> None:
    """Open ``path`` for writing as the command will, and leave it as it
    was: an existing file is opened to append nothing, a new one is created
    and removed (a device or a pipe is left alone). A place the folder checks cannot see refuses (``/proc``, a
    read-only mount, a folder without write permission) before the runs,
    not after hours of them."""
    existed = os.path.exists(path)
    if existed and not os.path.isfile(path):
        return  # a device or a pipe (/dev/stdout): opening one may block
    try:
        with open(path, "ab"):
            pass
    except OSError as e:
        raise InvalidArgumentError(f"{option} {path}: cannot write there ({e.strerror or e}); give a file in a writable folder") from None
    if not existed:
        os.remove(path)


def check_out_paths(outs: Iterable[tuple[str | None, str]], inputs: Iterable[str | os.PathLike[str] | None] = ()) -> None:
    """:func:`check_out_path` for each (path, option) given (None: not
    asked for), and no two options naming the same file."""
    inputs = list(inputs)
    seen: dict[str, str] = {}
    for path, option in outs:
        if path is None:
            continue
        check_out_path(path, option, inputs)
        real = os.path.realpath(path)
        if real in seen:
            raise InvalidArgumentError(f"{seen[real]} and {option} both name {path}; give each its own file")
        seen[real] = option


def as_mapping(name: str, value: Any) -> Mapping[str, Any]:
    """``value`` if it is a dict, else an ArgumentTypeError."""
    if not isinstance(value, Mapping):
        raise ArgumentTypeError(f"{name} must be a dict, not {type(value).__name__}")
    return value


def _json_default(obj: Any) -> Any:
    """JSON for the objects users pass that json does not know: dataclasses
    with a ``to_dict`` (:class:`fabriclab.Flow`) and numpy scalars."""
    to_dict = getattr(obj, "to_dict", None)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type) and callable(to_dict):
        return to_dict()
    item = getattr(obj, "item", None)
    if callable(item):  # numpy scalar
        return item()
    raise ArgumentTypeError(f"{type(obj).__name__} object cannot be passed to fabriclab")


def dumps(obj: Any) -> str:
    """``obj`` as the core's JSON: NaN, infinities and circular lists are
    an :class:`~fabriclab.errors.InvalidArgumentError` naming where."""
    try:
        return json.dumps(obj, default=_json_default, allow_nan=False)
    except ValueError as e:
        if "Circular reference" in str(e):
            raise InvalidArgumentError("an argument refers to itself (a circular list or dict)") from None
        raise InvalidArgumentError(
            f"an argument is NaN or infinite ({_non_finite(obj)}): give a finite number"
        ) from None
    except RecursionError:
        raise InvalidArgumentError("an argument refers to itself (a circular list or dict)") from None


def _non_finite(obj: Any, path: str = "") -> str:
    """Where in ``obj`` a NaN or infinity is (for the error message)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return f"{path or 'value'} = {obj}"
    items = obj.items() if isinstance(obj, Mapping) else enumerate(obj) if isinstance(obj, (list, tuple)) else ()
    for k, v in items:
        where = _non_finite(v, f"{path}.{k}" if path else str(k))
        if where:
            return where
    return ""
