"""The SynLogic-format loader on a local fixture written in the shape of the ``logic`` subset of
PrimeIntellect/INTELLECT-3-RL: supported tasks are scored by this package's verifiers, unknown tasks
are skipped and counted (never scored 0), unreadable rows are skipped and counted separately."""

from __future__ import annotations

import json
import logging
import re
import sys
from pathlib import Path
from typing import Any

import logic_env
import pytest
from hypothesis import given, settings, strategies as st
from logic_env import synlogic
from logic_env.env import correct_answer
from logic_env.parsing import LogicParser

import verifiers as vf
from tests.env_testing import fake_datasets
from tests.scripted_server import Reply, ScriptedServer

FIXTURE = Path(__file__).parent / "fixtures" / "synlogic_sample.jsonl"
RECORDS = vf.data.read_records(FIXTURE)
SUPPORTED = [
    "game_of_24",
    "game_of_24",
    "sudoku",
    "futoshiki",
    "dyck_language",
    "word_sorting",
    "cryptarithm",
]
SUDOKU = (
    "((5, 3, 4, 6, 7, 8, 9, 1, 2), (6, 7, 2, 1, 9, 5, 3, 4, 8), (1, 9, 8, 3, 4, 2, 5, 6, 7), "
    "(8, 5, 9, 7, 6, 1, 4, 2, 3), (4, 2, 6, 8, 5, 3, 7, 9, 1), (7, 1, 3, 9, 2, 4, 8, 5, 6), "
    "(9, 6, 1, 5, 3, 7, 2, 8, 4), (2, 8, 7, 4, 1, 9, 6, 3, 5), (3, 4, 5, 2, 8, 6, 1, 7, 9))"
)
#: Per fixture row (in order): replies in SynLogic's own answer formats, (correct, wrong).
REPLIES: list[tuple[str, str]] = [
    ("Here it is:\n```python\n8 / (3 - 8 / 3)\n```", "```python\n(8 + 8) * 3 / 3\n```"),
    ("<think>hm</think>```python\n5 * (5 - 1 / 5)\n```", "```python\n5 * 5 - 1 / 5\n```"),
    (f"```python\n{SUDOKU}\n```", f"```python\n{SUDOKU.replace('(5, 3, 4', '(3, 5, 4', 1)}\n```"),
    ("The grid: [[1 4 3 2, 2 3 4 1, 4 1 2 3, 3 2 1 4]]", "[[2 4 3 1, 1 3 4 2, 4 1 2 3, 3 2 1 4]]"),
    ("The completed sequence is\n([])({})([()])", "([])({})([(])"),
    ("\\boxed{apple, fig, pear}", "\\boxed{apple, pear, fig}"),
    ("So the answer is 9567 + 1085 = 10652.", "So 9567 + 1085 = 10653."),
]


def load(source: Path | str = FIXTURE, **kwargs: Any) -> Any:
    return logic_env.load_environment(source=str(source), num_examples=-1, **kwargs)


def test_supported_tasks_kept_unknown_skipped_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    env = load()
    with caplog.at_level(logging.WARNING, logger="logic_env.synlogic"):
        rows = env.select_rows()
    assert [r["task"] for r in rows] == SUPPORTED
    assert env.skipped_tasks == {"arrow_maze": 2, "campsite": 1}
    assert env.unreadable_rows == {"sudoku": 1, "dyck_language": 1}
    assert "skipped 3 SynLogic rows" in caplog.text and "arrow_maze" in caplog.text
    for r in rows:
        assert r["info"]["source"] == "synlogic" and r["info"]["synlogic_task"] == r["task"]
    # the question is SynLogic's own (it carries SynLogic's answer-format instructions)
    assert "```python```" in rows[0]["prompt"][-1]["content"]


def test_supported_rows_are_scored_by_constraint_checking_verifiers() -> None:
    rows = load().select_rows()
    parser = LogicParser()
    for row, (good, bad) in zip(rows, REPLIES, strict=True):
        completion = [{"role": "assistant", "content": good}]
        assert correct_answer(completion, row["answer"], row["info"], parser) == 1.0, (row["task"], good)
        completion = [{"role": "assistant", "content": bad}]
        assert correct_answer(completion, row["answer"], row["info"], parser) == 0.0, (row["task"], bad)
    # answers are checked, not compared: REPLIES[1] already differs from its row's stored expression,
    # and so does this one
    other = [{"role": "assistant", "content": "```python\n8 / (3 - (8 / 3))\n```"}]
    assert correct_answer(other, rows[0]["answer"], rows[0]["info"], parser) == 1.0
    # an <answer> tag is read first when present
    tagged = [{"role": "assistant", "content": "<answer>apple, fig, pear</answer>"}]
    assert correct_answer(tagged, rows[5]["answer"], rows[5]["info"], parser) == 1.0


