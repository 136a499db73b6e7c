"""fio from Python, the CLI and scenario files: fio's figures in a
DataFrame, its text output parsed by the same parser as the real sample
(tests/golden/fio_randwrite.txt) and agreeing with the DataFrame, its JSON
with the real document's keys, and bad input as fabriclab errors and exit
status 2."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

import fabriclab
from fabriclab.errors import FabriclabError
from fio_format import parse_fio

GOLDEN = Path(__file__).parent / "golden"
UNIT = {"nsec": 1e-3, "usec": 1.0, "msec": 1e3}


@pytest.fixture(scope="module")
def run():
    return fabriclab.fio("randwrite", bs="64K", iodepth=4, clients="h0-h2", targets="h12,h13", runtime=0.004)


def test_one_row_per_client_with_fios_figures(run):
    assert list(run.df.columns) == fabriclab.FIO_COLUMNS
    assert list(run.df.host) == ["h0", "h1", "h2"]
    assert (run.df.total_ios > 0).all()
    # IOPS x block size is the bandwidth; lat = slat + clat.
    assert ((run.df.iops * 65536 - run.df.bw_bytes).abs() < 1e-6 * run.df.bw_bytes).all()
    assert ((run.df.lat_avg_us - run.df.clat_avg_us - run.df.slat_avg_us).abs() < 1e-6).all()
    assert (run.df.p50_us <= run.df.p99_us).all() and (run.df.p99_us <= run.df.clat_max_us + 1e-9).all()


def test_the_text_parses_like_the_real_sample_and_agrees_with_the_frame(run):
    real = parse_fio((GOLDEN / "fio_randwrite.txt").read_text())
    ours = parse_fio(run.text)
    # Three clients, then client mode's "All clients" summary of them.
    assert len(real) == 1 and len(ours) == 4
    *ours, total = ours
    assert total["host"] is None and total["name"] == "All clients" and total["jobs"] == 3
    assert total["issued"] == (0, int(run.df.total_ios.sum()))
    assert total["iops"] == pytest.approx(run.df.iops.sum(), rel=0.01)
    # Pooled latency: between the clients' extremes, the mean weighted by I/Os.
    unit = UNIT[total["clat"]["unit"]]
    mean_us = (run.df.clat_avg_us * run.df.total_ios).sum() / run.df.total_ios.sum()
    assert total["clat"]["avg"] * unit == pytest.approx(mean_us, abs=0.01 * unit)
    assert "percentiles" not in total
    # fio's jobs= there counts members: one per client with group_reporting.
    two = fabriclab.fio("randwrite", bs="4K", numjobs=2, clients="h0-h1", targets="h12", runtime=0.002)
    assert parse_fio(two.text)[-1]["jobs"] == 2
    keys = {"name", "jobs", "dir", "iops", "bw_bytes", "io_bytes", "runtime_ms", "slat", "clat", "lat", "percentiles", "issued", "depth"}
    assert keys <= set(real[0]) and keys <= set(ours[0])
    for job, row in zip(ours, run.df.itertuples()):
        assert job["host"] == row.host and job["depth"] == 4
        # num2str keeps 3-4 significant digits.
        assert job["iops"] == pytest.approx(row.iops, rel=0.01)
        assert job["bw_bytes"] == pytest.approx(row.bw_bytes, rel=0.01)
        assert job["issued"] == (0, row.total_ios)
        c = job["clat"]
        assert c["avg"] * UNIT[c["unit"]] == pytest.approx(row.clat_avg_us, abs=0.01 * UNIT[c["unit"]])
        p = job["percentiles"]
        assert p["values"][99.0] * UNIT[p["unit"]] == pytest.approx(row.p99_us, abs=UNIT[p["unit"]])
        assert sum(job["lat_buckets"].values()) == pytest.approx(100.0, abs=0.1)


def test_the_json_has_the_real_documents_keys(run):
    real = json.loads((GOLDEN / "fio_randwrite.json").read_text())
    ours = json.loads(run.extras["json"])
    assert set(real) == set(ours)
    rj, oj = real["jobs"][0], ours["jobs"][0]
    assert set(rj["write"]) == set(oj["write"])
    # Every key of a real job, in fio's order (plus the client's hostname),
    # and the unused directions with the same keys as the used one.
    assert [k for k in oj if k != "hostname"] == list(rj)
    assert set(oj["read"]) == set(oj["trim"]) == set(rj["read"])
    assert set(oj["iodepth_level"]) == set(rj["iodepth_level"]) and oj["iodepth_level"]["4"] == 100.0
    assert set(oj["iodepth_submit"]) == set(rj["iodepth_submit"]) and oj["iodepth_submit"]["4"] == 100.0
    assert oj["sync"] == rj["sync"]
    # Whole nanoseconds: the mean lies between the minimum and the maximum.
    for key in ("clat_ns", "lat_ns"):
        st = oj["write"][key]
        assert st["min"] <= st["mean"] <= st["max"]

    assert set(rj["write"]["clat_ns"]["percentile"]) == set(oj["write"]["clat_ns"]["percentile"])
    assert oj["hostname"] == "h0"
    assert oj["write"]["total_ios"] == run.df.total_ios[0]
    assert math.isclose(oj["write"]["iops"], run.df.iops[0], rel_tol=1e-6)


def test_the_text_has_the_real_samples_lines():
    """The golden sample's lines, in its order, but for those fio fills
    from the operating system (cpu) and the sample's own file layout."""
    r = fabriclab.fio("randwrite", bs="4K", iodepth=16, numjobs=2, clients="h0", targets="h12", runtime=0.05, name="randwrite-4k")
    ours = [line.removeprefix("<h0> ") for line in r.text.splitlines()]
    real = (GOLDEN / "fio_randwrite.txt").read_text().splitlines()

    def kind(line: str) -> str:
        return line.split(":")[0].split("(")[0].strip() or line.strip()

    skip = {"cpu", "randwrite-4k", "fio-3.33", "bw", "iops", "Disk stats", "vda", "sda", "nvme0n1"}
    def kinds(lines: list[str]) -> list[str]:
        # Each kind of line once, in the order of its first appearance.
        ks = [kind(x) for x in lines if not x.startswith(" " * 5 + "|")]
        return list(dict.fromkeys(k for k in ks if k.split() and k not in skip and k.split()[0] not in skip))

    want, got = kinds(real), kinds(ours)
    assert want == got, (want, got)
    assert "..." in got and "submit" in got and "complete" in got
    assert any(line.endswith("msec); 0 zone resets") for line in ours)


