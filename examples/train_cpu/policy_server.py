"""A tabular policy served as an OpenAI-compatible chat endpoint, the stand-in for vLLM in the CPU loop.

The "model" is a table of logits, one row per distinct prompt and one column per answer of a small answer
set: a reply is one token, the answer drawn from ``softmax(logits[prompt] / temperature)``. Tokens follow a
toy vocabulary: answer ``a`` is token ``a``; prompt number ``s`` (numbered in the order the server first
sees each prompt) is the single prompt token ``PROMPT_BASE + s``. A trainer therefore needs nothing but the
token ids the server returns to know which table entry produced a sample.

Like vLLM, the server returns token information when asked (the fields ``verifiers`` asks for with
``return_tokens="both"``): ``return_token_ids`` → ``prompt_token_ids`` and the choice's ``token_ids``;
``logprobs`` → per-token logprobs, with tokens written ``token_id:<n>`` under ``return_tokens_as_token_ids``.

``POST /update_weights`` with ``{"logits": [[...], ...], "step": n}`` loads new weights (rows the trainer
has not sent yet keep theirs), as prime-rl's orchestrator tells vLLM to load a checkpoint; requests in
flight finish with whichever weights they sampled from. ``GET /weights`` reports the step and the shape.

Run standalone: ``python policy_server.py --port 8001`` prints ``policy server listening http://…/v1``.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from aiohttp import web
from numpy.typing import NDArray

#: The answer set of the boolean-expression slice of logic-env: two valid answers (one correct per prompt),
#: a tagged non-answer and an untagged one (no ``<answer>`` block scores 0).
ANSWERS: tuple[str, ...] = (
    "<answer>True</answer>",
    "<answer>False</answer>",
    "<answer>Unknown</answer>",
    "True",
)
#: Token id of prompt number 0; answer tokens sit below it.
PROMPT_BASE = 1000


def log_softmax(logits: NDArray[np.float64]) -> NDArray[np.float64]:
    z = logits - logits.max(axis=-1, keepdims=True)
    out: NDArray[np.float64] = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    return out


class TabularPolicy:
    """The server's weights: logits ``(prompts seen, answers)``, grown by a zero row (uniform policy) for
    each new prompt. Only touched from the server's event loop, so no lock is needed."""

    def __init__(self, answers: Sequence[str], seed: int = 0) -> None:
        self.answers = tuple(answers)
        self.logits = np.zeros((0, len(self.answers)))
        self.slots: dict[str, int] = {}
        self.step = 0
        self.rng = np.random.default_rng(seed)

    def slot(self, prompt_text: str) -> int:
        s = self.slots.get(prompt_text)
        if s is None:
            s = self.slots[prompt_text] = len(self.slots)
            self.logits = np.vstack([self.logits, np.zeros((1, len(self.answers)))])
        return s

    def sample(self, slot: int, temperature: float) -> tuple[int, float]:
        logp = log_softmax(self.logits[slot] / max(temperature, 1e-6))
        action = int(self.rng.choice(len(self.answers), p=np.exp(logp)))
        return action, float(logp[action])

    def load(self, logits: list[list[float]], step: int) -> None:
        new = np.asarray(logits, dtype=np.float64)
        if new.ndim != 2 or new.shape[1] != len(self.answers) or new.shape[0] > len(self.slots):
            raise ValueError(
                f"weights of shape {new.shape} do not fit ({len(self.slots)}, {len(self.answers)})"
            )
        self.logits[: new.shape[0]] = new
        self.step = step


def _prompt_text(body: dict[str, Any]) -> str:
    messages = body.get("messages") or []
    return "\n".join(f"{m.get('role')}: {m.get('content')}" for m in messages)


def _completion(policy: TabularPolicy, body: dict[str, Any]) -> dict[str, Any]:
    slot = policy.slot(_prompt_text(body))
    temperature = body.get("temperature")
    action, logprob = policy.sample(slot, 1.0 if temperature is None else float(temperature))
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": policy.answers[action]},
        "finish_reason": "stop",
    }
    if body.get("logprobs"):
        token = f"token_id:{action}" if body.get("return_tokens_as_token_ids") else policy.answers[action]
        choice["logprobs"] = {
            "content": [{"token": token, "logprob": logprob, "bytes": None, "top_logprobs": []}]
        }
    out: dict[str, Any] = {
        "id": f"chatcmpl-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "tabular"),
        "choices": [choice],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
    if body.get("return_token_ids"):
        out["prompt_token_ids"] = [PROMPT_BASE + slot]
        choice["token_ids"] = [action]
    return out


def make_app(policy: TabularPolicy) -> web.Application:
    async def chat(request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            return web.json_response({"error": {"message": "invalid JSON"}}, status=400)
        return web.json_response(_completion(policy, body))

    async def update_weights(request: web.Request) -> web.Response:
        body = await request.json()
        try:
            policy.load(body["logits"], int(body["step"]))
        except (KeyError, TypeError, ValueError) as exc:
            return web.json_response({"error": {"message": str(exc)}}, status=400)
        return web.json_response({"status": "ok", "step": policy.step})

    async def weights(request: web.Request) -> web.Response:
        return web.json_response({"step": policy.step, "shape": list(policy.logits.shape)})

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "tabular", "object": "model"}]})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/v1/models", models)
    app.router.add_post("/update_weights", update_weights)
    app.router.add_get("/weights", weights)
    return app


class PolicyServer:
    """The app on a free loopback port, in a background thread with its own event loop."""

    def __init__(self, policy: TabularPolicy, host: str = "127.0.0.1", port: int = 0) -> None:
        self.policy, self.host, self.port = policy, host, port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    async def _start(self) -> web.AppRunner:
        if self.port == 0:
            with socket.socket() as s:
                s.bind((self.host, 0))
                self.port = s.getsockname()[1]
        runner = web.AppRunner(make_app(self.policy), access_log=None, handle_signals=False)
        await runner.setup()
        await web.TCPSite(runner, self.host, self.port).start()
        return runner

    def start(self) -> PolicyServer:
        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            runner = loop.run_until_complete(self._start())
            self._ready.set()
            loop.run_forever()
            loop.run_until_complete(runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=run, name="policy-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("policy server did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._thread = None

    def __enter__(self) -> PolicyServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    server = PolicyServer(TabularPolicy(ANSWERS, seed=args.seed), args.host, args.port).start()
    print(f"policy server listening {server.url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
