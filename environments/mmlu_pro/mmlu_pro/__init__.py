"""mmlu-pro: MMLU-Pro's 12,032 test questions across 14 disciplines, up to ten options (A–J).

Data: ``TIGER-Lab/MMLU-Pro`` at a pinned commit, split ``test`` (12,032 rows, checked), or ``source=`` a local
``.jsonl`` / ``.json`` / ``.parquet`` file in its schema (``question_id``, ``question``, ``options``,
``answer``, ``answer_index``, ``category``, …); ``source="sample"`` holds five questions written for this
package. Options keep the dataset's order (MMLU-Pro's answers are letters of that order), so there is no
shuffle. The model is asked, as MMLU-Pro's own chain-of-thought evaluation asks, to finish with "The answer
is (X)"; ``MultipleChoiceRubric`` reads the letter (``correct``, ``unparsed``, ``truncated``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import validate_call

import verifiers as vf
from verifiers.errors import DatasetError

__all__ = ["DATA", "INSTRUCTION", "load_environment"]

#: TIGER-Lab/MMLU-Pro's main at this commit (MIT licence): test 12,032 rows, validation 70 (CoT exemplars).
DATA = vf.data.PinnedDataset(
    dataset="TIGER-Lab/MMLU-Pro",
    revision="b189ec765aa7ed75c8acfea42df31fdae71f97be",
    split="test",
    rows=12_032,
    columns=("question_id", "question", "options", "answer", "answer_index", "category"),
)
INSTALL_HINT = "pip install 'mmlu-pro[data]'"
SAMPLES = {"sample": Path(__file__).with_name("data") / "sample.jsonl"}
#: MMLU-Pro's CoT instruction in substance, zero-shot (a reasoning model needs no exemplars).
INSTRUCTION = (
    "The following is a multiple-choice question about {category}. Think step by step, then finish your "
    'answer with "The answer is (X)", where X is the letter of the correct option.\n\n'
    "Question: {question}\nOptions:\n{options}"
)


@validate_call  # JSON from `vf-eval -a` is checked and coerced here, at the boundary
def load_environment(
    source: str | None = None,
    *,
    categories: list[str] | None = None,
    system_prompt: str | None = None,
    instruction: str = INSTRUCTION,
) -> vf.Environment:
    """The mmlu-pro environment.

    Args:
        source: omitted for the pinned ``TIGER-Lab/MMLU-Pro`` test split (needs ``datasets`` and the
            network), ``"sample"`` (five bundled questions in its schema) or a local file in its schema.
        categories: keep only these ``category`` values (``["math", "law"]``); all 14 by default.
        system_prompt: optional system message (none by default).
        instruction: the user message, with ``{question}``, ``{options}`` and ``{category}``.
    """
    for field in ("{question}", "{options}"):
        if field not in instruction:
            raise ValueError(f"instruction must contain {field}")
    wanted = set(categories) if categories else None

    def convert(record: Mapping[str, Any], index: int) -> dict[str, Any]:
        options = [str(o) for o in record["options"]]
        letters = vf.data.letters_for(len(options))
        answer = str(record["answer"]).strip()
        if answer not in letters or letters.index(answer) != int(record["answer_index"]):
            raise DatasetError(
                f"mmlu-pro question {record['question_id']}: answer {answer!r} does not match answer_index "
                f"{record['answer_index']} of its {len(options)} options"
            )
        text = instruction.format(
            category=record["category"],
            question=str(record["question"]).strip(),
            options=vf.data.format_choices(options, style="{letter}. {option}"),
        )
        info = {k: v for k, v in record.items() if k not in ("question", "cot_content")}
        info.update(question=str(record["question"]), letters=letters)
        return {"example_id": index, "question": text, "answer": answer, "info": info, "task": "mmlu-pro"}

    build = vf.data.benchmark_rows(
        DATA,
        source,
        convert,
        install_hint=INSTALL_HINT,
        bundled=SAMPLES,
        select=None if wanted is None else (lambda record: record["category"] in wanted),
        selection={} if wanted is None else {"categories": sorted(wanted)},
    )
    return vf.SingleTurnEnv(
        eval_dataset=build, system_prompt=system_prompt, rubric=vf.MultipleChoiceRubric(), task="mmlu-pro"
    )
