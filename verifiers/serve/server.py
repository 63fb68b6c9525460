"""``vf-serve``'s process: the worker pool, the HTTP API and the reference ZMQ protocol, and a graceful stop.

Start-up prints one line on stdout once both transports listen and every worker has loaded the
environment: ``vf-serve listening http=HOST:PORT zmq=tcp://HOST:PORT`` (port ``0`` picks a free one and
the line names it). SIGTERM or SIGINT drains: new groups are refused (HTTP 503, or an infra-error record
for a group of a request already streaming), groups in flight finish and are delivered (up to
``drain_timeout`` seconds), then the workers stop and the environment is torn down.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from verifiers.serve.http_app import make_app
from verifiers.serve.policy import ClientPolicy
from verifiers.serve.service import EnvService
from verifiers.serve.zmq_server import ReferenceZMQServer


@dataclass
class ServeConfig:
    env_id: str
    env_args: dict[str, Any] = field(default_factory=dict)
    host: str = "127.0.0.1"
    port: int = 8000
    #: Port of the reference ZMQ protocol; ``0`` picks a free one.
    zmq_port: int = 0
    #: Rollouts generating at once, over all requests and workers.
    max_concurrent: int = 256
    workers: int = 1
    drain_timeout: float = 600.0
    #: A worker silent this long (a blocked event loop) is killed and restarted, as after a crash.
    worker_timeout: float = 60.0
    #: Token budget of each rollout whose request names none (the reference protocol's never do).
    max_seq_len: int | None = None
    #: Score reference-protocol rollouts (``False``: return them unscored, the reference's
    #: ``score_rollouts = False``).
    score_rollouts: bool = True
    #: Key variables and endpoints requests may use (``verifiers.serve.policy``).
    policy: ClientPolicy = field(default_factory=ClientPolicy)


def listening_line(http: str, zmq: str) -> str:
    return f"vf-serve listening http={http} zmq={zmq}"


async def serve(config: ServeConfig, *, stop: asyncio.Event | None = None) -> None:
    """Run the env server until ``stop`` is set (or SIGTERM / SIGINT), then drain and shut down."""
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    service = EnvService(
        config.env_id,
        config.env_args,
        workers=config.workers,
        max_concurrent=config.max_concurrent,
        heartbeat_timeout=config.worker_timeout,
        max_seq_len=config.max_seq_len,
        score_rollouts=config.score_rollouts,
        policy=config.policy,
    )
    runner: web.AppRunner | None = None
    zmq_server: ReferenceZMQServer | None = None
    try:
        await service.start()
        runner = web.AppRunner(make_app(service), handler_cancellation=True, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, config.host, config.port)
        await site.start()
        port = runner.addresses[0][1]
        zmq_server = ReferenceZMQServer(service, f"tcp://{config.host}:{config.zmq_port or '*'}")
        await zmq_server.start()
        print(listening_line(f"{config.host}:{port}", zmq_server.bound_address), flush=True)
        await stop.wait()
        print("vf-serve: draining in-flight groups", file=sys.stderr, flush=True)
        drained = await service.pool.drain(config.drain_timeout)
        if not drained:
            print("vf-serve: drain timed out; cancelling what is left", file=sys.stderr, flush=True)
        await asyncio.wait_for(zmq_server.wait_idle(), 30)
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
        if runner is not None:
            await runner.cleanup()
        if zmq_server is not None:
            await zmq_server.close()
        await service.close()


__all__ = ["ServeConfig", "listening_line", "serve"]
