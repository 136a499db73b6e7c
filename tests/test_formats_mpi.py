"""The IMB and OSU parsers and layout checkers, on real output of the tools.

The samples in tests/golden (IMB-MPI1 2021.11 and OSU Micro-Benchmarks 7.4,
4 ranks over shared memory; see tests/golden/README.md) are what the
simulator's `fabriclab imb` and `fabriclab osu` output is compared with.
These tests pin down that the parsers read every sample, that they read
the right numbers, and that the layout checkers accept every real sample
and reject a copy that has the right words but not the tools' spacing.
"""

from __future__ import annotations

import math
import re

import pytest

import imb_format
import osu_format
from conftest import GOLDEN
from imb_format import check_imb_layout, parse_imb, parse_imb_header
from osu_format import check_osu_layout, column, parse_osu

IMB_SAMPLES = sorted(p.name for p in GOLDEN.glob("imb_*.txt"))
OSU_SAMPLES = sorted(p.name for p in GOLDEN.glob("osu_*.txt"))

TIME_RANGE = ["#bytes", "#repetitions", "t_min[usec]", "t_max[usec]", "t_avg[usec]"]
TIME_RANGE_BW = TIME_RANGE + ["Mbytes/sec"]
TIME_BW = ["#bytes", "#repetitions", "t[usec]", "Mbytes/sec"]
SYNC = ["#repetitions", "t_min[usec]", "t_max[usec]", "t_avg[usec]"]

# IMB: bytes moved per repetition, as a multiple of #bytes, in Mbytes/sec
# (IMB's scale_bw): Sendrecv sends and receives, Exchange does it with both
# neighbours.
BW_FACTOR = {"PingPong": 1, "PingPing": 1, "Sendrecv": 2, "Exchange": 4}


def read(name: str) -> str:
    return (GOLDEN / name).read_text()


def sections(name: str) -> dict[tuple[str, int], dict]:
    return {(s["name"], s["np"]): s for s in parse_imb(read(name))}


def col(sec: dict, name: str) -> list:
    k = sec["columns"].index(name)
    return [r[k] for r in sec["rows"]]


def test_every_sample_is_in_golden():
    assert len(IMB_SAMPLES) == 2 and len(OSU_SAMPLES) == 11


# --------------------------------------------------------------------------
# IMB: parsing


@pytest.mark.parametrize("name", IMB_SAMPLES)
def test_imb_every_sample_parses_with_header_and_trailer(name):
    text = read(name)
    secs = parse_imb(text)
    head = parse_imb_header(text)
    assert secs and all(s["rows"] for s in secs)
    assert head["version"] == "2021.11" and head["part"] == "MPI-1"
    assert head["version_line"] == "Intel(R) MPI Benchmarks 2021.11, MPI-1 part"
    assert head["info"]["MPI Version"] == "3.1"
    assert head["calling_sequence"].startswith("/tmp/anchors/src/imb/IMB-MPI1 ")
    assert head["min_msg_bytes"] == 0
    assert (head["datatype"], head["reduction_datatype"], head["op"]) == ("MPI_BYTE", "MPI_FLOAT", "MPI_SUM")
    assert head["finalized"]
    # Every benchmark of the list ran (at one or more process counts).
    assert list(dict.fromkeys(s["name"] for s in secs)) == head["benchmarks"]


def test_imb_sample_sections_columns_and_row_counts():
    text = read("imb_sample.txt")
    head = parse_imb_header(text)
    assert head["benchmarks"] == ["Allreduce", "Alltoall", "PingPong"]
    assert head["max_msg_bytes"] == 65536
    assert head["calling_sequence"].endswith("IMB-MPI1 Allreduce Alltoall PingPong -msglog 0:16")
    got = [(s["name"], s["np"], s["waiting"], s["columns"], len(s["rows"])) for s in parse_imb(text)]
    assert got == [
        # Without -npmin, collectives run on 2 then 4 ranks; on 2 the other
        # 2 wait in MPI_Barrier. Reductions use MPI_FLOAT: 0, 4, 8, ... bytes.
        ("Allreduce", 2, 2, TIME_RANGE, 16),
        ("Allreduce", 4, 0, TIME_RANGE, 16),
        ("Alltoall", 2, 2, TIME_RANGE, 18),
        ("Alltoall", 4, 0, TIME_RANGE, 18),
        ("PingPong", 2, 2, TIME_BW, 18),
    ]


