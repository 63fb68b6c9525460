"""The model client against a real (scripted) HTTP server: happy path, retries, errors, endpoints."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.scripted_server import Reply, ScriptedServer, tool_call
from verifiers.clients import Client, Endpoint
from verifiers.errors import (
    AuthenticationError,
    BadRequestError,
    EmptyResponseError,
    EndpointUnavailableError,
    InvalidResponseError,
    OverlongPromptError,
    RequestTimeoutError,
)

MSGS = [{"role": "user", "content": "hi"}]


def fast_client(url: str | list[str], **kw) -> Client:
    kw.setdefault("backoff_base", 0.01)
    kw.setdefault("max_retries", 3)
    return Client(url, **kw)


async def test_chat_returns_message_usage_and_sampling_args(scripted: ScriptedServer) -> None:
    scripted.enqueue(Reply(content="hello there", prompt_tokens=7, completion_tokens=2))
    async with fast_client(scripted.url, api_key="sk-test") as c:
        r = await c.chat("my-model", MSGS, sampling_args={"temperature": 0.3, "max_tokens": 5})
    assert r.message == {"role": "assistant", "content": "hello there"}
    assert r.finish_reason == "stop"
    assert (r.prompt_tokens, r.completion_tokens) == (7, 2)
    assert c.usage.as_dict() == {"prompt_tokens": 7, "completion_tokens": 2}
    sent = scripted.requests[-1]
    assert sent["model"] == "my-model" and sent["temperature"] == 0.3 and sent["max_tokens"] == 5
    assert sent["messages"] == MSGS


async def test_tool_calls_pass_through(scripted: ScriptedServer) -> None:
    call = tool_call("add", {"a": 1, "b": 2})
    scripted.enqueue(Reply(content=None, tool_calls=[call]))
    async with fast_client(scripted.url) as c:
        r = await c.chat("m", MSGS, tools=[{"type": "function", "function": {"name": "add"}}])
    assert r.message["tool_calls"] == [call]
    assert r.finish_reason == "tool_calls"
    assert scripted.requests[-1]["tools"][0]["function"]["name"] == "add"


async def test_logprobs_and_vllm_token_ids(scripted: ScriptedServer) -> None:
    scripted.enqueue(Reply(content="a b c", logprobs=True, token_ids=True, prompt_tokens=3))
    async with fast_client(scripted.url) as c:
        r = await c.chat("m", MSGS)
    assert r.completion_ids == [100, 101, 102]
    assert r.completion_logprobs == [-0.5, -0.5, -0.5]
    assert r.prompt_ids == [1, 2, 3]
    assert r.turn_record()["completion_ids"] == [100, 101, 102]


async def test_plain_completions(scripted: ScriptedServer) -> None:
    scripted.enqueue(Reply(content="42", logprobs=True))
    async with fast_client(scripted.url) as c:
        r = await c.complete("m", "The answer is", sampling_args={"max_tokens": 3})
    assert r.text == "42"
    assert r.completion_logprobs == [-0.5]
    assert scripted.requests[-1]["prompt"] == "The answer is"


async def test_retries_5xx_and_429_then_succeeds(scripted: ScriptedServer) -> None:
    scripted.enqueue(Reply(status=500), Reply(status=429), Reply(status=503), Reply(content="finally"))
    seen: list[str] = []
    async with fast_client(scripted.url) as c:
        c.on_retry = lambda attempt, delay, reason: seen.append(reason)
        r = await c.chat("m", MSGS)
    assert r.text == "finally"
    assert c.stats.retries == 3 and len(seen) == 3
    assert "HTTP 500" in seen[0] and "HTTP 429" in seen[1]


async def test_retry_after_is_honoured(scripted: ScriptedServer) -> None:
    scripted.enqueue(Reply(status=429, retry_after="0.4"), Reply(content="ok"))
    async with fast_client(scripted.url, backoff_base=0.0) as c:
        t0 = time.monotonic()
        await c.chat("m", MSGS)
        elapsed = time.monotonic() - t0
    assert elapsed >= 0.4


async def test_exhausted_retries_raise_endpoint_unavailable(scripted: ScriptedServer) -> None:
    scripted.enqueue(*[Reply(status=502) for _ in range(4)])
    async with fast_client(scripted.url, max_retries=3) as c:
        with pytest.raises(EndpointUnavailableError, match="HTTP 502"):
            await c.chat("m", MSGS)
    assert len(scripted.requests) == 4


async def test_garbage_body_retried_then_invalid_response(scripted: ScriptedServer) -> None:
    scripted.enqueue(Reply(body=b"<html>bad gateway</html>"), Reply(content="ok"))
    async with fast_client(scripted.url) as c:
        assert (await c.chat("m", MSGS)).text == "ok"
        scripted.enqueue(*[Reply(body=b"{not json") for _ in range(4)])
        with pytest.raises(InvalidResponseError):
            await c.chat("m", MSGS)


async def test_json_that_is_not_a_completion_is_a_model_error(scripted: ScriptedServer) -> None:
    scripted.enqueue(Reply(body=b'{"hello": 1}'))
    async with fast_client(scripted.url) as c:
        with pytest.raises(InvalidResponseError, match="choices"):
            await c.chat("m", MSGS)


async def test_empty_message_is_a_model_error(scripted: ScriptedServer) -> None:
    scripted.enqueue(Reply(content=None), Reply(body=b'{"choices": []}'))
    async with fast_client(scripted.url) as c:
        with pytest.raises(EmptyResponseError):
            await c.chat("m", MSGS)
        with pytest.raises(EmptyResponseError):
            await c.chat("m", MSGS)


async def test_dropped_connection_is_retried(scripted: ScriptedServer) -> None:
    scripted.enqueue(Reply(drop=True), Reply(drop=True), Reply(content="back"))
    async with fast_client(scripted.url) as c:
        assert (await c.chat("m", MSGS)).text == "back"
        assert c.stats.retries == 2


async def test_request_timeout(scripted: ScriptedServer) -> None:
    scripted.enqueue(*[Reply(delay=1.0) for _ in range(2)])
    async with fast_client(scripted.url, timeout=0.2, max_retries=1) as c:
        t0 = time.monotonic()
        with pytest.raises(RequestTimeoutError):
            await c.chat("m", MSGS)
        assert time.monotonic() - t0 < 1.0


async def test_auth_and_bad_request_are_not_retried(scripted: ScriptedServer) -> None:
    scripted.enqueue(Reply(status=401, error_message="invalid key"))
    async with fast_client(scripted.url) as c:
        with pytest.raises(AuthenticationError, match="API key"):
            await c.chat("m", MSGS)
        scripted.enqueue(Reply(status=404, error_message="model nope not found"))
        with pytest.raises(BadRequestError, match="model name"):
            await c.chat("nope", MSGS)
        scripted.enqueue(
            Reply(status=400, error_message="This model's maximum context length is 2048 tokens")
        )
        with pytest.raises(OverlongPromptError):
            await c.chat("m", MSGS)
    assert len(scripted.requests) == 3


async def test_unreachable_endpoint() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once the socket closes
    async with fast_client(f"http://127.0.0.1:{port}/v1", max_retries=2) as c:
        with pytest.raises(EndpointUnavailableError, match="connection error"):
            await c.chat("m", MSGS)


async def test_endpoints_round_robin_and_model_override() -> None:
    with ScriptedServer(default="a") as a, ScriptedServer(default="b") as b:
        c = fast_client([Endpoint(a.url, model="replica-model"), b.url])
        try:
            firsts = [c.next_endpoint() for _ in range(4)]
            assert firsts == [0, 1, 0, 1]
            texts = [(await c.chat("m", MSGS, endpoint=i)).text for i in (0, 1, 0)]
        finally:
            await c.aclose()
    assert texts == ["a", "b", "a"]
    assert [r["model"] for r in a.requests] == ["replica-model", "replica-model"]
    assert [r["model"] for r in b.requests] == ["m"]


async def test_session_survives_a_new_event_loop(scripted: ScriptedServer) -> None:
    c = fast_client(scripted.url)
    await c.chat("m", MSGS)

    def other_loop() -> str:
        async def go() -> str:
            try:
                return (await c.chat("m", MSGS)).text
            finally:
                await c.aclose()

        return asyncio.run(go())

    assert await asyncio.to_thread(other_loop) == "ok"
