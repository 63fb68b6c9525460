"""Test tiers that need a real component (SmolLM2, PostgreSQL, Ray, a browser, ...): where the component
is missing, the tier is skipped on a developer's machine and fails in CI, which demands it by setting the
tier's ``VF_REQUIRE_*`` variable to 1 (scripts/test.sh)."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def component_missing(require_var: str, reason: str, *, module_level: bool = False) -> NoReturn:
    """Fail with ``reason`` when ``require_var`` is 1 (a required tier cannot run: the set-up is broken),
    skip the test (or, with ``module_level``, the module) otherwise."""
    if os.environ.get(require_var) == "1":
        pytest.fail(f"{require_var}=1 but {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=module_level)