def test_imb_sample_all_sections_columns_and_row_counts():
    text = read("imb_sample_all.txt")
    head = parse_imb_header(text)
    assert head["max_msg_bytes"] == 1024
    assert head["calling_sequence"].endswith("-msglog 0:10 -npmin 4")
    got = [(s["name"], s["np"], s["waiting"], s["columns"], len(s["rows"])) for s in parse_imb(text)]
    assert got == [
        ("PingPong", 2, 2, TIME_BW, 12),
        ("PingPing", 2, 2, TIME_BW, 12),
        ("Sendrecv", 4, 0, TIME_RANGE_BW, 12),
        ("Exchange", 4, 0, TIME_RANGE_BW, 12),
        ("Allreduce", 4, 0, TIME_RANGE, 10),
        ("Reduce", 4, 0, TIME_RANGE, 10),
        ("Reduce_scatter", 4, 0, TIME_RANGE, 10),
        ("Allgather", 4, 0, TIME_RANGE, 12),
        ("Gather", 4, 0, TIME_RANGE, 12),
        ("Scatter", 4, 0, TIME_RANGE, 12),
        ("Alltoall", 4, 0, TIME_RANGE, 12),
        ("Bcast", 4, 0, TIME_RANGE, 12),
        ("Barrier", 4, 0, SYNC, 1),  # no #bytes column
    ]


def test_imb_hand_checked_values():
    s = sections("imb_sample_all.txt")
    pp = s[("PingPong", 2)]
    assert pp["rows"][-1] == [1024, 1000, 6.55, 156.25]
    assert pp["rows"][0] == [0, 1000, 1.53, 0.0]
    assert s[("Barrier", 4)]["rows"] == [[1000, 11.79, 11.80, 11.79]]
    assert s[("Sendrecv", 4)]["rows"][-1] == [1024, 1000, 15.84, 15.85, 15.85, 129.24]
    t = sections("imb_sample.txt")
    assert t[("Allreduce", 2)]["rows"][-1] == [65536, 640, 56.64, 61.80, 59.22]
    assert t[("PingPong", 2)]["rows"][-1] == [65536, 640, 80.66, 812.49]
    # Values are typed: counts are ints, times floats.
    assert all(isinstance(v, int) for v in pp["rows"][0][:2])
    assert isinstance(pp["rows"][0][2], float)


def test_imb_message_sizes_follow_the_datatype():
    s = sections("imb_sample.txt")
    # MPI_FLOAT reductions: 0 then multiples of 4 bytes.
    assert col(s[("Allreduce", 4)], "#bytes") == [0] + [2**k for k in range(2, 17)]
    # MPI_BYTE: 0, 1, 2, 4, ...
    assert col(s[("Alltoall", 4)], "#bytes") == [0] + [2**k for k in range(0, 17)]
    assert col(s[("PingPong", 2)], "#bytes") == [0] + [2**k for k in range(0, 17)]


