"""Where a sweep's points run: Dask's distributed scheduler, a
``LocalCluster`` started here or the caller's client or scheduler, and the
progress lines while they run.

:func:`dask_client` gives the client to submit to; :func:`run_all`
submits one task per point (:func:`fabriclab.sweep_rows.run_point`),
collects each as it finishes, hands its rows to the results file and
cancels what is left if the sweep stops. A worker process that dies loses
only its point, which Dask runs again up to
:data:`RETRIES_ON_WORKER_DEATH` more times. Left out: starting batch jobs
(dask-jobqueue does that) and splitting a point over workers.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import inspect
import logging
import numbers
import os
import signal
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .errors import ArgumentTypeError, InvalidArgumentError
from .progress import Progress, ProgressArg, check_progress, terminal_bar
from .sweep_grid import SweepPoint
from .sweep_rows import ERROR, error_text, point_records, row_failed, run_point
from .sweep_writer import Writer

__all__ = ["RETRIES_ON_WORKER_DEATH", "SweepProgress", "check_main_guard", "dask_client", "distributed", "run_all", "worker_count"]

#: A point whose worker dies is run again on another worker up to this many
#: more times (Dask's ``distributed.scheduler.allowed-failures``), then
#: recorded as failed.
RETRIES_ON_WORKER_DEATH = 2


def distributed() -> Any:
    """Dask's distributed module (imported when a sweep starts, not with
    fabriclab)."""
    try:
        import distributed
    except ImportError as e:  # pragma: no cover - a dependency of the package
        raise ImportError(
            "fabriclab's parallel runs (sweep, compare, lab run --workers) need Dask's distributed scheduler: "
            "pip install 'dask[distributed]'"
        ) from e
    return distributed


def worker_count(workers: Any, npoints: int) -> int:
    """The LocalCluster's size: ``workers`` (default one per CPU), at most
    one per point."""
    if workers is None:
        workers = os.cpu_count() or 1
    elif isinstance(workers, bool) or not isinstance(workers, numbers.Integral) or workers < 1:
        raise InvalidArgumentError(f"workers must be a positive integer, got {workers!r}")
    return max(1, min(int(workers), npoints))


def _guarded(tree: ast.Module, line: int) -> bool:
    """Whether ``line`` of a module lies inside an ``if __name__ ==
    "__main__":`` block at its top level."""
    for node in tree.body:
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)):
            continue
        parts = [node.test.left, *node.test.comparators]
        names = {p.id for p in parts if isinstance(p, ast.Name)}
        consts = {p.value for p in parts if isinstance(p, ast.Constant)}
        if names == {"__name__"} and consts == {"__main__"} and isinstance(node.test.ops[0], ast.Eq):
            if node.lineno <= line <= (node.end_lineno or node.lineno):
                return True
    return False


def check_main_guard(what: str = "a sweep on a local Dask cluster") -> None:
    """Refuse, with the fix, a sweep started from a script's top level
    outside ``if __name__ == "__main__":``. Dask's worker processes are
    started by re-running the main script (the ``spawn`` method), which
    would start the sweep again in each of them: Dask then reports only
    "Nanny failed to start". Notebooks, ``python -c`` and calls made from
    inside functions are fine."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or not path or not str(path).endswith(".py") or not os.path.isfile(path):
        return
    frame = inspect.currentframe()
    while frame is not None:
        if frame.f_globals is vars(main) and frame.f_code.co_name == "<module>":
            try:
                tree = ast.parse(Path(path).read_text(encoding="utf-8"))
            except (OSError, SyntaxError, ValueError):
                return
            if not _guarded(tree, frame.f_lineno):
                raise InvalidArgumentError(
                    f"{path}, line {frame.f_lineno}: {what} must be started under "
                    '`if __name__ == "__main__":` (its worker processes re-run the script from the top, '
                    "and would start it again); indent the call under that line, or pass client= "
                    "a running cluster's address"
                )
            return
        frame = frame.f_back


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """SIGINT ignored while a LocalCluster starts its worker processes,
    which inherit that: a Ctrl-C in the terminal, sent to every process
    of the foreground group, then stops the sweep in the driver (which
    closes the cluster and keeps the finished points) instead of printing
    each worker's traceback. Only from the main thread, where Python
    handles signals; a worker restarted later (after a crash) handles
    SIGINT again."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old if old is not None else signal.SIG_DFL)  # None: set outside Python


@contextlib.contextmanager
def _sigint_deferred() -> Iterator[None]:
    """A Ctrl-C that comes while the block runs is raised when the block
    has run (in the main thread, with Python's own SIGINT handler in place;
    under another handler, or SIGINT ignored, the block runs as it is)."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    caught: list[int] = []
    old = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old if old is not None else signal.SIG_DFL)  # None: set outside Python
    if caught:
        raise KeyboardInterrupt


