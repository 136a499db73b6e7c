"""Ctrl-C stops a run within about a second: the CLI exits 130 with one
line and no traceback; from Python the call raises KeyboardInterrupt and
the next run in the same process works."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

# A run far longer than the wait before the signal (a2a-128 on the packet
# engine: 18-30 s on the project's machines).
LONG = ["bench", "a2a-128"]


def _default_sigint() -> None:
    """In the child: SIGINT's default disposition. A shell that starts the
    test suite in the background (``nohup ... &``) ignores SIGINT, children
    inherit that, and Python then installs no handler: Ctrl-C could not be
    tested."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt(
    cmd: list[str], wait_s: float, ready: str | None = None, ready_err: str | None = None
) -> tuple[subprocess.CompletedProcess, float]:
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint)
    if ready is not None:
        assert p.stdout is not None
        line = p.stdout.readline()  # the script says when its run has begun
        assert line.strip() == ready, line
    if ready_err is not None:
        # Wait for the CLI's first progress line: on a loaded machine the
        # imports alone can take longer than `wait_s`, and a signal then
        # interrupts Python's start-up, not the run.
        assert p.stderr is not None
        lines = []
        while not any(ready_err in x for x in lines):
            line = p.stderr.readline()
            assert line, "".join(lines)
            lines.append(line)
    time.sleep(wait_s)
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    return subprocess.CompletedProcess(cmd, p.returncode, out, err), time.monotonic() - t0


def test_ctrl_c_stops_the_cli_with_exit_130_and_one_line() -> None:
    r, took = _interrupt([sys.executable, "-m", "fabriclab.cli", *LONG], 1.0, ready_err="simulated")
    assert r.returncode == 130, (r.returncode, r.stderr[-500:])
    assert took < 3.0, took
    assert r.stderr.splitlines()[-1] == "fabriclab: interrupted"
    assert "Traceback" not in r.stderr


SCRIPT = """
import sys, time
import fabriclab
print("started", flush=True)
t0 = time.monotonic()
try:
    fabriclab.bench("a2a-128")
    print("finished")
except KeyboardInterrupt:
    print(f"interrupted after {time.monotonic() - t0:.2f} s", flush=True)
# The next run in the process is not cut short.
res = fabriclab.perftest("ib_write_lat", fabric="heps", client="h0", server="h4", iters=100)
df = res.df
print("next run", len(df), flush=True)
"""


def test_ctrl_c_raises_keyboard_interrupt_in_python_and_the_next_run_works() -> None:
    r, took = _interrupt([sys.executable, "-c", SCRIPT], 2.0, ready="started")
    assert r.returncode == 0, r.stderr[-800:]
    lines = r.stdout.splitlines()
    assert lines[0].startswith("interrupted after"), r.stdout
    assert lines[1].startswith("next run") and int(lines[1].split()[-1]) > 0, r.stdout
    assert took < 3.0, took


def test_ctrl_c_prints_what_an_mpi_tool_completed_then_exits_130() -> None:
    """IMB stopped mid-run prints the measurements it completed (its own
    output up to there, without the closing MPI_Finalize line), then one
    line on stderr."""
    cmd = [sys.executable, "-m", "fabriclab.cli", "imb", "Allreduce", "Alltoall", "--fabric", "eantc-hpc",
           "-np", "32", "-npmin", "32", "-msglog", "0:20", "--quiet"]
    r, took = _interrupt(cmd, 6.0)
    assert r.returncode == 130, (r.returncode, r.stderr[-500:])
    assert took < 3.0, took
    assert r.stderr.splitlines()[-1] == "fabriclab: interrupted; the output above is what completed"
    assert "# Benchmarking Allreduce" in r.stdout, r.stdout
    rows = [ln for ln in r.stdout.splitlines() if ln.strip() and ln.strip()[0].isdigit()]
    assert rows and rows[0].split()[0] == "0", r.stdout
    assert "MPI_Finalize" not in r.stdout
    assert "Traceback" not in r.stderr


PARTIAL = """
import fabriclab
print("started", flush=True)
try:
    fabriclab.imb(["Allreduce", "Alltoall"], np=32, fabric="eantc-hpc", npmin=32, msglog=(0, 20))
    print("finished")
except KeyboardInterrupt as e:
    res = e.result
    print("partial", res.tool, len(res.df), res.df.bytes.iloc[0], flush=True)
"""


