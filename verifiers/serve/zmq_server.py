"""The reference SDK's env-server protocol (``verifiers==0.1.12`` ``verifiers.serve``, what prime-rl
v0.5.0's orchestrator speaks through ``ZMQEnvClient``), served over a ZMQ ``ROUTER`` socket.

Wire facts, from that release's ``zmq_env_server.py`` / ``zmq_env_client.py`` / ``types.py``:

- a client is a ``DEALER``; every message is two frames ``[request_id, payload]`` (the ``ROUTER`` sees
  ``[client_id, request_id, payload]``) and every answer comes back the same way;
- payload ``b"ping"``: a health probe (sent by the client's health thread every few seconds), answered at
  once with msgpack ``{"success": true, "error": null}``;
- an empty payload: cancel the request with that id (sent when the caller gives up or times out);
- otherwise a msgpack request whose ``request_type`` is ``run_rollout`` (``input``: one ``RolloutInput``),
  ``run_group`` (``group_inputs``: a list) or ``health``, with ``client_config`` (the reference
  ``ClientConfig``, already resolved to one endpoint: ``api_base_url``, ``api_key_var``, ``timeout``,
  ``max_retries``, ``extra_headers``, ``extra_headers_from_state``, ``client_type``), ``model``, ``sampling_args``, ``max_retries`` and
  ``state_columns``; answered with ``{"success", "error", "output"}`` / ``{…, "outputs"}``, the outputs
  being reference ``RolloutOutput`` dicts (``verifiers.serve.reference_output``).

``run_rollout`` scores the rollout alone; ``run_group`` scores inputs of one example together (inputs of
different examples become one group each, answered in input order). What the reference server takes as
``extra_env_kwargs`` at start-up (prime-rl fills in ``max_seq_len`` and ``score_rollouts``, but only for
servers it spawns itself) are ``vf-serve``'s ``--max-seq-len`` and ``--no-score-rollouts``. ``max_retries`` (whole-rollout
retries in the reference) is not applied: a failed rollout comes back with its error, for the trainer to
mask.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Mapping
from typing import Any

from verifiers.serve.policy import ClientNotAllowed
from verifiers.serve.runner import ClientSpec, GroupJob
from verifiers.serve.service import EnvService, RequestError
from verifiers.serve.wire import MAX_BODY, MAX_ROLLOUTS_PER_REQUEST

log = logging.getLogger(__name__)
_PING = b"ping"


def _success(key: str) -> bytes:
    """The msgpack of ``{"success": true, "error": null, key: `` — the value's bytes follow."""
    import msgpack

    p = msgpack.Packer(use_bin_type=True)
    return bytes(
        p.pack_map_header(3) + p.pack("success") + p.pack(True) + p.pack("error") + p.pack(None) + p.pack(key)
    )


def _array_header(n: int) -> bytes:
    import msgpack

    return bytes(msgpack.Packer().pack_array_header(n))


#: The reference ``ClientConfig.client_type`` that continues multi-turn chats from token ids.
TOKEN_CLIENT_TYPE = "openai_chat_completions_token"


def _client_spec(cfg: Mapping[str, Any]) -> ClientSpec:
    """Our client settings for a reference ``ClientConfig``: its endpoint, key variable, timeout, retries,
    ``extra_headers`` and ``extra_headers_from_state`` (per-request headers read from the rollout state,
    ``{"X-Session-ID": "example_id"}`` by prime-rl's default), token prompts for the token client type,
    and the request body the reference sends (``max_completion_tokens``)."""
    return {
        "base_url": str(cfg.get("api_base_url", "")),
        "api_key_var": cfg.get("api_key_var"),
        "timeout": cfg.get("timeout"),
        "max_retries": int(cfg.get("max_retries", 3)),
        "headers": {str(k): str(v) for k, v in (cfg.get("extra_headers") or {}).items()},
        "headers_from_state": {
            str(k): str(v) for k, v in (cfg.get("extra_headers_from_state") or {}).items()
        },
        "token_prompts": cfg.get("client_type") == TOKEN_CLIENT_TYPE,
        "max_tokens_field": "max_completion_tokens",
    }


class ReferenceZMQServer:
    def __init__(self, service: EnvService, address: str) -> None:
        self.service, self.address = service, address
        self._tasks: dict[bytes, asyncio.Task[None]] = {}
        self._ctx: Any = None
        self._sock: Any = None
        self._loop_task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        import msgpack
        import zmq
        import zmq.asyncio

        self._health = msgpack.packb({"success": True, "error": None}, use_bin_type=True)
        self._ctx = zmq.asyncio.Context()
        self._sock = self._ctx.socket(zmq.ROUTER)
        self._sock.setsockopt(zmq.ROUTER_MANDATORY, 1)
        self._sock.setsockopt(zmq.SNDHWM, 0)
        self._sock.setsockopt(zmq.RCVHWM, 0)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.setsockopt(zmq.MAXMSGSIZE, MAX_BODY)  # a larger message drops its peer, unread
        self._sock.bind(self.address)
        self._loop_task = asyncio.create_task(self._serve())

    @property
    def bound_address(self) -> str:
        import zmq

        return str(self._sock.getsockopt_string(zmq.LAST_ENDPOINT))

    async def _serve(self) -> None:
        while True:
            frames = await self._sock.recv_multipart()
            if len(frames) != 3:
                log.warning("reference protocol: expected 3 frames, got %d", len(frames))
                continue
            client_id, request_id, payload = frames
            if payload == _PING:
                await self._send(client_id, request_id, self._health)
            elif not payload:
                task = self._tasks.get(request_id)
                if task is not None:
                    task.cancel()
            else:
                t = asyncio.create_task(self._handle(client_id, request_id, payload))
                self._tasks[request_id] = t
                t.add_done_callback(functools.partial(self._forget, request_id))

    def _forget(self, request_id: bytes, _task: asyncio.Task[None]) -> None:
        self._tasks.pop(request_id, None)

    async def _send(self, client_id: bytes, request_id: bytes, body: bytes) -> None:
        with contextlib.suppress(Exception):  # the peer went away: nobody to answer
            await self._sock.send_multipart([client_id, request_id, body])

    async def _handle(self, client_id: bytes, request_id: bytes, payload: bytes) -> None:
        import msgpack

        try:
            req = msgpack.unpackb(payload, raw=False)
            kind = req.get("request_type")
            if kind == "health":
                body = msgpack.packb({"success": True, "error": None})
            elif kind == "run_rollout":
                (output,) = await self._run(req, [req["input"]], score="rollout")
                body = _success("output") + output
            elif kind == "run_group":
                outputs = await self._run(req, list(req["group_inputs"]), score="group")
                body = _success("outputs") + _array_header(len(outputs)) + b"".join(outputs)
            else:
                body = msgpack.packb({"success": False, "error": f"Unknown request type: {kind}"})
        except asyncio.CancelledError:
            await asyncio.shield(
                self._send(
                    client_id, request_id, msgpack.packb({"success": False, "error": "Request was cancelled"})
                )
            )
            return
        except (ClientNotAllowed, RequestError) as exc:  # refused before any work: say why, no traceback
            body = msgpack.packb({"success": False, "error": f"{type(exc).__name__}: {exc}"})
        except Exception as exc:
            log.exception("reference protocol request failed")
            body = msgpack.packb({"success": False, "error": repr(exc)})
        await self._send(client_id, request_id, body)

    async def _run(self, req: Mapping[str, Any], inputs: list[dict[str, Any]], *, score: str) -> list[bytes]:
        """Each input's reference ``RolloutOutput``, already msgpack-encoded by the worker."""
        if len(inputs) > MAX_ROLLOUTS_PER_REQUEST:
            raise RequestError(
                f"{len(inputs)} inputs in one request; at most {MAX_ROLLOUTS_PER_REQUEST}: send several requests"
            )
        client = _client_spec(req.get("client_config") or {})
        self.service.policy.check(client["base_url"], client.get("api_key_var"))  # before any work
        env = self.service.env
        # Identical inputs (a group of one example) are one group with rollout indices 0..n-1.
        raw: list[tuple[dict[str, Any], list[int]]] = []
        for pos, x in enumerate(inputs):
            if raw and raw[-1][0] == x:
                raw[-1][1].append(pos)
            else:
                raw.append((x, [pos]))
        groups = [(env.format_row(x, int(x.get("example_id", 0))), positions) for x, positions in raw]
        model = str(req["model"])
        sampling = dict(req.get("sampling_args") or {})
        service = self.service
        jobs = [
            GroupJob(
                row=row,
                indices=list(range(len(positions))),
                model=model,
                client=client,
                sampling_args=sampling,
                score=("group" if score == "group" else "rollout") if service.score_rollouts else "none",
                max_seq_len=service.max_seq_len,
                encoding="reference",
                state_columns=list(req.get("state_columns") or []),
            )
            for row, positions in groups
        ]
        replies = await asyncio.gather(*(self.service.pool.run_group(j) for j in jobs))
        out: list[bytes] = [b""] * len(inputs)
        for (_, positions), reply in zip(groups, replies, strict=True):
            for pos, part in zip(positions, reply["parts"], strict=True):
                out[pos] = part
        return out

    async def close(self) -> None:
        for t in list(self._tasks.values()):
            t.cancel()
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)
        if self._loop_task is not None:
            self._loop_task.cancel()
            await asyncio.gather(self._loop_task, return_exceptions=True)
        if self._sock is not None:
            self._sock.close()
            self._ctx.term()

    async def wait_idle(self) -> None:
        while self._tasks:
            await asyncio.gather(*self._tasks.values(), return_exceptions=True)


__all__ = ["ReferenceZMQServer"]
