"""The scripted model's HTTP server (OpenAI-compatible chat completions answered from a ``Script``), and
``ScriptedModelServer``, which runs it as ``vf-model-stub`` in a child process on a free loopback port for
one run (how ``vf-eval -m scripted:RULES`` and ``Environment.evaluate(model="scripted:RULES")`` get it).

Routes: ``POST /v1/chat/completions`` (``stream``, ``stream_options.include_usage``, ``n``, ``max_tokens``
/ ``max_completion_tokens`` and ``stop`` are honoured; any model name is accepted) and ``GET /v1/models``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path

from aiohttp import web

from verifiers.clients._server_process import ModelServerError, ServerProcess, start_all
from verifiers.clients.scripted import completions as wire
from verifiers.clients.scripted.rules import Answer, Script, load_script

log = logging.getLogger(__name__)
SCRIPTED_PREFIX = "scripted:"
#: What ``/v1/models`` lists when no model name is given.
DEFAULT_MODEL_NAME = "scripted"
#: Called for every request with its number, the rule that answered and a summary of the answer.
OnAnswer = Callable[[int, str, str], None]


class ScriptedModelError(ModelServerError):
    """The scripted model cannot be served (a rules file that cannot be used, a server that did not start)."""


def is_scripted_model(model: str) -> bool:
    """Whether ``model`` names the scripted model (``scripted:RULES_FILE``)."""
    return model.startswith(SCRIPTED_PREFIX)


def rules_path(model: str) -> Path:
    """The rules file of ``scripted:RULES_FILE``."""
    path = model[len(SCRIPTED_PREFIX) :]
    if not path:
        raise ScriptedModelError("-m scripted: names no rules file: use scripted:PATH/TO/RULES.toml")
    return Path(path).expanduser()


def summary(answer: Answer, streamed: bool = False) -> str:
    """One line for the request log: what was answered."""
    if answer.error is not None:
        return f"error {answer.error.status}"
    parts = [f"tool_calls {', '.join(c.name for c in answer.tool_calls)}"] if answer.tool_calls else []
    if answer.content is not None:
        parts.append(f"content {answer.content[:40]!r}")
    if answer.reasoning is not None:
        parts.append("reasoning")
    return " + ".join(parts) + (" (streamed)" if streamed else "")


def scripted_app(
    script: Script, model_name: str = DEFAULT_MODEL_NAME, on_answer: OnAnswer | None = None
) -> web.Application:
    """The aiohttp application answering chat completions from ``script``."""
    requests = itertools.count(1)
    call_numbers = itertools.count(1)
    call_ids = (f"call_{n}" for n in call_numbers)  # unique over the server's life, as real ids are

    async def chat(request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
        except ValueError:
            return web.json_response(wire.error_body(400, "the request body is not JSON"), status=400)
        messages = body.get("messages") if isinstance(body, dict) else None
        if not isinstance(messages, list) or not messages:
            return web.json_response(
                wire.error_body(400, "'messages' must be a non-empty list of chat messages"), status=400
            )
        number = next(requests)
        rule, answer = script.pick([m for m in messages if isinstance(m, dict)])
        streamed = bool(body.get("stream"))
        if on_answer is not None:
            on_answer(number, rule, summary(answer, streamed))
        if answer.delay:
            await asyncio.sleep(answer.delay)
        if answer.error is not None:
            err = answer.error
            headers = {"Retry-After": f"{err.retry_after:g}"} if err.retry_after is not None else None
            return web.json_response(
                err.body if err.body is not None else wire.error_body(err.status, err.message),
                status=err.status,
                headers=headers,
            )
        n = body.get("n") if isinstance(body.get("n"), int) and body["n"] > 0 else 1
        replies = [wire.shape(answer, body, call_ids) for _ in range(n)]
        completion_id = f"chatcmpl-scripted-{number}"
        model = str(body.get("model") or model_name)
        if not streamed:
            return web.json_response(wire.completion(completion_id, model, body, replies))
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        for chunk in wire.chunks(completion_id, model, body, replies):
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async def models(request: web.Request) -> web.StreamResponse:
        return web.json_response(
            {
                "object": "list",
                "data": [{"id": model_name, "object": "model", "created": 0, "owned_by": "scripted"}],
            }
        )

    async def other(request: web.Request) -> web.StreamResponse:
        message = f"the scripted model serves POST /v1/chat/completions and GET /v1/models, not {request.method} {request.path}"
        return web.json_response(wire.error_body(404, message), status=404)

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/v1/models", models)
    app.router.add_route("*", "/{tail:.*}", other)
    return app


async def serve(
    script: Script,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    model_name: str = DEFAULT_MODEL_NAME,
    on_ready: Callable[[int], None] | None = None,
    on_answer: OnAnswer | None = None,
) -> None:
    """Serve ``script`` until cancelled; ``on_ready(port)`` once it listens (``port=0``: a free one)."""
    runner = web.AppRunner(scripted_app(script, model_name, on_answer), access_log=None, handle_signals=False)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
        if on_ready is not None:
            on_ready(int(runner.addresses[0][1]))
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


class ScriptedModelServer:
    """The scripted model for one run: ``vf-model-stub RULES`` in a child process on a free loopback port
    (see ``verifiers.clients._server_process``), answering as ``model_name``. The rules file is read (and
    checked) here, so a bad one fails before anything starts; ``start()`` blocks until the server answers.
    """

    def __init__(
        self,
        rules: str | Path,
        *,
        model_name: str | None = None,
        host: str = "127.0.0.1",
        port: int | None = None,
        startup_timeout: float = 60.0,
        python: str = sys.executable,
    ) -> None:
        self.rules = Path(rules).resolve()
        self.script = load_script(self.rules)  # RulesError (a ValueError) says what to fix
        self.model_name = model_name or f"{SCRIPTED_PREFIX}{rules}"
        self.host = host
        self.startup_timeout = startup_timeout
        self.python = python
        self._fixed_port = port
        self._process = ServerProcess(
            self.command, host, port, label="the scripted model server", error=ScriptedModelError
        )

    def command(self, port: int) -> list[str]:
        return [
            self.python,
            "-m",
            "verifiers.cli.model_stub",
            str(self.rules),
            "--host",
            self.host,
            "--port",
            str(port),
            "--model-name",
            self.model_name,
            "--quiet",
        ]

    @property
    def running(self) -> bool:
        return self._process.running

    @property
    def base_urls(self) -> list[str]:
        if not self.running:
            raise ScriptedModelError("the scripted model server is not started")
        return [f"http://{self.host}:{self._process.port}/v1"]

    @property
    def base_url(self) -> str:
        return self.base_urls[0]

    def start(self) -> ScriptedModelServer:
        if not self.running:
            start_all([self._process], timeout=self.startup_timeout, fixed_port=self._fixed_port)
        return self

    def stop(self, *, keep_log: bool = False, grace: float = 10.0) -> None:
        self._process.stop(keep_log=keep_log, grace=grace)

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = [
    "SCRIPTED_PREFIX",
    "ScriptedModelError",
    "ScriptedModelServer",
    "is_scripted_model",
    "rules_path",
    "scripted_app",
    "serve",
]