@pytest.mark.parametrize("name", IMB_SAMPLES)
def test_imb_repetitions_are_min_1000_or_40_mib_per_size(name):
    for sec in parse_imb(read(name)):
        reps = col(sec, "#repetitions")
        sizes = col(sec, "#bytes") if "#bytes" in sec["columns"] else [0] * len(reps)
        assert reps == [1000 if b == 0 else min(1000, (40 << 20) // b) for b in sizes], sec["name"]


@pytest.mark.parametrize("name", IMB_SAMPLES)
def test_imb_min_avg_max_are_ordered(name):
    for sec in parse_imb(read(name)):
        if "t_min[usec]" in sec["columns"]:
            for lo, hi, avg in zip(col(sec, "t_min[usec]"), col(sec, "t_max[usec]"), col(sec, "t_avg[usec]")):
                assert lo <= avg <= hi, (sec["name"], lo, avg, hi)


def _within_print_rounding(mbytes: float, nbytes: int, t_us: float) -> bool:
    """Mbytes/sec = bytes / t[usec] (IMB: 10^6 bytes, time in usec), with
    t and Mbytes/sec each printed rounded to 0.01."""
    half = 0.005 + 1e-9
    lo = nbytes / (t_us + half) - half
    hi = nbytes / (t_us - half) + half if t_us > half else math.inf
    return lo <= mbytes <= hi


@pytest.mark.parametrize("name", IMB_SAMPLES)
def test_imb_mbytes_per_sec_is_bytes_over_time_in_decimal_megabytes(name):
    checked = 0
    for sec in parse_imb(read(name)):
        if sec["name"] not in BW_FACTOR:
            continue
        t_col = "t[usec]" if "t[usec]" in sec["columns"] else "t_max[usec]"  # IMB uses t_max
        factor = BW_FACTOR[sec["name"]]
        for b, t, mb in zip(col(sec, "#bytes"), col(sec, t_col), col(sec, "Mbytes/sec")):
            if b == 0:
                assert mb == 0.0
                continue
            assert _within_print_rounding(mb, factor * b, t), (sec["name"], b, t, mb)
            if mb >= 10:
                # Not MiB/s (2^20 bytes): that would be 4.6 % off.
                assert not _within_print_rounding(mb * 1.048576, factor * b, t), (sec["name"], b)
            checked += 1
    assert checked >= 17


def test_imb_pingpong_1024_by_hand():
    pp = sections("imb_sample_all.txt")[("PingPong", 2)]
    b, reps, t, mb = pp["rows"][-1]
    assert (b, reps, t, mb) == (1024, 1000, 6.55, 156.25)
    # 1024 B / 6.5536 us = 156.25 MB/s; printed t is that time rounded.
    assert round(1024 / 156.25, 2) == t


# --------------------------------------------------------------------------
# IMB: layout


@pytest.mark.parametrize("name", IMB_SAMPLES)
def test_imb_layout_accepts_every_real_sample(name):
    check_imb_layout(read(name))


def test_imb_layout_formats_match_imbs_printf():
    assert imb_format.format_imb_header(TIME_BW) == "       #bytes #repetitions      t[usec]   Mbytes/sec"
    assert imb_format.format_imb_row(TIME_BW, [1024, 1000, 6.55, 156.25]) == "%13d%13d%13.2f%13.2f" % (1024, 1000, 6.55, 156.25)
    assert imb_format.format_imb_header(SYNC) == " #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]"


def _replace_line(text: str, old: str, new: str) -> str:
    lines = text.split("\n")
    k = lines.index(old)
    lines[k] = new
    return "\n".join(lines)


PP_1024 = "         1024         1000         6.55       156.25"

IMB_MISSPACED = {
    # The right numbers, separated by single spaces.
    "row single-spaced": lambda t: _replace_line(t, PP_1024, "1024 1000 6.55 156.25"),
    # The right numbers, each in a 12-wide field.
    "row 12-wide": lambda t: _replace_line(t, PP_1024, "%12d%12d%12.2f%12.2f" % (1024, 1000, 6.55, 156.25)),
    # Shifted one column left (trailing space).
    "row shifted": lambda t: _replace_line(t, PP_1024, PP_1024[1:] + " "),
    # Three decimals instead of two.
    "row 3 decimals": lambda t: _replace_line(t, PP_1024, "%13d%13d%13.3f%13.3f" % (1024, 1000, 6.55, 156.25)),
    # Tabs between fields.
    "row with tabs": lambda t: _replace_line(t, PP_1024, "\t1024\t1000\t6.55\t156.25"),
    # Column names left-aligned.
    "header left-aligned": lambda t: t.replace(
        "       #bytes #repetitions      t[usec]   Mbytes/sec", "#bytes       #repetitions t[usec]      Mbytes/sec  ", 1
    ),
    # One dash short on a section's dashed lines.
    "dashed line short": lambda t: t.replace("\n#" + "-" * 51 + "\n", "\n#" + "-" * 50 + "\n"),
    # IMB's trailing space after the benchmark name dropped.
    "title without trailing space": lambda t: t.replace("# Benchmarking PingPong \n", "# Benchmarking PingPong\n"),
    # No blank line between two sections.
    "no blank line between sections": lambda t: t.replace("\n\n#" + "-" * 51 + "\n# Benchmarking PingPing", "\n#" + "-" * 51 + "\n# Benchmarking PingPing"),
    # Only one blank line before the finalize line.
    "trailer one blank line": lambda t: t.replace("\n\n\n# All processes entering MPI_Finalize", "\n\n# All processes entering MPI_Finalize"),
    # Info line key not padded to 22.
    "info key unpadded": lambda t: t.replace("# Machine               : x86_64", "# Machine : x86_64"),
}


@pytest.mark.parametrize("mutation", list(IMB_MISSPACED))
def test_imb_layout_rejects_a_misspaced_copy(mutation):
    gold = read("imb_sample_all.txt")
    bad = IMB_MISSPACED[mutation](gold)
    assert bad != gold, "the mutation must change the text"
    with pytest.raises(AssertionError):
        check_imb_layout(bad)


def test_imb_misspaced_rows_still_parse_to_the_same_numbers():
    """The parser reads words; only the layout checker sees the spacing."""
    gold = read("imb_sample_all.txt")
    bad = IMB_MISSPACED["row 12-wide"](gold)
    assert parse_imb(bad) == parse_imb(gold)


def test_imb_layout_can_skip_the_finalize_trailer():
    gold = read("imb_sample.txt")
    cut = gold[: gold.index("\n\n\n# All processes")] + "\n"
    with pytest.raises(AssertionError):
        check_imb_layout(cut)
    check_imb_layout(cut, finalized=False)
    assert not parse_imb_header(cut)["finalized"]


# --------------------------------------------------------------------------
# OSU: parsing

OSU_EXPECTED = {
    # file: (title, extra header lines, columns, rows)
    "osu_latency.txt": ("OSU MPI Latency Test v7.4", ["# Datatype: MPI_CHAR."], ["Size", "Avg Latency(us)"], 17),
    "osu_latency_taillat.txt": (
        "OSU MPI Latency Test v7.4",
        ["# Datatype: MPI_CHAR."],
        ["Size", "Avg Latency(us)", "P50 Tail Lat(us)", "P90 Tail Lat(us)", "P99 Tail Lat(us)"],
        11,
    ),
    "osu_bw.txt": ("OSU MPI Bandwidth Test v7.4", ["# Datatype: MPI_CHAR."], ["Size", "Bandwidth (MB/s)"], 21),
    "osu_bibw.txt": ("OSU MPI Bi-Directional Bandwidth Test v7.4", ["# Datatype: MPI_CHAR."], ["Size", "Bandwidth (MB/s)"], 21),
    "osu_mbw_mr.txt": (
        "OSU MPI Multiple Bandwidth / Message Rate Test v7.4",
        ["# [ pairs: 2 ] [ window size: 64 ]", "# Datatype: MPI_CHAR."],
        ["Size", "MB/s", "Messages/s"],
        17,
    ),
    "osu_allreduce.txt": ("OSU MPI Allreduce Latency Test v7.4", ["# Datatype: MPI_CHAR."], ["Size", "Avg Latency(us)"], 17),
    "osu_allreduce_full.txt": (
        "OSU MPI Allreduce Latency Test v7.4",
        ["# Datatype: MPI_CHAR."],
        ["Size", "Avg Latency(us)", "Min Latency(us)", "Max Latency(us)", "Iterations"],
        17,
    ),
    "osu_alltoall.txt": (
        "OSU MPI All-to-All Personalized Exchange Latency Test v7.4",
        ["# Datatype: MPI_CHAR."],
        ["Size", "Avg Latency(us)"],
        17,
    ),
    "osu_allgather.txt": ("OSU MPI Allgather Latency Test v7.4", ["# Datatype: MPI_CHAR."], ["Size", "Avg Latency(us)"], 17),
    "osu_bcast.txt": ("OSU MPI Broadcast Latency Test v7.4", ["# Datatype: MPI_CHAR."], ["Size", "Avg Latency(us)"], 17),
    "osu_barrier.txt": ("OSU MPI Barrier Latency Test v7.4", [], ["Avg Latency(us)"], 1),
}


def test_osu_expectations_cover_every_sample():
    assert sorted(OSU_EXPECTED) == OSU_SAMPLES


@pytest.mark.parametrize("name", OSU_SAMPLES)
def test_osu_every_sample_parses_with_its_columns_and_rows(name):
    title, extra, cols, nrows = OSU_EXPECTED[name]
    p = parse_osu(read(name))
    assert p["title"] == title
    assert p["version"] == "7.4" and p["title"] == f"{p['benchmark']} v7.4"
    assert p["header_lines"] == extra
    assert p["columns"] == cols
    assert len(p["rows"]) == nrows
    assert p["has_size"] == (cols[0] == "Size")
    if extra and extra[-1].startswith("# Datatype"):
        assert p["datatype"] == "MPI_CHAR"
    # Sizes are powers of two from 1 byte.
    if p["has_size"]:
        assert column(p, "Size") == [2**k for k in range(nrows)]


def test_osu_hand_checked_values():
    full = parse_osu(read("osu_allreduce_full.txt"))
    assert full["rows"][0] == [1, 2.26, 1.08, 3.46, 1000]
    assert full["rows"][-1] == [65536, 131.10, 129.98, 131.88, 100]
    assert isinstance(full["rows"][0][0], int) and isinstance(full["rows"][0][-1], int)
    assert parse_osu(read("osu_barrier.txt"))["rows"] == [[2.91]]
    assert parse_osu(read("osu_bw.txt"))["rows"][-1] == [1048576, 3955.50]
    assert parse_osu(read("osu_latency_taillat.txt"))["rows"][0] == [1, 0.26, 0.22, 0.31, 0.38]
    mr = parse_osu(read("osu_mbw_mr.txt"))
    assert (mr["pairs"], mr["window_size"]) == (2, 64)
    assert mr["rows"][0] == [1, 15.16, 15160631.63]
    assert mr["leading_blank"] is False
    assert parse_osu(read("osu_latency.txt"))["leading_blank"] is True


def test_osu_collective_iterations_are_1000_then_100_above_8_kib():
    full = parse_osu(read("osu_allreduce_full.txt"))
    for size, iters in zip(column(full, "Size"), column(full, "Iterations")):
        assert iters == (1000 if size <= 8192 else 100)
    for lo, avg, hi in zip(column(full, "Min Latency(us)"), column(full, "Avg Latency(us)"), column(full, "Max Latency(us)")):
        assert lo <= avg <= hi


def test_osu_message_rate_is_bandwidth_over_size():
    """osu_mbw_mr: MB/s = Messages/s x size / 10^6 (within print rounding)."""
    mr = parse_osu(read("osu_mbw_mr.txt"))
    for size, mbs, rate in zip(column(mr, "Size"), column(mr, "MB/s"), column(mr, "Messages/s")):
        assert rate * size / 1e6 == pytest.approx(mbs, abs=0.005 + 0.005 * size / 1e6)


def test_osu_tail_percentiles_are_ordered():
    p = parse_osu(read("osu_latency_taillat.txt"))
    for p50, p90, p99 in zip(*(column(p, f"P{q} Tail Lat(us)") for q in (50, 90, 99))):
        assert p50 <= p90 <= p99


# --------------------------------------------------------------------------
# OSU: layout


@pytest.mark.parametrize("name", OSU_SAMPLES)
def test_osu_layout_accepts_every_real_sample(name):
    check_osu_layout(read(name))


def test_osu_layout_formats_match_ombs_printf():
    assert osu_format.format_osu_header(["Size", "Avg Latency(us)"]) == "# Size       Avg Latency(us)"
    assert osu_format.format_osu_header(["Size", "Bandwidth (MB/s)"]) == "# Size      Bandwidth (MB/s)"
    assert osu_format.format_osu_row(["Size", "Avg Latency(us)"], [1, 2.22]) == "%-10d%18.2f" % (1, 2.22)
    assert osu_format.format_osu_row(["Avg Latency(us)"], [2.91]) == "             2.91"


def _replace_first_data_line(text: str, new: str) -> str:
    lines = text.split("\n")
    k = next(i for i, line in enumerate(lines) if line and not line.startswith("#"))
    lines[k] = new
    return "\n".join(lines)


OSU_MISSPACED = {
    # (file, mutation)
    "size column 8 wide": ("osu_allreduce_full.txt", lambda t: _replace_first_data_line(t, "%-8d%18.2f%18.2f%18.2f%12d" % (1, 2.26, 1.08, 3.46, 1000))),
    "iterations 18 wide": ("osu_allreduce_full.txt", lambda t: _replace_first_data_line(t, "%-10d%18.2f%18.2f%18.2f%18d" % (1, 2.26, 1.08, 3.46, 1000))),
    "row single-spaced": ("osu_allreduce.txt", lambda t: _replace_first_data_line(t, "1 2.22")),
    "row right-aligned size": ("osu_latency.txt", lambda t: _replace_first_data_line(t, "%10d%18.2f" % (1, 0.27))),
    "3 decimals": ("osu_bw.txt", lambda t: _replace_first_data_line(t, "%-10d%18.3f" % (1, 13.48))),
    "header single-spaced": ("osu_allreduce_full.txt", lambda t: t.replace("# Size       Avg Latency(us)   Min", "# Size Avg Latency(us)   Min")),
    "header 20 wide": ("osu_latency.txt", lambda t: t.replace("# Size       Avg Latency(us)", "# Size         Avg Latency(us)")),
    "barrier value 18 wide": ("osu_barrier.txt", lambda t: t.replace("\n             2.91\n", "\n              2.91\n")),
    "no blank line before title": ("osu_allreduce.txt", lambda t: t[1:]),
    "blank line before mbw_mr title": ("osu_mbw_mr.txt", lambda t: "\n" + t),
    "tab in row": ("osu_bcast.txt", lambda t: _replace_first_data_line(t, "1\t0.27")),
    "trailing blank line": ("osu_bibw.txt", lambda t: t + "\n"),
}


@pytest.mark.parametrize("mutation", list(OSU_MISSPACED))
def test_osu_layout_rejects_a_misspaced_copy(mutation):
    name, mutate = OSU_MISSPACED[mutation]
    gold = read(name)
    bad = mutate(gold)
    assert bad != gold, "the mutation must change the text"
    with pytest.raises(AssertionError):
        check_osu_layout(bad)


def test_osu_misspaced_rows_still_parse_to_the_same_numbers():
    name, mutate = OSU_MISSPACED["size column 8 wide"]
    assert parse_osu(mutate(read(name)))["rows"] == parse_osu(read(name))["rows"]


def test_osu_parser_rejects_a_row_with_a_missing_field():
    bad = _replace_first_data_line(read("osu_allreduce_full.txt"), "%-10d%18.2f%18.2f" % (1, 2.26, 1.08))
    with pytest.raises(ValueError, match="fields"):
        parse_osu(bad)


def test_imb_parser_rejects_a_row_with_a_missing_field():
    bad = _replace_line(read("imb_sample_all.txt"), PP_1024, "%13d%13d%13.2f" % (1024, 1000, 6.55))
    with pytest.raises(ValueError, match="fields"):
        parse_imb(bad)


def test_no_sample_line_has_tabs_or_carriage_returns():
    for name in IMB_SAMPLES + OSU_SAMPLES:
        assert not re.search(r"[\t\r]", read(name)), name
