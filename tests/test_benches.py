"""The benchmark tools: `benches/ab.py` compares two builds of the Python
extension as well as two bench binaries, and `scripts/install_pgo.sh`
refuses arguments it does not know (its full run, three builds, is CI's
`.ci/run`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import fabriclab
from conftest import ROOT


def ab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "benches" / "ab.py"), *args], capture_output=True, text=True, timeout=600
    )


def test_ab_compares_two_package_directories_and_checks_their_figures_agree() -> None:
    installed = str(Path(fabriclab.__file__).parent.parent)
    r = ab(installed, installed, "a2a-32", "none", "--runs", "1")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("A: median ") and lines[1].startswith("B: median ")
    assert lines[-1] == "same events, last_completion_us, packets_forwarded: (1009819, 1595.60208, 378624)"


def test_ab_runs_the_package_in_the_directory_given(tmp_path: Path) -> None:
    """A stub package whose `bench` reports other events than the real
    one: ab.py must run it, not the installed package, and say the two
    builds differ."""
    stub = tmp_path / "stub" / "fabriclab"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("")
    figures = '{"wall_s": 0.001, "events": 1, "last_completion_us": 1.0, "packets_forwarded": 1}'
    (stub / "cli.py").write_text(f"def main():\n    print({figures!r})\n    return 0\n")
    installed = str(Path(fabriclab.__file__).parent.parent)
    r = ab(installed, str(tmp_path / "stub"), "a2a-32", "none", "--runs", "1")
    assert r.returncode == 1
    assert "the builds differ" in r.stderr and "(1, 1.0, 1)" in r.stderr
    assert r.stdout.splitlines()[1] == "B: median 0.0010 s, range 0.0010-0.0010 s over 1 runs"


def test_ab_refuses_a_directory_without_a_package(tmp_path: Path) -> None:
    r = ab(str(tmp_path), str(tmp_path), "a2a-32", "none", "--runs", "1")
    assert r.returncode != 0
    assert "without a fabriclab package" in r.stderr


def test_install_pgo_refuses_arguments() -> None:
    r = subprocess.run(
        ["bash", str(ROOT / "scripts" / "install_pgo.sh"), "--bench"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2
    assert "takes no arguments" in r.stderr
