"""gpqa: GPQA's graduate-level science questions (Diamond by default), four options, one letter to choose.

Data: ``Idavidrein/gpqa`` at a pinned commit, config ``gpqa_diamond`` (198 rows, checked; ``diamond=False``
takes ``gpqa_main``, 448 rows). The dataset is gated: accept its terms on its page and set ``HF_TOKEN``, or
pass ``source=`` a local copy in its schema. No GPQA text ships here (``source="sample"`` holds four
questions written for this package, in GPQA's columns).

Options: GPQA stores the correct answer first, so every rollout shows the four options in its own order, a
permutation seeded by (``Record ID``, ``seed``, rollout index) — the same in every re-run — and records it in
``info`` (``choice_order``, ``answer_letter``) with the letter as the rollout's ``answer``, so a re-score
reads the letters the model saw. Scoring: ``MultipleChoiceRubric`` (``correct``; ``unparsed`` is the rate of
replies that commit to no letter; ``truncated``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import validate_call

import verifiers as vf
from verifiers.types import Row, State

__all__ = ["INSTRUCTION", "GPQAEnv", "load_environment", "pinned", "render"]

#: The four option texts, the correct one first, and the id the shuffle is keyed by.
OPTION_COLUMNS = ("Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3")
COLUMNS = ("Record ID", "Question", *OPTION_COLUMNS)
#: Idavidrein/gpqa at this commit (its configs share it): gpqa_diamond 198 rows, gpqa_main 448, split train.
REVISION = "633f5ee89ab8ad4522a9f850766b73f62147ffdd"
ROWS = {"gpqa_diamond": 198, "gpqa_main": 448}
INSTALL_HINT = "pip install 'gpqa[data]'"
SAMPLES = {"sample": Path(__file__).with_name("data") / "sample.jsonl"}
#: simple-evals' GPQA instruction in substance: reason, then a last line ``Answer: X``.
INSTRUCTION = (
    "Answer the following multiple-choice question. Think step by step, then write the last line of your "
    "response as 'Answer: X' (without quotes), where X is one of {letters}.\n\n{question}\n\n{options}"
)


def pinned(diamond: bool = True) -> vf.data.PinnedDataset:
    """The pinned GPQA config: Diamond, or the main set."""
    config = "gpqa_diamond" if diamond else "gpqa_main"
    return vf.data.PinnedDataset(
        dataset="Idavidrein/gpqa",
        revision=REVISION,
        configs=(config,),
        split="train",
        rows=ROWS[config],
        columns=COLUMNS,
        gated=True,
    )


def render(
    info: Mapping[str, Any], *, seed: int, rollout_index: int, instruction: str
) -> tuple[str, vf.data.ShuffledChoices]:
    """The question as rollout ``rollout_index`` shows it, and its options in that order."""
    order = vf.data.shuffle_choices(
        info["options"], 0, key=info["Record ID"], seed=seed, rollout_index=rollout_index
    )
    text = instruction.format(
        letters=vf.data.letters_for(len(order.options)),
        question=str(info["question"]).strip(),
        options=vf.data.format_choices(order.options),
    )
    return text, order


class GPQAEnv(vf.SingleTurnEnv):
    """A single-turn environment whose rollouts each see the options in their own seeded order."""

    def __init__(self, *, seed: int, instruction: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.seed = seed
        self.instruction = instruction

    def init_state(self, row: Row, rollout_index: int) -> State:
        state = super().init_state(row, rollout_index)
        text, order = render(
            row["info"], seed=self.seed, rollout_index=rollout_index, instruction=self.instruction
        )
        state["prompt"] = vf.data.build_prompt(
            {"question": text}, system_prompt=self.system_prompt, few_shot=self.few_shot
        )
        state["answer"] = order.answer
        state["info"] = {**row["info"], **order.info(), "choice_seed": self.seed}
        return state


@validate_call  # JSON from `vf-eval -a` is checked and coerced here, at the boundary
def load_environment(
    source: str | None = None,
    *,
    diamond: bool = True,
    seed: int = 0,
    system_prompt: str | None = None,
    instruction: str = INSTRUCTION,
) -> vf.Environment:
    """The gpqa environment (``gpqa-diamond`` is the same with its defaults).

    Args:
        source: omitted for the pinned ``Idavidrein/gpqa`` (gated: ``HF_TOKEN``), ``"sample"`` (four bundled
            questions in its schema) or a local ``.jsonl`` / ``.json`` / ``.parquet`` file in its schema.
        diamond: ``gpqa_diamond`` (198 questions), else ``gpqa_main`` (448).
        seed: seeds the option order (with each question's ``Record ID`` and the rollout index).
        system_prompt: optional system message (none by default).
        instruction: the user message, with ``{question}``, ``{options}`` and ``{letters}``.
    """
    for field in ("{question}", "{options}"):
        if field not in instruction:
            raise ValueError(f"instruction must contain {field}")

    def convert(record: Mapping[str, Any], index: int) -> dict[str, Any]:
        info = {k: v for k, v in record.items() if k not in ("Question", *OPTION_COLUMNS)}
        info.update(question=str(record["Question"]), options=[str(record[c]) for c in OPTION_COLUMNS])
        info["letters"] = vf.data.letters_for(len(OPTION_COLUMNS))
        # The row shows rollout 0's order; every rollout renders its own (GPQAEnv.init_state).
        text, order = render(info, seed=seed, rollout_index=0, instruction=instruction)
        return {"example_id": index, "question": text, "answer": order.answer, "info": info, "task": "gpqa"}

    build = vf.data.benchmark_rows(
        pinned(diamond), source, convert, install_hint=INSTALL_HINT, bundled=SAMPLES
    )
    return GPQAEnv(
        seed=seed,
        instruction=instruction,
        eval_dataset=build,
        system_prompt=system_prompt,
        rubric=vf.MultipleChoiceRubric(),
        task="gpqa",
    )
