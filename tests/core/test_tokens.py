"""Asking for tokens (``return_tokens``) and reading both vLLM forms back, against the scripted server in
its vLLM-like ``tokenize`` mode: the requests carry the fields each setting names, and the decoded ids and
logprobs are the server's, with consistent lengths. Also the setting as a run setting and a vf-eval flag."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest

from tests.scripted_server import TOY_END, Reply, ScriptedServer, toy_logprob, toy_prompt_ids
from verifiers.clients import Backend, Client
from verifiers.clients.sampling import merge_sampling_args, request_fields, token_request_args
from verifiers.errors import InvalidResponseError
from verifiers.eval.config import ConfigError, EvalConfig
from verifiers.types import ReturnTokens

MSGS = [{"role": "user", "content": "hi"}]


@pytest.fixture(params=["aiohttp", "openai"])
def backend(request: pytest.FixtureRequest) -> Backend:
    return cast(Backend, request.param)


@pytest.fixture
def vllm() -> Any:
    with ScriptedServer(tokenize=True) as server:
        yield server


def test_each_setting_names_its_request_fields() -> None:
    assert request_fields(token_request_args("none")) == {}
    assert request_fields(token_request_args("token_ids")) == {"return_token_ids": True}
    assert request_fields(token_request_args("logprobs")) == {
        "logprobs": True,
        "return_tokens_as_token_ids": True,
    }
    assert request_fields(token_request_args("both")) == {
        "logprobs": True,
        "return_tokens_as_token_ids": True,
        "return_token_ids": True,
    }
    with pytest.raises(ValueError, match="return_tokens must be one of"):
        token_request_args(cast(ReturnTokens, "all"))
    # merged under a run's own arguments: explicit keys win, extra_body merges key by key
    merged = merge_sampling_args(token_request_args("both"), {"logprobs": 5, "extra_body": {"top_k": 2}})
    assert merged["logprobs"] == 5
    assert merged["extra_body"] == {"return_tokens_as_token_ids": True, "return_token_ids": True, "top_k": 2}


async def test_token_ids_form(vllm: ScriptedServer, backend: Backend) -> None:
    vllm.enqueue(Reply(content="four"))
    async with Client(vllm.url, backend=backend, max_retries=0) as c:
        r = await c.chat("m", MSGS, sampling_args=token_request_args("token_ids"))
    sent = vllm.requests[-1]
    assert sent["return_token_ids"] is True and "logprobs" not in sent
    assert r.prompt_ids == toy_prompt_ids(sent)
    assert r.completion_ids == [*b"four", TOY_END]
    assert r.completion_logprobs is None


async def test_logprobs_form(vllm: ScriptedServer, backend: Backend) -> None:
    vllm.enqueue(Reply(content="four"))
    async with Client(vllm.url, backend=backend, max_retries=0) as c:
        r = await c.chat("m", MSGS, sampling_args=token_request_args("logprobs"))
    sent = vllm.requests[-1]
    assert sent["logprobs"] is True and sent["return_tokens_as_token_ids"] is True
    assert "return_token_ids" not in sent
    assert r.prompt_ids is None  # this form carries no prompt ids
    assert r.completion_ids == [*b"four", TOY_END]
    assert r.completion_logprobs == [toy_logprob(t) for t in r.completion_ids]


async def test_both_forms_agree(vllm: ScriptedServer, backend: Backend) -> None:
    vllm.enqueue(Reply(content="a b", reasoning="think"))
    async with Client(vllm.url, backend=backend, max_retries=0) as c:
        r = await c.chat("m", MSGS, sampling_args=token_request_args("both"))
    assert r.message["reasoning_content"] == "think"
    assert r.completion_ids == [*b"<think>think</think>a b", TOY_END]
    assert r.prompt_ids is not None and len(r.prompt_ids) == r.prompt_tokens
    assert r.completion_logprobs is not None
    assert len(r.completion_logprobs) == len(r.completion_ids) == r.completion_tokens


async def test_plain_completions_both_forms(vllm: ScriptedServer, backend: Backend) -> None:
    vllm.enqueue(Reply(content=" 42"))
    async with Client(vllm.url, backend=backend, max_retries=0) as c:
        r = await c.complete("m", "The answer is", sampling_args=token_request_args("both"))
    assert r.prompt_ids == list(b"The answer is")
    assert r.completion_ids == list(b" 42")
    assert r.completion_logprobs == [toy_logprob(t) for t in b" 42"]


async def test_no_setting_asks_for_nothing(vllm: ScriptedServer) -> None:
    vllm.enqueue(Reply(content="x"))
    async with Client(vllm.url, max_retries=0) as c:
        r = await c.chat("m", MSGS)
    sent = vllm.requests[-1]
    assert not {"logprobs", "return_token_ids", "return_tokens_as_token_ids"} & set(sent)
    assert r.prompt_ids is None and r.completion_ids is None and r.completion_logprobs is None


def _body(token_ids: list[int], tokens: list[str], logprobs: list[float]) -> bytes:
    return json.dumps(
        {
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "x"},
                    "token_ids": token_ids,
                    "logprobs": {
                        "content": [
                            {"token": t, "logprob": lp} for t, lp in zip(tokens, logprobs, strict=True)
                        ]
                    },
                }
            ],
            "prompt_token_ids": [1, 2],
        }
    ).encode()


@pytest.mark.parametrize(
    ("token_ids", "tokens", "match"),
    [
        ([7, 8], ["token_id:7", "token_id:9"], "disagree"),
        ([7, 8, 9], ["a", "b"], "3 completion token ids but 2 logprobs"),
    ],
)
async def test_misaligned_forms_are_a_bad_response(
    scripted: ScriptedServer, token_ids: list[int], tokens: list[str], match: str
) -> None:
    scripted.enqueue(Reply(body=_body(token_ids, tokens, [-0.1] * len(tokens))))
    async with Client(scripted.url, max_retries=0) as c:
        with pytest.raises(InvalidResponseError, match=match):
            await c.chat("m", MSGS)


def test_run_setting_folds_into_sampling_args() -> None:
    config = EvalConfig.resolve(
        "e", ("flag", {"return_tokens": "both", "sampling_args": {"temperature": 0.5, "logprobs": 3}})
    )
    assert config.return_tokens == "both"
    assert config.sampling_args == {
        "temperature": 0.5,
        "logprobs": 3,  # the explicit value wins
        "extra_body": {"return_tokens_as_token_ids": True, "return_token_ids": True},
    }
    assert config.sources["sampling_args.extra_body"] == "return_tokens (flag)"
    assert config.sources["sampling_args.logprobs"] == "flag"
    assert EvalConfig.resolve("e").sampling_args == {}
    with pytest.raises(ConfigError, match="return_tokens"):
        EvalConfig.resolve("e", ("flag", {"return_tokens": "everything"}))


def test_rollout_settings_validate() -> None:
    config = EvalConfig.resolve("e", ("argument", {"max_seq_len": 64, "interleaved_thinking": False}))
    assert config.max_seq_len == 64 and config.interleaved_thinking is False
    assert EvalConfig.resolve("e").interleaved_thinking is None  # the environment's own
    with pytest.raises(ConfigError, match="max_seq_len"):
        EvalConfig.resolve("e", ("argument", {"max_seq_len": 0}))
