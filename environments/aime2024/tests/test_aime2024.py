"""aime2024: HuggingFaceH4/aime_2024's schema (``problem``, ``answer``; worked solutions never reach a
rollout), the pinned single split (revision asked for, 30 rows checked) and the bundled sample scored by
its gold answers (1.0) and its neighbours' (0.0). The scoring itself is ``vf.integer_benchmark``'s, tested
with golden and adversarial completions and end to end through ``vf-eval`` in aime2025's tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aime2024 import DATA, SAMPLES, load_environment

from tests.env_testing import answered, fake_datasets
from verifiers.errors import DatasetError


def sample_records() -> list[dict[str, object]]:
    return [json.loads(line) for line in SAMPLES["sample"].read_text().splitlines()]


async def test_sample_gold_scores_one_and_neighbours_zero() -> None:
    env = load_environment("sample", verify_workers=1)
    rows = env.select_rows()
    assert len(rows) == 6 and len({r["answer"] for r in rows}) == 6
    states = []
    for i, row in enumerate(rows):
        states.append(answered(env, row, f"\\boxed{{{row['answer']}}}", 2 * i))
        states.append(answered(env, row, f"\\boxed{{{rows[(i + 1) % 6]['answer']}}}", 2 * i + 1))
    await env.setup()
    try:
        await env.rubric.score_group(states)
    finally:
        await env.teardown()
    assert [s["reward"] for s in states] == [1.0, 0.0] * 6


def test_schema_and_solutions_kept_out(tmp_path: Path) -> None:
    rows = load_environment("sample").select_rows()
    assert rows[0]["answer"] == "24"  # "024" in the data
    assert all("solution" not in r["info"] for r in rows)
    assert rows[0]["info"]["question"] == sample_records()[0]["problem"]
    wrong = tmp_path / "renamed.jsonl"
    wrong.write_text(json.dumps({"question": "Q?", "answer": "1"}) + "\n")
    with pytest.raises(DatasetError, match="record 0 lacks 'problem'"):
        load_environment(str(wrong)).select_rows()


def test_pinned_split_and_row_count(monkeypatch: pytest.MonkeyPatch) -> None:
    records = (sample_records() * 5)[:30]
    calls = fake_datasets(monkeypatch, records)
    env = load_environment()
    assert len(env.select_rows()) == 30
    assert calls == [("HuggingFaceH4/aime_2024", None, "train", DATA.revision)]
    fake_datasets(monkeypatch, records[:29])
    with pytest.raises(DatasetError, match="has 29 rows, expected 30"):
        load_environment().select_rows()
