"""Cbench rotate and rotate_latency from Python, the CLI and scenario
files: the output parses like the real tool's (tests/golden samples) and
its figures follow from its pair figures; a shared uplink shows in the
bandwidth; bad input gets clear errors."""

from __future__ import annotations

import pytest

import fabriclab
from cbench_format import check_cbench_arithmetic, check_cbench_layout, parse_cbench
from conftest import GOLDEN
from fabriclab.errors import InvalidArgumentError, UnknownHostError


@pytest.mark.parametrize("name", ["cbench_rotate_sample.txt", "cbench_rotate_latency_sample.txt"])
def test_the_parser_reads_the_real_samples(name):
    text = (GOLDEN / name).read_text()
    check_cbench_layout(text)
    p = parse_cbench(text)
    check_cbench_arithmetic(p)
    assert len(p["processes"]) == 4 and len(p["rotations"]) == 2
    assert p["kind"] == ("latency" if "latency" in name else "bandwidth")
    assert (p["bytes"], p["tests"], p["iterations"]) == ((0, 1, 10000) if "latency" in name else (8388608, 3, 10))


def test_the_checker_rejects_a_wrong_layout():
    text = (GOLDEN / "cbench_rotate_sample.txt").read_text()
    with pytest.raises(AssertionError):
        check_cbench_layout(text.replace("7488.02 , ", "7488.02, "))
    with pytest.raises(AssertionError):
        check_cbench_layout(text.replace("MB/s", "MB/sec"))


def test_rotate_output_parses_and_pairs_see_the_fabric():
    # sandia-iwarp: 11 line cards of 12 hosts; ranks 0..11 on card 0 and
    # 12..23 on card 1, so every pair crosses the fabric cards.
    res = fabriclab.cbench("rotate", np=24, fabric="sandia-iwarp", iterations=2, tests=1, rotations=3)
    df = res.df
    assert list(df.columns) == fabriclab.CBENCH_COLUMNS
    assert len(df) == 3 * 12
    p = parse_cbench(res.text)
    check_cbench_arithmetic(p)
    assert p["processes"][12] == "h12"
    assert [r["values"] for r in p["rotations"]] == [
        [round(v, 2) for v in df[df.rotation == k].value] for k in range(3)
    ]
    # No pair beats the 10GbE iWARP ceiling (1234.8 MB/s at MTU 9000).
    assert df.value.max() < 1234.8
    rot = res.extras["rotations"]
    assert list(rot["aggregate"]) == pytest.approx([df[df.rotation == k].value.sum() for k in range(3)])
    assert res.extras["summary"]["rotations_total"] == 12


def test_rotate_latency_is_half_a_round_trip():
    res = fabriclab.cbench("rotate_latency", np=2, fabric="sandia-iwarp", iterations=50)
    df = res.df
    osu_res = fabriclab.osu("latency", np=2, fabric="sandia-iwarp", sizes=(0, 0), iterations=50, warmup=0)
    osu = osu_res.df
    assert df.value[0] == pytest.approx(osu.avg_us[0], abs=1e-6)
    assert df.time_us[0] == pytest.approx(2 * df.value[0])


def test_bad_input_gets_clear_errors():
    with pytest.raises(InvalidArgumentError, match="rotate or rotate_latency"):
        fabriclab.cbench("rotate_bw_x", np=4)
    with pytest.raises(InvalidArgumentError, match="at least 2 processes"):
        fabriclab.cbench("rotate", np=1)
    with pytest.raises(InvalidArgumentError, match="use 1..2"):
        fabriclab.cbench("rotate", np=4, rotations=5)
    with pytest.raises(InvalidArgumentError, match="iterations must be at least 1"):
        fabriclab.cbench("rotate", np=4, iterations=-3)
    with pytest.raises(UnknownHostError):
        fabriclab.cbench("rotate", np=2, hosts="h0,h999")


def test_cli_and_scenario(tmp_path, cli):
    r = cli("cbench", "rotate_latency", "-np", "4", "--fabric", "sandia-ib", "--iterations", "20", "--quiet")
    assert r.returncode == 0, r.stderr
    check_cbench_layout(r.stdout)
    assert parse_cbench(r.stdout)["iterations"] == 20
    # sizes with a suffix, as every other tool takes them
    k = cli("cbench", "rotate", "-np", "4", "--bytes", "64K", "--iterations", "1", "--tests", "1", "--quiet")
    n = cli("cbench", "rotate", "-np", "4", "--bytes", "65536", "--iterations", "1", "--tests", "1", "--quiet")
    assert k.returncode == 0 and k.stdout == n.stdout, k.stderr
    r = cli("cbench", "rotate", "-np", "4", "--rotations", "9")
    assert r.returncode == 2 and "fabriclab: error:" in r.stderr and "--rotations 9" in r.stderr
    sc = tmp_path / "cb.toml"
    sc.write_text('fabric = "sandia-ib"\n[[cbench]]\ntest = "rotate"\nnp = 4\niterations = 1\ntests = 1\n')
    r = cli("run", str(sc))
    assert r.returncode == 0, r.stderr
    assert "Min Unidirectional Link Bandwidth:" in r.stdout
    sc.write_text('[[cbench]]\ntest = "rotate"\nnp = 4\nnloop = 1\n')
    r = cli("run", str(sc))
    assert r.returncode == 2 and "unknown key 'nloop'" in r.stderr


def test_module_doc_example_runs():
    import doctest

    import fabriclab.bisection as mod  # Cbench's module; fabriclab.cbench is the function
    res = doctest.testmod(mod)
    assert res.attempted >= 2 and res.failed == 0
