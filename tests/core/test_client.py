"""The model client against a real (scripted) HTTP server: happy path, retries, errors, endpoints.

Every test runs on both transports (the ``backend`` fixture: the aiohttp fast path and the ``openai`` SDK):
they must give the same ``ModelResponse``, the same errors and the same retry behaviour. The Responses API
tests run on both too. ``as_client`` / ``AsyncOpenAI`` / Azure tests are in ``test_client_openai.py``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from typing import Any, cast

import pytest

from tests.scripted_server import Reply, ScriptedServer, tool_call
from verifiers.clients import Backend, Client, Endpoint
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


@pytest.fixture(params=["aiohttp", "openai"])
def backend(request: pytest.FixtureRequest) -> Backend:
    return cast(Backend, request.param)


def fast_client(url: str | Sequence[str | Endpoint], backend: Backend, **kw: Any) -> Client:
    kw.setdefault("backoff_base", 0.01)
    kw.setdefault("max_retries", 3)
    return Client(url, backend=backend, **kw)


async def test_chat_returns_message_usage_and_sampling_args(
    scripted: ScriptedServer, backend: Backend
) -> None:
    scripted.enqueue(Reply(content="hello there", prompt_tokens=7, completion_tokens=2))
    async with fast_client(scripted.url, backend, api_key="sk-test") as c:
        r = await c.chat("my-model", MSGS, sampling_args={"temperature": 0.3, "max_tokens": 5})
    assert r.message == {"role": "assistant", "content": "hello there"}
    assert r.finish_reason == "stop"
    assert (r.prompt_tokens, r.completion_tokens) == (7, 2)
    assert (c.usage.prompt_tokens, c.usage.completion_tokens) == (7, 2)
    sent = scripted.requests[-1]
    assert sent["model"] == "my-model" and sent["temperature"] == 0.3 and sent["max_tokens"] == 5
    assert sent["messages"] == MSGS


async def test_tool_calls_pass_through(scripted: ScriptedServer, backend: Backend) -> None:
    call = tool_call("add", {"a": 1, "b": 2})
    scripted.enqueue(Reply(content=None, tool_calls=[call]))
    async with fast_client(scripted.url, backend) as c:
        r = await c.chat("m", MSGS, tools=[{"type": "function", "function": {"name": "add"}}])
    assert r.message["tool_calls"] == [call]
    assert r.finish_reason == "tool_calls"
    assert scripted.requests[-1]["tools"][0]["function"]["name"] == "add"


async def test_logprobs_and_vllm_token_ids(scripted: ScriptedServer, backend: Backend) -> None:
    scripted.enqueue(Reply(content="a b c", logprobs=True, token_ids=True, prompt_tokens=3))
    async with fast_client(scripted.url, backend) as c:
        r = await c.chat("m", MSGS)
    assert r.completion_ids == [100, 101, 102]
    assert r.completion_logprobs == [-0.5, -0.5, -0.5]
    assert r.prompt_ids == [1, 2, 3]
    assert r.turn_record()["completion_ids"] == [100, 101, 102]


async def test_plain_completions(scripted: ScriptedServer, backend: Backend) -> None:
    scripted.enqueue(Reply(content="42", logprobs=True))
    async with fast_client(scripted.url, backend) as c:
        r = await c.complete("m", "The answer is", sampling_args={"max_tokens": 3})
    assert r.text == "42"
    assert r.completion_logprobs == [-0.5]
    assert scripted.requests[-1]["prompt"] == "The answer is"


async def test_retries_5xx_and_429_then_succeeds(scripted: ScriptedServer, backend: Backend) -> None:
    scripted.enqueue(Reply(status=500), Reply(status=429), Reply(status=503), Reply(content="finally"))
    seen: list[str] = []
    async with fast_client(scripted.url, backend) as c:
        c.on_retry = lambda attempt, delay, reason: seen.append(reason)
        r = await c.chat("m", MSGS)
    assert r.text == "finally"
    assert c.stats.retries == 3 and len(seen) == 3
    assert "HTTP 500" in seen[0] and "HTTP 429" in seen[1]


async def test_retry_after_is_honoured(scripted: ScriptedServer, backend: Backend) -> None:
    scripted.enqueue(Reply(status=429, retry_after="0.4"), Reply(content="ok"))
    async with fast_client(scripted.url, backend, backoff_base=0.0) as c:
        t0 = time.monotonic()
        await c.chat("m", MSGS)
        elapsed = time.monotonic() - t0
    assert elapsed >= 0.4


async def test_exhausted_retries_raise_endpoint_unavailable(
    scripted: ScriptedServer, backend: Backend
) -> None:
    scripted.enqueue(*[Reply(status=502) for _ in range(4)])
    async with fast_client(scripted.url, backend, max_retries=3) as c:
        with pytest.raises(EndpointUnavailableError, match="HTTP 502"):
            await c.chat("m", MSGS)
    assert len(scripted.requests) == 4


async def test_garbage_body_retried_then_invalid_response(scripted: ScriptedServer, backend: Backend) -> None:
    scripted.enqueue(Reply(body=b"<html>bad gateway</html>"), Reply(content="ok"))
    async with fast_client(scripted.url, backend) as c:
        assert (await c.chat("m", MSGS)).text == "ok"
        scripted.enqueue(*[Reply(body=b"{not json") for _ in range(4)])
        with pytest.raises(InvalidResponseError):
            await c.chat("m", MSGS)


async def test_json_that_is_not_a_completion_is_a_model_error(
    scripted: ScriptedServer, backend: Backend
) -> None:
    scripted.enqueue(Reply(body=b'{"hello": 1}'))
    async with fast_client(scripted.url, backend) as c:
        with pytest.raises(InvalidResponseError, match="choices"):
            await c.chat("m", MSGS)


async def test_empty_message_is_a_model_error(scripted: ScriptedServer, backend: Backend) -> None:
    scripted.enqueue(Reply(content=None), Reply(body=b'{"choices": []}'))
    async with fast_client(scripted.url, backend) as c:
        with pytest.raises(EmptyResponseError):
            await c.chat("m", MSGS)
        with pytest.raises(EmptyResponseError):
            await c.chat("m", MSGS)


async def test_dropped_connection_is_retried(scripted: ScriptedServer, backend: Backend) -> None:
    scripted.enqueue(Reply(drop=True), Reply(drop=True), Reply(content="back"))
    async with fast_client(scripted.url, backend) as c:
        assert (await c.chat("m", MSGS)).text == "back"
        assert c.stats.retries == 2


async def test_request_timeout(scripted: ScriptedServer, backend: Backend) -> None:
    scripted.hold_after = 0  # never answers while the test runs: only the 0.2 s bound ends the call
    async with fast_client(scripted.url, backend, timeout=0.2, max_retries=1) as c, asyncio.timeout(120):
        with pytest.raises(RequestTimeoutError):
            await c.chat("m", MSGS)


async def test_auth_and_bad_request_are_not_retried(scripted: ScriptedServer, backend: Backend) -> None:
    scripted.enqueue(Reply(status=401, error_message="invalid key"))
    async with fast_client(scripted.url, backend) as c:
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


async def test_unreachable_endpoint(backend: Backend) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once the socket closes
    async with fast_client(f"http://127.0.0.1:{port}/v1", backend, max_retries=2) as c:
        with pytest.raises(EndpointUnavailableError, match="connection error"):
            await c.chat("m", MSGS)


async def test_endpoints_round_robin_and_model_override(backend: Backend) -> None:
    with ScriptedServer(default="a") as a, ScriptedServer(default="b") as b:
        c = fast_client([Endpoint(a.url, model="replica-model"), b.url], backend)
        try:
            firsts = [c.next_endpoint() for _ in range(4)]
            assert firsts == [0, 1, 0, 1]
            texts = [(await c.chat("m", MSGS, endpoint=i)).text for i in (0, 1, 0)]
        finally:
            await c.aclose()
    assert texts == ["a", "b", "a"]
    assert [r["model"] for r in a.requests] == ["replica-model", "replica-model"]
    assert [r["model"] for r in b.requests] == ["m"]


async def test_session_survives_a_new_event_loop(scripted: ScriptedServer, backend: Backend) -> None:
    c = fast_client(scripted.url, backend)
    await c.chat("m", MSGS)

    def other_loop() -> str:
        async def go() -> str:
            try:
                return (await c.chat("m", MSGS)).text
            finally:
                await c.aclose()

        return asyncio.run(go())

    assert await asyncio.to_thread(other_loop) == "ok"


# --- both transports really are in use, and send the same body ---------------------------------------
async def test_the_backend_asked_for_sends_the_requests(scripted: ScriptedServer, backend: Backend) -> None:
    async with fast_client(scripted.url, backend) as c:
        assert c.backend == backend
        await c.chat("m", MSGS)
    agent = scripted.request_meta[-1]["headers"]["user-agent"]
    assert ("OpenAI" in agent) == (backend == "openai"), agent


async def test_extra_body_is_merged_into_the_request(scripted: ScriptedServer, backend: Backend) -> None:
    args = {"temperature": 0.5, "extra_body": {"top_k": 4, "return_token_ids": True}}
    async with fast_client(scripted.url, backend) as c:
        await c.chat("m", MSGS, sampling_args=args)  # type: ignore[arg-type]
        await c.complete("m", "x", sampling_args=args)  # type: ignore[arg-type]
    for sent in scripted.requests:
        assert sent["temperature"] == 0.5 and sent["top_k"] == 4 and sent["return_token_ids"] is True
        assert "extra_body" not in sent


async def test_vllm_token_id_fields_and_reasoning(scripted: ScriptedServer, backend: Backend) -> None:
    body = {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "prompt_token_ids": [5, 6],
        "choices": [
            {
                "index": 0,
                "finish_reason": "length",
                "token_ids": [7, 8, 9],
                "message": {"role": "assistant", "content": "abc", "reasoning_content": "hmm"},
            }
        ],
        "usage": {"prompt_tokens": 2, "completion_tokens": 3, "total_tokens": 5},
    }
    scripted.enqueue(Reply(body=json.dumps(body).encode()))
    async with fast_client(scripted.url, backend) as c:
        r = await c.chat("m", MSGS)
    assert (r.prompt_ids, r.completion_ids, r.finish_reason) == ([5, 6], [7, 8, 9], "length")
    assert r.message == {"role": "assistant", "content": "abc", "reasoning_content": "hmm"}


async def test_list_models(scripted: ScriptedServer, backend: Backend) -> None:
    async with fast_client(scripted.url, backend) as c:
        assert await c.list_models() == ["scripted"]


async def test_keyless_endpoint_never_sends_the_environment_key(
    scripted: ScriptedServer, backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The SDK reads OPENAI_API_KEY when given no key; a local server must not receive it.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-this-server")
    async with fast_client(scripted.url, backend) as c:
        await c.chat("m", MSGS)
    assert "sk-not-for-this-server" not in str(scripted.request_meta[-1]["headers"])


async def test_with_options_keeps_the_backend(scripted: ScriptedServer, backend: Backend) -> None:
    base = fast_client(scripted.url, backend, api_key="sk-1", api="responses")
    # 120 s: an option to see carried over, not a bound a loaded machine's first request must meet.
    async with base.with_options(max_retries=0, timeout=120.0) as probe:
        assert (probe.backend, probe.api, probe.max_retries, probe.timeout) == (
            backend,
            "responses",
            0,
            120.0,
        )
        await probe.chat("m", MSGS)
    await base.aclose()
    assert scripted.request_meta[-1]["path"] == "/v1/responses"
    assert scripted.request_meta[-1]["headers"]["authorization"] == "Bearer sk-1"


# --- the Responses API (api="responses") -------------------------------------------------------------
async def test_responses_api_text_usage_and_request(scripted: ScriptedServer, backend: Backend) -> None:
    scripted.enqueue(Reply(content="hello there", prompt_tokens=7, completion_tokens=2))
    msgs = [{"role": "system", "content": "be brief"}, *MSGS]
    args = {"temperature": 0.3, "max_tokens": 5, "extra_body": {"top_k": 4}}
    async with fast_client(scripted.url, backend, api="responses") as c:
        r = await c.chat("my-model", msgs, sampling_args=args)  # type: ignore[arg-type]
    assert r.message == {"role": "assistant", "content": "hello there"}
    assert r.finish_reason == "stop"
    assert (r.prompt_tokens, r.completion_tokens) == (7, 2)
    assert (c.usage.prompt_tokens, c.usage.completion_tokens) == (7, 2)
    assert scripted.request_meta[-1]["path"] == "/v1/responses"
    sent = scripted.requests[-1]
    assert sent["model"] == "my-model" and sent["input"] == msgs
    assert sent["max_output_tokens"] == 5 and "max_tokens" not in sent
    assert sent["temperature"] == 0.3 and sent["top_k"] == 4 and sent["store"] is False


async def test_responses_api_tool_calls_round_trip(scripted: ScriptedServer, backend: Backend) -> None:
    call = tool_call("add", {"a": 1, "b": 2}, call_id="call_1")
    scripted.enqueue(Reply(content=None, tool_calls=[call]), Reply(content="3"))
    params = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}
    tools = [{"type": "function", "function": {"name": "add", "description": "adds", "parameters": params}}]
    async with fast_client(scripted.url, backend, api="responses") as c:
        r = await c.chat("m", MSGS, tools=tools, sampling_args={"tool_choice": "auto"})
        assert r.message == {"role": "assistant", "content": "", "tool_calls": [call]}
        assert r.finish_reason == "tool_calls"
        convo = [*MSGS, r.message, {"role": "tool", "tool_call_id": "call_1", "content": "3"}]
        r2 = await c.chat("m", convo, tools=tools)
    assert (r2.text, r2.finish_reason) == ("3", "stop")
    first, second = scripted.requests
    assert first["tools"] == [
        {"type": "function", "name": "add", "description": "adds", "parameters": params}
    ]
    assert first["tool_choice"] == "auto"
    assert second["input"] == [
        *MSGS,
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "add",
            "arguments": call["function"]["arguments"],
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "3"},
    ]


async def test_responses_api_incomplete_status_is_the_finish_reason(
    scripted: ScriptedServer, backend: Backend
) -> None:
    scripted.enqueue(
        Reply(content="cut", finish_reason="length"), Reply(content="no", finish_reason="content_filter")
    )
    async with fast_client(scripted.url, backend, api="responses") as c:
        assert (await c.chat("m", MSGS)).finish_reason == "length"
        assert (await c.chat("m", MSGS)).finish_reason == "content_filter"


async def test_responses_api_logprobs_token_ids_and_reasoning(
    scripted: ScriptedServer, backend: Backend
) -> None:
    scripted.enqueue(
        Reply(content="a b c", logprobs=True, token_ids=True, prompt_tokens=3, reasoning="think")
    )
    async with fast_client(scripted.url, backend, api="responses") as c:
        r = await c.chat("m", MSGS, sampling_args={"logprobs": True, "top_logprobs": 0})
    assert scripted.requests[-1]["include"] == ["message.output_text.logprobs"]
    assert "logprobs" not in scripted.requests[-1]
    assert r.completion_ids == [100, 101, 102]
    assert r.completion_logprobs == [-0.5, -0.5, -0.5]
    assert r.prompt_ids == [1, 2, 3]
    assert r.message["reasoning_content"] == "think"


async def test_responses_api_errors_match_chat(scripted: ScriptedServer, backend: Backend) -> None:
    failed = {
        "id": "r",
        "object": "response",
        "status": "failed",
        "output": [],
        "error": {"code": "x", "message": "y"},
    }
    scripted.enqueue(
        Reply(status=400, error_message="maximum context length is 2048 tokens"),
        Reply(status=503),
        Reply(content="after retry"),
        Reply(content=None),
        Reply(body=b'{"hello": 1}'),
        Reply(body=json.dumps(failed).encode()),
    )
    async with fast_client(scripted.url, backend, api="responses") as c:
        with pytest.raises(OverlongPromptError):
            await c.chat("m", MSGS)
        assert (await c.chat("m", MSGS)).text == "after retry"
        with pytest.raises(EmptyResponseError):
            await c.chat("m", MSGS)
        with pytest.raises(InvalidResponseError, match="output"):
            await c.chat("m", MSGS)
        with pytest.raises(InvalidResponseError, match="failed"):
            await c.chat("m", MSGS)
        with pytest.raises(ValueError, match="n must be 1"):
            await c.chat("m", MSGS, sampling_args={"n": 2})


async def test_plain_completions_ignore_the_chat_api(scripted: ScriptedServer, backend: Backend) -> None:
    async with fast_client(scripted.url, backend, api="responses") as c:
        assert (await c.complete("m", "x")).text == "ok"
    assert scripted.request_meta[-1]["path"] == "/v1/completions"


# --- bounds on a silent server ---------------------------------------------------------------------
async def test_a_silent_server_costs_the_total_timeout_not_attempts_times_timeout(
    scripted: ScriptedServer, backend: Backend
) -> None:
    scripted.hold_after = 0  # accepts, never answers while the test runs
    # One attempt may take 10 minutes, six are allowed: only the 0.6 s total bound ends the call before
    # the 2-minute guard (which would fail the test with a plain TimeoutError).
    async with fast_client(scripted.url, backend, max_retries=5, timeout=600.0, total_timeout=0.6) as c:
        async with asyncio.timeout(120):
            with pytest.raises(RequestTimeoutError, match=r"total timeout of 0\.6s"):
                await c.chat("m", MSGS)
    assert c.stats.waiting == {}


async def test_a_request_counts_as_waiting_until_it_is_answered(
    scripted: ScriptedServer, backend: Backend
) -> None:
    """What the progress line's "requests waiting > 30 s" counts: requests sent and not yet answered."""
    scripted.hold_after = 0
    async with fast_client(scripted.url, backend) as c:
        call = asyncio.create_task(c.chat("m", MSGS))
        await asyncio.to_thread(scripted.wait_for_requests, 1)
        async with asyncio.timeout(120):
            # True once 0.2 s have passed with the request held: a clock to wait out, not an event.
            while c.stats.waiting_longer_than(0.2) != 1:  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        assert c.stats.waiting_longer_than(3600) == 0
        scripted.release()
        assert (await call).text == "ok"
    assert c.stats.waiting == {}


async def test_the_first_byte_bound_applies_per_attempt(scripted: ScriptedServer, backend: Backend) -> None:
    # The first attempt is never answered; the retry, answered at once, has a fresh 3 s for its first byte.
    scripted.enqueue(Reply(hold=True), Reply(content="late but fine"))
    async with fast_client(scripted.url, backend, max_retries=1, read_timeout=3.0) as c:
        r = await c.chat("m", MSGS)
    assert r.text == "late but fine" and c.stats.retries == 1


def test_default_bounds_are_sane() -> None:
    from verifiers.clients import client as mod

    c = Client("http://127.0.0.1:9/v1")
    assert (c.total_timeout, c.read_timeout) == (mod.DEFAULT_TOTAL_TIMEOUT, mod.DEFAULT_READ_TIMEOUT)
    assert mod.DEFAULT_CONNECT_TIMEOUT <= 30
    # A silent server costs at most the total bound, far below (attempts x per-attempt bound) = 1 h.
    assert c.total_timeout is not None and c.total_timeout <= 900 < (c.max_retries + 1) * c.timeout
