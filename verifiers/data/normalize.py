"""Contract-3.2 rows: a raw dataset row made into ``example_id``, ``prompt``, ``answer``, ``info``, ``task``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from verifiers.data.fields import decode_json

if TYPE_CHECKING:  # annotations only: importing verifiers.data stays free of pydantic
    from verifiers.types import Messages, Row


def build_prompt(
    row: Mapping[str, Any],
    *,
    system_prompt: str | None,
    few_shot: Messages | None,
    message_type: str = "chat",
) -> Messages | str:
    """The prompt of a row: its ``prompt`` as given, or ``question`` turned into a user message after the
    system prompt and few-shot messages."""
    if "prompt" in row and row["prompt"] is not None:
        prompt = row["prompt"]
        if message_type == "chat":
            if isinstance(prompt, str):
                return [{"role": "user", "content": prompt}]
            return [dict(m) for m in prompt]
        return prompt if isinstance(prompt, str) else "".join(str(m.get("content", "")) for m in prompt)
    if "question" not in row:
        raise KeyError(f"dataset row has neither 'prompt' nor 'question' (keys: {sorted(row)})")
    question = str(row["question"])
    if message_type != "chat":
        return (system_prompt + "\n\n" if system_prompt else "") + question
    msgs: Messages = []
    if system_prompt:
        msgs.append({"role": "system", "content": system_prompt})
    if few_shot:
        msgs.extend(dict(m) for m in few_shot)
    msgs.append({"role": "user", "content": question})
    return msgs


def normalize_row(
    row: Mapping[str, Any],
    index: int,
    *,
    system_prompt: str | None,
    few_shot: Messages | None,
    message_type: str,
    default_task: str,
) -> Row:
    """A contract-3.2 row: ``example_id`` (the row's own or its index), ``prompt``, ``answer``, ``info``, ``task``."""
    info = decode_json(row.get("info")) or {}  # HF datasets often store info as a JSON string
    if not isinstance(info, Mapping):
        info = {"raw": info}
    example_id = row.get("example_id")
    return {
        "example_id": int(example_id) if example_id is not None else index,
        "prompt": build_prompt(
            row, system_prompt=system_prompt, few_shot=few_shot, message_type=message_type
        ),
        "answer": "" if row.get("answer") is None else str(row["answer"]),
        "info": dict(info),
        "task": str(row.get("task") or default_task),
    }
