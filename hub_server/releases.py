"""Which of an environment's versions is which: PEP 440 order, newest first, and the one called latest.

Below both the services and the response conversions, which both need it.
"""

from __future__ import annotations

from packaging.version import Version

from hub_server.views import HasVersions, V


def sorted_versions(env: HasVersions[V]) -> list[V]:
    """Newest first (PEP 440 order)."""
    return sorted(env.versions, key=lambda v: Version(v.version), reverse=True)


def latest_version(env: HasVersions[V]) -> V | None:
    """The newest final release that is not yanked; failing that a pre-release, failing that anything."""
    return latest_among(sorted_versions(env))


def latest_among(versions: list[V]) -> V | None:
    """``latest_version`` of versions already sorted newest first (``sorted_versions``)."""
    live = [v for v in versions if not v.yanked]
    finals = [v for v in live if not Version(v.version).is_prerelease]
    best = finals or live or versions
    return best[0] if best else None


def find_version(env: HasVersions[V], version: Version) -> V | None:
    """The row of ``version`` (PEP 440 equality, so ``0.1`` finds ``0.1.0``), if ``env`` has it."""
    return next((v for v in env.versions if Version(v.version) == version), None)
