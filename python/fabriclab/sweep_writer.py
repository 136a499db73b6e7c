"""A sweep's results file (``out=``, ``-o``): written as points finish, at a
cost that grows with the rows written, not with their square; and read back
to resume a sweep.

- CSV (:class:`CsvWriter`): each point's rows are appended (whole lines, one
  unbuffered write); the file is rewritten whole only when a point brings
  a column the file does not have yet (a new kind of item, say).
- Parquet (:class:`ParquetWriter`): a Parquet file is readable only once
  whole, so finished rows go to parts, each a small Parquet file of the
  rows since the last one, in ``OUT.parts/`` (one every 2 s at most, and
  no more often than every hundredth of the time the sweep has run, so a
  day's sweep makes some hundreds); OUT itself is written once, when the
  sweep ends or stops (Ctrl-C, an exception), with every finished row,
  and the parts are removed. A killed driver leaves its parts, which
  :func:`read_done` reads with OUT.

Every whole-file write goes through a temporary file and a rename, so a
file is never seen half written. :func:`read_done` gives the rows of the
points a results file holds without an error (``resume``);
:func:`refuse_overwrite` keeps a sweep started afresh off a file that
already holds something. Left out: other formats, and appending to a
file of another sweep.
"""

from __future__ import annotations

import importlib.util
import io
import math
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from typing import Any, Union

import pandas as pd

from .errors import InvalidArgumentError
from .sweep_rows import ERROR, SCENARIO_SHA, columns, failed_rows, rows_frame

__all__ = [
    "Writer",
    "CsvWriter",
    "ParquetWriter",
    "open_writer",
    "refuse_overwrite",
    "read_done",
    "read_rows",
    "point_key",
    "has_pyarrow",
    "parts_dir",
]

#: The shortest wait between two Parquet parts, s ...
PARQUET_EVERY_S = 2.0
#: ... and, as a share of the time the writer has been open, the longest.
PARQUET_RUN_SHARE = 0.01


def has_pyarrow() -> bool:
    """Whether Parquet can be written (pyarrow installed)."""
    return importlib.util.find_spec("pyarrow") is not None


def parts_dir(path: str) -> str:
    """Where the parts of Parquet file ``path`` go while a sweep runs."""
    return f"{path}.parts"


def _parquet_ready(df: pd.DataFrame) -> pd.DataFrame:
    """Object columns whose values are of several types (a parameter that is
    an int at one point and a string at another) as strings: Parquet columns
    have one type."""
    out = df
    for c in df.columns:
        if df[c].dtype != object:
            continue
        kinds = {type(v) for v in df[c] if v is not None and not (isinstance(v, float) and math.isnan(v))}
        if len(kinds) > 1:
            if out is df:
                out = df.copy()
            out[c] = [None if v is None else str(v) for v in df[c]]
    return out


def _replace(path: str, df: pd.DataFrame, parquet: bool) -> None:
    """Write ``df`` to ``path`` whole, through a temporary file and a rename."""
    tmp = f"{path}.tmp-{os.getpid()}"
    if parquet:
        _parquet_ready(df).to_parquet(tmp, index=False)
    else:
        df.to_csv(tmp, index=False)
    os.replace(tmp, path)


