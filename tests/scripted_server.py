"""A scripted OpenAI-compatible server for tests: real HTTP on a free loopback port.

Each request is answered by, in order of preference:
1. the next queued ``Reply`` (``server.enqueue(...)``), FIFO;
2. the ``handler`` callable (request JSON -> ``Reply``);
3. the ``script`` — or the ``rules`` and the ``default`` reply text —, read and matched by the library's
   scripted model (``verifiers.clients.scripted``: the same rules as ``vf-model-stub`` and
   ``-m scripted:RULES``, so ``Rule(match=..., content=...)``, tool calls, errors and delays alike), on any
   of the routes below.

A ``Reply`` can delay, fail with a status (and ``Retry-After``), return a garbage body, drop the
connection, call tools, stop for length, and return logprobs / token ids (vLLM style).

With ``tokenize=True`` the server also behaves like vLLM about tokens: it renders each request with a toy
chat template into byte-level token ids (``toy_prompt_ids``; the reply's ``<think>reasoning</think>``,
content and tool calls, then an end token, are its completion ids) and answers what the request asks
for: ``return_token_ids`` → ``prompt_token_ids`` and the choice's ``token_ids``; ``logprobs`` → one
logprob per completion token, whose token reads ``token_id:<n>`` with ``return_tokens_as_token_ids``.
``max_tokens`` cuts the completion (``finish_reason`` ``length``), and ``max_model_len`` refuses longer
prompts with vLLM's 400. Re-rendering an assistant message with its ``reasoning_content`` gives back
exactly its completion ids, so a conversation's next prompt extends the last prompt + completion. The server records
every request and the peak number of requests in flight, so tests can check concurrency caps server-side.

Tests synchronise on the server's events, never on the machine's speed: ``wait_for_requests(n)`` blocks until
``n`` requests have arrived, and ``hold_after``, ``hold_models`` and ``Reply(hold=True)`` keep requests
unanswered until ``release()``, so a run is still in flight (or still in its endpoint check) when the test
acts on it, however slow the machine.

Routes: ``/v1/chat/completions``, ``/v1/completions``, ``/v1/responses`` (the Responses API wire format:
``output`` items, ``status`` / ``incomplete_details``, ``input_tokens`` usage) and ``GET /v1/models``, plus the
Azure OpenAI forms ``/openai/deployments/{deployment}/chat/completions`` (and ``/completions``),
``/openai/responses`` and ``/openai/models``. ``request_meta`` records each request's path, query, headers
and deployment; ``required_headers`` / ``required_query`` make the server answer 401 / 400 to requests
without them (auth and ``api-version`` checks).

Run standalone (used by CLI tests and end-to-end env tests)::

    python tests/scripted_server.py --rules rules.json [--port 0] [--delay 0.01] [--tokenize]

It prints ``PORT <n>`` on stdout once it listens. ``rules.json`` is a rules file of the scripted model
(docs/tools.md): ``{"default": "text", "rules": [{"match": "2+2", "content": "\\\\boxed{4}"}]}``.
Users have ``vf-model-stub`` for the same rules; this server adds the test knobs above.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from verifiers.clients.scripted.rules import (
    Answer,
    Rule,
    RulesError,
    Script,
    last_turn_message,
    load_script,
    message_text,
)


@dataclass
class Reply:
    content: str | None = "ok"
    tool_calls: list[dict[str, Any]] | None = None
    status: int = 200
    delay: float = 0.0
    retry_after: str | None = None
    body: bytes | None = None  # raw body instead of a completion (garbage tests)
    drop: bool = False  # close the connection without answering
    finish_reason: str | None = None
    logprobs: bool = False
    token_ids: bool = False
    error_message: str = "scripted error"
    prompt_tokens: int = 10
    completion_tokens: int | None = None
    reasoning: str | None = None  # chat: message.reasoning_content; responses: a reasoning item
    hold: bool = False  # no answer until ``server.release()``


def tool_call(name: str, arguments: dict[str, Any] | str, call_id: str | None = None) -> dict[str, Any]:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {
        "id": call_id or f"call_{name}_{abs(hash(args)) % 10_000}",
        "type": "function",
        "function": {"name": name, "arguments": args},
    }


# --- the toy tokenizer of ``tokenize=True``: bytes are ids 0-255, role markers and the end token above --
TOY_ROLES = {"system": 256, "user": 257, "assistant": 258, "tool": 259}
TOY_END = 260


def _bytes(text: str) -> list[int]:
    return list(text.encode("utf-8"))


def _toy_piece(token: int) -> str:
    if token < 256:
        return bytes([token]).decode("utf-8", "replace")
    return {v: f"<|{k}|>" for k, v in TOY_ROLES.items()}.get(token, "<|end|>")


def toy_logprob(token: int) -> float:
    """The logprob the toy server reports for ``token`` (deterministic, distinct per token)."""
    return -((token % 7) + 1) / 10


def toy_message_ids(message: dict[str, Any]) -> list[int]:
    """One message under the toy chat template: role marker, ``<think>…</think>`` when the message
    carries ``reasoning_content``, content, tool calls as JSON, end token."""
    reasoning = message.get("reasoning_content")
    content = message.get("content")
    text = content if isinstance(content, str) else json.dumps(content) if content else ""
    head = f"<think>{reasoning}</think>" if reasoning else ""
    calls = json.dumps(message["tool_calls"], sort_keys=True) if message.get("tool_calls") else ""
    return [TOY_ROLES.get(str(message.get("role")), 257), *_bytes(head + text + calls), TOY_END]


def toy_prompt_ids(body: dict[str, Any]) -> list[int]:
    """A request's prompt ids under the toy template (completions: the prompt's bytes)."""
    if "prompt" in body:
        return _bytes(str(body["prompt"]))
    ids = [t for m in body.get("messages") or [] for t in toy_message_ids(m)]
    return [*ids, TOY_ROLES["assistant"]]  # the generation prompt


Handler = Callable[[dict[str, Any]], "Reply | Awaitable[Reply]"]


def messages_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    """A request as chat messages, whatever its route: ``messages`` (chat), ``prompt`` (completions) or
    Responses API ``input`` items (``function_call`` → an assistant tool call, ``function_call_output`` →
    a tool message)."""
    if "prompt" in body:
        return [{"role": "user", "content": str(body["prompt"])}]
    if "input" in body:
        items = body["input"]
        if isinstance(items, str):
            return [{"role": "user", "content": items}]
        out: list[dict[str, Any]] = []
        for item in items or []:
            kind = item.get("type")
            if kind == "function_call":
                call = {"id": item.get("call_id"), "function": {"name": item.get("name")}}
                out.append({"role": "assistant", "content": None, "tool_calls": [call]})
            elif kind == "function_call_output":
                out.append(
                    {"role": "tool", "tool_call_id": item.get("call_id"), "content": str(item.get("output"))}
                )
            elif item.get("role"):
                out.append({"role": item["role"], "content": item.get("content")})
        return out
    return [m for m in body.get("messages") or [] if isinstance(m, dict)]


def _last_user_text(body: dict[str, Any]) -> str:
    """The text of the request's last user or tool message (what the rules match)."""
    last = last_turn_message(messages_of(body))
    return message_text(last) if last is not None else ""


