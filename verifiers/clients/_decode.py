"""Decoding OpenAI-compatible response bodies into ``ModelResponse`` (chat and plain completions)."""

from __future__ import annotations

import re
from typing import Any

from verifiers.errors import EmptyResponseError, InvalidResponseError
from verifiers.types import ModelResponse

# vLLM's ``return_tokens_as_token_ids`` renders each logprob token as ``token_id:123``.
_TOKEN_ID = re.compile(r"^token_id:(\d+)$")


def _token_ids_from_tokens(tokens: list[Any]) -> list[int] | None:
    ids: list[int] = []
    for tok in tokens:
        m = _TOKEN_ID.match(tok) if isinstance(tok, str) else None
        if m is None:
            return None
        ids.append(int(m.group(1)))
    return ids


def _chat_logprobs(choice: dict[str, Any]) -> tuple[list[float] | None, list[int] | None]:
    lp = choice.get("logprobs")
    if not isinstance(lp, dict):
        return None, None
    content = lp.get("content")
    if not isinstance(content, list):
        return None, None
    logprobs = [float(item.get("logprob", 0.0)) for item in content]
    ids = _token_ids_from_tokens([item.get("token") for item in content])
    return logprobs, ids


def _completion_logprobs(choice: dict[str, Any]) -> tuple[list[float] | None, list[int] | None]:
    lp = choice.get("logprobs")
    if not isinstance(lp, dict):
        return None, None
    values = lp.get("token_logprobs")
    logprobs = [float(v) if v is not None else 0.0 for v in values] if isinstance(values, list) else None
    tokens = lp.get("tokens")
    ids = _token_ids_from_tokens(tokens) if isinstance(tokens, list) else None
    return logprobs, ids


def _first_choice(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InvalidResponseError(f"expected a JSON object from the server, got {type(body).__name__}")
    choices = body.get("choices")
    if not isinstance(choices, list):
        raise InvalidResponseError("response has no 'choices' list: is this an OpenAI-compatible endpoint?")
    if not choices or not isinstance(choices[0], dict):
        raise EmptyResponseError("response has no choices")
    return choices[0]


def _usage(body: dict[str, Any]) -> tuple[int, int]:
    usage = body.get("usage")
    if not isinstance(usage, dict):
        return 0, 0
    return int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)


def _prompt_ids(body: dict[str, Any], choice: dict[str, Any]) -> list[int] | None:
    ids = body.get("prompt_token_ids", choice.get("prompt_token_ids"))
    return list(ids) if isinstance(ids, list) else None


def decode_chat(body: Any, endpoint: str | None = None) -> ModelResponse:
    choice = _first_choice(body)
    message = choice.get("message")
    if not isinstance(message, dict):
        raise EmptyResponseError("first choice has no message")
    content = message.get("content")
    tool_calls = message.get("tool_calls")
    if not content and not tool_calls:
        raise EmptyResponseError(
            f"model returned an empty message (finish_reason={choice.get('finish_reason')!r})"
        )
    out: dict[str, Any] = {"role": "assistant", "content": content if content is not None else ""}
    if tool_calls:
        out["tool_calls"] = tool_calls
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if reasoning:
        out["reasoning_content"] = reasoning
    logprobs, ids_from_logprobs = _chat_logprobs(choice)
    completion_ids = choice.get("token_ids")
    p, c = _usage(body)
    return ModelResponse(
        message=out,
        finish_reason=choice.get("finish_reason"),
        prompt_tokens=p,
        completion_tokens=c,
        prompt_ids=_prompt_ids(body, choice),
        completion_ids=list(completion_ids) if isinstance(completion_ids, list) else ids_from_logprobs,
        completion_logprobs=logprobs,
        endpoint=endpoint,
    )


def decode_completion(body: Any, endpoint: str | None = None) -> ModelResponse:
    choice = _first_choice(body)
    text = choice.get("text")
    if not isinstance(text, str) or not text:
        raise EmptyResponseError(f"model returned empty text (finish_reason={choice.get('finish_reason')!r})")
    logprobs, ids_from_logprobs = _completion_logprobs(choice)
    completion_ids = choice.get("token_ids")
    p, c = _usage(body)
    return ModelResponse(
        message={"role": "assistant", "content": text},
        finish_reason=choice.get("finish_reason"),
        prompt_tokens=p,
        completion_tokens=c,
        prompt_ids=_prompt_ids(body, choice),
        completion_ids=list(completion_ids) if isinstance(completion_ids, list) else ids_from_logprobs,
        completion_logprobs=logprobs,
        endpoint=endpoint,
    )