def test_task_filter_and_limit() -> None:
    env = logic_env.load_environment(source=str(FIXTURE), num_examples=-1, tasks=["game_of_24", "sudoku"])
    assert [r["task"] for r in env.select_rows()] == ["game_of_24", "game_of_24", "sudoku"]
    env = logic_env.load_environment(source=str(FIXTURE), num_examples=2)
    assert len(env.select_rows()) == 2
    with pytest.raises(ValueError, match="no verifier"):
        logic_env.load_environment(source=str(FIXTURE), tasks=["arrow_maze"])


def test_parquet_fixture_loads_the_same(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    pa = pytest.importorskip("pyarrow")
    path = tmp_path / "logic.parquet"
    pq.write_table(pa.Table.from_pylist(RECORDS), path)
    assert [r["task"] for r in load(path).select_rows()] == SUPPORTED


def test_json_list_loads_the_same_and_bad_files_fail_clearly(tmp_path: Path) -> None:
    listed = tmp_path / "logic.json"
    listed.write_text(json.dumps(RECORDS))
    assert [r["task"] for r in load(listed).select_rows()] == SUPPORTED
    lines = tmp_path / "lines.json"  # JSON lines under a .json name: the error names the file
    lines.write_text(FIXTURE.read_text())
    with pytest.raises(ValueError, match=r"lines\.json: not valid JSON .*\.jsonl"):
        load(lines).select_rows()
    other = tmp_path / "logic.csv"
    other.write_text("question,answer\n")
    with pytest.raises(ValueError, match="source must be"):
        load(other)


def test_local_files_load_without_datasets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "datasets", None)  # import datasets -> ImportError
    env = load()
    assert [r["task"] for r in env.select_rows()] == SUPPORTED
    assert env.skipped_tasks == {"arrow_maze": 2, "campsite": 1}
    with pytest.raises(ImportError, match="logic-env\\[synlogic\\]"):
        logic_env.load_environment(source="synlogic").select_rows()


def test_hub_source_asks_datasets_for_the_logic_subset(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real hub code path, with ``datasets.load_dataset`` answered from the fixture (no network)."""
    calls = fake_datasets(monkeypatch, RECORDS)
    env = logic_env.load_environment(source="synlogic", num_examples=3)
    assert [r["task"] for r in env.select_rows()] == SUPPORTED[:3]
    assert calls == [("PrimeIntellect/INTELLECT-3-RL", "logic", "train")]


def test_adapt_row_never_raises_on_junk() -> None:
    junk: list[dict[str, Any]] = [
        {},
        {"info": "not json"},
        {"info": json.dumps({"task": "sudoku", "game_data": "{bad"})},
        {"info": 5},
    ]
    for raw in junk:
        _task, row = synlogic.adapt_row(raw)
        assert row is None or row == {}


def test_synlogic_rows_end_to_end_skipped_rows_never_appear() -> None:
    env = load()
    rows = env.select_rows()
    replies = {r["prompt"][-1]["content"]: good for r, (good, _) in zip(rows, REPLIES, strict=True)}

    def handler(body: dict[str, Any]) -> Reply:
        return Reply(content=replies[body["messages"][-1]["content"]])

    with ScriptedServer(handler=handler) as server:
        run = env.evaluate(server.url, "m", num_examples=-1)
    assert len(run.results) == len(SUPPORTED)
    assert all(r["reward"] == 1.0 for r in run.results)
    assert {r["task"] for r in run.results} == set(SUPPORTED)


@pytest.mark.parametrize("style", ["code_block", "grid", "boxed", "equation", "last_line"])
def test_extraction_returns_on_hostile_text(style: str) -> None:
    """Long operator chains, unclosed tags and fences: extraction scans a bounded tail in linear time
    (the equation scan is checked against the plain pattern below). The deadline only guards a hang."""
    import time

    hostile = [
        "<answer>" * 12_000,
        "1+" * 45_000 + "1",
        "1 + " * 20_000 + "x",
        "```" * 30_000,
        "[[" * 45_000,
        "\\boxed{" * 12_000,
        "x" * 99_999,
        "9" * 200_000,
    ]
    deadline = time.monotonic() + 120
    for text in hostile:
        answer = synlogic.extract(style, text)
        assert answer is None or isinstance(answer, str)
        assert time.monotonic() < deadline, f"extraction hung on {text[:20]!r}"


#: The one-pattern form of the equation scan, quadratic on a long chain with no ``=``.
_PLAIN_EQUATION = re.compile(r"\d+(?:\s*[+\-*]\s*\d+)+\s*=\s*-?\d+")


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet="0123456789+-*= x\n", max_size=60))
def test_the_linear_equation_scan_finds_what_the_plain_pattern_finds(text: str) -> None:
    found = _PLAIN_EQUATION.findall(text)
    assert synlogic.last_numeric_equation(text) == (found[-1] if found else None)
