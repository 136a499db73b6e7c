"""Helpers shared by the tests that run sweeps, comparisons and HPL: a real
LocalCluster of worker processes, a client that fails on any submission
(for what must be refused before a cluster starts), the CLI run in this
process, and the check of a CLI input error."""

from __future__ import annotations

import contextlib
import logging
import subprocess
from collections.abc import Iterator
from typing import Any

from fabriclab.cli import main as cli_main


@contextlib.contextmanager
def local_client(workers: int = 2) -> Iterator[Any]:
    """A LocalCluster of worker processes and a client of it."""
    import distributed

    with distributed.LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
        silence_logs=logging.ERROR,
    ) as cluster, distributed.Client(cluster, set_as_default=False) as c:
        yield c


class NoClient:
    """Fails the test if anything is submitted."""

    def submit(self, *a, **k):  # pragma: no cover - must not be reached
        raise AssertionError("a run was submitted")


def main_in_process(capsys, *args) -> subprocess.CompletedProcess:
    """``fabriclab ARGS`` in this process (for what fails before a cluster starts)."""
    try:
        code = cli_main([str(a) for a in args])
    except SystemExit as e:  # argparse's usage errors
        code = e.code
    out = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, out.out, out.err)


def assert_cli_error(r: subprocess.CompletedProcess, *words: str) -> None:
    """Exit 2 with ``fabriclab: error:``, no traceback, and each of ``words``."""
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "fabriclab: error:" in r.stderr and "Traceback" not in r.stderr + r.stdout
    for w in words:
        assert w in r.stderr, (w, r.stderr)