@dataclass
class ScriptedServer:
    handler: Handler | None = None
    rules: list[Rule] = field(default_factory=list)
    default: str = "ok"
    #: A whole rules file (``verifiers.clients.scripted.load_script``) instead of ``rules`` and ``default``.
    script: Script | None = None
    delay: float = 0.0
    host: str = "127.0.0.1"
    port: int = 0
    requests: list[dict[str, Any]] = field(default_factory=list)
    #: Per request: ``{"path", "query", "headers" (lower-case names), "deployment"}``.
    request_meta: list[dict[str, Any]] = field(default_factory=list)
    #: Headers every request must carry (``{"authorization": "Bearer k"}``, ``{"api-key": "k"}``), else 401.
    required_headers: dict[str, str] = field(default_factory=dict)
    #: Query parameters every request must carry (``{"api-version": "2024-06-01"}``), else 400.
    required_query: dict[str, str] = field(default_factory=dict)
    in_flight: int = 0
    max_in_flight: int = 0
    #: Requests served at once (a rate-limited API): beyond it, a 429 with ``Retry-After:
    #: limit_retry_after``; those requests are not counted in ``in_flight``, and their times
    #: (``time.monotonic()``) go to ``rejected_at``. ``None``: no limit.
    concurrency_limit: int | None = None
    limit_retry_after: str = "0.05"
    rejected_at: list[float] = field(default_factory=list)
    #: Completion requests after the first ``hold_after`` (counted from the start or ``reset_stats``) get no
    #: answer until ``release()``: the run stays in flight until the test lets it go. ``None``: no hold.
    hold_after: int | None = None
    #: ``GET /models`` gets no answer until ``release()`` (an endpoint check that hangs).
    hold_models: bool = False
    #: Behave like vLLM about tokens (see the module docstring).
    tokenize: bool = False
    #: With ``tokenize``: prompts longer than this many tokens get vLLM's 400 (``None``: no limit).
    max_model_len: int | None = None
    _queue: deque[Reply] = field(default_factory=deque)
    _thread: threading.Thread | None = None
    _loop: asyncio.AbstractEventLoop | None = None
    _runner: web.AppRunner | None = None
    _ready: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _released: threading.Event = field(default_factory=threading.Event)
    _arrived: threading.Condition = field(init=False)
    _call_ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def __post_init__(self) -> None:
        self._arrived = threading.Condition(self._lock)
        self._built: tuple[tuple[Any, ...], Script] | None = None

    def _script(self) -> Script:
        """The rules file given, else one made of ``rules`` and ``default`` — remade when a test changes
        them after the server started (``server.default = …``), kept otherwise (rules count their uses)."""
        if self.script is not None:
            return self.script
        key = (self.default, *map(id, self.rules))
        if self._built is None or self._built[0] != key:
            self._built = (key, Script(rules=self.rules, default=Answer(content=self.default)))
        return self._built[1]

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def enqueue(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def reset_stats(self) -> None:
        with self._lock:
            self.requests.clear()
            self.request_meta.clear()
            self.max_in_flight = 0

    def release(self) -> None:
        """Answer every held request; from now on nothing is held."""
        self._released.set()

    def wait_for_requests(self, n: int, *, models: bool = False, timeout: float = 300.0) -> None:
        """Block until ``n`` completion requests (``models``: ``GET /models`` requests) have arrived,
        held ones included. ``timeout`` only guards against a hang: past it, an AssertionError."""

        def count() -> int:
            if models:
                return sum(1 for m in self.request_meta if m["path"].endswith("/models"))
            return len(self.requests)

        with self._arrived:
            if not self._arrived.wait_for(lambda: count() >= n, timeout):
                raise AssertionError(f"the scripted server got {count()} of {n} expected requests")

    async def _held(self) -> None:
        while not self._released.is_set():  # noqa: ASYNC110 - set from the test's thread, not this loop
            await asyncio.sleep(0.01)

    # --- HTTP ----------------------------------------------------------------------------------------
    async def _pick(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if self.handler is not None:
            r = self.handler(body)
            if asyncio.iscoroutine(r):
                r = await r
            return r  # type: ignore[return-value]
        with self._lock:  # the rules count their uses (``times``)
            answer = self._script().answer(messages_of(body))
        return self._reply_of(answer)

    def _reply_of(self, answer: Answer) -> Reply:
        """The library's answer as this server's ``Reply`` (the server's ``delay`` unless it has its own)."""
        delay = answer.delay or self.delay
        if answer.error is not None:
            err = answer.error
            retry = f"{err.retry_after:g}" if err.retry_after is not None else None
            raw = json.dumps(err.body).encode() if err.body is not None else None
            return Reply(
                content=None,
                status=err.status,
                error_message=err.message,
                retry_after=retry,
                body=raw,
                delay=delay,
            )
        calls = [c.wire(f"call_{next(self._call_ids)}") for c in answer.tool_calls or []]
        return Reply(
            content=answer.content, tool_calls=calls or None, reasoning=answer.reasoning, delay=delay
        )

    def _tokenized_body(self, body: dict[str, Any], reply: Reply, chat: bool) -> dict[str, Any]:
        """``tokenize=True``: a completion whose token fields are what the request asked for."""
        prompt_ids = toy_prompt_ids(body)
        reasoning = reply.reasoning if chat else None
        head = f"<think>{reasoning}</think>" if reasoning else ""
        calls = json.dumps(reply.tool_calls, sort_keys=True) if reply.tool_calls else ""
        completion_ids = [*_bytes(head + (reply.content or "") + calls), *([TOY_END] if chat else [])]
        finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        content, tool_calls = reply.content, reply.tool_calls
        limit = body.get("max_tokens") or body.get("max_completion_tokens")
        if isinstance(limit, int) and len(completion_ids) > limit:
            completion_ids, finish, tool_calls = completion_ids[:limit], "length", None
            text = bytes(t for t in completion_ids if t < 256).decode("utf-8", "ignore")
            if reasoning:
                reasoning, _, content = text.removeprefix("<think>").partition("</think>")
            else:
                content = text
        choice: dict[str, Any] = {"index": 0, "finish_reason": finish}
        if chat:
            msg: dict[str, Any] = {"role": "assistant", "content": content}
            if tool_calls:
                msg["tool_calls"] = tool_calls
            if reasoning:
                msg["reasoning_content"] = reasoning
            choice["message"] = msg
        else:
            choice["text"] = content or ""
        if body.get("logprobs"):
            as_ids = bool(body.get("return_tokens_as_token_ids"))
            toks = [f"token_id:{t}" if as_ids else _toy_piece(t) for t in completion_ids]
            lps = [toy_logprob(t) for t in completion_ids]
            if chat:
                choice["logprobs"] = {
                    "content": [{"token": t, "logprob": lp} for t, lp in zip(toks, lps, strict=True)]
                }
            else:
                choice["logprobs"] = {"tokens": toks, "token_logprobs": lps}
        out: dict[str, Any] = {
            "id": f"cmpl-{len(self.requests)}",
            "object": "chat.completion" if chat else "text_completion",
            "created": int(time.time()),
            "model": body.get("model", "scripted"),
            "choices": [choice],
            "usage": {
                "prompt_tokens": len(prompt_ids),
                "completion_tokens": len(completion_ids),
                "total_tokens": len(prompt_ids) + len(completion_ids),
            },
        }
        if body.get("return_token_ids"):
            out["prompt_token_ids"] = prompt_ids
            choice["token_ids"] = completion_ids
        return out

    def _completion_body(self, body: dict[str, Any], reply: Reply, chat: bool) -> dict[str, Any]:
        if self.tokenize:
            return self._tokenized_body(body, reply, chat)
        content = reply.content or ""
        words = content.split()
        n_completion = reply.completion_tokens if reply.completion_tokens is not None else max(1, len(words))
        finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        choice: dict[str, Any] = {"index": 0, "finish_reason": finish}
        toks = [f"token_id:{100 + i}" if reply.token_ids else w for i, w in enumerate(words or [""])]
        if chat:
            msg: dict[str, Any] = {"role": "assistant", "content": reply.content}
            if reply.tool_calls:
                msg["tool_calls"] = reply.tool_calls
            if reply.reasoning:
                msg["reasoning_content"] = reply.reasoning
            choice["message"] = msg
            if reply.logprobs:
                choice["logprobs"] = {"content": [{"token": t, "logprob": -0.5} for t in toks]}
        else:
            choice["text"] = content
            if reply.logprobs:
                choice["logprobs"] = {"tokens": toks, "token_logprobs": [-0.5 for _ in toks]}
        out: dict[str, Any] = {
            "id": f"cmpl-{len(self.requests)}",
            "object": "chat.completion" if chat else "text_completion",
            "created": int(time.time()),
            "model": body.get("model", "scripted"),
            "choices": [choice],
            "usage": {
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": n_completion,
                "total_tokens": reply.prompt_tokens + n_completion,
            },
        }
        if reply.token_ids:
            out["prompt_token_ids"] = list(range(1, reply.prompt_tokens + 1))
        return out

    def _responses_body(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        """A Responses API object: reasoning / message / function_call output items, status, usage."""
        n = len(self.requests)
        content = reply.content or ""
        words = content.split()
        n_completion = reply.completion_tokens if reply.completion_tokens is not None else max(1, len(words))
        output: list[dict[str, Any]] = []
        if reply.reasoning:
            output.append(
                {
                    "type": "reasoning",
                    "id": f"rs_{n}",
                    "summary": [],
                    "content": [{"type": "reasoning_text", "text": reply.reasoning}],
                }
            )
        if reply.content is not None:
            part: dict[str, Any] = {"type": "output_text", "text": content, "annotations": []}
            if reply.logprobs:
                toks = [f"token_id:{100 + i}" if reply.token_ids else w for i, w in enumerate(words or [""])]
                part["logprobs"] = [
                    {"token": t, "logprob": -0.5, "bytes": [], "top_logprobs": []} for t in toks
                ]
            output.append(
                {
                    "type": "message",
                    "id": f"msg_{n}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [part],
                }
            )
        for call in reply.tool_calls or []:
            fn = call["function"]
            output.append(
                {
                    "type": "function_call",
                    "id": f"fc_{n}_{len(output)}",
                    "call_id": call["id"],
                    "name": fn["name"],
                    "arguments": fn["arguments"],
                    "status": "completed",
                }
            )
        status, incomplete = "completed", None
        if reply.finish_reason in ("length", "content_filter"):
            reason = "max_output_tokens" if reply.finish_reason == "length" else "content_filter"
            status, incomplete = "incomplete", {"reason": reason}
        out: dict[str, Any] = {
            "id": f"resp_{n}",
            "object": "response",
            "created_at": time.time(),
            "model": body.get("model", "scripted"),
            "status": status,
            "error": None,
            "incomplete_details": incomplete,
            "instructions": body.get("instructions"),
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools", []),
            "temperature": body.get("temperature"),
            "top_p": body.get("top_p"),
            "max_output_tokens": body.get("max_output_tokens"),
            "usage": {
                "input_tokens": reply.prompt_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": n_completion,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": reply.prompt_tokens + n_completion,
            },
        }
        if reply.token_ids:
            out["prompt_token_ids"] = list(range(1, reply.prompt_tokens + 1))
        return out

    def _refusal(self, request: web.Request) -> web.StreamResponse | None:
        """Record the request's path, query and headers; a 401 / 400 if it lacks a required one."""
        with self._lock:
            self.request_meta.append(
                {
                    "path": request.path,
                    "query": dict(request.query),
                    "headers": {k.lower(): v for k, v in request.headers.items()},
                    "deployment": request.match_info.get("deployment"),
                }
            )
            self._arrived.notify_all()
        for name, value in self.required_headers.items():
            if request.headers.get(name) != value:
                return web.json_response(
                    {"error": {"message": f"missing or wrong {name} header"}}, status=401
                )
        for name, value in self.required_query.items():
            if request.query.get(name) != value:
                return web.json_response(
                    {"error": {"message": f"missing or wrong {name} parameter"}}, status=400
                )
        return None

    async def _handle(self, request: web.Request, chat: bool, responses: bool = False) -> web.StreamResponse:
        refusal = self._refusal(request)
        if refusal is not None:
            return refusal
        try:
            body = await request.json()
        except ValueError:
            return web.json_response({"error": {"message": "invalid JSON"}}, status=400)
        with self._lock:
            limited = self.concurrency_limit is not None and self.in_flight >= self.concurrency_limit
            if limited:
                self.rejected_at.append(time.monotonic())
            else:
                self.requests.append(body)
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
                self._arrived.notify_all()
            held = self.hold_after is not None and len(self.requests) > self.hold_after
        if limited:
            return web.json_response(
                {"error": {"message": "rate limited: too many concurrent requests"}},
                status=429,
                headers={"Retry-After": self.limit_retry_after},
            )
        try:
            reply = await self._pick(body)
            if held or reply.hold:
                await self._held()
            if reply.delay:
                await asyncio.sleep(reply.delay)
            if reply.drop:
                transport = request.transport
                if transport is not None:
                    transport.abort()
                raise ConnectionResetError("scripted drop")
            if reply.body is not None:
                headers = {"Retry-After": reply.retry_after} if reply.retry_after else None
                return web.Response(
                    body=reply.body, status=reply.status, content_type="application/json", headers=headers
                )
            if reply.status != 200:
                headers = {"Retry-After": reply.retry_after} if reply.retry_after else None
                return web.json_response(
                    {"error": {"message": reply.error_message}}, status=reply.status, headers=headers
                )
            if self.tokenize and self.max_model_len is not None and not responses:
                n = len(toy_prompt_ids(body))
                if n > self.max_model_len:
                    message = (
                        f"This model's maximum context length is {self.max_model_len} tokens. "
                        f"However, your request has {n} input tokens."
                    )
                    return web.json_response({"error": {"message": message}}, status=400)
            if responses:
                return web.json_response(self._responses_body(body, reply))
            return web.json_response(self._completion_body(body, reply, chat))
        finally:
            with self._lock:
                self.in_flight -= 1

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        return await self._handle(request, chat=True)

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        return await self._handle(request, chat=False)

    async def _responses(self, request: web.Request) -> web.StreamResponse:
        return await self._handle(request, chat=True, responses=True)

    async def _models(self, request: web.Request) -> web.StreamResponse:
        refusal = self._refusal(request)
        if refusal is not None:
            return refusal
        if self.hold_models:
            await self._held()
        return web.json_response({"object": "list", "data": [{"id": "scripted", "object": "model"}]})

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/completions", self._completions)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/responses", self._responses)
        # Azure OpenAI: deployment in the path, api-version in the query, api-key header.
        app.router.add_post("/openai/deployments/{deployment}/chat/completions", self._chat)
        app.router.add_post("/openai/deployments/{deployment}/completions", self._completions)
        app.router.add_post("/openai/responses", self._responses)
        app.router.add_get("/openai/models", self._models)
        return app

    async def start_async(self) -> None:
        if self.port == 0:
            with socket.socket() as s:
                s.bind((self.host, 0))
                self.port = s.getsockname()[1]
        self._runner = web.AppRunner(self.app(), access_log=None, handle_signals=False)
        await self._runner.setup()
        await web.TCPSite(self._runner, self.host, self.port).start()

    async def stop_async(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # --- background thread -----------------------------------------------------------------------
    def start(self) -> ScriptedServer:
        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            loop.run_until_complete(self.start_async())
            self._ready.set()
            loop.run_forever()
            loop.run_until_complete(self.stop_async())
            loop.close()

        self._thread = threading.Thread(target=run, name="scripted-openai", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("scripted server did not start")
        return self

    def stop(self) -> None:
        self.release()  # held requests are answered: the server's shutdown does not wait on them
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._thread = None

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rules", type=Path)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--delay", type=float, default=0.0)
    ap.add_argument("--default", default=None)
    ap.add_argument("--tokenize", action="store_true", help="behave like vLLM about tokens")
    args = ap.parse_args(argv)
    script = None
    if args.rules is not None:
        try:
            script = load_script(args.rules)
        except RulesError as exc:
            ap.exit(2, f"{ap.prog}: error: {exc}\n")
        if args.default is not None:
            script = script.model_copy(update={"default": Answer(content=args.default)})
    server = ScriptedServer(
        script=script, default=args.default or "ok", delay=args.delay, port=args.port, tokenize=args.tokenize
    )

    async def serve() -> None:
        await server.start_async()
        print(f"PORT {server.port}", flush=True)
        await asyncio.Event().wait()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
