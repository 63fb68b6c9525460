"""The error of getting an environment from the hub, below both halves that raise it: ``install``
(resolve, install, verify) and ``resolve`` (a bare name the hub does not have)."""

from __future__ import annotations


class HubInstallError(RuntimeError):
    """Resolving, installing or verifying an environment failed; the message says which and why."""


__all__ = ["HubInstallError"]
