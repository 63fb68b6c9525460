"""Import cycles of a package, found over grimp's import graph (docs/architecture.md: a circle fails CI).

grimp records every import of a module: at module level, inside functions and under ``TYPE_CHECKING``
alike, so a circle hidden behind a function-level import is still a circle. A module's implicit import
of its parent package (Python runs ``pkg/__init__.py`` first) is not an edge: every lazily exporting
``__init__`` names its own modules under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import grimp


def import_cycles(package: str) -> list[tuple[str, ...]]:
    """Each distinct set of modules of ``package`` that import each other in a circle, as the shortest
    circle through its first module (``a -> b -> a`` is ``("a", "b", "a")``), in a stable order."""
    graph = grimp.build_graph(package, cache_dir=None)  # no cache: nothing written into the checkout
    seen: set[frozenset[str]] = set()
    cycles: list[tuple[str, ...]] = []
    for module in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            back = graph.find_shortest_chain(importer=imported, imported=module)
            if back is None:
                continue
            cycle = (module, *back)
            if frozenset(cycle) not in seen:
                seen.add(frozenset(cycle))
                cycles.append(cycle)
    return cycles


def describe(cycles: list[tuple[str, ...]]) -> str:
    """One line per circle: ``a -> b -> a``."""
    return "\n".join(" -> ".join(cycle) for cycle in cycles)