def _silence_distributed(levels: dict[str, int]) -> None:
    """Distributed's and its event loop's (tornado's) logs silenced while
    the client and the cluster close (their levels saved in ``levels``): a
    sweep stopped by Ctrl-C closes its client while the scheduler still
    holds finished results, and the scheduler logs each one it can no
    longer report as CRITICAL, with a traceback; the interrupted wait can
    log another from tornado. Nothing is lost: the driver kept every
    finished point."""
    for name in ["tornado", "tornado.application", *logging.root.manager.loggerDict]:
        if name.split(".")[0] in ("distributed", "tornado"):
            log = logging.getLogger(name)
            levels[name] = log.level
            log.setLevel(logging.CRITICAL + 1)


def _restore_levels(levels: dict[str, int]) -> None:
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


@contextlib.contextmanager
def dask_client(client: Any, n: int, what: str = "a sweep on a local Dask cluster") -> Iterator[tuple[Any, str]]:
    """The client to submit to, and a description of where it runs: a
    LocalCluster of ``n`` workers started (and closed) here, a client
    connected (and closed) here to a scheduler address, or the caller's
    client as it is."""
    dd = distributed()
    if client is None:
        check_main_guard(what)
        import dask

        with contextlib.ExitStack() as stack:
            stack.enter_context(dask.config.set({"distributed.scheduler.allowed-failures": RETRIES_ON_WORKER_DEATH}))
            levels: dict[str, int] = {}
            stack.callback(_restore_levels, levels)
            with _sigint_ignored():
                cluster = stack.enter_context(
                    dd.LocalCluster(
                        n_workers=n,
                        threads_per_worker=1,
                        processes=True,
                        host="127.0.0.1",
                        dashboard_address="127.0.0.1:0",  # any free port: never "8787 is in use" beside another cluster
                        silence_logs=logging.ERROR,
                    )
                )
            c = stack.enter_context(dd.Client(cluster, set_as_default=False))
            # Closed in reverse: distributed's logs silenced, the client,
            # the cluster, the levels back.
            stack.callback(_silence_distributed, levels)
            where = f"a LocalCluster of {n} worker process(es)"
            if importlib.util.find_spec("bokeh") is not None:
                where += f", dashboard {cluster.dashboard_link}"
            yield c, where
        return
    if not isinstance(client, str) and not callable(getattr(client, "submit", None)):
        raise ArgumentTypeError(
            "client must be a distributed.Client or a scheduler address such as 'tcp://host:8786', "
            f"not {type(client).__name__}"
        )
    if isinstance(client, str):
        _check_address(client)
        try:
            c = dd.Client(client, set_as_default=False)
        except OSError as e:
            raise OSError(f"cannot reach the Dask scheduler at {client}: {e}") from e
        with c:
            yield c, _where(c)
        return
    yield client, _where(client)


def _check_address(address: str) -> None:
    """A malformed scheduler address, before a Client is made for it (a
    Client that fails on one lingers until the interpreter exits)."""
    from distributed.comm.addressing import parse_address, parse_host_port

    try:
        scheme, location = parse_address(address)
        if scheme not in ("tcp", "tls", "ws", "wss"):
            raise InvalidArgumentError(f"a Dask scheduler is reached over tcp, tls, ws or wss, not {scheme}")
        parse_host_port(location)
    except ValueError as e:
        raise InvalidArgumentError(f"scheduler address {address!r}: {e}; write tcp://HOST:PORT") from None


def _where(client: Any) -> str:
    """``tcp://host:port (N worker(s) now)`` for a progress line."""
    return f"{client.scheduler.address} ({len(client.nthreads())} worker(s) now)"


