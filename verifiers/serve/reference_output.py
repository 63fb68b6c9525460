"""Our rollout rows (contract 3.3) as the reference SDK's ``RolloutOutput`` (``verifiers==0.1.12``), what
prime-rl v0.5.0's orchestrator reads from an env server.

Field by field (the reference's ``state_to_output`` and the orchestrator's reads):

- ``example_id``, ``task``, ``prompt``, ``completion``, ``answer`` / ``info`` (left out when empty, as
  the reference does), ``is_truncated``, ``stop_condition``, ``metrics`` (also flattened to top-level
  keys, as the reference does for backward compatibility);
- ``reward``: a float always — the orchestrator averages rewards. A rollout we could not score
  (``reward = null``) always carries an ``error``, and the reference's own default is ``0.0``; the
  orchestrator masks errored rollouts (``has_error``) so that 0.0 never trains;
- ``error``: the reference's ``ErrorInfo`` ``{error, error_chain_repr, error_chain_str}`` (the
  orchestrator logs ``error_chain_repr``), our category leading the chain: ``"infra: WorkerCrashedError: …"``;
- ``timing``: ``{start_time, generation_ms, scoring_ms, total_ms}``; ``is_completed``: no error;
  ``token_usage``: ``{input_tokens, output_tokens}``;
- state columns: ``trajectory`` (one step per model call: ``prompt``/``completion`` messages,
  ``response``, ``tokens`` = ``{prompt_ids, prompt_mask, completion_ids, completion_mask,
  completion_logprobs, overlong_prompt, is_truncated, routed_experts}`` or ``None``, ``reward``,
  ``advantage``, ``is_truncated``, ``trajectory_id``, ``extras``), ``sampling_args`` (what the requests
  sent; the orchestrator reads its ``temperature``), and any other key of our row by name (``None``
  when absent).

A step's ``tokens`` is ``None`` unless the endpoint gave prompt ids, completion ids *and* logprobs: the
orchestrator then re-tokenizes that step from its messages with logprobs 0.0, its own fallback, rather
than train on logprobs nobody measured.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

_FINISH = {"stop", "length", "tool_calls"}


def _tool_calls(calls: Any) -> list[dict[str, Any]] | None:
    """OpenAI ``tool_calls`` as the reference's flat ``ToolCall`` ``{id, name, arguments}``."""
    if not calls:
        return None
    out = []
    for c in calls:
        fn = c.get("function") or {}
        args = fn.get("arguments", c.get("arguments", ""))
        out.append(
            {
                "id": str(c.get("id", "")),
                "name": str(fn.get("name", c.get("name", ""))),
                "arguments": args if isinstance(args, str) else json.dumps(args),
            }
        )
    return out


def _messages(messages: Any) -> Any:
    if not isinstance(messages, list):
        return messages
    out = []
    for m in messages:
        m = dict(m)
        if "tool_calls" in m:
            m["tool_calls"] = _tool_calls(m["tool_calls"])
        out.append(m)
    return out


def _error_info(error: Mapping[str, Any] | None) -> dict[str, str] | None:
    if error is None:
        return None
    chain = f"{error.get('category')}: {error.get('type')}: {error.get('message')}"
    return {"error": str(error.get("type")), "error_chain_repr": chain, "error_chain_str": chain}


