"""A scripted ``Answer`` as the chat-completions wire format: a ``chat.completion`` object, or the
``chat.completion.chunk`` events of a streamed one, with usage counted the way a tokenizer would.

Token counts follow the usual rule of thumb (about four characters of a word per token, each punctuation
mark one) and OpenAI's accounting of a chat (three tokens per message, three more to prime the reply), so
longer prompts and replies cost more and ``max_tokens`` cuts a reply where a model would: the text is
truncated to the budget, its tool calls are dropped (they would be incomplete), and ``finish_reason`` is
``length``. Otherwise it is ``tool_calls`` when the answer calls tools, else ``stop`` (also when a
``stop`` sequence of the request cut the text).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from verifiers.clients.scripted.rules import Answer, message_text

_TOKEN = re.compile(r"\w+|[^\w\s]")
#: What OpenAI counts for each message of a chat, and for priming the assistant's reply.
TOKENS_PER_MESSAGE = 3
REPLY_PRIMING_TOKENS = 3


def _token_ends(text: str) -> Iterator[int]:
    """The end offset of each token of ``text``."""
    for m in _TOKEN.finditer(text):
        word = m.group(0)
        n = max(1, (len(word) + 3) // 4) if word[0].isalnum() or word[0] == "_" else 1
        for k in range(1, n + 1):
            yield m.start() + (len(word) * k) // n


def count_tokens(text: str) -> int:
    return sum(1 for _ in _token_ends(text))


def truncate(text: str, budget: int) -> tuple[str, int]:
    """The longest prefix of ``text`` of at most ``budget`` tokens, and its token count."""
    used, end = 0, 0
    for stop in _token_ends(text):
        if used == budget:
            return text[:end], used
        used, end = used + 1, stop
    return text, used


def prompt_tokens(body: dict[str, Any]) -> int:
    """The request's prompt tokens: every message (role, text, tool calls) and the tools' schemas."""
    total = REPLY_PRIMING_TOKENS
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        total += (
            TOKENS_PER_MESSAGE
            + count_tokens(str(message.get("role", "")))
            + count_tokens(message_text(message))
        )
        for call in message.get("tool_calls") or []:
            fn = call.get("function") or {}
            total += count_tokens(str(fn.get("name", ""))) + count_tokens(str(fn.get("arguments", "")))
    if body.get("tools"):
        total += count_tokens(json.dumps(body["tools"]))
    return total


@dataclass
class Reply:
    """One choice as the model gives it: after ``max_tokens`` and ``stop`` are applied."""

    content: str | None
    reasoning: str | None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str = "stop"
    reasoning_tokens: int = 0
    completion_tokens: int = 0


def _stop_at(text: str, stop: Any) -> tuple[str, bool]:
    stops = [stop] if isinstance(stop, str) else [s for s in stop or [] if isinstance(s, str) and s]
    cut = min((i for s in stops if (i := text.find(s)) >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


def shape(answer: Answer, body: dict[str, Any], call_ids: Iterator[str]) -> Reply:
    """``answer`` (not an error) as the model would return it for ``body``."""
    limit = body.get("max_completion_tokens") or body.get("max_tokens")
    budget = limit if isinstance(limit, int) and limit > 0 else None
    reasoning, content = answer.reasoning, answer.content
    stopped = False
    if content is not None:
        content, stopped = _stop_at(content, body.get("stop"))
    calls = [] if stopped else [c.wire(next(call_ids)) for c in answer.tool_calls or []]
    call_tokens = sum(
        count_tokens(c["function"]["name"]) + count_tokens(c["function"]["arguments"]) + TOKENS_PER_MESSAGE
        for c in calls
    )
    r_tokens, c_tokens = count_tokens(reasoning or ""), count_tokens(content or "")
    if budget is not None and r_tokens + c_tokens + call_tokens > budget:
        if reasoning is not None:
            reasoning, r_tokens = truncate(reasoning, budget)
        if content is not None:
            content, c_tokens = truncate(content, budget - r_tokens)
        # The budget is spent: on the text kept, and on the part of a tool call that was cut off.
        return Reply(content, reasoning, [], "length", r_tokens, budget)
    finish = "tool_calls" if calls else "stop"
    return Reply(content, reasoning, calls, finish, r_tokens, r_tokens + c_tokens + call_tokens)


def usage(prompt: int, replies: list[Reply]) -> dict[str, Any]:
    completion = sum(r.completion_tokens for r in replies)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": sum(r.reasoning_tokens for r in replies)},
    }


def _message(reply: Reply) -> dict[str, Any]:
    # A reply that only calls tools has content null, as OpenAI-compatible servers send it.
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.reasoning is not None:
        message["reasoning_content"] = reply.reasoning
    if reply.tool_calls:
        message["tool_calls"] = reply.tool_calls
    return message


def completion(completion_id: str, model: str, body: dict[str, Any], replies: list[Reply]) -> dict[str, Any]:
    """The ``chat.completion`` object of ``replies`` (one per choice)."""
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": "scripted",
        "choices": [
            {"index": i, "message": _message(r), "logprobs": None, "finish_reason": r.finish_reason}
            for i, r in enumerate(replies)
        ],
        "usage": usage(prompt_tokens(body), replies),
    }


def _pieces(text: str) -> list[str]:
    """Words with their trailing space: how a streamed text arrives."""
    return re.findall(r"\s*\S+\s*", text) or [text]


def chunks(
    completion_id: str, model: str, body: dict[str, Any], replies: list[Reply]
) -> Iterator[dict[str, Any]]:
    """The ``chat.completion.chunk`` events of a streamed completion: per choice its role, reasoning and
    content a word at a time, each tool call (id and name, then its arguments in two parts), the finish
    reason; then usage, when the request's ``stream_options.include_usage`` asks for it."""
    created = int(time.time())

    def chunk(choices: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        return {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": "scripted",
            "choices": choices,
            **extra,
        }

    def delta(i: int, d: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return chunk([{"index": i, "delta": d, "logprobs": None, "finish_reason": finish}])

    for i, reply in enumerate(replies):
        yield delta(i, {"role": "assistant", "content": ""})
        for piece in _pieces(reply.reasoning) if reply.reasoning else []:
            yield delta(i, {"reasoning_content": piece})
        for piece in _pieces(reply.content) if reply.content else []:
            yield delta(i, {"content": piece})
        for k, call in enumerate(reply.tool_calls):
            fn = call["function"]
            head = {
                "index": k,
                "id": call["id"],
                "type": "function",
                "function": {"name": fn["name"], "arguments": ""},
            }
            yield delta(i, {"tool_calls": [head]})
            args = fn["arguments"]
            for part in (args[: len(args) // 2], args[len(args) // 2 :]):
                if part:
                    yield delta(i, {"tool_calls": [{"index": k, "function": {"arguments": part}}]})
        yield delta(i, {}, reply.finish_reason)
    options = body.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage"):
        yield chunk([], usage=usage(prompt_tokens(body), replies))


def error_body(status: int, message: str) -> dict[str, Any]:
    """An OpenAI-style error object for ``status``."""
    kind = {
        400: "invalid_request_error",
        401: "authentication_error",
        404: "not_found_error",
        429: "rate_limit_exceeded",
    }
    return {
        "error": {
            "message": message,
            "type": kind.get(status, "server_error" if status >= 500 else "invalid_request_error"),
            "param": None,
            "code": None,
        }
    }


__all__ = ["Reply", "chunks", "completion", "count_tokens", "error_body", "prompt_tokens", "shape", "usage"]
