"""hle: Humanity's Last Exam, judged as the official evaluation judges it: accuracy and calibration error.

Data: ``cais/hle`` at a pinned commit, split ``test`` (2,500 rows, checked), text-only by default (the 2,158
questions without an image, checked; ``multimodal=True`` keeps all 2,500, the image sent as an
``image_url`` part). The dataset is gated: accept its terms on its page and set ``HF_TOKEN``, or pass
``source=`` a local copy in its schema. No HLE text ships here (``source="sample"`` holds five questions
written for this package, in HLE's columns).

Protocol (the official ``hle_eval`` scripts, restated): the model gets HLE's answer-format system message
(explanation, answer, confidence; the multiple-choice wording for ``multipleChoice`` questions) and the
question. The judge gets HLE's judge prompt and must answer in HLE's structured verdict (a JSON schema:
``extracted_final_answer``, ``reasoning``, ``correct`` yes/no, ``confidence`` 0–100, ``strict``), by default
from ``o3-mini-2025-01-31`` (the official judge model) at ``https://api.openai.com/v1`` with the key in
``OPENAI_API_KEY``; ``judge_model``, ``judge_base_url`` and ``judge_api_key_var`` change it. A judge that
cannot be reached is an infra error of the rollout, never a 0; verdicts are cached by (question, response,
judge model).

Metrics: ``judge_correct`` (the reward; its mean is the accuracy), ``confidence`` (the model's stated
confidence as the judge extracted it, 0–1), and the run-level ``calibration_error`` (``metadata.json``'s
``run_metrics``): the official RMS calibration error over bins of ``calibration_bin_size`` (100) rollouts
sorted by confidence, computed the official way (see ``calibration_error``) so the numbers compare.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, ValidationError, validate_call

import verifiers as vf
from verifiers.rubrics import JudgeRubric, JudgeVerdict, RunMetric, Score

__all__ = [
    "DATA",
    "JUDGE_MODEL",
    "JUDGE_PROMPT",
    "HLEJudgeRubric",
    "HLEVerdict",
    "calibration_error",
    "load_environment",
    "parse_hle_verdict",
]

#: cais/hle at this commit: split ``test``, 2,500 rows, 2,158 of them without an image.
DATA = vf.data.PinnedDataset(
    dataset="cais/hle",
    revision="5a81a4c7271a2a2a312b9a690f0c2fde837e4c29",
    split="test",
    rows=2_500,
    columns=("id", "question", "image", "answer", "answer_type", "category"),
    gated=True,
    drop_columns=("image_preview", "rationale_image"),  # decoded images (Pillow), never read
)
TEXT_ONLY_ROWS = 2_158
INSTALL_HINT = "pip install 'hle[data]'"
SAMPLES = {"sample": Path(__file__).with_name("data") / "sample.jsonl"}

#: The official judge model (hle_eval/run_judge_results.py's default).
JUDGE_MODEL = "o3-mini-2025-01-31"
JUDGE_BASE_URL = "https://api.openai.com/v1"
JUDGE_API_KEY_VAR = "OPENAI_API_KEY"

# HLE's protocol text (hle_eval/run_model_predictions.py and run_judge_results.py, commit 67b3251): the
# benchmark is defined by these exact words, so they are reproduced, not rephrased.
SYSTEM_EXACT_ANSWER = (
    "Your response should be in the following format:\n"
    "Explanation: {your explanation for your final answer}\n"
    "Exact Answer: {your succinct, final answer}\n"
    "Confidence: {your confidence score between 0% and 100% for your answer}"
)
SYSTEM_MULTIPLE_CHOICE = (
    "Your response should be in the following format:\n"
    "Explanation: {your explanation for your answer choice}\n"
    "Answer: {your chosen answer}\n"
    "Confidence: {your confidence score between 0% and 100% for your answer}"
)
#: ``{answer}`` stands where the official template has ``{correct_answer}`` (JudgeRubric's placeholder).
JUDGE_PROMPT = r"""Judge whether the following [response] to [question] is correct or not based on the precise and unambiguous [correct_answer] below.

