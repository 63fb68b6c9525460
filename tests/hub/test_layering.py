"""hub_server shares with the SDK only the packaging rules (content hash, names, what a wheel may hold)
and the wire schemas.

DESIGN.md §2b: the hub is its own house. An AST walk over every module of ``hub_server/``; and, as in the
SDK (tests/core/test_layers.py), no modules of the hub import each other in a circle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import hub_server
from tests.import_cycles import describe, import_cycles

#: What the hub shares with the SDK: ``verifiers.hub`` (packaging, the wheel rules ``vf-install`` applies
#: too, wire schemas, and the run-directory reader ``results`` that turns a local run into wire records,
#: for ``vf-view``). Nothing else.
ALLOWED = frozenset(
    {"verifiers.hub.packaging", "verifiers.hub.wheel_rules", "verifiers.hub.wire", "verifiers.hub.results"}
)


def sdk_imports(source: str) -> list[str]:
    """The ``verifiers`` modules (or names) ``source`` imports that are not in ``ALLOWED``."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # `from verifiers.hub import wire` imports the module verifiers.hub.wire
            targets = [
                node.module if node.module in ALLOWED else f"{node.module}.{a.name}" for a in node.names
            ]
        else:
            continue
        found += [t for t in targets if t.split(".")[0] == "verifiers" and t not in ALLOWED]
    return found


def test_the_check_sees_every_form_of_import() -> None:
    source = (
        "import verifiers\nimport verifiers.hub.wire\nfrom verifiers.hub.client import HubClient\n"
        "from verifiers.hub import packaging, install\nfrom verifiers.hub.wire import WhoAmI\n"
        "from verifiers_extra import x\ndef f():\n    from verifiers.errors import VerifiersError\n"
    )
    assert sdk_imports(source) == [
        "verifiers",
        "verifiers.hub.client.HubClient",
        "verifiers.hub.install",
        "verifiers.errors.VerifiersError",
    ]


def test_hub_server_imports_only_packaging_and_wire_from_the_sdk() -> None:
    root = Path(hub_server.__file__).parent
    modules = sorted(root.rglob("*.py"))
    assert len(modules) > 20  # the walk really sees the package
    offenders = {str(p.relative_to(root)): found for p in modules if (found := sdk_imports(p.read_text()))}
    assert offenders == {}


def test_hub_server_has_no_import_cycle() -> None:
    cycles = import_cycles("hub_server")
    assert not cycles, "import cycles in hub_server (move what both sides share below them):\n" + describe(
        cycles
    )
