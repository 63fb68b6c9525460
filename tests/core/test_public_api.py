"""The public surface, one pattern (docs/architecture.md): every package's ``__all__``, ``_EXPORTS`` map and
``TYPE_CHECKING`` imports name the same things, every public name imports, and importing a package
imports none of its modules."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = sorted(
    ".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "verifiers").rglob("__init__.py")
)
#: Packages without a public face of their own (command-line entry points only).
NO_FACE = {"verifiers.cli"}


def type_checking_names(package: str) -> set[str]:
    path = ROOT.joinpath(*package.split("."), "__init__.py")
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom), f"{path}: only `from … import` under TYPE_CHECKING"
                for alias in stmt.names:
                    assert alias.asname == alias.name, f"{path}: re-export as `{alias.name} as {alias.name}`"
                    names.add(alias.name)
    return names


@pytest.mark.parametrize("package", [p for p in PACKAGES if p not in NO_FACE])
def test_the_three_lists_agree_and_every_name_imports(package: str) -> None:
    module = importlib.import_module(package)
    exports = getattr(module, "_EXPORTS", None)
    assert isinstance(exports, dict), f"{package} has no _EXPORTS map (see docs/architecture.md)"
    submodules = set(getattr(module, "_SUBMODULES", ()))
    assert set(module.__all__) == set(exports), f"{package}: __all__ and _EXPORTS differ"
    assert type_checking_names(package) == set(exports) | submodules, (
        f"{package}: TYPE_CHECKING block differs"
    )
    for name, where in exports.items():
        value = getattr(module, name)
        assert getattr(importlib.import_module(where), name) is value, (
            f"{package}.{name} is not {where}.{name}"
        )
    for name in submodules:
        assert getattr(module, name) is importlib.import_module(f"{package}.{name}")
    with pytest.raises(AttributeError, match="no attribute"):
        _ = module.no_such_name_here


def test_importing_a_package_imports_none_of_its_modules() -> None:
    code = (
        "import sys, importlib\n"
        f"for pkg in {[p for p in PACKAGES if p not in NO_FACE]!r}:\n"
        "    before = set(sys.modules)\n"
        "    importlib.import_module(pkg)\n"
        "    new = {m for m in set(sys.modules) - before if m.startswith('verifiers.')}\n"
        "    extra = new - {pkg, 'verifiers._exports'} - {p for p in new if pkg.startswith(p + '.')}\n"
        "    assert not extra, (pkg, sorted(extra))\n"
        "    assert 'openai' not in sys.modules and 'datasets' not in sys.modules, pkg\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
