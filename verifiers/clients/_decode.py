"""Decoding OpenAI-compatible response bodies into ``ModelResponse``: chat and plain completions, and
Responses API objects (mapped to the same assistant message a chat call gives).

Bodies are plain JSON data whichever transport fetched them (the ``openai`` SDK backend dumps its response
models first), so vLLM's extra fields — ``prompt_token_ids``, ``token_ids``, ``token_id:<n>`` logprob
tokens — are read the same way on both paths.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

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


def _completion_ids(
    choice: dict[str, Any], from_logprobs: list[int] | None, logprobs: list[float] | None
) -> list[int] | None:
    """The sampled ids: ``return_token_ids``'s ``token_ids`` if given, else those of ``token_id:<n>``
    logprob tokens. Both forms and the logprobs must describe the same tokens, or the response cannot be
    trained on: that is a bad response, not something to guess around."""
    given = choice.get("token_ids")
    ids = list(given) if isinstance(given, list) else from_logprobs
    if ids is not None and logprobs is not None and len(ids) != len(logprobs):
        raise InvalidResponseError(
            f"the server returned {len(ids)} completion token ids but {len(logprobs)} logprobs"
        )
    if from_logprobs is not None and ids is not from_logprobs and ids != from_logprobs:
        raise InvalidResponseError("the server's token_ids and its token_id:<n> logprob tokens disagree")
    return ids


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
    completion_ids = _completion_ids(choice, ids_from_logprobs, logprobs)
    p, c = _usage(body)
    return ModelResponse(
        message=out,
        finish_reason=choice.get("finish_reason"),
        prompt_tokens=p,
        completion_tokens=c,
        prompt_ids=_prompt_ids(body, choice),
        completion_ids=completion_ids,
        completion_logprobs=logprobs,
        endpoint=endpoint,
    )


def decode_completion(body: Any, endpoint: str | None = None) -> ModelResponse:
    choice = _first_choice(body)
    text = choice.get("text")
    if not isinstance(text, str) or not text:
        raise EmptyResponseError(f"model returned empty text (finish_reason={choice.get('finish_reason')!r})")
    logprobs, ids_from_logprobs = _completion_logprobs(choice)
    completion_ids = _completion_ids(choice, ids_from_logprobs, logprobs)
    p, c = _usage(body)
    return ModelResponse(
        message={"role": "assistant", "content": text},
        finish_reason=choice.get("finish_reason"),
        prompt_tokens=p,
        completion_tokens=c,
        prompt_ids=_prompt_ids(body, choice),
        completion_ids=completion_ids,
        completion_logprobs=logprobs,
        endpoint=endpoint,
    )


# --- Responses API -----------------------------------------------------------------------------------
#: ``incomplete_details.reason`` → the chat ``finish_reason`` it corresponds to.
_INCOMPLETE_REASONS = {"max_output_tokens": "length", "content_filter": "content_filter"}


def _responses_finish_reason(body: dict[str, Any], has_tool_calls: bool) -> str | None:
    status = body.get("status")
    if status == "incomplete":
        details = body.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        return _INCOMPLETE_REASONS.get(str(reason), str(reason) if reason else "length")
    if status == "failed":
        err = body.get("error")
        detail = f"{err.get('code')}: {err.get('message')}" if isinstance(err, dict) else "no error given"
        raise InvalidResponseError(f"the model server reports the response failed ({detail})")
    if status not in (None, "completed"):
        # queued / in_progress / cancelled: only background requests end up here, and we never send those.
        raise InvalidResponseError(f"response is not finished (status={status!r})")
    return "tool_calls" if has_tool_calls else "stop"


def _arguments(value: Any) -> str:
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def decode_responses(body: Any, endpoint: str | None = None) -> ModelResponse:
    """A Responses API object (``POST /responses``) as the assistant message of a chat call: the output
    text, ``function_call`` items as ``tool_calls``, reasoning text as ``reasoning_content``, usage, and
    ``status`` / ``incomplete_details`` as ``finish_reason``."""
    if not isinstance(body, dict):
        raise InvalidResponseError(f"expected a JSON object from the server, got {type(body).__name__}")
    output = body.get("output")
    if not isinstance(output, list):
        raise InvalidResponseError(
            "response has no 'output' list: does this endpoint speak the Responses API?"
        )
    texts: list[str] = []
    reasoning: list[str] = []
    tool_calls: list[dict[str, Any]] = []
    logprobs: list[float] = []
    tokens: list[Any] = []
    has_logprobs = False
    for item in output:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "message":
            for part in item.get("content") or []:
                if not isinstance(part, dict) or part.get("type") != "output_text":
                    continue
                texts.append(str(part.get("text") or ""))
                lp = part.get("logprobs")
                if isinstance(lp, list) and lp:
                    has_logprobs = True
                    logprobs.extend(float(e.get("logprob", 0.0)) for e in lp if isinstance(e, dict))
                    tokens.extend(e.get("token") for e in lp if isinstance(e, dict))
        elif kind == "function_call":
            tool_calls.append(
                {
                    "id": item.get("call_id") or item.get("id") or "",
                    "type": "function",
                    "function": {
                        "name": item.get("name", ""),
                        "arguments": _arguments(item.get("arguments", "")),
                    },
                }
            )
        elif kind == "reasoning":
            parts = item.get("content") or item.get("summary") or []
            reasoning.extend(str(p.get("text") or "") for p in parts if isinstance(p, dict))
    content = "".join(texts)
    finish_reason = _responses_finish_reason(body, bool(tool_calls))
    if not content and not tool_calls:
        raise EmptyResponseError(f"model returned an empty response (finish_reason={finish_reason!r})")
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    if any(reasoning):
        message["reasoning_content"] = "\n".join(r for r in reasoning if r)
    usage = body.get("usage")
    p, c = (
        (int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0))
        if isinstance(usage, dict)
        else (0, 0)
    )
    completion_ids = body.get("token_ids")
    prompt_ids = body.get("prompt_token_ids")
    return ModelResponse(
        message=message,
        finish_reason=finish_reason,
        prompt_tokens=p,
        completion_tokens=c,
        prompt_ids=list(prompt_ids) if isinstance(prompt_ids, list) else None,
        completion_ids=(
            list(completion_ids)
            if isinstance(completion_ids, list)
            else (_token_ids_from_tokens(tokens) if has_logprobs else None)
        ),
        completion_logprobs=logprobs if has_logprobs else None,
        endpoint=endpoint,
    )
