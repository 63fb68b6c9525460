"""The scripted model (verifiers.clients.scripted): its rules file, and its real HTTP server as the SDK's
client and the openai SDK see it — content, tool calls (parallel too), reasoning, errors, delays,
streaming, usage and finish reasons."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from verifiers.clients import Client
from verifiers.clients.scripted import RulesError, Script, load_script, parse_script, scripted_app
from verifiers.clients.scripted.completions import count_tokens, truncate
from verifiers.errors import BadRequestError, InfraError

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two integers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            },
        },
    }
]

RULES: dict[str, Any] = {
    "default": "I do not know.",
    "rules": [
        {
            "name": "one call",
            "match": "2 + 3",
            "tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}],
        },
        {"tool": "add", "tool_result": {"equals": "5"}, "reasoning": "add said 5.", "content": "It is 5."},
        {
            "match": {"regex": r"\(1 \+ 2\) \* \(3 \+ 4\)"},
            "tool_calls": [
                {"name": "add", "arguments": {"a": 1, "b": 2}},
                {"name": "add", "arguments": {"a": 3, "b": 4}, "id": "call_mine"},
            ],
        },
        {
            "name": "flaky",
            "match": "flaky",
            "times": 1,
            "error": {"status": 429, "message": "slow down", "retry_after": 0},
        },
        {"match": "flaky", "content": "fine now"},
        {"match": "broken", "error": {"status": 500, "message": "scripted outage"}},
        {"match": "slow", "delay": 0.4, "content": "finally"},
        {"match": "long", "content": " ".join(f"word{i}" for i in range(50))},
        {"match": "raw", "tool_calls": [{"name": "add", "arguments": "{not json"}]},
        {"role": "tool", "content": "a tool said something"},
    ],
}


def user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


# --- the rules file ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("data", "needles"),
    [
        (
            {"rules": [{"match": "x", "content": "y"}, {"name": "add", "mach": "x", "content": "y"}]},
            ["rule 2 ('add')", "unknown field 'mach'", "did you mean 'match'"],
        ),
        (
            {"rules": [{"match": {"regex": "("}, "content": "y"}]},
            ["rule 1", "match.regex", "not a regular expression"],
        ),
        ({"rules": [{"match": "x"}]}, ["rule 1", "nothing to answer"]),
        (
            {"rules": [{"content": "a", "error": {"status": 429}}]},
            ["rule 1", "an error answer has no content"],
        ),
        (
            {"rules": [{"content": "a"}, {"tool_calls": [{"arguments": {}}]}]},
            ["rule 2", "tool_calls[0].name", "required"],
        ),
        (
            {"rules": [{"tool_calls": [{"name": "f", "arguments": 3}]}]},
            ["rule 1", "tool_calls[0].arguments", "table of arguments"],
        ),
        ({"rules": [{"content": "a", "error": {"status": 200}}]}, ["rule 1", "error.status", "400"]),
        ({"rules": [{"role": "assistant", "content": "a"}]}, ["rule 1", "role", "'user' or 'tool'"]),
        ({"rules": [{"times": 0, "content": "a"}]}, ["rule 1", "times"]),
        ({"default": 4}, ["default", "reply text"]),
        ({"rulez": []}, ["unknown field 'rulez'", "did you mean 'rules'"]),
    ],
)
def test_a_bad_rule_is_one_line_naming_the_rule_and_the_field(
    data: dict[str, Any], needles: list[str]
) -> None:
    with pytest.raises(RulesError) as info:
        parse_script(data, "rules.toml")
    message = str(info.value)
    assert "\n" not in message and message.startswith("rules.toml: ")
    for needle in needles:
        assert needle in message, message


def test_rules_files_are_toml_or_json(tmp_path: Path) -> None:
    toml = tmp_path / "r.toml"
    toml.write_text(
        'default = "no"\n\n[[rules]]\nmatch = "hi"\ntool_calls = [{ name = "add", arguments = { a = 1 } }]\n'
    )
    script = load_script(toml)
    assert script.calls_tools and script.answer(user("hi")).tool_calls is not None
    as_json = tmp_path / "r.json"
    as_json.write_text(json.dumps({"default": "text", "rules": [{"match": "2+2", "content": "4"}]}))
    assert load_script(as_json).answer(user("what is 2+2")).content == "4"
    assert not load_script(as_json).calls_tools
    for path, needle in [
        (tmp_path / "r.yaml", "is .toml or .json"),
        (tmp_path / "missing.toml", "no rules file at"),
    ]:
        path.write_text("x") if path.suffix == ".yaml" else None
        with pytest.raises(RulesError, match=needle):
            load_script(path)
    bad = tmp_path / "bad.toml"
    bad.write_text("[[rules]\n")
    with pytest.raises(RulesError, match="not valid TOML"):
        load_script(bad)
    bad_json = tmp_path / "bad.json"
    bad_json.write_text('{"rules": [}')
    with pytest.raises(RulesError, match="line 1, column"):
        load_script(bad_json)


def test_rules_match_in_order_with_default_and_times() -> None:
    script = parse_script(RULES)
    assert script.pick(user("what is 2 + 3?"))[0] == "rule 1 ('one call')"
    called = [
        *user("what is 2 + 3?"),
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "5"},
    ]
    assert script.pick(called)[0] == "rule 2"
    # The same result from another tool: rule 2 wants add's; the role filter of the last rule matches.
    other = [*called[:1], {**called[1], "tool_calls": [{"id": "c1", "function": {"name": "sub"}}]}, called[2]]
    assert script.pick(other)[1].content == "a tool said something"
    # times = 1: the 429 once, then the next rule that matches.
    assert script.pick(user("flaky"))[0] == "rule 4 ('flaky')"
    assert script.pick(user("flaky"))[1].content == "fine now"
    assert script.pick(user("anything else")) == ("default", script.default)
    # The last user or tool message is what `match` reads, not an older one.
    assert (
        script.pick([*user("2 + 3"), {"role": "assistant", "content": "?"}, *user("hello")])[0] == "default"
    )
    # No rule and no default: an HTTP 400 that says so.
    label, answer = Script().pick(user("zzz"))
    assert label == "no rule" and answer.error is not None and answer.error.status == 400
    assert "no rule matches the last message 'zzz'" in answer.error.message


def test_token_counts_grow_with_the_text() -> None:
    assert count_tokens("") == 0
    assert count_tokens("hello, world") == 5  # hello (2) , (1) world (2)
    assert count_tokens("a " * 10) == 10
    text = "one two three four"
    cut, used = truncate(text, 2)
    assert (cut, used) == ("one two", 2)
    assert truncate(text, 100) == (text, 5)  # "three" is two tokens


# --- the server, through real clients ------------------------------------------------------------------
@pytest.fixture
async def stub() -> AsyncIterator[str]:
    runner = web.AppRunner(scripted_app(parse_script(RULES), model_name="stub-model"), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    port = runner.addresses[0][1]
    yield f"http://127.0.0.1:{port}/v1"
    await runner.cleanup()


async def test_a_tool_call_then_the_answer_from_its_result(stub: str) -> None:
    async with Client(stub) as client:
        first = await client.chat("m", user("What is 2 + 3?"), tools=TOOLS)
        assert first.finish_reason == "tool_calls"
        assert (
            first.message["content"] == ""
        )  # null on the wire (the openai SDK test sees it); the client gives ""
        (call,) = first.message["tool_calls"]
        assert call["function"] == {"name": "add", "arguments": '{"a": 2, "b": 3}'}
        messages = [
            *user("What is 2 + 3?"),
            first.message,
            {"role": "tool", "tool_call_id": call["id"], "content": "5"},
        ]
        second = await client.chat("m", messages, tools=TOOLS)
    assert second.finish_reason == "stop"
    assert second.message["content"] == "It is 5."
    assert second.message["reasoning_content"] == "add said 5."
    # Usage as a tokenizer would count it: the longer prompt costs more, the reasoning is counted.
    assert second.prompt_tokens > first.prompt_tokens > count_tokens("What is 2 + 3?")
    assert first.completion_tokens > 0
    assert second.completion_tokens == count_tokens("It is 5.") + count_tokens("add said 5.")


async def test_parallel_tool_calls_have_distinct_ids(stub: str) -> None:
    async with Client(stub) as client:
        resp = await client.chat("m", user("What is (1 + 2) * (3 + 4)?"), tools=TOOLS)
        again = await client.chat("m", user("What is (1 + 2) * (3 + 4)?"), tools=TOOLS)
    assert resp.finish_reason == "tool_calls"
    calls = resp.message["tool_calls"]
    assert [json.loads(c["function"]["arguments"]) for c in calls] == [{"a": 1, "b": 2}, {"a": 3, "b": 4}]
    assert calls[1]["id"] == "call_mine"
    assert calls[0]["id"] != again.message["tool_calls"][0]["id"]  # unique over the server's life


async def test_an_error_rule_is_an_http_error_and_times_lets_a_retry_through(stub: str) -> None:
    async with Client(stub, max_retries=2, backoff_base=0.01) as client:
        resp = await client.chat("m", user("flaky"))  # a 429 (Retry-After: 0), retried: the next rule
        assert resp.message["content"] == "fine now"
        assert client.stats.retries >= 1
    async with Client(stub, max_retries=0) as client:
        with pytest.raises(InfraError, match="HTTP 500: scripted outage"):
            await client.chat("m", user("broken"))


async def test_a_delay_holds_the_answer(stub: str) -> None:
    async with Client(stub) as client:
        started = time.monotonic()
        resp = await client.chat("m", user("slow"))
    assert resp.message["content"] == "finally"
    assert time.monotonic() - started >= 0.4  # the server waited at least the rule's delay


async def test_max_tokens_cuts_the_reply_with_finish_reason_length(stub: str) -> None:
    async with Client(stub) as client:
        resp = await client.chat("m", user("long"), sampling_args={"max_tokens": 5})
        raw = await client.chat("m", user("raw"), sampling_args={"max_tokens": 500})
    assert resp.finish_reason == "length"
    assert resp.completion_tokens == 5
    assert resp.message["content"] == "word0 word1 word2 word3 word4"[: len(resp.message["content"])]
    # Raw arguments go out as written, malformed JSON included.
    assert raw.message["tool_calls"][0]["function"]["arguments"] == "{not json"


async def test_streaming_through_the_openai_sdk_gives_the_same_answer(stub: str) -> None:
    from openai import AsyncOpenAI

    sdk = AsyncOpenAI(base_url=stub, api_key="unused")
    try:
        whole = await sdk.chat.completions.create(
            model="m", messages=user("What is (1 + 2) * (3 + 4)?"), tools=TOOLS
        )  # type: ignore[arg-type]
        stream = await sdk.chat.completions.create(
            model="m",
            messages=user("What is (1 + 2) * (3 + 4)?"),  # type: ignore[arg-type]
            tools=TOOLS,  # type: ignore[arg-type]
            stream=True,
            stream_options={"include_usage": True},
        )
        args: dict[int, str] = {}
        names: dict[int, str] = {}
        finish, usage = None, None
        async for chunk in stream:
            if chunk.usage is not None:
                usage = chunk.usage
            for choice in chunk.choices:
                finish = choice.finish_reason or finish
                for d in choice.delta.tool_calls or []:
                    args[d.index] = args.get(d.index, "") + (d.function.arguments or "" if d.function else "")
                    if d.function and d.function.name:
                        names[d.index] = d.function.name
        text = ""
        streamed = await sdk.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "long"}], stream=True
        )
        async for chunk in streamed:
            text += "".join(c.delta.content or "" for c in chunk.choices)
    finally:
        await sdk.close()
    assert whole.choices[0].finish_reason == finish == "tool_calls"
    assert whole.choices[0].message.content is None  # a reply that only calls tools: content null
    assert [names[i] for i in sorted(names)] == ["add", "add"]
    assert [json.loads(args[i]) for i in sorted(args)] == [{"a": 1, "b": 2}, {"a": 3, "b": 4}]
    assert usage is not None and whole.usage is not None
    assert usage.prompt_tokens == whole.usage.prompt_tokens
    assert usage.completion_tokens == whole.usage.completion_tokens
    assert text == " ".join(f"word{i}" for i in range(50))


async def test_no_matching_rule_and_no_default_is_a_400_saying_so() -> None:
    runner = web.AppRunner(scripted_app(parse_script({"rules": [{"match": "hi", "content": "hello"}]})))
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        async with Client(f"http://127.0.0.1:{runner.addresses[0][1]}/v1", max_retries=0) as client:
            assert (await client.chat("m", user("hi"))).message["content"] == "hello"
            with pytest.raises(BadRequestError, match="no rule matches the last message 'zzz'"):
                await client.chat("m", user("zzz"))
    finally:
        await runner.cleanup()


async def test_models_and_other_routes(stub: str) -> None:
    async with Client(stub) as client:
        assert await client.list_models() == ["stub-model"]
    import aiohttp

    async with aiohttp.ClientSession() as session:
        async with session.post(f"{stub}/completions", json={"prompt": "x"}) as resp:
            assert resp.status == 404
            assert "serves POST /v1/chat/completions" in (await resp.json())["error"]["message"]
        async with session.post(f"{stub}/chat/completions", json={"model": "m", "messages": []}) as resp:
            assert resp.status == 400
            assert "'messages' must be a non-empty list" in (await resp.json())["error"]["message"]