[question]: {question}

[response]: {response}

Your judgement must be in the format and criteria specified below:

extracted_final_answer: The final exact answer extracted from the [response]. Put the extracted answer as 'None' if there is no exact, final answer to extract from the response.

[correct_answer]: {answer}

reasoning: Explain why the extracted_final_answer is correct or incorrect based on [correct_answer], focusing only on if there are meaningful differences between [correct_answer] and the extracted_final_answer. Do not comment on any background to the problem, do not attempt to solve the problem, do not argue for any answer different than [correct_answer], focus only on whether the answers match.

correct: Answer 'yes' if extracted_final_answer matches the [correct_answer] given above, or is within a small margin of error for numerical problems. Answer 'no' otherwise, i.e. if there if there is any inconsistency, ambiguity, non-equivalency, or if the extracted answer is incorrect.


confidence: The extracted confidence score between 0|\%| and 100|\%| from [response]. Put 100 if there is no confidence score available."""


class HLEVerdict(BaseModel):
    """HLE's structured verdict (the official ``ExtractedAnswer``)."""

    extracted_final_answer: str
    reasoning: str
    correct: Literal["yes", "no"]
    confidence: int
    strict: Literal[True]


#: What the judge request asks for: structured output in the verdict's JSON schema, as the official
#: judge call does (``response_format``), with the official completion budget.
JUDGE_SAMPLING_ARGS: dict[str, Any] = {
    "max_completion_tokens": 4096,
    "response_format": {
        "type": "json_schema",
        "json_schema": {
            "name": "ExtractedAnswer",
            "strict": True,
            "schema": {
                "type": "object",
                "properties": {
                    "extracted_final_answer": {"type": "string"},
                    "reasoning": {"type": "string"},
                    "correct": {"type": "string", "enum": ["yes", "no"]},
                    "confidence": {"type": "integer"},
                    "strict": {"type": "boolean", "enum": [True]},
                },
                "required": ["extracted_final_answer", "reasoning", "correct", "confidence", "strict"],
                "additionalProperties": False,
            },
        },
    },
}

_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def parse_hle_verdict(text: str) -> JudgeVerdict | None:
    """The judge's reply read as an ``HLEVerdict`` (the JSON object it holds, also inside a code fence), or
    ``None`` when it holds none: a ``ScoringError`` of that rollout, never a guessed verdict."""
    found = _JSON_OBJECT.search(text or "")
    if found is None:
        return None
    try:
        verdict = HLEVerdict.model_validate(json.loads(found.group(0)))
    except (ValueError, ValidationError):
        return None
    fields = {"extracted_final_answer": verdict.extracted_final_answer, "confidence": verdict.confidence}
    return JudgeVerdict(verdict.correct, verdict.correct == "yes", text, fields=fields)


def calibration_error(pairs: Sequence[tuple[float, ...]], bin_size: int = 100) -> float | None:
    """HLE's RMS calibration error of ``(confidence 0–1, correct 0/1)`` pairs, as the official scorer
    computes it: sort by confidence, cut into bins of ``bin_size`` (the last one takes the remainder), and
    take the root of the size-weighted mean squared gap between mean confidence and accuracy — over every
    bin but the last, which the official loop leaves out (kept, so the numbers compare). ``None`` with fewer
    than ``bin_size`` pairs (the official scorer cannot compute one)."""
    if bin_size < 1:
        raise ValueError(f"bin_size must be at least 1, not {bin_size}")
    ordered = sorted((float(p[0]), float(p[1])) for p in pairs)
    total = len(ordered)
    n_bins = total // bin_size
    if n_bins == 0:
        return None
    squared = 0.0
    for b in range(n_bins - 1):
        chunk = ordered[b * bin_size : (b + 1) * bin_size]
        gap = sum(c for c, _ in chunk) / len(chunk) - sum(k for _, k in chunk) / len(chunk)
        squared += len(chunk) / total * gap * gap
    return math.sqrt(squared)


