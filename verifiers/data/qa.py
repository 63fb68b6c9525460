"""Question/answer datasets in INTELLECT-3's shape, the path every such environment takes: records from a
bundled set, the hub subset or a local file → optional solve-rate range → the first ``num_examples`` →
rows converted on access (``question``, ``answer``, ``info`` with the other fields, ``task``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from verifiers.data.fields import qa_fields
from verifiers.data.filters import rows_in_range
from verifiers.data.rows import Rows
from verifiers.data.sources import INTELLECT3, source_kind, source_records


def qa_dataset(
    source: str,
    *,
    task: str,
    hub_subset: str,
    bundled: Mapping[str, Callable[[], Any]],
    install_hint: str,
    question_key: str = "question",
    answer_key: str = "answer",
    format_question: Callable[[str], str] | None = None,
    split: str = "train",
    num_examples: int = -1,
    solve_rate_column: str | None = None,
    min_solve_rate: float | None = None,
    max_solve_rate: float | None = None,
) -> Callable[[], Rows]:
    """A dataset builder for ``Environment(eval_dataset=...)``: nothing is read until rows are needed, but
    the arguments are checked here, so a bad ``source`` or range fails at ``load_environment``.

    ``source`` is a name in ``bundled`` (the environment's own records, which have no solve rates), INTELLECT-3
    (``hub_subset`` of ``split``) or a local file. Records whose ``solve_rate_column`` lies in
    ``[min_solve_rate, max_solve_rate]`` are kept (all when there is no bound), then the first
    ``num_examples`` (-1: all). ``example_id`` is the record's position in its source, so it does not move
    when a filter changes; ``info`` keeps the bare question (see ``qa_fields``).
    """
    kind = source_kind(source, [*bundled, INTELLECT3])
    if kind in bundled and (min_solve_rate is not None or max_solve_rate is not None):
        raise ValueError(f"source={source!r} has no solve-rate column to filter on")
    if min_solve_rate is not None and max_solve_rate is not None and min_solve_rate > max_solve_rate:
        raise ValueError(f"min_solve_rate ({min_solve_rate}) is above max_solve_rate ({max_solve_rate})")

    def convert(record: Mapping[str, Any], index: int) -> dict[str, Any]:
        question, answer, info = qa_fields(record, index, question_key=question_key, answer_key=answer_key)
        text = format_question(question) if format_question is not None else question
        return {"example_id": index, "question": text, "answer": answer, "info": info, "task": task}

    def build() -> Rows:
        if kind in bundled:
            records = bundled[kind]()
        else:
            records = source_records(source, hub_subset, split=split, install_hint=install_hint)
        return rows_in_range(
            records,
            convert,
            column_name=solve_rate_column,
            low=min_solve_rate,
            high=max_solve_rate,
            limit=num_examples,
        )

    return build
