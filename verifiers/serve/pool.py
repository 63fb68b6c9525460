"""The worker pool: environment worker processes, least-busy dispatch, restart after a crash, draining.

Why processes: an environment's code (reward functions, tools, a native extension) can hang the event
loop or crash the interpreter; in a worker that costs its own in-flight groups, never the server. Each
worker (``verifiers.serve.worker``) loads the environment once and runs many groups concurrently. The
pool binds one ZMQ ``ROUTER`` on an ``ipc://`` path in a private temporary directory; every worker
connects a ``DEALER`` with its own identity.

A worker that exits while groups are in flight is restarted, and each of its groups is answered at once
with one ``WorkerCrashedError`` (infra) record per rollout, keeping the rollout's place: never lost,
never retried behind the caller's back (a trainer decides; the error category lets it mask them).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verifiers.errors import InfraError, error_record
from verifiers.serve.runner import EncodedGroup, GroupJob, encode_group, job_sampling_args

log = logging.getLogger(__name__)

#: Makes the error records of a group that could not run: ``(job, error record) -> rows``.
FailedGroup = Callable[[GroupJob, dict[str, Any]], list[dict[str, Any]]]
_STOP_TIMEOUT_S = 10.0
_RESTART_DELAY_S = 0.5


class WorkerCrashedError(InfraError):
    """The env-server worker running this rollout died before finishing it (the worker is restarted)."""


class ServerDrainingError(InfraError):
    """The env server is shutting down and takes no new rollouts."""


@dataclass
class _Worker:
    index: int
    ident: bytes
    proc: asyncio.subprocess.Process
    ready: asyncio.Future[dict[str, Any]]
    jobs: dict[str, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)
    rollouts: int = 0
    last_seen: float = field(default_factory=time.monotonic)
    #: Why the pool killed it, if it did.
    killed_because: str | None = None


class WorkerPool:
    def __init__(
        self,
        env_id: str,
        env_args: dict[str, Any],
        *,
        failed_group: FailedGroup,
        workers: int = 1,
        max_concurrent: int = 256,
        startup_timeout: float = 300.0,
        heartbeat_timeout: float = 60.0,
    ) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.env_id, self.env_args = env_id, env_args
        self.num_workers = workers
        #: Rollouts in flight per worker: ``max_concurrent`` shared out, at least one each.
        self.per_worker = max(1, -(-max_concurrent // workers))
        self.failed_group = failed_group
        self.startup_timeout = startup_timeout
        #: A ready worker silent this long (its event loop blocked: a hung reward function, a deadlock)
        #: is killed, and then handled as a crash.
        self.heartbeat_timeout = heartbeat_timeout
        self.workers: dict[int, _Worker] = {}
        self.restarts = 0
        self.accepting = True
        self._closing = False
        self._gen = itertools.count()
        self._ids = itertools.count()
        self._idle = asyncio.Event()
        self._idle.set()
        self._tmp = Path(tempfile.mkdtemp(prefix="vf-serve-"))
        self.address = f"ipc://{self._tmp / 'pool'}"
        self._ctx: Any = None
        self._sock: Any = None
        self._tasks: set[asyncio.Task[None]] = set()

    # --- lifecycle ---------------------------------------------------------------------------------
    async def start(self) -> None:
        import zmq
        import zmq.asyncio

        self._ctx = zmq.asyncio.Context()
        self._sock = self._ctx.socket(zmq.ROUTER)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.setsockopt(zmq.SNDHWM, 0)
        self._sock.setsockopt(zmq.RCVHWM, 0)
        self._sock.setsockopt(zmq.ROUTER_MANDATORY, 1)
        self._sock.bind(self.address)
        self._spawn_task(self._receive_loop())
        self._spawn_task(self._check_heartbeats())
        starting = [await self._start_worker(i) for i in range(self.num_workers)]
        await asyncio.gather(*(self._wait_ready(w) for w in starting))

    async def _start_worker(self, index: int) -> _Worker:
        ident = f"w{index}-{next(self._gen)}".encode()
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "verifiers.serve.worker",
            "--address",
            self.address,
            "--env-id",
            self.env_id,
            "--env-args",
            json.dumps(self.env_args),
            "--max-concurrent",
            str(self.per_worker),
            "--identity",
            ident.decode(),
            "--parent",
            str(os.getpid()),
            stdout=sys.stderr,  # stdout is the server's (its readiness line); worker output goes to stderr
            start_new_session=True,  # a terminal's Ctrl-C reaches the server, which drains, not the workers
        )
        worker = _Worker(index, ident, proc, asyncio.get_running_loop().create_future())
        self.workers[index] = worker
        self._spawn_task(self._watch(worker))
        return worker

    async def _wait_ready(self, worker: _Worker) -> None:
        exited: asyncio.Future[Any] = asyncio.ensure_future(worker.proc.wait())
        done, _ = await asyncio.wait(
            {worker.ready, exited},
            timeout=self.startup_timeout,
            return_when=asyncio.FIRST_COMPLETED,
        )
        if worker.ready not in done:
            raise RuntimeError(
                f"env-server worker {worker.index} did not start (exit status {worker.proc.returncode}); "
                "its error is above"
            )

    def _spawn_task(self, coro: Any) -> None:
        t = asyncio.create_task(coro)
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)

    async def _receive_loop(self) -> None:
        import msgpack

        while True:
            ident, payload = await self._sock.recv_multipart()
            try:
                msg = msgpack.unpackb(payload, raw=False)
            except Exception:  # never let one bad message stop every answer
                log.exception("env-server pool: unreadable message from a worker")
                continue
            worker = next((w for w in self.workers.values() if w.ident == ident), None)
            if worker is None:
                continue
            worker.last_seen = time.monotonic()
            if msg.get("op") == "ready":
                if not worker.ready.done():
                    worker.ready.set_result(msg)
            elif msg.get("op") == "done":
                fut = worker.jobs.pop(msg["id"], None)
                if fut is not None and not fut.done():
                    fut.set_result(msg)
                self._check_idle()

    async def _watch(self, worker: _Worker) -> None:
        status = await worker.proc.wait()
        if self._closing or self.workers.get(worker.index) is not worker:
            return
        log.error(
            "env-server worker %d (pid %d) exited with %s; restarting", worker.index, worker.proc.pid, status
        )
        why = worker.killed_because or f"exited with status {status}"
        crash = WorkerCrashedError(
            f"env-server worker {worker.index} (pid {worker.proc.pid}) {why}"
        ).to_record()
        for fut in worker.jobs.values():
            if not fut.done():
                fut.set_result({"op": "done", "ok": False, "error": crash})
        worker.jobs.clear()
        self._check_idle()
        self.restarts += 1
        while not self._closing:
            await asyncio.sleep(_RESTART_DELAY_S)
            try:
                fresh = await self._start_worker(worker.index)
                await self._wait_ready(fresh)
                return
            except Exception as exc:  # keep trying: the other workers still serve meanwhile
                log.error("restarting env-server worker %d failed: %s", worker.index, exc)

    async def _check_heartbeats(self) -> None:
        while True:
            await asyncio.sleep(min(1.0, self.heartbeat_timeout / 4))
            now = time.monotonic()
            for w in list(self.workers.values()):
                silent = now - w.last_seen
                if w.ready.done() and w.proc.returncode is None and silent > self.heartbeat_timeout:
                    log.error("env-server worker %d silent for %.0fs; killing it", w.index, silent)
                    w.killed_because = f"stopped answering for {silent:.0f}s and was killed"
                    with contextlib.suppress(ProcessLookupError):
                        w.proc.kill()  # _watch sees it exit: its groups get infra errors, it restarts

    def _check_idle(self) -> None:
        if any(w.jobs for w in self.workers.values()):
            self._idle.clear()
        else:
            self._idle.set()

    # --- running -----------------------------------------------------------------------------------
    @property
    def in_flight(self) -> int:
        return sum(len(w.jobs) for w in self.workers.values())

    async def run_group(self, job: GroupJob) -> EncodedGroup:
        """Run one group on the least-busy ready worker, encoded as ``job["encoding"]`` says. A group that
        could not run (draining, crashed worker, a job-level bug) gets one error record per rollout.
        Cancelling the caller cancels the group in its worker."""
        import msgpack

        job = {**job, "id": f"j{next(self._ids)}"}
        if not self.accepting:
            return self._failed(job, ServerDrainingError("the env server is shutting down").to_record())
        worker = await self._pick()
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        worker.jobs[job["id"]] = fut
        worker.rollouts += len(job["indices"])
        self._idle.clear()
        try:
            try:
                message = msgpack.packb({"op": "run", "job": job})
            except Exception as exc:  # a row msgpack cannot carry (an integer beyond 64 bits, ...)
                worker.jobs.pop(job["id"], None)
                self._check_idle()
                return self._failed(job, error_record(exc))
            try:
                await self._sock.send_multipart([worker.ident, message])
            except Exception as exc:  # the worker's socket is gone: it died between _pick and now
                worker.jobs.pop(job["id"], None)
                self._check_idle()
                return self._failed(
                    job, WorkerCrashedError(f"could not reach worker {worker.index}: {exc}").to_record()
                )
            reply = await fut
        except asyncio.CancelledError:
            worker.jobs.pop(job["id"], None)
            self._check_idle()
            with contextlib.suppress(Exception):
                await self._sock.send_multipart(
                    [worker.ident, msgpack.packb({"op": "cancel", "id": job["id"]})]
                )
            raise
        finally:
            worker.rollouts -= len(job["indices"])
        if not reply.get("ok"):
            return self._failed(job, reply["error"])
        return {"parts": reply["parts"], "meta": reply["meta"]}

    async def _pick(self) -> _Worker:
        while True:
            ready = [w for w in self.workers.values() if w.ready.done() and w.proc.returncode is None]
            if ready:
                return min(ready, key=lambda w: w.rollouts)
            await asyncio.sleep(0.05)  # every worker is restarting

    def _failed(self, job: GroupJob, error: dict[str, Any]) -> EncodedGroup:
        return encode_group(self.failed_group(job, error), job, job_sampling_args(job))

    # --- shutdown ----------------------------------------------------------------------------------
    async def drain(self, within: float | None = None) -> bool:
        """Take no new groups and wait for those in flight; ``False`` if ``within`` seconds ran out first."""
        self.accepting = False
        try:
            await asyncio.wait_for(self._idle.wait(), within)
            return True
        except TimeoutError:
            return False

    async def close(self) -> None:
        import msgpack

        self._closing = True
        for w in self.workers.values():
            with contextlib.suppress(Exception):
                await self._sock.send_multipart([w.ident, msgpack.packb({"op": "stop"})])
        for w in self.workers.values():
            try:
                await asyncio.wait_for(w.proc.wait(), _STOP_TIMEOUT_S)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    w.proc.kill()
                await w.proc.wait()
            for fut in w.jobs.values():
                if not fut.done():
                    fut.cancel()
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._sock is not None:
            self._sock.close()
            self._ctx.term()
        shutil.rmtree(self._tmp, ignore_errors=True)


__all__ = ["FailedGroup", "ServerDrainingError", "WorkerCrashedError", "WorkerPool"]
