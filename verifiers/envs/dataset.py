"""Dataset rows (contract 3.2): normalisation, lazy building and deterministic selection."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from verifiers.sources import decode_json
from verifiers.types import Messages, Row


@runtime_checkable
class RowSource(Protocol):
    """Anything indexable with a length whose items are mappings (a list of dicts, a HF ``Dataset``)."""

    def __len__(self) -> int: ...

    def __getitem__(self, index: int, /) -> Any: ...


DatasetLike = RowSource | Sequence[Mapping[str, Any]] | Iterable[Mapping[str, Any]]
DatasetBuilder = Callable[[], DatasetLike]


class Rows:
    """A lazily built dataset: the builder runs on first use, never at construction."""

    def __init__(self, source: DatasetLike | DatasetBuilder) -> None:
        self._source = source
        self._built: RowSource | None = None

    def _get(self) -> RowSource:
        if self._built is None:
            src = self._source
            if callable(src) and not isinstance(src, RowSource):
                src = src()
            if not isinstance(src, RowSource):
                src = list(src)  # a generator or other iterable
            self._built = src
        return self._built

    def __len__(self) -> int:
        return len(self._get())

    def raw(self, index: int) -> Mapping[str, Any]:
        item = self._get()[index]
        if not isinstance(item, Mapping):
            raise TypeError(f"dataset row {index} is a {type(item).__name__}, expected a mapping")
        return item

    def select(self, num_examples: int = -1, *, seed: int | None = None, shuffle: bool = False) -> list[int]:
        """Row indices for a run: the first ``num_examples`` (all when < 0), in a seeded order if shuffled.

        The result depends only on (dataset length, num_examples, seed, shuffle): resume relies on it.
        """
        n = len(self)
        order = list(range(n))
        if shuffle:
            random.Random(seed if seed is not None else 0).shuffle(order)
        if num_examples is not None and num_examples >= 0:
            order = order[:num_examples]
        return order


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
