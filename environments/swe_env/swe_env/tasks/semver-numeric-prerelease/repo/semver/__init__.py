"""Semantic version comparison."""

from semver.core import Version, max_satisfying, satisfies

__all__ = ["Version", "max_satisfying", "satisfies"]
