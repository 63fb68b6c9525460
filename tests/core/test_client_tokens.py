"""The client's parity with the reference SDK's: per-request headers from the rollout state
(``X-Session-ID``), token-in continuation of a conversation through ``/chat/completions/tokens``, and
request bodies without ``None`` (``max_completion_tokens`` where asked). Against the vLLM-compatible token
server of examples/train_cpu, whose model emits non-canonical tokenizations."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from verifiers.clients import Client, Continuation

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "train_cpu"))
from token_server import TokenServer

CALL = '<tool_call>\n{"name": "lookup", "arguments": {"q": "capital"}}\n</tool_call>'


class Script:
    """First a tool call, then an answer."""

    def reply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> tuple[str, float]:
        done = any(m.get("role") == "tool" for m in messages)
        return ("The answer is Paris." if done else CALL), -0.5


@pytest.fixture
def server() -> Iterator[TokenServer]:
    with TokenServer(Script(), model="m") as s:
        yield s


TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
ARGS = {"logprobs": True, "max_tokens": 64, "temperature": None, "extra_body": {"return_token_ids": True}}


async def _two_turns(client: Client, continuation: bool) -> tuple[Any, Any, list[dict[str, Any]]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "What is the capital?"}]
    first = await client.chat("m", messages, sampling_args=ARGS, tools=TOOLS, state={"example_id": 7})  # type: ignore[arg-type]
    call = first.message["tool_calls"][0]
    history = [*messages, first.message, {"role": "tool", "tool_call_id": call["id"], "content": "Paris"}]
    cont = Continuation([*first.prompt_ids, *first.completion_ids], 2) if continuation else None
    second = await client.chat(
        "m",
        history,
        sampling_args=ARGS,
        tools=TOOLS,
        state={"example_id": 7},
        continuation=cont,  # type: ignore[arg-type]
    )
    return first, second, history


async def test_a_continuation_sends_the_models_own_tokens(server: TokenServer) -> None:
    async with Client(
        server.url, None, token_prompts=True, headers_from_state={"X-Session-ID": "example_id"}
    ) as c:
        _, second, history = await _two_turns(c, continuation=True)
    g1, g2 = server.generations
    assert [g1.path, g2.path] == ["/v1/chat/completions", "/v1/chat/completions/tokens"]
    head = [*g1.prompt_ids, *g1.completion_ids]
    assert g2.prompt_ids[: len(head)] == head  # extends the previous call, token for token
    # the bridge is the template's rendering of the tool turn and the generation prompt, nothing else
    assert server.tokenizer.decode(g2.prompt_ids, skip_special_tokens=False) == server.tokenizer.render(
        history, TOOLS
    )
    # while re-tokenizing the conversation would not have given back the model's ids
    assert server.tokenizer.chat_ids(history, TOOLS)[: len(head)] != head
    assert second.prompt_ids == g2.prompt_ids
    assert {g.headers.get("x-session-id") for g in (g1, g2)} == {"7"}


async def test_without_token_prompts_the_messages_are_sent(server: TokenServer) -> None:
    async with Client(server.url, None) as c:
        await _two_turns(c, continuation=True)
    assert [g.path for g in server.generations] == ["/v1/chat/completions"] * 2
    assert all("x-session-id" not in g.headers for g in server.generations)


async def test_request_bodies_leave_none_out_and_name_the_token_cap(server: TokenServer) -> None:
    async with Client(server.url, None, max_tokens_field="max_completion_tokens", token_prompts=True) as c:
        await _two_turns(c, continuation=True)
    for g in server.generations:
        assert "temperature" not in g.body and None not in g.body.values()
        assert g.body["max_completion_tokens"] == 64 and "max_tokens" not in g.body
    async with Client(server.url, None) as c:
        await c.chat("m", [{"role": "user", "content": "x"}], sampling_args={"max_tokens": 5, "top_p": None})
    assert server.generations[-1].body["max_tokens"] == 5 and "top_p" not in server.generations[-1].body


async def test_a_history_that_is_no_bridgeable_tail_goes_the_message_path(server: TokenServer) -> None:
    async with Client(server.url, None, token_prompts=True) as c:
        first = await c.chat("m", [{"role": "user", "content": "q"}], sampling_args=ARGS)  # type: ignore[arg-type]
        history = [{"role": "user", "content": "q"}, first.message, {"role": "assistant", "content": "more"}]
        await c.chat(
            "m",
            history,
            sampling_args=ARGS,
            continuation=Continuation([*first.prompt_ids, *first.completion_ids], 2),  # type: ignore[arg-type]
        )
    assert server.generations[-1].path == "/v1/chat/completions"
