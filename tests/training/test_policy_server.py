"""The CPU loop's tabular policy server speaks vLLM's token fields as our client reads them, and
``/update_weights`` changes what it samples."""

from __future__ import annotations

import importlib.util
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from verifiers.clients import Client
from verifiers.clients.sampling import token_request_args

# The example is a script directory, not a package: load its module by path under a unique name.
_spec = importlib.util.spec_from_file_location(
    "train_cpu_policy_server",
    Path(__file__).resolve().parents[2] / "examples" / "train_cpu" / "policy_server.py",
)
assert _spec is not None and _spec.loader is not None
ps = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = ps
_spec.loader.exec_module(ps)
ANSWERS, PROMPT_BASE, PolicyServer, TabularPolicy = (
    ps.ANSWERS,
    ps.PROMPT_BASE,
    ps.PolicyServer,
    ps.TabularPolicy,
)

PROMPT: list[dict[str, Any]] = [{"role": "user", "content": "True or False?"}]


@pytest.fixture
def server() -> Iterator[Any]:
    with PolicyServer(TabularPolicy(ANSWERS, seed=0)) as s:
        yield s


@pytest.mark.parametrize("mode", ["both", "token_ids", "logprobs"])
async def test_token_fields_decode(server: Any, mode: str) -> None:
    async with Client(server.url, None) as client:
        resp = await client.chat("tabular", PROMPT, sampling_args=token_request_args(mode))  # type: ignore[arg-type]
    action = ANSWERS.index(resp.text)
    assert resp.completion_ids == [action]
    if mode != "logprobs":
        assert resp.prompt_ids == [PROMPT_BASE + 0]
    if mode != "token_ids":
        assert resp.completion_logprobs == [pytest.approx(math.log(1 / len(ANSWERS)))]


async def test_update_weights_changes_the_policy(server: Any) -> None:
    root = server.url.removesuffix("/v1")
    async with Client(server.url, None) as client, aiohttp.ClientSession() as http:
        await client.chat("tabular", PROMPT)  # the server numbers the prompt (slot 0)
        logits = [[0.0, 50.0, 0.0, 0.0]]
        async with http.post(f"{root}/update_weights", json={"logits": logits, "step": 3}) as r:
            assert r.status == 200
        args = token_request_args("both")
        replies = [await client.chat("tabular", PROMPT, sampling_args=args) for _ in range(5)]
        async with http.get(f"{root}/weights") as r:
            assert await r.json() == {"step": 3, "shape": [1, 4]}
        async with http.post(f"{root}/update_weights", json={"logits": [[0.0] * 4] * 2, "step": 4}) as r:
            assert r.status == 400  # more rows than prompts seen
    assert all(r.text == ANSWERS[1] for r in replies)
    assert all(r.completion_logprobs == [pytest.approx(0.0, abs=1e-12)] for r in replies)
