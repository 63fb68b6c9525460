"""Chat requests as Responses API requests (``POST /responses``), so ``api="responses"`` keeps the chat
messages / ``ModelResponse`` interface that environments are written against.

Mapping (request side; the response side is ``_decode.decode_responses``):

- system / developer / user messages become input messages; text parts become ``input_text`` and
  ``image_url`` parts ``input_image``;
- an assistant message becomes an assistant input message (its text) followed by one ``function_call``
  item per tool call; a ``tool`` message becomes a ``function_call_output`` item;
- chat-style tools (``{"type": "function", "function": {...}}``) are flattened to Responses tools;
- ``max_tokens`` / ``max_completion_tokens`` → ``max_output_tokens``, ``reasoning_effort`` →
  ``reasoning.effort``, ``response_format`` → ``text.format``, ``logprobs`` → ``include`` of output
  logprobs, a named ``tool_choice`` is flattened; other arguments are sent as given;
- ``store`` defaults to ``False``: every turn resends the whole conversation, nothing needs keeping.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from verifiers.types import Messages

_LOGPROBS_INCLUDE = "message.output_text.logprobs"


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _input_part(part: Any) -> Any:
    if not isinstance(part, dict):
        return part
    kind = part.get("type")
    if kind == "text":
        return {"type": "input_text", "text": part.get("text", "")}
    if kind == "image_url":
        image = part.get("image_url")
        url = image.get("url") if isinstance(image, dict) else image
        out: dict[str, Any] = {"type": "input_image", "image_url": url}
        if isinstance(image, dict) and image.get("detail"):
            out["detail"] = image["detail"]
        return out
    return part  # already a Responses part (input_text, input_file, ...)


def _content(content: Any) -> Any:
    if isinstance(content, list):
        return [_input_part(p) for p in content]
    return "" if content is None else content


def messages_to_input(messages: Messages) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for msg in messages:
        role = msg.get("role")
        if role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": msg.get("tool_call_id", ""),
                    "output": _text_of(msg.get("content")),
                }
            )
        elif role == "assistant":
            text = _text_of(msg.get("content"))
            if text:
                items.append({"role": "assistant", "content": text})
            for call in msg.get("tool_calls") or []:
                fn = call.get("function") or {}
                items.append(
                    {
                        "type": "function_call",
                        "call_id": call.get("id", ""),
                        "name": fn.get("name", ""),
                        "arguments": fn.get("arguments", ""),
                    }
                )
        elif "type" in msg and "role" not in msg:
            items.append(dict(msg))  # a raw Responses input item, passed through
        else:
            items.append({"role": role, "content": _content(msg.get("content"))})
    return items


def tools_to_responses(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for tool in tools:
        fn = tool.get("function")
        if tool.get("type") == "function" and isinstance(fn, dict):
            flat = {"type": "function", **{k: v for k, v in fn.items() if v is not None}}
            out.append(flat)
        else:
            out.append(tool)
    return out


def _tool_choice(choice: Any) -> Any:
    if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        return {"type": "function", "name": choice["function"].get("name")}
    return choice


def _text_format(fmt: Mapping[str, Any]) -> dict[str, Any]:
    if fmt.get("type") == "json_schema" and isinstance(fmt.get("json_schema"), dict):
        return {"type": "json_schema", **fmt["json_schema"]}
    return dict(fmt)


def responses_payload(
    model: str, messages: Messages, fields: Mapping[str, Any], tools: list[dict[str, Any]] | None
) -> dict[str, Any]:
    """The ``/responses`` body for a chat call; ``fields`` are the flattened sampling arguments."""
    payload: dict[str, Any] = {"model": model, "input": messages_to_input(messages), "store": False}
    include: list[str] = []
    for key, value in fields.items():
        if key in ("max_tokens", "max_completion_tokens"):
            if value is not None:
                payload["max_output_tokens"] = value
        elif key == "reasoning_effort":
            payload["reasoning"] = {**payload.get("reasoning", {}), "effort": value}
        elif key == "response_format" and isinstance(value, Mapping):
            payload["text"] = {**payload.get("text", {}), "format": _text_format(value)}
        elif key == "logprobs":
            if value:
                include.append(_LOGPROBS_INCLUDE)
        elif key == "tool_choice":
            payload["tool_choice"] = _tool_choice(value)
        elif key == "n":
            if value not in (None, 1):
                raise ValueError("the Responses API returns one output per request: n must be 1")
        elif key == "include":
            include.extend(value or [])
        else:
            payload[key] = value
    if include:
        payload["include"] = list(dict.fromkeys(include))
    if tools:
        payload["tools"] = tools_to_responses(tools)
    return payload
