"""The warm pool (over each secure backend) and backend selection."""

from __future__ import annotations

import asyncio
import os

import pytest

from verifiers.errors import SandboxError
from verifiers.sandbox import (
    LazySandboxPool,
    LocalBackend,
    SandboxBackend,
    SandboxPool,
    available_backends,
    get_backend,
)

from .conftest import TEST_LIMITS
from .test_conformance import host_leftovers, sandbox_pids, wait_until_clean

pytestmark = pytest.mark.sandbox


async def test_recycle_wipes_workspace_and_processes(secure_backend: SandboxBackend) -> None:
    async with SandboxPool(secure_backend, size=1, limits=TEST_LIMITS) as pool:
        async with pool.lease() as sb:
            first = sb.id
            await sb.write_file("left/over.txt", "x")
            r = await sb.exec("echo tmp > /tmp/t; mkdir locked && chmod 000 locked; echo ok")
            assert r.stdout == "ok\n", r
        async with pool.lease() as sb:
            assert sb.id == first  # recycled, not replaced
            r = await sb.exec("ls -A . /tmp | tr '\\n' ' '; echo")
            assert "over" not in r.stdout and "locked" not in r.stdout and " t " not in r.stdout, r
            assert await sandbox_pids(sb) == []
        assert pool.stats["recycled"] >= 1 and pool.stats["replaced"] == 0
    assert await wait_until_clean(first) == []


async def test_dead_sandbox_is_replaced_and_the_caller_told(secure_backend: SandboxBackend) -> None:
    async with SandboxPool(secure_backend, size=1, limits=TEST_LIMITS) as pool:
        with pytest.raises(SandboxError):
            async with pool.lease() as sb:
                dead = sb.id
                sb._kill()
                for _ in range(50):
                    await sb.exec(["true"])
                    await asyncio.sleep(0.05)
        async with pool.lease() as sb:
            assert sb.id != dead and sb.alive
            assert (await sb.exec(["echo", "healed"])).stdout == "healed\n"
        assert pool.stats["replaced"] == 1
        assert await wait_until_clean(dead) == []


async def test_release_and_destroy_are_off_the_critical_path(secure_backend: SandboxBackend) -> None:
    pool = SandboxPool(secure_backend, size=2, limits=TEST_LIMITS, recycle=False)
    await pool.start()
    ids = []
    try:
        for _ in range(3):
            async with pool.lease() as sb:
                ids.append(sb.id)
                await sb.exec(["true"])
                destroyed = pool.stats["destroyed"]
            # Leaving the block schedules destroy + replacement; it must not wait for them (checked by
            # what has happened, not by wall time: the destroy has not run yet).
            assert pool.stats["destroyed"] == destroyed
        assert len(set(ids)) == 3  # recycle=False: every lease got a fresh sandbox
    finally:
        await pool.close()
    for sid in ids:
        assert await wait_until_clean(sid) == []


async def test_pool_leases_run_concurrently(secure_backend: SandboxBackend) -> None:
    async with SandboxPool(secure_backend, size=3, limits=TEST_LIMITS) as pool:

        async def job(i: int) -> str:
            async with pool.lease() as sb:
                await sb.write_file("i.txt", str(i))
                r = await sb.exec(["python3", "-c", "print(open('i.txt').read())"])
                return r.stdout.strip()

        assert sorted(await asyncio.gather(*(job(i) for i in range(9)))) == [str(i) for i in range(9)]
        ids = [sb.id for sb in list(pool._ready._queue)]  # type: ignore[attr-defined]
    for sid in ids:
        assert await wait_until_clean(sid) == []


async def test_a_discarded_sandbox_is_replaced_even_if_alive(secure_backend: SandboxBackend) -> None:
    async with SandboxPool(secure_backend, size=1, limits=TEST_LIMITS) as pool:
        sb = await pool.acquire()
        pool.release(sb, discard=True)
        async with pool.lease() as fresh:
            assert fresh.id != sb.id
    assert pool.stats["replaced"] == 1 and pool.stats["recycled"] == 1  # only `fresh` was reset
    assert await wait_until_clean(sb.id) == []


async def test_lazy_pool_starts_on_first_use_and_afresh_after_close(secure_backend: SandboxBackend) -> None:
    with pytest.raises(ValueError):
        LazySandboxPool(secure_backend.name, size=0)
    lazy = LazySandboxPool(secure_backend.name, size=1, limits=TEST_LIMITS)
    first = await lazy.get()
    try:
        assert await lazy.get() is first and first.backend_name == secure_backend.name
        assert first.stats["created"] == 1  # started: the sandbox was ready before get() returned
    finally:
        await lazy.close()
    await lazy.close()  # idempotent
    second = await lazy.get()
    try:
        assert second is not first
        async with second.lease() as sb:
            assert (await sb.exec(["echo", "again"])).stdout == "again\n"
    finally:
        await lazy.close()


async def test_pool_reports_a_backend_that_cannot_start() -> None:
    class Broken(LocalBackend):
        name = "local"

        async def create(self, limits=None):  # type: ignore[no-untyped-def]
            raise SandboxError("cannot start")

    pool = SandboxPool(Broken(), size=1)
    with pytest.raises(SandboxError):
        await pool.start()
    with pytest.raises(SandboxError):
        await asyncio.wait_for(pool.acquire(), 30)
    await pool.close()


# --- selection ---------------------------------------------------------------------------------------
def test_selection_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VF_SANDBOX_BACKEND", raising=False)
    names = available_backends()
    secure = [n for n in names if n != "local"]
    if secure:
        assert get_backend().name == secure[0]
    monkeypatch.setenv("VF_SANDBOX_BACKEND", "local")
    assert get_backend().name == "local"
    assert get_backend("local").name == "local"
    with pytest.raises(SandboxError):
        get_backend("nonsense")
    monkeypatch.delenv("VF_SANDBOX_BACKEND")
    # `local` is never picked automatically, even when nothing else is there.
    from verifiers.sandbox import BwrapBackend, RunscBackend

    monkeypatch.setattr(RunscBackend, "is_available", classmethod(lambda cls: False))
    monkeypatch.setattr(BwrapBackend, "is_available", classmethod(lambda cls: False))
    with pytest.raises(SandboxError, match="local"):
        get_backend()
    assert available_backends() == ["local"]


def test_nothing_of_this_session_is_left() -> None:
    # Runs last in this module: every sandbox the tests above created is gone from the state dir.
    from verifiers.sandbox._state import iter_states

    mine = [sd.id for sd in iter_states() if (sd.path / "owner").read_text().split()[0] == str(os.getpid())]
    assert mine == []
    assert [line for sid in mine for line in host_leftovers(sid)] == []
