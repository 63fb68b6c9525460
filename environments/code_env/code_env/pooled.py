"""Scoring on a warm pool of sandboxes, with sandbox failures retried on fresh sandboxes.

``PooledScorer.run(score)`` leases a sandbox, calls ``score(sandbox)`` (one problem's round trip, such as
``score_solution``), and hands the sandbox back; a ``SandboxError`` (the sandbox died, stopped answering or
never started the runner) discards that sandbox and tries a fresh one, ``retries`` times, then re-raises:
the caller records an infra error, never a score.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from verifiers.errors import SandboxError
from verifiers.sandbox import LazySandboxPool, Sandbox, SandboxLimits, SandboxPool

log = logging.getLogger("code_env")

T = TypeVar("T")


class PooledScorer:
    """A lazily started ``SandboxPool`` (``start`` or the first ``run`` starts it, ``close`` stops it)."""

    def __init__(
        self, backend: str | None, *, size: int, limits: SandboxLimits, retries: int, label: str = "code-env"
    ) -> None:
        if retries < 0:
            raise ValueError("sandbox_retries cannot be negative")
        self.retries = retries
        self.label = label
        self._sandboxes = LazySandboxPool(backend, size=size, limits=limits)

    async def pool(self) -> SandboxPool:
        """The pool, started on first use."""
        return await self._sandboxes.get()

    async def start(self) -> None:
        await self._sandboxes.get()

    async def close(self) -> None:
        await self._sandboxes.close()

    async def run(self, score: Callable[[Sandbox], Awaitable[T]]) -> tuple[T, str]:
        """``score(sandbox)`` on a pooled sandbox, retrying sandbox failures on fresh ones; returns its result
        and the name of the backend that ran it."""
        pool = await self._sandboxes.get()
        error: SandboxError | None = None
        for attempt in range(self.retries + 1):
            sandbox = await pool.acquire()
            failed = False
            try:
                return await score(sandbox), sandbox.backend
            except SandboxError as exc:
                error, failed = exc, True
                log.warning("%s: sandbox failure (attempt %d): %s", self.label, attempt + 1, exc)
            finally:
                # A sandbox that failed us is not trusted again, even if it still answers: the pool
                # replaces it in the background.
                pool.release(sandbox, discard=failed)
        raise SandboxError(
            f"scoring failed on {self.retries + 1} sandbox(es); last error: {error}"
        ) from error
