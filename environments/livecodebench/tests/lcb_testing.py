"""Helpers of the livecodebench tests: the fixture problems, their solutions, replies and hostile rows."""

from __future__ import annotations

import base64
import json
import pickle
import zlib
from pathlib import Path
from typing import Any

from lcb_solutions import SOLUTIONS

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PROBLEMS = FIXTURES / "problems.jsonl"
#: The fixture problems inside the default window (2024-08-01 – 2025-05-01, both ends included).
IN_WINDOW = ["abc900_a", "abc905_b", "abc912_c", "2041A", "2090B", "3400", "3481", "3520", "3533"]
OUT_OF_WINDOW = ["abc899_a", "2101A"]

__all__ = ["IN_WINDOW", "OUT_OF_WINDOW", "PROBLEMS", "SOLUTIONS", "answer", "records", "write_rows"]


def records() -> list[dict[str, Any]]:
    """The fixture rows, exactly as the dataset stores them."""
    return [json.loads(line) for line in PROBLEMS.read_text().splitlines()]


def record(question_id: str) -> dict[str, Any]:
    return next(r for r in records() if r["question_id"] == question_id)


def write_rows(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def answer(code: str, reasoning: str = "Let me think.") -> str:
    """A reply as a reasoning model writes one: thinking, a draft, then the final block."""
    return (
        f"<think>{reasoning}\n```python\nprint('draft')\n```\n</think>\n"
        f"Here is the solution.\n\n```python\n{code}```\n"
    )


class Exploit:
    """``__reduce__`` makes unpickling call ``os.system(command)``."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self) -> tuple[Any, ...]:
        import os

        return (os.system, (self.command,))


def encode(payload: Any) -> str:
    """base64 of zlib of a pickle of ``payload``: the dataset's encoding of private tests."""
    return base64.b64encode(zlib.compress(pickle.dumps(payload))).decode("ascii")


def malicious_row(marker: Path) -> dict[str, Any]:
    """A fixture row whose private tests, once unpickled by ``pickle.loads``, would create ``marker``."""
    row = dict(record("abc900_a"))
    row["question_id"] = "abc999_x"
    row["question_content"] = "A row whose private tests are a trap."
    row["private_test_cases"] = encode([Exploit(f"touch {marker}")])
    return row