class HLEJudgeRubric(JudgeRubric):
    """``JudgeRubric`` with HLE's prompt and verdict: adds ``confidence`` (0–1) per rollout and the run's
    ``calibration_error``."""

    def __init__(self, *, calibration_bin_size: int = 100, **judge: Any) -> None:
        super().__init__(
            judge_prompt=JUDGE_PROMPT,
            judge_sampling_args=JUDGE_SAMPLING_ARGS,
            verdict_parser=parse_hle_verdict,
            **judge,
        )
        self.add_run_metric(
            RunMetric(
                "calibration_error",
                ("confidence", "judge_correct"),
                lambda pairs: calibration_error(pairs, calibration_bin_size),
            )
        )

    async def score_response(
        self, *, response: str | None, answer: str, question: str, info: Mapping[str, Any]
    ) -> Score:
        if response is None or not response.strip():  # nothing to judge (empty or cut-off reply)
            return Score(0.0, {"parsed": 0.0, "confidence": 1.0})  # the official default confidence, 100
        verdict = await self.judge(question=question, answer=str(answer), response=response)
        confidence = min(max(float(verdict.fields.get("confidence", 100)), 0.0), 100.0)
        return Score(1.0 if verdict.correct else 0.0, {"parsed": 1.0, "confidence": confidence / 100.0})


def _prompt(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    system = SYSTEM_MULTIPLE_CHOICE if record["answer_type"] == "multipleChoice" else SYSTEM_EXACT_ANSWER
    content: list[dict[str, Any]] = [{"type": "text", "text": str(record["question"])}]
    if record["image"]:
        content.append({"type": "image_url", "image_url": {"url": str(record["image"])}})
    return [{"role": "system", "content": system}, {"role": "user", "content": content}]


@validate_call  # JSON from `vf-eval -a` is checked and coerced here, at the boundary
def load_environment(
    source: str | None = None,
    *,
    multimodal: bool = False,
    judge_model: str = JUDGE_MODEL,
    judge_base_url: str = JUDGE_BASE_URL,
    judge_api_key_var: str = JUDGE_API_KEY_VAR,
    calibration_bin_size: Annotated[int, Field(ge=1)] = 100,
) -> vf.Environment:
    """The hle environment.

    Args:
        source: omitted for the pinned ``cais/hle`` (gated: ``HF_TOKEN``), ``"sample"`` (five bundled
            questions in its schema) or a local ``.jsonl`` / ``.json`` / ``.parquet`` file in its schema.
        multimodal: keep the questions with an image too (all 2,500; the model must accept images).
        judge_model, judge_base_url, judge_api_key_var: the judge (default: the official o3-mini at
            OpenAI, key in ``OPENAI_API_KEY``; ``""`` for the variable sends no key).
        calibration_bin_size: rollouts per calibration bin (the official 100).
    """

    def convert(record: Mapping[str, Any], index: int) -> dict[str, Any]:
        info = {k: v for k, v in record.items() if k not in ("answer", "image", "rationale")}
        info["has_image"] = bool(record["image"])
        return {
            "example_id": index,
            "prompt": _prompt(record),
            "answer": str(record["answer"]),
            "info": info,
            "task": "hle",
        }

    build = vf.data.benchmark_rows(
        DATA,
        source,
        convert,
        install_hint=INSTALL_HINT,
        bundled=SAMPLES,
        select=None if multimodal else (lambda record: not record["image"]),
        selection={"multimodal": multimodal},
        selected_rows=None if multimodal else TEXT_ONLY_ROWS,
    )
    rubric = HLEJudgeRubric(
        judge_model=judge_model,
        judge_base_url=judge_base_url,
        judge_api_key_var=judge_api_key_var or None,
        calibration_bin_size=calibration_bin_size,
    )
    return vf.SingleTurnEnv(eval_dataset=build, rubric=rubric, task="hle")
