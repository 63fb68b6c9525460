"""Token trajectories: what a trainer gets from a rollout.

Each model call whose server returned prompt and completion ids becomes one ``TrajectoryStep``
(``trajectory_step``), kept as a plain dict in ``State["trajectory"]`` and validated as
``verifiers.types.TrajectoryStep`` at the boundary (``RolloutResult.trajectory``). ``token_samples`` turns a
rollout's steps into training sequences:

- **interleaved**: when a step's prompt extends the previous step's prompt + completion token for token,
  the two merge into one sequence; the tokens the environment added in between (tool results, user
  turns, the chat template's markers) join the completion with mask 0, the model's tokens keep mask 1;
- **branching**: a step whose prompt does not extend the last (the chat template re-rendered history
  differently, earlier reasoning was dropped, the environment rewrote the conversation) starts a new
  sample.

A rollout whose every step extends the last is therefore exactly one sample.

``max_seq_len`` bounds each step's prompt + completion: a completion that would run past it is cut
(``is_truncated``), and a prompt that alone exceeds it is cut to it with an empty completion
(``overlong_prompt``); the rollout loop then ends the rollout as truncated. Masks and logprobs are cut
with their ids, so every list stays aligned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from verifiers.types import ModelResponse, TokenSample, TrajectoryStep

#: ``"auto"``: merge every run of extending steps (one sample when all extend); ``"branching"``: one
#: sample per step.
SampleMode = Literal["auto", "branching"]


def extends(previous: Mapping[str, Any] | None, prompt_ids: Sequence[int]) -> bool:
    """Whether ``prompt_ids`` start with ``previous``'s prompt + completion ids, token for token."""
    if previous is None:
        return False
    head = [*previous["prompt_ids"], *previous["completion_ids"]]
    return len(prompt_ids) >= len(head) and list(prompt_ids[: len(head)]) == head


def trajectory_step(
    response: ModelResponse, previous: Mapping[str, Any] | None = None, max_seq_len: int | None = None
) -> dict[str, Any] | None:
    """The trajectory step of one model call (a ``TrajectoryStep`` as a dict), or ``None`` when the
    server gave no prompt or completion ids. ``previous`` is the rollout's last step (for
    ``extends_previous``); ``max_seq_len`` cuts the step as the module docstring says."""
    prompt_ids, completion_ids = response.prompt_ids, response.completion_ids
    if prompt_ids is None or completion_ids is None:
        return None
    logprobs = response.completion_logprobs
    if logprobs is not None and len(logprobs) != len(completion_ids):
        # The decoder refuses such responses; a hand-made one must not slip misaligned lists through.
        raise ValueError(f"{len(completion_ids)} completion ids but {len(logprobs)} logprobs")
    step_extends = extends(previous, prompt_ids)
    truncated = response.finish_reason == "length"
    overlong = False
    if max_seq_len is not None:
        if len(prompt_ids) > max_seq_len:
            overlong = truncated = True
            prompt_ids, completion_ids = prompt_ids[:max_seq_len], []
            logprobs = [] if logprobs is not None else None
        elif len(prompt_ids) + len(completion_ids) > max_seq_len:
            truncated = True
            room = max_seq_len - len(prompt_ids)
            completion_ids = completion_ids[:room]
            logprobs = logprobs[:room] if logprobs is not None else None
    return {
        "prompt_ids": list(prompt_ids),
        "prompt_mask": [0] * len(prompt_ids),
        "completion_ids": list(completion_ids),
        "completion_mask": [1] * len(completion_ids),
        "completion_logprobs": list(logprobs) if logprobs is not None else None,
        "finish_reason": response.finish_reason,
        "is_truncated": truncated,
        "overlong_prompt": overlong,
        "extends_previous": step_extends,
    }


def _as_dict(step: Mapping[str, Any] | TrajectoryStep) -> Mapping[str, Any]:
    return step.model_dump() if isinstance(step, TrajectoryStep) else step


def is_interleaved(trajectory: Sequence[Mapping[str, Any] | TrajectoryStep]) -> bool:
    """Whether the whole trajectory is one interleaved sequence (every step after the first extends
    the last; an empty trajectory is not)."""
    steps = [_as_dict(s) for s in trajectory]
    return bool(steps) and all(s["extends_previous"] for s in steps[1:])


def token_samples(
    trajectory: Sequence[Mapping[str, Any] | TrajectoryStep], mode: SampleMode = "auto"
) -> list[TokenSample]:
    """A rollout's training sequences: runs of extending steps merged (``mode="auto"``) or one per step
    (``mode="branching"``). See the module docstring."""
    if mode not in ("auto", "branching"):
        raise ValueError(f"mode must be 'auto' or 'branching', not {mode!r}")
    samples: list[TokenSample] = []
    current: dict[str, Any] | None = None
    previous: Mapping[str, Any] | None = None
    for index, raw in enumerate(trajectory):
        step = _as_dict(raw)
        logprobs = step.get("completion_logprobs")
        if current is None or previous is None or mode == "branching" or not step["extends_previous"]:
            if current is not None:
                samples.append(TokenSample.model_validate(current))
            current = {
                "prompt_ids": list(step["prompt_ids"]),
                "prompt_mask": list(step["prompt_mask"]),
                "completion_ids": list(step["completion_ids"]),
                "completion_mask": list(step["completion_mask"]),
                "completion_logprobs": list(logprobs) if logprobs is not None else None,
                "is_truncated": bool(step.get("is_truncated")),
                "steps": [index],
            }
        else:
            # What the environment (and the template) added since the previous call: trained on never.
            seen = len(previous["prompt_ids"]) + len(previous["completion_ids"])
            added = list(step["prompt_ids"][seen:])
            current["completion_ids"] += added + list(step["completion_ids"])
            current["completion_mask"] += [0] * len(added) + list(step["completion_mask"])
            if current["completion_logprobs"] is not None and logprobs is not None:
                current["completion_logprobs"] += [0.0] * len(added) + list(logprobs)
            else:
                current["completion_logprobs"] = None
            current["is_truncated"] = current["is_truncated"] or bool(step.get("is_truncated"))
            current["steps"].append(index)
        previous = step
    if current is not None:
        samples.append(TokenSample.model_validate(current))
    return samples


__all__ = ["SampleMode", "extends", "is_interleaved", "token_samples", "trajectory_step"]