def test_ctrl_c_in_python_hands_over_what_an_mpi_tool_completed() -> None:
    r, took = _interrupt([sys.executable, "-c", PARTIAL], 6.0, ready="started")
    assert r.returncode == 0, r.stderr[-800:]
    line = r.stdout.splitlines()[0].split()
    assert line[:2] == ["partial", "imb"], r.stdout
    assert int(line[2]) >= 1 and int(line[3]) == 0, r.stdout
    assert took < 3.0, took


def test_ctrl_c_prints_the_perftest_sizes_that_completed() -> None:
    cmd = [sys.executable, "-m", "fabriclab.cli", "perftest", "ib_write_lat", "--fabric", "heps",
           "--client", "h0", "--server", "h4", "-a"]
    r, took = _interrupt(cmd, 4.0)
    assert r.returncode == 130, (r.returncode, r.stderr[-500:])
    assert took < 3.0, took
    assert r.stderr.splitlines()[-1] == "fabriclab: interrupted; the output above is what completed"
    sizes = [int(ln.split()[0]) for ln in r.stdout.splitlines() if ln.strip() and ln.split()[0].isdigit()]
    assert sizes and sizes[0] == 2 and sizes == sorted(sizes) and len(sizes) < 23, r.stdout


def test_ctrl_c_on_the_flow_backend_is_taken_at_once_and_says_what_ran() -> None:
    """The flow backend's events can each cost a recomputation over a
    thousand flows (an all-to-all by Open MPI's linear algorithm): Ctrl-C
    is polled at every event there, and progress comes every half second.
    Before, the stop waited for 65,536 events (41 s at 512 ranks) and no
    progress line came for minutes."""
    cmd = [sys.executable, "-m", "fabriclab.cli", "osu", "osu_alltoall", "-np", "64", "-m", "65536:65536",
           "--fabric", "fat-tree", "--algorithm", "linear", "--backend", "flow"]
    r, took = _interrupt(cmd, 1.0, ready_err="measurements done")
    assert r.returncode == 130, (r.returncode, r.stderr[-500:])
    assert took < 3.0, took
    assert "Traceback" not in r.stderr


def test_nccl_tests_stopped_prints_no_summary() -> None:
    """nccl-tests prints its closing summary only at its end: stopped
    (here before any size or after a few of 31), it printed "0 OK" and an
    average of what had run, as if the sweep had completed."""
    h100 = str(Path(__file__).resolve().parent.parent / "scenarios" / "h100_1024.fabric.toml")
    cmd = [sys.executable, "-m", "fabriclab.cli", "nccl-tests", "all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2",
           "--nodes", "128", "--fabric", h100, "--backend", "flow", "-c", "0"]
    r, took = _interrupt(cmd, 0.2, ready_err="simulated")
    assert r.returncode == 130, (r.returncode, r.stderr[-500:])
    sizes = [ln.split()[0] for ln in r.stdout.splitlines() if ln.strip() and ln.split()[0].isdigit()]
    assert len(sizes) < 31, r.stdout[-2000:]
    assert "Avg bus bandwidth" not in r.stdout and "Out of bounds" not in r.stdout, r.stdout[-2000:]


def test_ctrl_c_prints_the_flows_done_and_under_way() -> None:
    """A stopped flows run used to print nothing: the flows that had
    finished were lost with it."""
    many = [f"--flow=h{i}:h{i + 8}:2000M" for i in range(1, 8)]
    cmd = [sys.executable, "-m", "fabriclab.cli", "flows", "--fabric", "heps", "--flow", "h9:h6:1M", *many]
    r, took = _interrupt(cmd, 1.0, ready_err="flows")
    assert r.returncode == 130, (r.returncode, r.stderr[-500:])
    assert took < 3.0, took
    assert r.stderr.splitlines()[-1] == "fabriclab: interrupted; the output above is what completed"
    rows = [ln.split() for ln in r.stdout.splitlines() if ln.startswith("h9 ")]
    assert rows and rows[0][1] == "h6", r.stdout
    assert "Traceback" not in r.stderr