def _steps(row: Mapping[str, Any], model: str) -> list[dict[str, Any]]:
    """One reference ``TrajectoryStep`` per model call (our ``turns``, with ``trajectory`` tokens)."""
    turns: list[dict[str, Any]] = list(row.get("turns") or [])
    tokens_by_call: list[dict[str, Any]] = list(row.get("trajectory") or [])
    if len(tokens_by_call) != len(turns):  # some call came back without ids: no step is attributable
        tokens_by_call = []
    prompt, raw_completion = row.get("prompt"), row.get("completion")
    chat = isinstance(raw_completion, list)
    completion: list[dict[str, Any]] = raw_completion if isinstance(raw_completion, list) else []
    # The i-th assistant message of the completion answers the i-th call; its prompt is all before it.
    assistant_at = [i for i, m in enumerate(completion) if m.get("role") == "assistant"] if chat else []
    steps = []
    for i, turn in enumerate(turns):
        if chat and i < len(assistant_at):
            at = assistant_at[i]
            step_prompt: Any = _messages(list(prompt or []) + completion[:at])
            message: dict[str, Any] = dict(completion[at])
        else:
            step_prompt = _messages(prompt)
            text = raw_completion if isinstance(raw_completion, str) else ""
            message = {"role": "assistant", "content": text}
        tok = tokens_by_call[i] if i < len(tokens_by_call) else None
        finish = turn.get("finish_reason")
        truncated = bool(tok.get("is_truncated")) if tok else finish == "length"
        tokens = None
        if tok and tok.get("completion_logprobs") is not None:
            tokens = {
                "prompt_ids": list(tok["prompt_ids"]),
                "prompt_mask": list(tok["prompt_mask"]),
                "completion_ids": list(tok["completion_ids"]),
                "completion_mask": list(tok["completion_mask"]),
                "completion_logprobs": list(tok["completion_logprobs"]),
                "overlong_prompt": bool(tok.get("overlong_prompt", False)),
                "is_truncated": truncated,
                "routed_experts": None,
            }
        n_prompt = len(tok["prompt_ids"]) if tok else len(turn.get("prompt_ids") or [])
        n_completion = len(tok["completion_ids"]) if tok else len(turn.get("completion_ids") or [])
        response_message = {
            "role": "assistant",
            "content": message.get("content"),
            "reasoning_content": message.get("reasoning_content"),
            "tool_calls": _tool_calls(message.get("tool_calls")),
            "finish_reason": finish if finish in _FINISH else None,
            "is_truncated": truncated,
            "tokens": None,
        }
        steps.append(
            {
                "prompt": step_prompt,
                "completion": _messages([message]) if chat else message.get("content", ""),
                "response": {
                    "id": f"{row.get('example_id')}-{row.get('rollout_index')}-{i}",
                    "created": 0,
                    "model": model,
                    "usage": {
                        "prompt_tokens": n_prompt,
                        "reasoning_tokens": 0,
                        "completion_tokens": n_completion,
                        "total_tokens": n_prompt + n_completion,
                    },
                    "message": response_message,
                },
                "tokens": tokens,
                "reward": None,
                "advantage": row.get("advantage"),
                "is_truncated": truncated,
                "trajectory_id": f"{row.get('example_id')}-{row.get('rollout_index')}",
                "extras": {},
            }
        )
    return steps


def to_reference_output(
    row: Mapping[str, Any],
    *,
    model: str,
    sampling_args: Mapping[str, Any],
    state_columns: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The reference ``RolloutOutput`` dict of one of our rollout rows (see the module docstring)."""
    timing = row.get("timing") or {}
    usage = row.get("usage") or {}
    error = row.get("error")
    reward = row.get("reward")
    out: dict[str, Any] = {
        "example_id": row["example_id"],
        "task": row.get("task", "default"),
        "prompt": _messages(row.get("prompt")),
        "completion": _messages(row.get("completion")),
        "reward": float(reward) if reward is not None else 0.0,
        "error": _error_info(error),
        "timing": {
            "start_time": 0.0,
            "generation_ms": float(timing.get("generation", 0.0)) * 1000.0,
            "scoring_ms": float(timing.get("scoring", 0.0)) * 1000.0,
            "total_ms": float(timing.get("total", 0.0)) * 1000.0,
        },
        "is_completed": error is None,
        "is_truncated": bool(row.get("is_truncated")),
        "stop_condition": row.get("stop_condition"),
        "metrics": dict(row.get("metrics") or {}),
        "tool_defs": None,
        "token_usage": {
            "input_tokens": float(usage.get("prompt_tokens", 0)),
            "output_tokens": float(usage.get("completion_tokens", 0)),
        },
    }
    if row.get("answer"):
        out["answer"] = row["answer"]
    if row.get("info"):
        out["info"] = row["info"]
    for k, v in out["metrics"].items():
        out.setdefault(k, v)
    for col in state_columns or []:
        if col == "trajectory":
            out["trajectory"] = _steps(row, model)
        elif col == "sampling_args":
            out["sampling_args"] = dict(sampling_args)
        elif col not in out:
            out[col] = row.get(col)
    return out


__all__ = ["to_reference_output"]
