"""One env-server worker process: loads the environment once and runs the group jobs the pool sends.

Started by ``verifiers.serve.pool`` as ``python -m verifiers.serve.worker``. It talks to the pool over
one ZMQ ``DEALER`` socket (``ipc://``) in msgpack: it sends ``{"op": "ready", ...}`` once the environment
is loaded and set up, then receives ``{"op": "run", "job": GroupJob}``, ``{"op": "cancel", "id": ...}``
and ``{"op": "stop"}``, and answers each run with ``{"op": "done", "id", "ok": true, "results",
"sampling_args"}`` or ``{"op": "done", "id", "ok": false, "error": {...}}``. A cancelled job answers
nothing (the pool has already answered its caller). It exits when its parent process goes away.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import signal
from typing import Any

from verifiers.envs import load_environment
from verifiers.errors import error_record
from verifiers.eval.sync import run_async
from verifiers.serve.runner import GroupJob, GroupRunner

#: Seconds between heartbeats (and checks that the parent is still there).
_PARENT_POLL_S = 1.0


def _forget(tasks: dict[str, asyncio.Task[None]], key: str, _task: asyncio.Task[None]) -> None:
    tasks.pop(key, None)


async def _serve(
    address: str, identity: str, env_id: str, env_args: dict[str, Any], max_concurrent: int, parent: int
) -> None:
    import msgpack
    import zmq
    import zmq.asyncio

    env = load_environment(env_id, **env_args)
    await env.setup()
    runner = GroupRunner(env, max_concurrent, load=lambda: load_environment(env_id, **env_args))
    ctx = zmq.asyncio.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.IDENTITY, identity.encode())
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.SNDHWM, 0)
    sock.setsockopt(zmq.RCVHWM, 0)
    sock.connect(address)
    tasks: dict[str, asyncio.Task[None]] = {}

    async def send(msg: dict[str, Any]) -> None:
        await sock.send(msgpack.packb(msg, use_bin_type=True))

    async def run(job: GroupJob) -> None:
        job_id = job["id"]
        try:
            out = await runner.run(job)
            reply: dict[str, Any] = {"op": "done", "id": job_id, "ok": True, **out}
        except asyncio.CancelledError:
            return
        except Exception as exc:  # a bug outside any rollout (the engine records rollout errors itself)
            reply = {"op": "done", "id": job_id, "ok": False, "error": error_record(exc)}
        try:
            await send(reply)
        except Exception as exc:  # an unpackable result: still answer, with the reason
            await send({"op": "done", "id": job_id, "ok": False, "error": error_record(exc)})

    async def watch_parent() -> None:
        # Also the heartbeat: the pool restarts a worker whose event loop stops answering (a hung env).
        beat = msgpack.packb({"op": "beat"})
        while os.getppid() == parent:  # no event tells us the parent died
            # NOBLOCK: a DEALER with no peer blocks on send, and a dead pool is exactly that case.
            with contextlib.suppress(zmq.Again):
                await sock.send(beat, zmq.NOBLOCK)
            await asyncio.sleep(_PARENT_POLL_S)
        os._exit(0)  # orphaned: nobody can receive our results

    watcher = asyncio.create_task(watch_parent())
    await send({"op": "ready", "pid": os.getpid(), "env_id": env.env_id, "env_version": env.env_version})
    try:
        while True:
            msg = msgpack.unpackb(await sock.recv(), raw=False)
            op = msg.get("op")
            if op == "run":
                job: GroupJob = msg["job"]
                t = asyncio.create_task(run(job))
                tasks[job["id"]] = t
                t.add_done_callback(functools.partial(_forget, tasks, job["id"]))
            elif op == "cancel":
                task = tasks.get(msg["id"])
                if task is not None:
                    task.cancel()
            elif op == "stop":
                break
    finally:
        watcher.cancel()
        for t in list(tasks.values()):
            t.cancel()
        await asyncio.gather(*tasks.values(), return_exceptions=True)
        await runner.aclose()
        await env.teardown()
        sock.close()
        ctx.term()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="verifiers.serve.worker")
    ap.add_argument("--address", required=True)
    ap.add_argument("--env-id", required=True)
    ap.add_argument("--env-args", default="{}")
    ap.add_argument("--max-concurrent", type=int, default=32)
    ap.add_argument("--identity", required=True)
    # Given by the pool: the server may die before this process gets here (or while the env loads).
    ap.add_argument("--parent", type=int, default=os.getppid())
    args = ap.parse_args(argv)
    # The pool stops workers itself (after draining); a terminal's Ctrl-C must not kill in-flight groups.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    env_args = json.loads(args.env_args)
    run_async(_serve(args.address, args.identity, args.env_id, env_args, args.max_concurrent, args.parent))


if __name__ == "__main__":
    main()
