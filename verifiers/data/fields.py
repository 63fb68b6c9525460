"""Reading a source record's fields: nested JSON strings decoded, question / answer / info picked out."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def decode_json(value: Any) -> Any:
    """Hub datasets store nested fields (``info``, ``tests``) as JSON strings: decode those; a string that
    is not JSON comes back as ``{"raw": value}``; anything else unchanged."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return {"raw": value}
    return value


def qa_fields(
    record: Mapping[str, Any], index: int, *, question_key: str = "question", answer_key: str = "answer"
) -> tuple[str, str, dict[str, Any]]:
    """``(question, answer, info)`` of a question/answer record. ``info`` is the record's decoded ``info``
    plus every other field (solve rates, ids, …) and the bare ``question`` (judges want it without the
    environment's instruction). A missing key is an error that names the keys to set."""
    question, answer = record.get(question_key), record.get(answer_key)
    if question is None or answer is None:
        raise ValueError(
            f"record {index} has no {question_key!r} or {answer_key!r} field (fields: {sorted(record)}); "
            "set question_key / answer_key"
        )
    decoded = decode_json(record.get("info")) or {}
    info = dict(decoded) if isinstance(decoded, Mapping) else {"raw": decoded}
    for key, value in record.items():
        if key not in (question_key, answer_key, "info", "prompt"):
            info.setdefault(key, value)
    info["question"] = str(question)
    return str(question), str(answer), info