class SweepProgress:
    """A sweep's progress, as ``progress=`` asks (:mod:`fabriclab.progress`):
    with True, a tqdm bar on a terminal or in a notebook, else lines on
    stderr: points (or ``unit``) done / total, elapsed, an estimate of the
    time left, at most one a second and always the last, each starting
    with ``prefix:``; with a callable, each point done as a
    :class:`~fabriclab.progress.Progress` (``tool`` the ``prefix``,
    ``sim_us`` and ``events`` 0, ``label`` the point) and no lines."""

    def __init__(self, total: int, progress: ProgressArg, prefix: str = "sweep", unit: str = "points"):
        progress = check_progress(progress)
        self.total, self.enabled = total, progress is True
        self.prefix, self.unit = prefix, unit
        self.start = self.last = time.monotonic()
        self.done = self.failed = 0
        #: Who gets each point as a Progress: the caller's callable, or the
        #: bar on a terminal (None: lines, or nothing).
        self.sink = terminal_bar(prefix) if progress is True else progress or None

    def begin(self) -> None:
        """The points are submitted: the clock starts (cluster start-up left out)."""
        self.start = self.last = time.monotonic()

    def note(self, text: str) -> None:
        """A line of its own."""
        if self.enabled:
            print(f"{self.prefix}: {text}", file=sys.stderr, flush=True)

    def update(self, failed: bool, label: str = "") -> None:
        """One more point (``label``) done."""
        self.done += 1
        self.failed += failed
        now = time.monotonic()
        if self.sink is not None:
            what = label + (f" ({self.failed} with errors)" if self.failed else "")
            self.sink(Progress(self.prefix, 0.0, 0, float(self.done), float(self.total), self.unit, what, now - self.start))
            return
        if not self.enabled or (now - self.last < 1.0 and self.done < self.total):
            return
        self.last = now
        elapsed = now - self.start
        line = f"{self.done}/{self.total} {self.unit} done"
        if self.failed:
            line += f" ({self.failed} with errors)"
        line += f", {elapsed:.1f} s elapsed"
        if self.done < self.total:
            line += f", about {elapsed / self.done * (self.total - self.done):.0f} s left"
        self.note(line)


def run_all(
    client: Any,
    points: Sequence[SweepPoint],
    origin: str,
    writer: Writer | None,
    progress: SweepProgress,
    done: dict[int, list[dict[str, Any]]],
) -> OSError | None:
    """Submit every point; collect each into ``done`` (and write it) as it
    finishes. If the sweep stops (Ctrl-C, an exception), the points not
    finished are cancelled, and ``done`` and the results file keep the
    finished ones. If the results file cannot be written (a full disk),
    the sweep goes on without it and returns the error: the points are
    in ``done``."""
    write_error: OSError | None = None
    dd = distributed()
    token = uuid.uuid4().hex[:8]
    futures = {
        client.submit(run_point, p.toml, origin, os.environ.get("FABRICLAB_AUDIT"), key=f"fabriclab-sweep-{token}-{p.index}", pure=False): p
        for p in points
    }
    try:
        for fut in dd.as_completed(list(futures), loop=client.loop):
            point = futures[fut]
            # A Ctrl-C waits for the point's result and its record: the
            # table and the file get the point, or neither does; and
            # distributed's sync() under result() is never interrupted (a
            # race in its cancel callback logs a NameError traceback).
            with _sigint_deferred():
                try:
                    rows = fut.result()
                except (KeyboardInterrupt, SystemExit):
                    raise
                except BaseException as e:  # the worker died (KilledWorker), the task was cancelled, ...
                    rows = [{"item": None, "kind": None, "name": None, ERROR: error_text(e)}]
                fut.release()
                records = point_records(point, rows)
                done[point.index] = records
                if writer is not None and write_error is None:
                    try:
                        writer.add(records)
                    except OSError as e:
                        write_error = e
                        progress.note(
                            f"cannot write the results file any more ({e.strerror or e}); the sweep goes on "
                            "and returns every point"
                        )
            progress.update(any(row_failed(r) for r in rows), point.label())
    except BaseException:
        if writer is not None:
            writer.close()  # the finished points' rows are kept, whatever stopped the run
        raise
    finally:
        pending = [f for f in futures if not f.done()]
        if pending:
            client.cancel(pending)
    return write_error
