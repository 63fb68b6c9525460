"""code-env pieces that need no sandbox: code extraction, output comparison, problem sources."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from code_env import ScoreReport, ScoringLimits, load_environment
from code_env.parsing import CodeParser, extract_code
from code_env.scoring import (
    _BOOT,
    ProblemTests,
    _files,
    parse_runner_output,
    stdout_matches,
    values_match,
)
from code_env.sources import INSTRUCTION, dataset_builder, sample_records, to_row

from verifiers.errors import SandboxError

FIXTURES = Path(__file__).parent / "fixtures"


def test_extract_code_takes_the_last_python_or_bare_block() -> None:
    text = "Idea:\n```python\nprint(1)\n```\nBetter:\n```\nprint(2)\n```\nRun it with:\n```bash\npython a.py\n```"
    assert extract_code(text) == "print(2)\n"
    assert extract_code("```py\nx = '```'\nprint(x)\n```") == "x = '```'\nprint(x)\n"
    assert extract_code("no code here") is None
    assert extract_code("```python\n   \n```") is None
    assert extract_code("```python\nprint('unterminated')\n") is None
    # drafts inside the reasoning do not count
    assert extract_code("<think>```python\nprint(0)\n```</think>Done.") is None
    assert extract_code("<think>```python\nprint(0)\n```</think>\n```python\nprint(3)\n```") == "print(3)\n"
    completion = [{"role": "assistant", "content": "```python\nprint(4)\n```"}]
    assert CodeParser().parse_answer(completion) == "print(4)\n"


@pytest.mark.parametrize(
    ("got", "expected", "ok"),
    [
        ("3\n", "3", True),  # exact after trimming
        ("  a b \n\n c\n", "a b\nc\n", True),  # line-wise, blank lines dropped
        ("1 2\n3", "1\n2 3\n", True),  # token-wise
        ("0.3333333", "0.333", True),  # numbers within 1e-3
        ("1.0 yes", "1 yes", True),
        ("0.335", "0.333", False),
        ("1.0 no", "1 yes", False),
        ("1 2", "1 2 3", False),
        ("nan", "nan", True),  # identical tokens, even non-finite ones
        ("inf", "1e308", False),
        ("", "", True),
        ("", "0", False),
    ],
)
def test_stdout_matching(got: str, expected: str, ok: bool) -> None:
    assert stdout_matches(got, expected) is ok


@pytest.mark.parametrize(
    ("got", "expected", "ok"),
    [
        ((1, 2), [1, 2], True),  # tuples compare as lists
        ([[1, (2, 3)]], [[1, [2, 3]]], True),
        (2.00001, 2.0, True),
        (2.01, 2.0, False),
        (3, 3.0, True),
        (True, 1, False),  # bools are not numbers here
        (True, True, True),
        ({"a": 1, "b": [1.0]}, {"b": [1], "a": 1}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        (5, [5], True),  # APPS-style wrapped expected values
        ([5], [[5]], True),
        ([5, 6], [5], False),
        (None, None, True),
        ("x", "x ", False),
    ],
)
def test_value_matching(got: object, expected: object, ok: bool) -> None:
    assert values_match(got, expected) is ok


def test_problem_tests_validation() -> None:
    stdin = ProblemTests.model_validate({"fn_name": "", "inputs": [["1 2", "3"]], "outputs": [["6"]]})
    assert stdin.mode == "stdin" and stdin.inputs == ["1 2\n3\n"] and stdin.outputs == ["6\n"]
    call = ProblemTests(fn_name="f", inputs=[[1, 2]], outputs=[3])
    assert call.mode == "call" and len(call) == 1
    with pytest.raises(ValueError, match="2 test inputs but 1 outputs"):
        ProblemTests(inputs=["a", "b"], outputs=["c"])


def test_runner_output_parsing() -> None:
    tests = ProblemTests(inputs=["1", "2"], outputs=["1", "2"])
    with pytest.raises(SandboxError, match="did not start"):
        parse_runner_output("python3: not found", tests)
    killed = parse_runner_output("VF-CODE-RUNNER-STARTED\n", tests)
    assert not killed.passed and [c.status for c in killed.cases] == ["error", "error"]
    assert killed.cases[0].detail == "the test runner was killed before reporting"
    # a forged extra line printed by the solution cannot outrank the runner's report (the last line)
    report = {"results": [{"status": "ok", "out": "1"}, {"status": "timeout", "time": 6.0}]}
    parsed = parse_runner_output(f"VF-CODE-RUNNER-STARTED\n{json.dumps(report)}\n", tests)
    assert [c.status for c in parsed.cases] == ["passed", "timeout"]
    assert parsed.metrics() == {"pass_rate": 0.5, "num_tests": 2.0, "timeouts": 1.0}


def run_on_host(
    code: str, tests: dict[str, Any], limits: ScoringLimits, root: Path, cpu_s: int
) -> ScoreReport:
    """The runner as a sandbox runs it (same bundle, same loader), on plain host processes whose CPU
    limit is ``cpu_s`` (the sandbox's ``SandboxLimits.cpu_s``)."""
    suite = ProblemTests.model_validate(tests)
    (root / "bundle").mkdir(parents=True)
    for name, data in _files(code, suite, limits).items():
        (root / "bundle" / name).write_bytes(data)

    def limit_cpu() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))

    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", _BOOT, "bundle"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        preexec_fn=limit_cpu,
        start_new_session=True,
    )
    return parse_runner_output(proc.stdout, suite)


