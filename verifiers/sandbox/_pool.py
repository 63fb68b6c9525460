"""A warm pool of sandboxes: leases are instant, cleanup happens in the background."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Coroutine
from types import TracebackType
from typing import Any

from verifiers.errors import SandboxError
from verifiers.sandbox._base import SandboxBackend
from verifiers.sandbox._registry import get_backend
from verifiers.sandbox._sandbox import Sandbox
from verifiers.sandbox._types import SandboxLimits

log = logging.getLogger("verifiers.sandbox")

#: Consecutive failed creations after which waiting callers get the error instead of waiting on.
MAX_CREATE_FAILURES = 3


class SandboxPool:
    """Keeps ``size`` sandboxes of one backend ready.

    ``lease()`` hands out a ready sandbox; when the lease ends the sandbox goes back through a background
    ``reset`` (processes killed, workspace and ``/tmp`` wiped). A sandbox that died, or whose reset failed,
    is destroyed and replaced in the background, so neither destroy nor create is on the caller's path
    (except while the pool is still filling). Operations on a sandbox that died raise
    :class:`verifiers.errors.SandboxError` to the caller.

    Set ``recycle=False`` to destroy and replace every sandbox after one lease instead of resetting it.
    """

    def __init__(
        self,
        backend: SandboxBackend,
        size: int = 4,
        limits: SandboxLimits | None = None,
        *,
        recycle: bool = True,
    ) -> None:
        if size < 1:
            raise ValueError("pool size must be at least 1")
        self.backend = backend
        self.size = size
        self.limits = limits or SandboxLimits()
        self.recycle = recycle
        self._ready: asyncio.Queue[Sandbox] = asyncio.Queue()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._leased: set[Sandbox] = set()
        self._failures = 0
        self._last_error: BaseException | None = None
        self._error_event = asyncio.Event()
        self._started = False
        self._closed = False
        #: Counters for tests and benchmarks.
        self.stats = {"created": 0, "recycled": 0, "replaced": 0, "destroyed": 0, "create_failures": 0}

    @property
    def backend_name(self) -> str:
        return self.backend.name

    async def start(self, *, wait: bool = True) -> None:
        """Start filling the pool; with ``wait`` return once every sandbox is ready (or one failed)."""
        if self._started:
            return
        self._started = True
        await self.backend.start()
        pending: set[asyncio.Future[Any]] = {self._spawn(self._create_one()) for _ in range(self.size)}
        if not wait:
            return
        failed = asyncio.ensure_future(self._error_event.wait())
        try:
            while pending and not failed.done():
                _, pending = await asyncio.wait(pending | {failed}, return_when=asyncio.FIRST_COMPLETED)
                pending.discard(failed)
        finally:
            failed.cancel()
        if self._error_event.is_set():
            error = self._last_error
            await self.close()
            raise SandboxError(f"sandbox pool could not start: {error}") from error

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _create_one(self) -> None:
        delay = 0.2
        while not self._closed:
            try:
                sb = await self.backend.create(self.limits)
            except Exception as exc:
                self._failures += 1
                self.stats["create_failures"] += 1
                self._last_error = exc
                log.warning("sandbox pool: creating a %s sandbox failed: %s", self.backend.name, exc)
                if self._failures >= MAX_CREATE_FAILURES:
                    self._error_event.set()
                await asyncio.sleep(delay)
                delay = min(delay * 2, 10.0)
                continue
            self._failures = 0
            self._error_event.clear()
            self.stats["created"] += 1
            if self._closed:
                await sb.destroy()
                return
            self._ready.put_nowait(sb)
            return

    async def acquire(self) -> Sandbox:
        """A ready sandbox (waits while all are leased or being recycled). Prefer :meth:`lease`."""
        if self._closed:
            raise SandboxError("sandbox pool is closed")
        if not self._started:
            await self.start(wait=False)
        while True:
            if self._error_event.is_set() and self._ready.empty():
                raise SandboxError(f"sandbox pool cannot create sandboxes: {self._last_error}")
            getter = asyncio.ensure_future(self._ready.get())
            failed = asyncio.ensure_future(self._error_event.wait())
            try:
                await asyncio.wait({getter, failed}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                failed.cancel()
                if not getter.done():
                    getter.cancel()
            if getter.done() and not getter.cancelled():
                sb = getter.result()
                if not sb.alive:
                    # Died while waiting in the queue: replace it and look again.
                    self._spawn(self._replace(sb))
                    continue
                self._leased.add(sb)
                return sb
            # The error event fired: loop re-checks the queue and raises if still empty.
            with contextlib.suppress(asyncio.CancelledError):
                await getter

    def release(self, sb: Sandbox, *, discard: bool = False) -> None:
        """Give a sandbox back; it is reset (or replaced) in the background. ``discard`` replaces it even
        if it still answers (a sandbox the caller no longer trusts)."""
        if sb not in self._leased:
            return
        self._leased.discard(sb)
        if self._closed:
            self._spawn(self._destroy(sb))
        elif self.recycle and sb.alive and not discard:
            self._spawn(self._recycle(sb))
        else:
            self._spawn(self._replace(sb))

    @contextlib.asynccontextmanager
    async def lease(self) -> AsyncIterator[Sandbox]:
        """``async with pool.lease() as sb:`` — a ready sandbox for the duration of the block."""
        sb = await self.acquire()
        try:
            yield sb
        finally:
            self.release(sb)

    async def _recycle(self, sb: Sandbox) -> None:
        try:
            await sb.reset()
        except Exception as exc:
            log.warning("sandbox pool: reset of %s failed (%s); replacing it", sb.id, exc)
            await self._replace(sb)
            return
        self.stats["recycled"] += 1
        if self._closed:
            await self._destroy(sb)
        else:
            self._ready.put_nowait(sb)

    async def _replace(self, sb: Sandbox) -> None:
        self.stats["replaced"] += 1
        # Create the replacement first-ish: destroying (runsc: seconds) runs alongside it.
        self._spawn(self._destroy(sb))
        await self._create_one()

    async def _destroy(self, sb: Sandbox) -> None:
        try:
            await sb.destroy()
        except Exception as exc:
            log.warning("sandbox pool: destroying %s failed: %s", sb.id, exc)
        self.stats["destroyed"] += 1

    async def close(self) -> None:
        """Destroy every sandbox of the pool (leased ones included) and wait for background work."""
        self._closed = True
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        doomed: list[Sandbox] = list(self._leased)
        self._leased.clear()
        while not self._ready.empty():
            doomed.append(self._ready.get_nowait())
        await asyncio.gather(*(self._destroy(sb) for sb in doomed), return_exceptions=True)
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def __aenter__(self) -> SandboxPool:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


class LazySandboxPool:
    """A :class:`SandboxPool` made and started on first use — the backend is chosen then, by name (``None``:
    ``$VF_SANDBOX_BACKEND`` or the best secure one), so nothing needs a sandbox backend until a sandbox is
    needed — and closed by :meth:`close`, after which the next :meth:`get` starts a fresh one.

    What an environment holds: ``setup()`` calls :meth:`get`, ``teardown()`` calls :meth:`close`.
    """

    def __init__(
        self, backend: str | None = None, *, size: int = 4, limits: SandboxLimits | None = None
    ) -> None:
        if size < 1:
            raise ValueError("pool size must be at least 1")
        self.backend_name = backend
        self.size = size
        self.limits = limits
        self._pool: SandboxPool | None = None
        self._lock = asyncio.Lock()

    async def get(self) -> SandboxPool:
        """The started pool; raises :class:`SandboxError` if it cannot start."""
        async with self._lock:
            if self._pool is None:
                pool = SandboxPool(get_backend(self.backend_name), size=self.size, limits=self.limits)
                await pool.start()
                self._pool = pool
            return self._pool

    async def close(self) -> None:
        """Close the pool, if one was started (its sandboxes are destroyed)."""
        async with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()
