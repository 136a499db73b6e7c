"""scripts/check_layers.py: it passes on the crate and catches what it is for
(a use of a higher layer, a cycle between files) on small made-up trees."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "check_layers.py"


def run(src: Path | None = None) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, str(SCRIPT)] + (["--src", str(src)] if src else [])
    return subprocess.run(args, capture_output=True, text=True, check=False)


def tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        f = root / name
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    return root


def test_the_crate_respects_its_layers() -> None:
    r = run()
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_use_of_a_higher_layer_fails(tmp_path: Path) -> None:
    src = tree(
        tmp_path,
        {
            "lib.rs": "pub mod config;\npub mod mpi;\n",
            "config/mod.rs": "pub struct Spec { pub m: crate::mpi::params::MpiSpec }\n",
            "mpi/mod.rs": "pub mod params;\n",
            "mpi/params.rs": "pub struct MpiSpec;\n",
        },
    )
    r = run(src)
    assert r.returncode == 1
    assert "config/mod.rs (layer config) uses mpi/params.rs (higher layer mpi)" in r.stdout


def test_a_cycle_between_sibling_files_fails_but_a_parent_does_not(tmp_path: Path) -> None:
    src = tree(
        tmp_path,
        {
            "lib.rs": "pub mod net;\n",
            "net/mod.rs": "mod api;\nmod qp;\npub use api::QpId;\npub struct Net;\n",
            "net/api.rs": "use super::qp::Qp;\nuse super::Net;\npub struct QpId;\n",
            "net/qp.rs": "use super::api::OpKind;\n",
        },
    )
    r = run(src)
    assert r.returncode == 1
    assert "import cycle: net/api.rs <-> net/qp.rs" in r.stdout
    # Without the back edge, the parent re-exporting a child and the child
    # using its parent is no cycle.
    (src / "net/qp.rs").write_text("pub struct Qp;\n")
    assert run(src).returncode == 0


def test_test_modules_may_use_higher_layers(tmp_path: Path) -> None:
    src = tree(
        tmp_path,
        {
            "lib.rs": "pub mod net;\npub mod sim;\n",
            "net/mod.rs": "pub struct Net;\n#[cfg(test)]\nmod tests {\n    use crate::sim::Sim;\n}\n",
            "sim.rs": "use crate::net::Net;\npub struct Sim;\n",
        },
    )
    assert run(src).returncode == 0
