"""Optional reasoning-gym backend (``pip install 'logic-env[reasoning-gym]'``).

Rows come from reasoning-gym's procedural datasets and are scored by the dataset's own
``score_answer`` on the parsed ``<answer>``. A row records (task, seed, size, index, config), so the
scorer rebuilds the same entry deterministically instead of carrying reasoning-gym's metadata around.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from logic_env.tasks.base import instruction

_INSTALL_HINT = "the reasoning_gym source needs reasoning-gym: pip install 'logic-env[reasoning-gym]'"


def _rg() -> Any:
    try:
        import reasoning_gym
    except ImportError as exc:
        raise ImportError(_INSTALL_HINT) from exc
    return reasoning_gym


@lru_cache(maxsize=128)
def _dataset(name: str, seed: int, size: int, config_json: str) -> Any:
    return _rg().create_dataset(name, size=size, seed=seed, **json.loads(config_json))


def check_tasks(rg_tasks: Sequence[str]) -> None:
    """Fail early on names reasoning-gym does not know."""
    known = set(_rg().factory.DATASETS)
    unknown = [t for t in rg_tasks if t not in known]
    if unknown:
        raise ValueError(f"unknown reasoning-gym task(s) {unknown}; see reasoning_gym.factory.DATASETS")


def build_rows(
    rg_tasks: Sequence[str], num_examples: int, seed: int, rg_config: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    t = len(rg_tasks)
    for i in range(num_examples):
        name = rg_tasks[i % t]
        size = len(range(i % t, num_examples, t))  # rows of this task in the run
        config_json = json.dumps(dict(rg_config.get(name, {})), sort_keys=True)
        entry = _dataset(name, seed, size, config_json)[i // t]
        info = {
            "verifier": "reasoning_gym",
            "source": "reasoning_gym",
            "rg_task": name,
            "rg_seed": seed,
            "rg_size": size,
            "rg_index": i // t,
            "rg_config": json.loads(config_json),
        }
        question = str(entry["question"]) + instruction("Write only the final answer inside the tags.")
        rows.append(
            {
                "example_id": i,
                "question": question,
                "answer": str(entry["answer"]),
                "task": name,
                "info": info,
            }
        )
    return rows


def score(answer: str | None, info: Mapping[str, Any]) -> float:
    if answer is None:
        return 0.0
    ds = _dataset(
        str(info["rg_task"]),
        int(info["rg_seed"]),
        int(info["rg_size"]),
        json.dumps(info["rg_config"], sort_keys=True),
    )
    entry = ds[int(info["rg_index"])]
    return float(ds.score_answer(answer=answer, entry=entry))
