"""No module of the package imports another's private names (issue 15,
point 3): helpers shared between modules live where they are public
(a module of their own such as ``_checks`` or ``_tables``, whose names
carry no underscore), so a leading underscore always means "this module
only"."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "python" / "fabriclab"


def _module_of(node: ast.ImportFrom, path: Path) -> str | None:
    """The fabriclab module an import is from (``api``, ``_checks``), or None."""
    if node.level == 1:
        return node.module or ""
    if node.module and node.module.startswith("fabriclab."):
        return node.module[len("fabriclab."):]
    return None


def _violations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules: set[str] = set()  # names bound to fabriclab modules here
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            mod = _module_of(node, path)
            if mod is None:
                continue
            for alias in node.names:
                if mod == "":  # from . import api, _core
                    modules.add(alias.asname or alias.name)
                elif alias.name.startswith("_") and not alias.name.startswith("__"):
                    out.append(f"{path.name}:{node.lineno}: from .{mod} import {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("fabriclab.") and alias.asname:
                    modules.add(alias.asname)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            out.append(f"{path.name}:{node.lineno}: {node.value.id}.{node.attr}")
    return out


def test_no_module_imports_a_private_name_of_another():
    found = [v for p in sorted(PACKAGE.glob("*.py")) for v in _violations(p)]
    assert found == []


def test_the_check_finds_one(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from .api import _int, Fabric\nfrom . import api\nx = api._resolve\nfrom fabriclab.sweeps import _x\n")
    assert _violations(bad) == [
        "bad.py:1: from .api import _int",
        "bad.py:4: from .sweeps import _x",
        "bad.py:3: api._resolve",
    ]
