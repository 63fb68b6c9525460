"""The solution in a reply: the last fenced code block after the reasoning, as LiveCodeBench extracts it.

LiveCodeBench's runner takes the lines between the last two lines that contain a triple backtick, whatever
the block's language tag, and an empty solution when there are fewer than two (strict: the reply's prose is
never run). Reasoning comes first: the text up to the last ``</think>`` is ignored, and a reply whose
``<think>`` was never closed (cut off while thinking) has no solution at all, even if a draft block sits
in the unfinished reasoning (``vf.MaybeThinkParser``).
"""

from __future__ import annotations

import verifiers as vf

FENCE = "```"


def last_code_block(text: str) -> str | None:
    """The body of the last fenced block, or ``None`` when there is none (or it is blank)."""
    lines = text.split("\n")
    fences = [i for i, line in enumerate(lines) if FENCE in line]
    if len(fences) < 2:
        return None
    body = "\n".join(lines[fences[-2] + 1 : fences[-1]])
    return body if body.strip() else None


def code_parser() -> vf.Parser:
    """``parse_answer(completion)``: the solution of the last assistant message, or ``None``."""
    return vf.MaybeThinkParser(extract_fn=last_code_block)


def extract_code(text: str) -> str | None:
    """The solution in one reply's text (reasoning handled as ``code_parser`` does)."""
    return code_parser().parse(text)
