"""Extracting the solution from the model's reply: the last fenced Python (or unlabelled) code block."""

from __future__ import annotations

import re

import verifiers as vf

# An opening fence with an optional language tag, the body, the closing fence.
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)^[ \t]*```", re.DOTALL | re.MULTILINE)
_PYTHON_TAGS = {"", "python", "python3", "py", "py3"}


def extract_code(text: str) -> str | None:
    """The body of the last ```python … ``` (or bare ``` … ```) block, or None when there is none.

    Text up to a closing ``</think>`` is ignored: code drafted while reasoning is not the answer.
    """
    text = text.rsplit("</think>", 1)[-1]
    blocks: list[str] = [body for tag, body in _FENCE.findall(text) if tag.lower() in _PYTHON_TAGS]
    if not blocks or not blocks[-1].strip():
        return None
    return blocks[-1]


class CodeParser(vf.Parser):
    """``parse_answer(completion)`` is the solution code of the last assistant message, or None."""

    def __init__(self) -> None:
        super().__init__(extract_fn=extract_code)
