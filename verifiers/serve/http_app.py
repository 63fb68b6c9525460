"""The env server's HTTP API (aiohttp): ``/health``, ``/info``, ``/dataset``, ``/rollouts``.

Bodies are JSON, or msgpack when the request's ``Content-Type`` (its body) or ``Accept`` (the answer)
is ``application/msgpack``. ``POST /rollouts`` with ``Accept: application/x-ndjson`` streams one line per
finished group, ``{"type": "group", "example_id", "rollouts": [...]}``, then ``{"type": "done",
"counts": {...}}``; otherwise it answers once, ``{"rollouts": [...]}``. The app is run with handler
cancellation on, so a client that disconnects cancels its request's groups in the workers.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import orjson
from aiohttp import web
from pydantic import ValidationError

from verifiers.errors import error_record
from verifiers.serve.policy import ClientNotAllowed
from verifiers.serve.runner import GroupJob
from verifiers.serve.service import EnvService, RequestError
from verifiers.serve.wire import (
    JSON,
    MAX_BODY,
    MSGPACK,
    NDJSON,
    RolloutsRequest,
    as_dict,
    decode,
    encode,
    wants_msgpack,
)

SERVICE: web.AppKey[EnvService] = web.AppKey("service", EnvService)


def _reply(request: web.Request, value: Any, status: int = 200) -> web.Response:
    ctype = MSGPACK if wants_msgpack(request.headers.get("Accept")) else JSON
    return web.Response(body=encode(value, ctype), status=status, content_type=ctype)


def _error(request: web.Request, status: int, message: str, detail: Any = None) -> web.Response:
    body: dict[str, Any] = {"error": message}
    if detail is not None:
        body["detail"] = detail
    return _reply(request, body, status)


async def health(request: web.Request) -> web.Response:
    service = request.app[SERVICE]
    if not service.pool.accepting:
        return _reply(request, {"status": "draining"}, 503)
    return _reply(request, {"status": "ok"})


async def info(request: web.Request) -> web.Response:
    return _reply(request, as_dict(request.app[SERVICE].info()))


async def dataset(request: web.Request) -> web.Response:
    q = request.query
    split = q.get("split", "eval")
    if split not in ("train", "eval"):
        return _error(request, 400, f"split must be 'train' or 'eval', not {split!r}")
    try:
        offset, limit = int(q.get("offset", "0")), int(q.get("limit", "100"))
        page = request.app[SERVICE].dataset(split, offset, limit)  # type: ignore[arg-type]
    except (ValueError, RequestError) as exc:
        return _error(request, 400, str(exc))
    return _reply(request, as_dict(page))


def _count(counts: dict[str, Any], meta: list[list[Any]]) -> None:
    counts["groups"] += 1
    for _eid, _idx, category, scored in meta:
        counts["rollouts"] += 1
        if category is not None:
            counts["errored"][category] = counts["errored"].get(category, 0) + 1
        elif scored:
            counts["scored"] += 1


def _parse_rollouts(service: EnvService, raw: bytes, content_type: str | None) -> list[GroupJob]:
    return service.jobs(RolloutsRequest.model_validate(decode(raw, content_type)))


def _as_msgpack(value: dict[str, Any]) -> bytes:
    value["rollouts"] = [orjson.loads(p) for p in value["rollouts"]]
    return encode(value, MSGPACK)


async def rollouts(request: web.Request) -> web.StreamResponse:
    service = request.app[SERVICE]
    if not service.pool.accepting:
        return _error(request, 503, "the env server is shutting down")
    raw = await request.read()
    try:
        # Off the event loop (a body may be tens of MiB), so /health and other requests keep answering.
        jobs = await asyncio.to_thread(_parse_rollouts, service, raw, request.headers.get("Content-Type"))
    except ValidationError as exc:  # without the input: a refused million-id list is not echoed back
        return _error(
            request,
            422,
            "invalid rollouts request",
            exc.errors(include_url=False, include_context=False, include_input=False),
        )
    except ClientNotAllowed as exc:
        return _error(request, 403, str(exc))
    except (ValueError, KeyError, RequestError) as exc:
        return _error(request, 400, str(exc))
    counts: dict[str, Any] = {"groups": 0, "rollouts": 0, "scored": 0, "errored": {}}
    stream = NDJSON in request.headers.get("Accept", "")
    # The workers encoded every rollout as JSON already: the server only joins bytes.
    if not stream:
        parts: list[tuple[int, int, bytes]] = []
        async with contextlib.aclosing(service.stream_groups(jobs)) as groups:
            async for g in groups:
                _count(counts, g["meta"])
                parts.extend((m[0], m[1], p) for m, p in zip(g["meta"], g["parts"], strict=True))
        parts.sort(key=lambda x: (x[0], x[1]))
        if wants_msgpack(request.headers.get("Accept")):
            value = {"rollouts": [p for *_, p in parts], "counts": counts}
            body = await asyncio.to_thread(_as_msgpack, value)  # re-encoding is the slow part
            return web.Response(body=body, content_type=MSGPACK)
        body = (
            b'{"rollouts":[' + b",".join(p for *_, p in parts) + b'],"counts":' + orjson.dumps(counts) + b"}"
        )
        return web.Response(body=body, content_type=JSON)
    resp = web.StreamResponse(headers={"Content-Type": NDJSON})
    await resp.prepare(request)
    try:
        async with contextlib.aclosing(service.stream_groups(jobs)) as groups:
            async for g in groups:
                _count(counts, g["meta"])
                head = b'{"type":"group","example_id":%d,"rollouts":[' % g["job"]["row"]["example_id"]
                # A gone client raises here (or cancels the handler): the request's other groups are cancelled.
                await resp.write(head + b",".join(g["parts"]) + b"]}\n")
    except (ConnectionError, asyncio.CancelledError):
        raise
    except Exception as exc:  # a server bug mid-stream: say so in the stream rather than just cut it
        await resp.write(
            orjson.dumps({"type": "error", "error": error_record(exc), "counts": counts}) + b"\n"
        )
        await resp.write_eof()
        return resp
    await resp.write(orjson.dumps({"type": "done", "counts": counts}) + b"\n")
    await resp.write_eof()
    return resp


def make_app(service: EnvService) -> web.Application:
    app = web.Application(client_max_size=MAX_BODY)
    app[SERVICE] = service
    app.router.add_get("/health", health)
    app.router.add_get("/info", info)
    app.router.add_get("/dataset", dataset)
    app.router.add_post("/rollouts", rollouts)
    return app


__all__ = ["make_app"]
