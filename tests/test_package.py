"""The package's shape: every submodule is reachable by its name, and the
version is written in one place (issue 15, point 3)."""

from __future__ import annotations

import importlib
import importlib.metadata
import pkgutil
import sys
import types
from pathlib import Path

import pytest
from packaging.version import Version

import fabriclab

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
SUBMODULES = sorted(m.name for m in pkgutil.iter_modules(fabriclab.__path__))


def test_no_exported_name_is_also_a_submodule():
    # `fabriclab.sweep` was the function and `import fabriclab.sweep as m`
    # gave it, while importlib gave the module: a name is one or the other
    for name in fabriclab.__all__:
        try:
            found = importlib.import_module(f"fabriclab.{name}")
        except ModuleNotFoundError:
            continue
        assert found is getattr(fabriclab, name), f"fabriclab.{name} is both a module and {getattr(fabriclab, name)!r}"


@pytest.mark.parametrize("name", SUBMODULES)
def test_every_submodule_is_the_packages_attribute_of_its_name(name):
    module = importlib.import_module(f"fabriclab.{name}")
    assert isinstance(module, types.ModuleType)
    assert getattr(fabriclab, name) is module  # so `from fabriclab import X` and `import fabriclab.X as m` agree


def test_the_modules_behind_the_functions():
    import fabriclab.sweeps as sweeps
    from fabriclab import linpack

    assert fabriclab.sweep is sweeps.sweep and fabriclab.hpl is linpack.hpl
    for func, module in [
        ("sweep", "sweeps"),
        ("compare", "comparisons"),
        ("dashboard", "dashboards"),
        ("lab_run", "lab_runs"),
        ("iperf", "tcp"),
        ("fio", "storage"),
        ("hpl", "linpack"),
        ("cbench", "bisection"),
    ]:
        assert getattr(fabriclab, func).__module__ == f"fabriclab.{module}"
        assert callable(getattr(fabriclab, func))


def test_the_version_is_cargos():
    cargo = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["package"]["version"]
    assert fabriclab.__version__ == cargo  # compiled into the extension
    assert fabriclab.__version__ == fabriclab._core.__version__
    # the installed metadata (maturin reads Cargo.toml; PEP 440 spelling)
    assert Version(importlib.metadata.version("fabriclab")) == Version(cargo)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert f'__version__ = "{cargo}"' not in (ROOT / "python" / "fabriclab" / "__init__.py").read_text()
