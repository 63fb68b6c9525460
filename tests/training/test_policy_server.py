"""The CPU loop's tabular policy, served by the token server: vLLM's token fields as our client reads them,
the choice's logprob on the answer's first token, and ``/update_weights`` loading what a trainer wrote."""

from __future__ import annotations

import importlib.util
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
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

PROMPT: list[dict[str, Any]] = [{"role": "user", "content": "True or False?"}]


@pytest.fixture
def server() -> Iterator[Any]:
    with ps.policy_server(seed=0) as s:
        yield s


@pytest.mark.parametrize("mode", ["both", "token_ids", "logprobs"])
async def test_token_fields_decode(server: Any, mode: str) -> None:
    async with Client(server.url, None) as client:
        resp = await client.chat(ps.MODEL, PROMPT, sampling_args=token_request_args(mode))  # type: ignore[arg-type]
    assert resp.text in ps.ANSWERS
    (generation,) = server.generations
    if mode != "logprobs":
        assert resp.completion_ids == generation.completion_ids
        assert resp.prompt_ids == server.tokenizer.chat_ids(PROMPT)
        assert server.tokenizer.decode(resp.completion_ids) == resp.text
    if mode != "token_ids":
        lps = resp.completion_logprobs
        assert lps is not None and lps[0] == pytest.approx(math.log(1 / len(ps.ANSWERS)))
        assert all(lp == 0.0 for lp in lps[1:])


async def test_update_weights_loads_what_the_trainer_wrote(server: Any, tmp_path: Path) -> None:
    root = server.url.removesuffix("/v1")
    key = ps.prompt_key(PROMPT)
    async with Client(server.url, None) as client, aiohttp.ClientSession() as http:
        weights = ps.write_weights(tmp_path / "step_3", {key: np.array([0.0, 50.0, 0.0, 0.0])}, 3)
        async with http.post(f"{root}/update_weights", json={"weight_dir": str(weights)}) as r:
            assert r.status == 200
        args = token_request_args("both")
        replies = [await client.chat(ps.MODEL, PROMPT, sampling_args=args) for _ in range(5)]
        bad = ps.write_weights(tmp_path / "bad", {key: np.zeros(3)}, 4)
        async with http.post(f"{root}/update_weights", json={"weight_dir": str(bad)}) as r:
            assert r.status == 400  # a row of the wrong width
    assert server.policy.step == 3 and server.weight_updates == [str(weights)]
    assert all(r.text == ps.ANSWERS[1] for r in replies)
    assert all(r.completion_logprobs[0] == pytest.approx(0.0, abs=1e-12) for r in replies)
