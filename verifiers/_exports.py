"""Lazy public names for package ``__init__`` modules (the one pattern of docs/architecture.md).

A package lists ``_EXPORTS = {name: defining module}``, sets ``__all__`` from it, imports the same names
under ``TYPE_CHECKING`` for type checkers, and installs ``__getattr__``/``__dir__`` from
``lazy_exports``: a name's module is imported on first access (PEP 562), so importing the package imports
nothing else. ``tests/core/test_public_api.py`` checks that the three lists agree.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Collection, Mapping
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str], submodules: Collection[str] = ()
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``exports`` maps a public name to the module that
    defines it; ``submodules`` are names of the package's own modules reachable as attributes."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is not None:
            value = getattr(importlib.import_module(module), name)
        elif name in submodules:
            value = importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        setattr(sys.modules[package], name, value)  # later lookups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports, *submodules})

    return __getattr__, __dir__


__all__ = ["lazy_exports"]