def test_the_cli_prints_fio_text_and_json(cli):
    r = cli("fio", "--bs", "4K", "--clients", "h0", "--targets", "h12", "--runtime", "0.002", "--quiet")
    assert r.returncode == 0, r.stderr
    (job,) = parse_fio(r.stdout)
    # EANTC, 4 KB random write at depth 1: 37.7 us (4 targets), 38.5 (1).
    # fio's rule (stat.h nsec_to_usec): usec only with max above 99.999 us
    # and stdev above 1 us, so a depth-1 run, all near 37.6 us, is in nsec.
    lat = job["lat"]
    assert lat["unit"] == "nsec" and lat["avg"] * UNIT["nsec"] == pytest.approx(37.6, abs=0.5)
    assert lat["min"] <= lat["avg"] <= lat["max"]
    r = cli("fio", "--clients", "h0-h1", "--runtime", "0.001", "--output-format", "json", "--quiet")
    assert r.returncode == 0 and [j["hostname"] for j in json.loads(r.stdout)["jobs"]] == ["h0", "h1"]


def test_a_fractional_block_size_names_bs():
    with pytest.raises(FabriclabError, match="^bs must be an integer, not float"):
        fabriclab.fio(bs=4096.5, runtime=0.001)
    with pytest.raises(FabriclabError, match="invalid bs '4.5K'"):
        fabriclab.fio(bs="4.5K", runtime=0.001)


@pytest.mark.parametrize(
    "args, words",
    [
        (["--clients", "h0", "--targets", "h99"], "h99"),
        (["--clients", "h3-h1"], "lower host first"),
        (["--clients", "h12", "--targets", "h12"], "both a client and a target"),
        (["--iodepth", "0"], "iodepth=0"),
        (["--runtime", "-1"], "runtime"),
        (["--runtime", "0"], "runtime=0: use a number of seconds above 0"),
        (["--clients", "h0,,h1"], "has an empty name"),
        (["--target-latency-us", "1e12"], "1000000000000: longer than the whole test"),
        (["--name", ""], "name is empty"),
        # no block completes in the test: refused, not IOPS=0
        (["--runtime", "0.001", "--bs", "1G", "--rw", "read"], "no I/O completed within the measured 1 ms"),
    ],
)
def test_bad_fio_options(args, words, cli):
    r = cli("fio", *args, "--quiet")
    assert r.returncode == 2 and words in r.stderr, r.stderr
    # the same from Python: each flag as its keyword (numbers as numbers)
    kwargs: dict = {"runtime": 0.001}
    for flag, value in zip(args[::2], args[1::2]):
        key = flag.removeprefix("--").replace("-", "_")
        try:
            kwargs[key] = float(value) if key != "iodepth" else int(value)
        except ValueError:
            kwargs[key] = value
    with pytest.raises(FabriclabError, match=re.escape(words)):
        fabriclab.fio(**kwargs)


def test_the_cli_names_the_target_flags_not_the_keywords(cli):
    # the core names its field (target_write_mbps=0), as the keyword is
    # spelled; the command line names the flag the user typed
    for flag, words in (
        ("--target-write-mbps", "--target-write-mbps 0: must be a positive number"),
        ("--target-read-mbps", "--target-read-mbps 0: must be a positive number"),
    ):
        r = cli("fio", flag, "0", "--quiet")
        assert r.returncode == 2 and words in r.stderr and "_mbps" not in r.stderr, r.stderr
    r = cli("fio", "--target-latency-us", "-1", "--quiet")
    assert "--target-latency-us -1: must be zero or a positive number" in r.stderr
    with pytest.raises(FabriclabError, match="^target_write_mbps=0: must be a positive number"):
        fabriclab.fio(target_write_mbps=0, runtime=0.001)


def test_fio_items_in_a_scenario(tmp_path, cli):
    path = tmp_path / "s.toml"
    path.write_text(
        'fabric = "eantc-storage"\n[[fio]]\nname = "4k"\nbs = "4K"\nclients = "h0-h1"\ntargets = "h12"\nruntime = 0.001\n'
    )
    (res,) = fabriclab.run_scenario(path)
    assert res.name == "4k" and list(res.df.host) == ["h0", "h1"]
    assert parse_fio(res.text)[0]["name"] == "4k"
    r = cli("run", str(path))
    assert r.returncode == 0, r.stderr
    assert "clients h0-h1 -> targets h12" in r.stdout and len(parse_fio(r.stdout)) == 3
    path.write_text('[[fio]]\nblocksize = 4096\n')
    with pytest.raises(FabriclabError, match="blocksize"):
        fabriclab.run_scenario(path)
