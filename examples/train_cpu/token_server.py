"""A vLLM-compatible token server over the tiny tokenizer: the stand-in for vLLM in the CPU loop and in
the prime-rl orchestrator tests.

It speaks what a trainer's stack asks of vLLM (v0.10-era OpenAI server plus prime-rl's routes):

- ``POST /v1/chat/completions``: the prompt is the chat template's rendering of ``messages`` (and
  ``tools``), tokenized; a policy picks the reply text; its tokens end with ``<|im_end|>``. With
  ``return_token_ids`` the body carries ``prompt_token_ids`` and the choice's ``token_ids``; with
  ``logprobs`` one logprob per completion token (``token_id:<n>`` tokens under
  ``return_tokens_as_token_ids``). ``max_tokens`` / ``max_completion_tokens`` cut the reply
  (``finish_reason = "length"``), a prompt over ``max_model_len`` gets vLLM's 400. A reply holding
  ``<tool_call>{"name": …, "arguments": …}</tool_call>`` blocks comes back as ``tool_calls`` (vLLM's hermes
  parser);
- ``POST /v1/chat/completions/tokens``: the same with the prompt given as token ids (``tokens``) —
  token-in, token-out: nothing the model produced is re-tokenized;
- ``POST /tokenize`` (``messages`` [+ ``tools``, ``add_generation_prompt``] or ``prompt``): ``{count,
  max_model_len, tokens}``;
- ``POST /pause`` (new generations wait), ``POST /resume``, ``POST /update_weights`` (``{"weight_dir":
  …}``: the policy loads what the trainer wrote there), ``GET /v1/models``, ``GET /health``.

The model samples **non-canonical** token sequences: a reply's first multi-byte token is spelled as its
single-byte tokens (``TinyTokenizer.spelled_out``), as a real model may emit. Decoding gives the same
text, but re-tokenizing that text gives other ids; so a client that re-sends messages makes the next
prompt disagree with what the model produced, and one that sends token ids does not.

Every generation is recorded (``server.generations``: the path, headers, prompt ids, completion ids and
logprobs of each), so tests can compare what a trainer received with what the model produced.

A policy is any object with ``reply(messages, tools) -> (text, logprob)``: the text of the reply and the
log probability of having chosen it (put on the reply's first token; the rest of the reply follows
deterministically, logprob 0). It may also have ``load(weight_dir)``, called by ``/update_weights``.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from aiohttp import web
from tiny_tokenizer import IM_END, TinyTokenizer

_TOOL_CALL = re.compile(r"<tool_call>\n(.*?)\n</tool_call>", re.DOTALL)


class Policy(Protocol):
    def reply(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> tuple[str, float]: ...


@dataclass
class Generation:
    """One completion the server produced."""

    path: str
    headers: dict[str, str]
    #: The request body, without ``messages``, ``tools`` and ``tokens``.
    body: dict[str, Any]
    prompt_ids: list[int]
    completion_ids: list[int]
    completion_logprobs: list[float]
    text: str
    step: int


@dataclass
class TokenServer:
    policy: Policy
    tokenizer: TinyTokenizer = field(default_factory=TinyTokenizer)
    #: The model name ``/v1/models`` lists (and requests must name).
    model: str = "tiny"
    max_model_len: int = 1 << 16
    host: str = "127.0.0.1"
    port: int = 0
    generations: list[Generation] = field(default_factory=list)
    #: ``/update_weights`` calls, in order (the ``weight_dir`` each named).
    weight_updates: list[str | None] = field(default_factory=list)
    #: ``/pause`` and ``/resume`` calls, in order.
    admin_calls: list[str] = field(default_factory=list)
    #: The weights' step: the number of ``/update_weights`` calls so far.
    step: int = 0
    _resumed: asyncio.Event | None = None
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None
    _ready: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        """The OpenAI base URL (``…/v1``)."""
        return f"http://{self.host}:{self.port}/v1"

    # --- the model ------------------------------------------------------------------------------------
    def parse(self, text: str) -> dict[str, Any]:
        """The assistant message of a generated text: ``<tool_call>`` blocks become ``tool_calls`` when
        the chat template renders them back to exactly this text, else the text is plain content."""
        message: dict[str, Any] = {"role": "assistant", "content": text}
        blocks = _TOOL_CALL.findall(text)
        if not blocks:
            return message
        calls = []
        for i, raw in enumerate(blocks):
            try:
                call = json.loads(raw)
                name, args = str(call["name"]), call["arguments"]
            except (ValueError, KeyError, TypeError):
                return message
            calls.append(
                {
                    "id": f"call_{len(self.generations)}_{i}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
            )
        content = _TOOL_CALL.sub("", text).strip() or None
        parsed = {"role": "assistant", "content": content, "tool_calls": calls}
        rendered = self.tokenizer.render([parsed], add_generation_prompt=False)
        if rendered != f"<|im_start|>assistant\n{text}{IM_END}\n":
            return message
        return parsed

    def generate(
        self, reply_text: str, logprob: float, limit: int | None
    ) -> tuple[list[int], list[float], bool]:
        ids = [*self.tokenizer.spelled_out(self.tokenizer.encode(reply_text)), self.tokenizer.eos_id]
        logprobs = [logprob, *([0.0] * (len(ids) - 1))]
        if limit is not None and len(ids) > limit:
            return ids[:limit], logprobs[:limit], True
        return ids, logprobs, False

    # --- HTTP -----------------------------------------------------------------------------------------
    async def _completion(self, request: web.Request, tokens_in: bool) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "invalid JSON")
        if body.get("model") != self.model:
            return _error(404, f"The model `{body.get('model')}` does not exist.")
        messages = list(body.get("messages") or [])
        tools = body.get("tools") or None
        if tokens_in:
            prompt_ids = body.get("tokens")
            if not isinstance(prompt_ids, list) or not all(
                isinstance(t, int) and 0 <= t < self.tokenizer.vocab_size for t in prompt_ids
            ):
                return _error(400, "tokens must be a list of token ids")
        else:
            prompt_ids = self.tokenizer.chat_ids(messages, tools)
        if len(prompt_ids) > self.max_model_len:
            return _error(
                400,
                f"This model's maximum context length is {self.max_model_len} tokens. However, your "
                f"request has {len(prompt_ids)} input tokens. Please reduce the length of the input messages.",
            )
        assert self._resumed is not None
        await self._resumed.wait()  # paused for a weight update: generations wait, as vLLM's "keep" mode
        text, logprob = self.policy.reply(messages, tools)
        limit = body.get("max_completion_tokens") or body.get("max_tokens")
        ids, logprobs, cut = self.generate(text, logprob, limit if isinstance(limit, int) else None)
        decoded = self.tokenizer.decode(ids)
        message = {"role": "assistant", "content": decoded} if cut else self.parse(decoded)
        finish = "length" if cut else ("tool_calls" if message.get("tool_calls") else "stop")
        with self._lock:
            self.generations.append(
                Generation(
                    path=request.path,
                    headers={k.lower(): v for k, v in request.headers.items()},
                    body={k: v for k, v in body.items() if k not in ("messages", "tools", "tokens")},
                    prompt_ids=list(prompt_ids),
                    completion_ids=list(ids),
                    completion_logprobs=list(logprobs),
                    text=decoded,
                    step=self.step,
                )
            )
        choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish}
        if body.get("logprobs"):
            as_ids = bool(body.get("return_tokens_as_token_ids"))
            choice["logprobs"] = {
                "content": [
                    {
                        "token": f"token_id:{t}" if as_ids else self.tokenizer.piece(t),
                        "logprob": lp,
                        "bytes": None,
                        "top_logprobs": [],
                    }
                    for t, lp in zip(ids, logprobs, strict=True)
                ]
            }
        out: dict[str, Any] = {
            "id": f"chatcmpl-{len(self.generations)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model,
            "choices": [choice],
            "usage": {
                "prompt_tokens": len(prompt_ids),
                "completion_tokens": len(ids),
                "total_tokens": len(prompt_ids) + len(ids),
            },
        }
        if body.get("return_token_ids"):
            out["prompt_token_ids"] = list(prompt_ids)
            choice["token_ids"] = list(ids)
        return web.json_response(out)

    async def _tokenize(self, request: web.Request) -> web.Response:
        body = await request.json()
        if "prompt" in body:
            ids = self.tokenizer.encode(str(body["prompt"]))
        else:
            ids = self.tokenizer.chat_ids(
                list(body.get("messages") or []),
                body.get("tools") or None,
                add_generation_prompt=bool(body.get("add_generation_prompt", True)),
            )
        return web.json_response({"count": len(ids), "max_model_len": self.max_model_len, "tokens": ids})

    async def _pause(self, request: web.Request) -> web.Response:
        assert self._resumed is not None
        self._resumed.clear()
        self.admin_calls.append("pause")
        return web.json_response({"status": "paused"})

    async def _resume(self, request: web.Request) -> web.Response:
        assert self._resumed is not None
        self._resumed.set()
        self.admin_calls.append("resume")
        return web.json_response({"status": "resumed"})

    async def _update_weights(self, request: web.Request) -> web.Response:
        body = await request.json()
        weight_dir = body.get("weight_dir")
        load = getattr(self.policy, "load", None)
        if load is not None and weight_dir is not None:
            try:
                load(Path(weight_dir))
            except (OSError, ValueError, KeyError) as exc:
                return _error(400, f"could not load weights from {weight_dir}: {exc}")
        self.weight_updates.append(weight_dir)
        self.step += 1
        return web.json_response({"status": "ok"})

    def app(self) -> web.Application:
        async def models(request: web.Request) -> web.Response:
            return web.json_response(
                {
                    "object": "list",
                    "data": [{"id": self.model, "object": "model", "max_model_len": self.max_model_len}],
                }
            )

        async def health(request: web.Request) -> web.Response:
            return web.Response(status=200)

        async def chat(request: web.Request) -> web.Response:
            return await self._completion(request, tokens_in=False)

        async def chat_tokens(request: web.Request) -> web.Response:
            return await self._completion(request, tokens_in=True)

        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", chat)
        app.router.add_post("/v1/chat/completions/tokens", chat_tokens)
        app.router.add_post("/tokenize", self._tokenize)
        app.router.add_post("/pause", self._pause)
        app.router.add_post("/resume", self._resume)
        app.router.add_post("/update_weights", self._update_weights)
        app.router.add_get("/v1/models", models)
        app.router.add_get("/health", health)
        return app

    # --- lifecycle: the app on a free loopback port, in a thread with its own event loop -------------
    async def _start(self) -> web.AppRunner:
        if self.port == 0:
            with socket.socket() as s:
                s.bind((self.host, 0))
                self.port = s.getsockname()[1]
        self._resumed = asyncio.Event()
        self._resumed.set()
        runner = web.AppRunner(self.app(), access_log=None, handle_signals=False)
        await runner.setup()
        await web.TCPSite(runner, self.host, self.port).start()
        return runner

    def start(self) -> TokenServer:
        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            runner = loop.run_until_complete(self._start())
            self._ready.set()
            loop.run_forever()
            loop.run_until_complete(runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=run, name="token-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("token server did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._thread = None

    def __enter__(self) -> TokenServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def generations_since(self, n: int) -> Sequence[Generation]:
        with self._lock:
            return list(self.generations[n:])


def _error(status: int, message: str) -> web.Response:
    return web.json_response(
        {"object": "error", "message": message, "type": "BadRequestError", "code": status}, status=status
    )