class CsvWriter:
    """A CSV results file: rows appended as points finish."""

    def __init__(self, path: str, params: Sequence[str]):
        self.path = path
        self.params = list(params)
        self.records: list[dict[str, Any]] = []
        self.seen: dict[str, None] = {}
        #: The columns of the file as written (None: rewrite it whole).
        self.written: list[str] | None = None

    def add(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Rows of one finished point."""
        self.records.extend(dict(r) for r in records)
        for r in records:
            self.seen.update(dict.fromkeys(r))
        cols = columns(self.params, self.seen)
        if cols != self.written:
            self.rewrite(rows_frame(self.records, cols))
            self.written = cols
            return
        text = rows_frame([dict(r) for r in records], cols).to_csv(index=False, header=False)
        # One unbuffered write per point: a killed driver leaves whole
        # points, or at worst a torn last line, which a resume drops
        # (read_done).
        with open(self.path, "ab", buffering=0) as fh:
            fh.write(text.encode("utf-8"))

    def close(self) -> None:
        """The sweep stopped: every finished row is in the file already."""

    def finish(self, df: pd.DataFrame) -> None:
        """The whole result, sorted by point."""
        self.rewrite(df)

    def rewrite(self, df: pd.DataFrame) -> None:
        """Write the file whole."""
        _replace(self.path, df, parquet=False)


class ParquetWriter:
    """A Parquet results file: rows in parts as points finish, the file
    written once at the end (see the module's text)."""

    def __init__(self, path: str, params: Sequence[str]):
        self.path = path
        self.params = list(params)
        self.parts = parts_dir(path)
        self.records: list[dict[str, Any]] = []
        self.seen: dict[str, None] = {}
        #: Rows not in a part yet.
        self.pending: list[dict[str, Any]] = []
        self.opened = self.last_part = time.monotonic()
        self.nparts = 0

    def add(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Rows of one finished point."""
        rows = [dict(r) for r in records]
        self.records.extend(rows)
        self.pending.extend(rows)
        for r in rows:
            self.seen.update(dict.fromkeys(r))
        now = time.monotonic()
        if now - self.last_part >= max(PARQUET_EVERY_S, PARQUET_RUN_SHARE * (now - self.opened)):
            self.write_part()

    def write_part(self) -> None:
        """The pending rows as the next part."""
        if not self.pending:
            return
        seen: dict[str, None] = {}
        for r in self.pending:
            seen.update(dict.fromkeys(r))
        os.makedirs(self.parts, exist_ok=True)
        _replace(os.path.join(self.parts, f"part-{self.nparts:06d}.parquet"), rows_frame(self.pending, columns(self.params, seen)), parquet=True)
        self.nparts += 1
        self.pending = []
        self.last_part = time.monotonic()

    def close(self) -> None:
        """The sweep stopped: the file is written with every finished row
        (readable, and resumable), and the parts removed."""
        if self.records or os.path.isdir(self.parts):
            self.rewrite(rows_frame(self.records, columns(self.params, self.seen)))

    def finish(self, df: pd.DataFrame) -> None:
        """The whole result, sorted by point; the parts removed."""
        self.rewrite(df)

    def rewrite(self, df: pd.DataFrame) -> None:
        """Write the file whole (its rows are then all there: no parts)."""
        _replace(self.path, df, parquet=True)
        self.pending = []
        shutil.rmtree(self.parts, ignore_errors=True)


#: A results file being written.
Writer = Union[CsvWriter, ParquetWriter]


def out_is_parquet(path: str, option: str = "out=") -> bool:
    """Whether a results file ``path`` is Parquet (else CSV);
    :class:`InvalidArgumentError` for any other kind, or Parquet without
    pyarrow. ``option`` names it in the message (``-o `` from the CLI)."""
    low = path.lower()
    if not (low.endswith(".csv") or low.endswith(".parquet")):
        raise InvalidArgumentError(f"{option}{path!r}: write a .csv or a .parquet file")
    parquet = low.endswith(".parquet")
    if parquet and not has_pyarrow():
        raise InvalidArgumentError(
            f"{option}{path!r}: writing Parquet needs pyarrow (pip install pyarrow), or write a .csv file"
        )
    return parquet


def refuse_overwrite(out: str | os.PathLike[str]) -> None:
    """Refuse to start a sweep afresh on ``out`` when it already holds
    something (a file that is not empty, or the Parquet parts a killed
    sweep left): a sweep run again without ``resume`` would otherwise
    replace hours of finished points without a word."""
    path = os.fspath(out)
    held = os.path.isfile(path) and os.path.getsize(path) > 0
    parts = os.path.isdir(parts_dir(path))
    if held or parts:
        what = f"{path} already exists" if held else f"{parts_dir(path)} holds the parts of a sweep that was stopped"
        raise InvalidArgumentError(
            f"{what}, and a sweep started afresh would overwrite it: resume it (--resume, resume=True) to keep "
            "its finished points and run only the others, or delete it, or write to another -o/out="
        )


def open_writer(out: str | os.PathLike[str], params: Sequence[str], keep: Sequence[Mapping[str, Any]] = ()) -> Writer:
    """Check ``out`` and start it afresh, or with the rows ``keep`` of a
    sweep being resumed (:class:`InvalidArgumentError` if it cannot be
    written)."""
    path = os.fspath(out)
    parquet = out_is_parquet(path)
    w: Writer = ParquetWriter(path, params) if parquet else CsvWriter(path, params)
    try:
        if keep:
            # Resuming: the kept rows replace the file in one rename.
            w.records = [dict(r) for r in keep]
            for r in keep:
                w.seen.update(dict.fromkeys(r))
            cols = columns(w.params, w.seen)
            w.rewrite(rows_frame(w.records, cols))
            if isinstance(w, CsvWriter):
                w.written = cols
        else:  # start afresh: no stale rows of an earlier sweep
            open(path, "w", encoding="utf-8").close()
            if parquet:
                os.remove(path)  # an empty file is no Parquet file
                shutil.rmtree(parts_dir(path), ignore_errors=True)
    except OSError as e:
        raise InvalidArgumentError(f"cannot write {path}: {e.strerror or e}") from None
    return w


# --------------------------------------------------------------------------
# Resuming


def point_key(params: Mapping[str, Any], names: Sequence[str]) -> tuple[str, ...]:
    """A point's identity in a results file: its swept values, as text (a
    CSV file gives back strings and numbers, a Parquet file its types)."""

    def text(v: Any) -> str:
        if isinstance(v, (list, tuple)):
            return "(" + ", ".join(text(x) for x in v) + ")"
        if isinstance(v, float) and v.is_integer():
            return str(int(v))
        return str(v)

    return tuple(text(params.get(n)) for n in names)


def _read_parquet(path: str) -> pd.DataFrame:
    """A Parquet results file and the parts a killed sweep left of it; a
    point in the file and in a part (a resume killed while it started)
    keeps the file's rows."""
    parts = parts_dir(path)
    names = sorted(n for n in os.listdir(parts) if n.endswith(".parquet")) if os.path.isdir(parts) else []
    frames = ([pd.read_parquet(path)] if os.path.exists(path) else []) + [
        pd.read_parquet(os.path.join(parts, n)) for n in names
    ]
    seen: set[Any] = set()
    kept = []
    for f in frames:
        if "point" in f.columns:
            f = f[~f["point"].isin(seen)]
            seen.update(f["point"])
        kept.append(f)
    return pd.concat(kept, ignore_index=True) if kept else pd.DataFrame()


def read_done(path: str, params: Sequence[str]) -> pd.DataFrame:
    """The rows of the points finished without error in results file
    ``path`` (empty if it does not exist)."""
    old, failed = read_rows(path, params)
    return old[~old["point"].isin(failed)] if len(old) else old


def read_rows(path: str, params: Sequence[str]) -> tuple[pd.DataFrame, set[Any]]:
    """Every row of results file ``path`` (empty if it does not exist) and
    the points among them that failed (an error, or a torn last line)."""
    parquet = path.lower().endswith(".parquet")
    if not os.path.exists(path) and not (parquet and os.path.isdir(parts_dir(path))):
        return pd.DataFrame(), set()
    torn = False
    try:
        if parquet:
            old = _read_parquet(path)
        else:
            with open(path, "rb") as fh:
                data = fh.read()
            # A driver killed while appending a point can leave a torn last
            # line: drop it, and that point's other rows with it.
            torn = bool(data) and not data.endswith(b"\n")
            if torn:
                data = data[: data.rfind(b"\n") + 1]
            old = pd.read_csv(io.BytesIO(data), keep_default_na=False, na_values=[""], dtype={SCENARIO_SHA: str})
    except Exception as e:  # an empty or foreign file
        raise InvalidArgumentError(f"--resume: cannot read {path} as sweep results ({e})") from None
    missing = [c for c in ("point", *params, ERROR) if c not in old.columns]
    if missing:
        raise InvalidArgumentError(
            f"--resume: {path} has no column {missing[0]!r}: it is not the output of this sweep "
            "(the swept paths must be the same)"
        )
    failed = set(old.loc[failed_rows(old), "point"])
    if torn and len(old):
        failed.add(old["point"].iloc[-1])
    return old, failed
