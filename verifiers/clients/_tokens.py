"""Token-in, token-out for multi-turn chats: the next prompt as token ids, never re-tokenized.

A conversation's next request is the previous call's prompt + completion ids (exactly what the model was
given and produced) followed by the chat template's tokens for the messages the environment added since
(tool results, a user turn) and the generation prompt. vLLM serves such prompts at
``/chat/completions/tokens`` (``{"tokens": [...], "messages": ..., ...}``); its ``/tokenize`` gives the
template's tokens. This is what the reference SDK's ``openai_chat_completions_token`` client does (what
prime-rl's orchestrator selects by default, ``use_token_client = true``), and the same rules apply:

- only a tail of environment messages can be bridged: tool messages, optionally followed by one user
  message; anything else (a rewritten history, an assistant message) goes the message path;
- the bridge is the template's rendering of ``[dummy assistant, *tail]`` (with the generation prompt)
  minus that of ``[dummy assistant]`` alone, keeping the tokens the template puts after the assistant's
  stop token (e.g. a newline) since the model's completion ends at the stop token itself; a dummy
  assistant (with tool calls of the tail's ids, else content ``"x"``) keeps template rules that depend on
  the last assistant message out of the bridge;
- when ``/tokenize`` fails or the two renderings do not share their prefix, the request goes the message
  path (``None`` here).

The caller guarantees the continuation ids end with a complete completion (not one cut at ``max_tokens``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from verifiers.errors import VerifiersError


@dataclass(frozen=True, slots=True)
class Continuation:
    """Where a conversation stands in tokens: the previous call's ``prompt_ids + completion_ids`` and the
    number of leading request messages they cover (the previous request's messages and its reply)."""

    token_ids: Sequence[int]
    messages: int


def _role(message: Any) -> Any:
    return message.get("role") if isinstance(message, dict) else None


def bridgeable(tail: Sequence[Any]) -> bool:
    """Whether ``tail`` is what an environment adds between two model calls: tool messages, then at most
    one user message."""
    if not tail:
        return False
    return all(_role(m) == "tool" for m in tail[:-1]) and _role(tail[-1]) in ("tool", "user")


def _dummy_assistant(tail: Sequence[Any]) -> dict[str, Any]:
    ids = []
    for m in tail:
        if _role(m) != "tool":
            break
        if m.get("tool_call_id"):
            ids.append(m["tool_call_id"])
    if ids:
        calls = [{"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in ids]
        return {"role": "assistant", "content": None, "tool_calls": calls}
    return {"role": "assistant", "content": "x"}


def _token_list(body: Any) -> list[int] | None:
    tokens = body.get("tokens") if isinstance(body, dict) else None
    if isinstance(tokens, list) and all(isinstance(t, int) for t in tokens):
        return tokens
    return None


async def continuation_prompt_ids(
    tokenize: Callable[[dict[str, Any]], Awaitable[Any]],
    continuation: Continuation,
    messages: Sequence[Any],
    tools: list[dict[str, Any]] | None,
) -> list[int] | None:
    """The next prompt's token ids (see the module docstring), or ``None`` for the message path.
    ``tokenize(body)`` posts ``body`` (plus the model name) to the server's ``/tokenize``."""
    head = list(continuation.token_ids)
    tail = list(messages[continuation.messages :])
    if not head or not bridgeable(tail):
        return None
    dummy = _dummy_assistant(tail)
    extra: dict[str, Any] = {"tools": tools} if tools else {}
    try:
        full = _token_list(await tokenize({"messages": [dummy, *tail], **extra}))
        base = _token_list(await tokenize({"messages": [dummy], "add_generation_prompt": False, **extra}))
    except VerifiersError:
        return None
    if full is None or base is None or full[: len(base)] != base:
        return None
    stop = head[-1]
    gap = 0
    for i in range(len(base) - 1, -1, -1):
        if base[i] == stop:
            gap = len(base) - i - 1
            break
    bridge = full[len(base) - gap :]
    if bridge and bridge[0] == stop:  # a stop token that doubles as the next role marker
        bridge = bridge[1:]
    return head + bridge


__all__ = ["Continuation", "bridgeable", "continuation_prompt_ids"]
