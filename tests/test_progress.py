"""Progress of long runs: the core's ticks reach Python as Progress
objects, drawn as plain lines off a terminal and as a tqdm bar on one; a
callable gets them itself, and an exception it raises stops the run."""

from __future__ import annotations

import io
import time

import pytest

import fabriclab
from fabriclab.errors import ArgumentTypeError
from fabriclab.progress import Progress, _Drawer


def test_a_callable_gets_every_tick_and_the_last_one_says_done() -> None:
    ticks: list[Progress] = []
    fabriclab.imb(["PingPong", "Allreduce"], np=4, msglog=(0, 4), progress=ticks.append)
    assert ticks, "at least the final tick"
    last = ticks[-1]
    assert (last.tool, last.unit, last.label) == ("IMB", "measurements", "done")
    assert last.total is not None and last.done == last.total
    assert all(a.events <= b.events and a.sim_us <= b.sim_us for a, b in zip(ticks, ticks[1:]))


def test_hpl_and_fio_count_their_own_units() -> None:
    hpl: list[Progress] = []
    fabriclab.hpl(n=1000, nb=100, grids="2x2", progress=hpl.append)
    assert hpl[-1].tool == "HPL" and hpl[-1].unit == "calls" and hpl[-1].done == hpl[-1].total
    fio: list[Progress] = []
    fabriclab.fio(runtime=0.002, ramp_time=0, progress=fio.append)
    assert all(p.tool == "fio" and p.unit == "ms" and p.total == pytest.approx(2.0) for p in fio)


def test_flows_count_flows() -> None:
    ticks: list[Progress] = []
    fl = [fabriclab.Flow(f"h{s}", f"h{d}", 1 << 20) for s in range(4) for d in range(4) if s != d]
    fabriclab.flows(fl, fabric="leaf-spine", progress=ticks.append)
    last = ticks[-1]
    assert (last.tool, last.unit, last.label, last.done, last.total) == ("flows", "flows", "done", 12.0, 12.0)


def test_an_exception_in_the_callable_stops_the_run_and_is_raised() -> None:
    def stop(p: Progress) -> None:
        raise ValueError(f"stop at {p.events} events")

    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="stop at"):
        # About 40 M events (3 s) in all; the first tick comes after 2^20.
        fabriclab.imb(["Alltoall"], np=16, msglog=(18, 19), progress=stop)
    assert time.perf_counter() - t0 < 2.0
    # The run after it is not affected by the stop.
    assert len(fabriclab.imb(["PingPong"], np=2, msglog=(0, 2)).df) == 4


def test_progress_true_off_a_terminal_prints_plain_lines(capsys: pytest.CaptureFixture[str]) -> None:
    fabriclab.imb(["PingPong"], np=2, msglog=(0, 2), progress=True)
    err = capsys.readouterr().err
    assert "measurements done, at done" in err and "\r" not in err


def test_on_a_terminal_the_drawer_draws_a_bar() -> None:
    out = io.StringIO()
    d = _Drawer("IMB", file=out)
    d.fancy = True  # as on a terminal
    for i in range(1, 4):
        d(Progress("IMB", 10.0 * i, 100 * i, float(i), 3.0, "measurements", f"step {i}", 0.1 * i))
    text = out.getvalue()
    assert "IMB" in text and "3/3" in text and "step 3" in text


def test_a_bad_progress_argument_is_a_type_error() -> None:
    with pytest.raises(ArgumentTypeError, match="progress"):
        fabriclab.imb(["PingPong"], np=2, msglog=(0, 2), progress="yes")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "args",
    [
        ["osu", "osu_latency", "-np", "2", "-m", "8:8"],
        ["imb", "PingPong", "-np", "2", "-msglog", "2:3"],
        ["cbench", "rotate", "-np", "4"],
        ["fio", "--runtime", "0.002", "--ramp_time", "0"],
        ["hpl", "-N", "512", "--grid", "1x2"],
        ["perftest", "ib_write_bw", "--client", "h0", "--server", "h4", "-n", "20"],
        ["flows", "--flow", "h0:h4:64K"],
        ["lab", "run", "heps", "--quick"],
    ],
    ids=lambda a: a[0],
)
def test_quiet_leaves_stderr_empty(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """--quiet: no progress and no summary lines (errors and notes would
    still go to stderr); the tool's own output as without it."""
    from cluster_help import main_in_process

    r = main_in_process(capsys, *args, "--quiet")
    assert r.returncode == 0, r.stderr
    assert r.stderr == "" and r.stdout.strip()


def test_perftest_counts_iterations_over_sizes_qps_and_directions() -> None:
    ticks: list[Progress] = []
    fabriclab.perftest("ib_write_bw", "h0", "h4", iters=100, qps=3, bidirectional=True, progress=ticks.append)
    assert ticks and all(p.tool == "perftest" and p.unit == "iterations" and p.total == 600 for p in ticks)
    assert ticks[-1].done == 600 and ticks[-1].label == "65536 B"
    sizes: list[Progress] = []
    fabriclab.perftest("ib_write_lat", "h0", "h4", all_sizes=True, iters=20, progress=sizes.append)
    ends = [p for p in sizes if p.done % 20 == 0]
    assert sizes[-1].done == sizes[-1].total == 23 * 20 and sizes[-1].label == "8388608 B"
    assert [p.label for p in ends][:3] == ["2 B", "4 B", "8 B"]
    assert all(a.done <= b.done and a.events <= b.events for a, b in zip(sizes, sizes[1:]))
    # -D ends by time: progress in simulated microseconds.
    timed: list[Progress] = []
    fabriclab.perftest("ib_write_bw", "h0", "h4", duration_s=0.0002, progress=timed.append)
    assert timed and all(p.unit == "us" and p.total == pytest.approx(200.0) for p in timed)
    assert timed[-1].done == pytest.approx(200.0)


def test_lines_without_a_total_say_what_is_done() -> None:
    out = io.StringIO()
    draw = _Drawer("perftest", file=out)
    draw(Progress("perftest", 1.0, 10, 42.0, None, "iterations", "65536 B", 0.5))
    assert "42 iterations done, at 65536 B" in out.getvalue()


def test_a_ctrl_c_inside_the_callable_is_a_stop_with_what_completed() -> None:
    """KeyboardInterrupt raised in the progress callable (Ctrl-C landing
    while it ran) stops the run as Ctrl-C anywhere does: HPL hands over the
    test that ended."""

    def stop_at_first_end(p: Progress) -> None:
        if p.label == "done":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as e:
        fabriclab.hpl(n=1000, nb=100, grids=["2x2", "2x2"], progress=stop_at_first_end)
    part = e.value.result  # type: ignore[attr-defined]
    assert part is not None and len(part.df) == 1 and part.extras["report"]["interrupted"]
    assert "End of Tests." not in (part.text or "")