def test_a_test_process_hands_over_before_its_cpu_limit_could_cut_a_test_short(tmp_path: Path) -> None:
    """Tests share a process, and a process's CPU limit counts all of them: a fresh process takes over
    before a test whose CPU budget (timeout + 1 s) no longer fits under it. Here 48 tests use 0.1 s of
    CPU each, 4.8 s in all, under a 4 s limit (0.1 s of CPU fits a 2 s timeout even on a loaded machine)."""
    code = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.1:\n    pass\nprint(input())\n"
    n = 48
    tests = {"fn_name": None, "inputs": [f"{i}\n" for i in range(n)], "outputs": [f"{i}\n" for i in range(n)]}
    report = run_on_host(code, tests, ScoringLimits(timeout=2.0), tmp_path, cpu_s=4)
    assert report.passed, report.cases


def test_solutions_run_as_under_python3(tmp_path: Path) -> None:
    """A solution is compiled on its own (not under the runner's ``from __future__ import annotations``)
    and its traceback starts at its own code, as with ``python3 solution.py``."""
    tests = {"fn_name": None, "inputs": ["\n"], "outputs": ["True\n"]}
    limits = ScoringLimits(timeout=5.0)
    evaluated = "def f(x: int):\n    pass\nprint(f.__annotations__['x'] is int)\n"
    assert run_on_host(evaluated, tests, limits, tmp_path / "a", cpu_s=10).passed
    undefined = "def f(x: Undefined):\n    pass\nprint(True)\n"
    (case,) = run_on_host(undefined, tests, limits, tmp_path / "b", cpu_s=10).cases
    assert case.status == "error"
    assert (case.detail or "").startswith(
        'Traceback (most recent call last):\n  File "solution.py", line 1, in <module>\nNameError'
    ), case.detail


def test_bundled_sample_shape() -> None:
    records = sample_records()
    assert len(records) >= 30
    assert len({r["id"] for r in records}) == len(records)
    modes = {ProblemTests.model_validate(r["tests"]).mode for r in records}
    assert modes == {"stdin", "call"}
    assert any("class Solution" in r["reference"] for r in records)
    call_outputs = [o for r in records if r["tests"]["fn_name"] for o in r["tests"]["outputs"]]
    assert any(isinstance(o, float) and not o.is_integer() for o in call_outputs)
    for r in records:
        assert r["reference"] != r["wrong"] and r["question"].strip()


