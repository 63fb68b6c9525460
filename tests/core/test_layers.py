"""The layer rule of docs/architecture.md, checked over the source: imports only point down, and no
modules import each other in a circle.

Every ``import``/``from … import`` in ``verifiers/`` (at module level, inside functions and under
``TYPE_CHECKING`` alike) is resolved to the layer it names; a module may import its own package and
lower layers, never a sibling or a higher one. The package root (``verifiers/__init__.py``) only
re-exports lazily and is exempt. Within a part, the same imports may not close a circle of any length
(``tests/import_cycles.py``), in ``verifiers`` and in every bundled environment package.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.import_cycles import describe, import_cycles

ROOT = Path(__file__).resolve().parents[2]

#: Layer of each top-level part of ``verifiers`` (higher may import lower). Keep in step with
#: docs/architecture.md.
LAYERS: dict[str, int] = {
    "types": 0,
    "errors": 0,
    "_exit_hooks": 0,
    "_exports": 0,
    "_extras": 0,
    "_urls": 0,
    "sandbox": 1,
    "hub": 1,
    "trajectory": 1,
    "parsers": 2,
    "clients": 2,
    "data": 2,
    "rubrics": 3,
    "eval": 4,
    "envs": 5,
    "serve": 6,
    "training": 6,
    "jobs": 6,
    "cli": 7,
}
#: Same-layer parts that may import each other's modules, with the reason.
ALLOWED_SIDEWAYS: dict[tuple[str, str], str] = {
    ("types", "errors"): "RolloutResult's error field is typed by the error categories",
}


def part_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "verifiers" or len(parts) < 2:
        return None
    return parts[1]


def imports_of(path: Path, root: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    here = list(path.relative_to(root).parts[:-1])  # the importing module's package
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            # `from verifiers import eval` names a part too
            if module == "verifiers":
                found.extend((node.lineno, f"verifiers.{alias.name}") for alias in node.names)
    return found


def violations(root: Path = ROOT) -> list[str]:
    bad: list[str] = []
    for path in sorted((root / "verifiers").rglob("*.py")):
        rel = path.relative_to(root)
        if rel == Path("verifiers/__init__.py"):
            continue
        own = part_of(".".join(rel.with_suffix("").parts))
        assert own in LAYERS, (
            f"{rel}: part {own!r} has no layer in LAYERS (add it, and to docs/architecture.md)"
        )
        for line, module in imports_of(path, root):
            other = part_of(module)
            if other is None or other == own:
                continue
            assert other in LAYERS, f"{rel}:{line} imports {module}, whose part has no layer"
            if LAYERS[other] > LAYERS[own]:
                bad.append(
                    f"{rel}:{line}: {own} (layer {LAYERS[own]}) imports {module} (layer {LAYERS[other]})"
                )
            elif LAYERS[other] == LAYERS[own] and (own, other) not in ALLOWED_SIDEWAYS:
                bad.append(f"{rel}:{line}: {own} imports its sibling {module} (layer {LAYERS[own]})")
    return bad


def test_imports_only_point_down() -> None:
    bad = violations()
    assert not bad, "upward or sideways imports:\n" + "\n".join(bad)


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    fake_root = tmp_path
    (fake_root / "verifiers" / "eval").mkdir(parents=True)
    (fake_root / "verifiers" / "__init__.py").write_text("")
    (fake_root / "verifiers" / "eval" / "bad.py").write_text(
        "def f():\n    from verifiers.envs.environment import Environment\n    return Environment\n"
    )
    (fake_root / "verifiers" / "eval" / "rel.py").write_text("from ..cli import eval\n")
    found = violations(fake_root)
    assert any("bad.py:2" in v and "verifiers.envs.environment" in v for v in found), found
    assert any("rel.py:1" in v and "verifiers.cli" in v for v in found), found


#: The packages whose modules may not import each other in a circle: the SDK and every bundled environment.
CYCLE_FREE = [
    "verifiers",
    *sorted(
        p.parent.name
        for p in (ROOT / "environments").glob("*/*/__init__.py")
        if p.parent.name == p.parents[1].name
    ),
]


@pytest.mark.parametrize("package", CYCLE_FREE)
def test_no_import_cycle(package: str) -> None:
    cycles = import_cycles(package)
    assert not cycles, f"import cycles in {package} (move what both sides share below them):\n" + describe(
        cycles
    )


def test_the_cycle_check_sees_a_planted_cycle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A circle of three, closed by an import inside a function and one under TYPE_CHECKING, and a plain
    pair written as relative imports: both are found and named."""
    pkg = tmp_path / "planted_cycles"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from planted_cycles import b\n")
    (pkg / "b.py").write_text("def f():\n    from planted_cycles.c import g\n    return g\n")
    (pkg / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from planted_cycles.a import b\n"
        "def g(): ...\n"
    )
    (pkg / "x.py").write_text("from . import y\n")
    (pkg / "y.py").write_text("from .x import y\n")
    (pkg / "leaf.py").write_text("from planted_cycles import a\n")  # imports into a circle: not part of it
    monkeypatch.syspath_prepend(str(tmp_path))
    found = describe(import_cycles("planted_cycles")).splitlines()
    assert found == [
        "planted_cycles.a -> planted_cycles.b -> planted_cycles.c -> planted_cycles.a",
        "planted_cycles.x -> planted_cycles.y -> planted_cycles.x",
    ]