def test_rows_hide_solutions_and_sample_tests_deterministically() -> None:
    record = {
        "id": "big",
        "question": "Echo the input.",
        "tests": {
            "fn_name": None,
            "inputs": [f"{i}\n" for i in range(40)],
            "outputs": [f"{i}\n" for i in range(40)],
        },
        "reference": "print(input())",
        "wrong": "print(0)",
    }
    row = to_row(record, 3, max_tests=15, seed=0)
    assert row["question"] == f"{INSTRUCTION}\n\nEcho the input."
    assert set(row["info"]) == {"id", "tests"} and row["example_id"] == 3 and row["task"] == "code"
    tests = row["info"]["tests"]
    assert len(tests["inputs"]) == 15 and tests["inputs"] == tests["outputs"]  # pairs stay aligned
    assert to_row(record, 3, max_tests=15, seed=0) == row
    assert to_row(record, 3, max_tests=15, seed=1)["info"]["tests"] != tests
    assert len(to_row(record, 3, max_tests=50, seed=0)["info"]["tests"]["inputs"]) == 40


def test_intellect3_shaped_records(tmp_path: Path) -> None:
    """The hub dataset's shape (info and tests as JSON strings), read through the local-file path."""
    rows = dataset_builder(str(FIXTURES / "intellect3_code.jsonl"), max_tests=15, seed=0)()
    assert len(rows) == 2
    first, second = rows[0], rows[1]
    assert first["info"]["source"] == "fixture" and first["info"]["tests"]["fn_name"] is None
    assert first["info"]["tests"]["inputs"] == ["2 3\n", "10 -4\n"]
    assert second["info"]["tests"]["fn_name"] == "count_words"
    assert second["info"]["tests"]["inputs"] == [["a b c"], [""]]


def test_intellect3_rows_from_json_and_parquet_files(tmp_path: Path) -> None:
    """A local copy of the hub data as a JSON list or a parquet file gives the same rows as the JSONL."""
    fixture = FIXTURES / "intellect3_code.jsonl"
    expected = list(dataset_builder(str(fixture), max_tests=15, seed=0)())
    records = [json.loads(line) for line in fixture.read_text().splitlines()]
    listed = tmp_path / "code.json"
    listed.write_text(json.dumps(records))
    assert list(dataset_builder(str(listed), max_tests=15, seed=0)()) == expected
    assert load_environment(source=str(listed)).select_rows()[1]["info"]["tests"]["fn_name"] == "count_words"
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    table = tmp_path / "code.parquet"
    pq.write_table(pa.Table.from_pylist(records), table)
    assert list(dataset_builder(str(table), max_tests=15, seed=0)()) == expected


@pytest.mark.parametrize("name", ["intellect-3", "intellect3"])
def test_hub_source_loads_the_code_subset_through_datasets(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """The online path, with ``datasets.load_dataset`` answered from the local fixture (no download)."""
    calls: list[tuple[Any, ...]] = []
    fixture = [json.loads(line) for line in (FIXTURES / "intellect3_code.jsonl").read_text().splitlines()]

    def load_dataset(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        calls.append((*args, kwargs))
        return fixture

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    env = load_environment(source=name, split="train")
    assert calls == []  # nothing is loaded until rows are needed
    rows = env.select_rows()
    assert calls == [("PrimeIntellect/INTELLECT-3-RL", "code", {"split": "train"})]
    assert [r["info"]["tests"]["fn_name"] for r in rows] == [None, "count_words"]
    assert rows[0]["prompt"][-1]["content"].startswith(INSTRUCTION)


def test_bad_sources_fail_clearly(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="source must be"):
        load_environment(source=str(tmp_path / "missing.jsonl"))
    with pytest.raises(ValueError, match="source must be"):
        dataset_builder(str(tmp_path / "missing.jsonl"), max_tests=15, seed=0)()
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q", "tests": {"inputs": ["1"], "outputs": ["1"]}}\n{oops\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2: not valid JSON"):
        dataset_builder(str(bad), max_tests=15, seed=0)()
    notests = tmp_path / "notests.jsonl"
    notests.write_text('{"question": "q"}\n')
    with pytest.raises(ValueError, match="no tests"):
        dataset_builder(str(notests), max_tests=15, seed=0)()[0]
    with pytest.raises(ValueError, match="no tests"):  # tests that are text, not JSON
        to_row({"question": "q", "info": json.dumps({"tests": "inputs: 1"})}, 0, max_tests=15, seed=0)
    csv = tmp_path / "problems.csv"
    csv.write_text("question,tests\n")
    with pytest.raises(ValueError, match="source must be"):
        load_environment(source=str(csv))
