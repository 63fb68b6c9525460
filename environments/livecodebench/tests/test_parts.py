"""livecodebench pieces that need no sandbox: the schema and its encoded tests (and hostile pickles), releases,
the window, the row-count checks, the prompt, the extraction and the comparison rules."""

from __future__ import annotations

import base64
import json
import pickle
import subprocess
import sys
import zlib
from datetime import datetime
from pathlib import Path
from typing import Any

import livecodebench as lcb
import livecodebench.dataset as dataset_module
import pytest
from lcb_testing import (
    IN_WINDOW,
    OUT_OF_WINDOW,
    PROBLEMS,
    encode,
    malicious_row,
    record,
    records,
    write_rows,
)
from livecodebench import (
    InvalidTestsError,
    Window,
    decode_private,
    decode_public,
    extract_code,
    load_environment,
    problem_tests,
    stdout_matches,
    unpickle_data,
    value_matches,
)
from livecodebench.cases import MAX_DECOMPRESSED_BYTES, UnsafePickleError
from livecodebench.dataset import ProblemSource, release_files, release_rows

import verifiers as vf

ROW = "livecodebench row 0 (question_id 'x')"


# --- the encoded tests -----------------------------------------------------------------------------
def test_the_fixture_rows_decode_to_dozens_of_tests() -> None:
    for rec in records():
        public = decode_public(rec["public_test_cases"], row=ROW)
        private = decode_private(rec["private_test_cases"], row=ROW)
        assert len(public) == 3 and len(private) >= 17, rec["question_id"]
        kinds = {c.testtype for c in public + private}
        assert kinds == ({"functional"} if json.loads(rec["metadata"]).get("func_name") else {"stdin"})
    # one row stores its private tests as plain JSON (the loader's first try), the others encoded
    plain = [r["question_id"] for r in records() if r["private_test_cases"].startswith("[")]
    assert plain == ["2090B"]


def test_private_tests_are_base64_zlib_pickle_of_a_json_string() -> None:
    rec = record("3400")
    raw = pickle.loads(zlib.decompress(base64.b64decode(rec["private_test_cases"])))  # our own fixture
    assert isinstance(raw, str)
    assert [c.model_dump() for c in decode_private(rec["private_test_cases"], row=ROW)] == json.loads(raw)


def test_functional_tests_decode_one_json_argument_per_line() -> None:
    rec = record("3400")
    cases = decode_public(rec["public_test_cases"], row=ROW)
    tests = problem_tests(cases, "countPairs", row=ROW)
    assert tests.fn_name == "countPairs" and tests.mode == "call"
    first = cases[0].input.split("\n")
    assert tests.inputs[0] == [json.loads(first[0]), json.loads(first[1])]
    assert tests.outputs[0] == json.loads(cases[0].output)
    stdin = problem_tests(decode_public(record("abc900_a")["public_test_cases"], row=ROW), None, row=ROW)
    assert stdin.mode == "stdin" and stdin.inputs[0].endswith("\n")


def test_a_malicious_pickle_is_refused_and_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    row = malicious_row(marker)
    with pytest.raises(InvalidTestsError) as caught:
        decode_private(row["private_test_cases"], row="livecodebench row 11 (question_id 'abc999_x')")
    message = str(caught.value)
    assert "livecodebench row 11 (question_id 'abc999_x')" in message
    assert "refused to unpickle" in message and "system" in message
    assert not marker.exists()
    assert caught.value.to_record()["category"] == "env"
    # the same pickle does run under pickle.loads: the test would catch a decoder that used it
    pickle.loads(zlib.decompress(base64.b64decode(row["private_test_cases"])))
    assert marker.exists()


@pytest.mark.parametrize(
    ("payload", "why"),
    [
        (b"bytes are not JSON", "holds a bytes"),
        ((1, 2), "holds a tuple"),
        ({1, 2}, "holds a set"),
        ([{"input": "1", "output": "1", "testtype": "stdin", "x": 1.5j}], "refers to builtins.complex"),
        (datetime(2024, 1, 1), "refers to datetime.datetime"),
    ],
)
def test_only_plain_data_is_unpickled(payload: Any, why: str) -> None:
    with pytest.raises(InvalidTestsError, match=why):
        decode_private(encode(payload), row=ROW)


def test_pickle_opcodes_that_reach_globals_or_persistent_ids_are_refused() -> None:
    # protocol 0 GLOBAL + REDUCE, by hand: c<module>\n<name>\n(<args>tR.
    with pytest.raises(UnsafePickleError, match=r"refers to builtins\.eval"):
        unpickle_data(b"cbuiltins\neval\n(S'1+1'\ntR.")
    with pytest.raises(UnsafePickleError, match="persistent id"):
        unpickle_data(b"Pfoo\n.")
    with pytest.raises(UnsafePickleError, match="not a valid pickle"):
        unpickle_data(b"\x80\x05garbage")
    assert unpickle_data(pickle.dumps({"a": [1, 2.5, None, True, "s"]})) == {"a": [1, 2.5, None, True, "s"]}


def test_a_zlib_bomb_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("livecodebench.cases.MAX_DECOMPRESSED_BYTES", 1000)
    bomb = base64.b64encode(zlib.compress(pickle.dumps("x" * 5000))).decode()
    with pytest.raises(InvalidTestsError, match="decompresses to more than 1000 bytes"):
        decode_private(bomb, row=ROW)
    assert MAX_DECOMPRESSED_BYTES >= 1 << 30


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ("not base64 !!", "neither JSON nor base64"),
        (base64.b64encode(b"not zlib").decode(), "neither JSON nor base64"),
        ('{"input": "1"}', "expected a list of tests"),
        ('[{"input": "1", "output": "2"}]', "test 0 has a bad testtype"),
        (encode(json.dumps([{"input": 1, "output": "2", "testtype": "stdin"}])), "test 0 has a bad input"),
    ],
)
def test_broken_test_data_is_an_error_naming_the_row(value: str, match: str) -> None:
    with pytest.raises(InvalidTestsError, match=match) as caught:
        decode_private(value, row=ROW)
    assert str(caught.value).startswith(ROW)


# --- releases, the window and the row counts -------------------------------------------------------
def test_releases_select_the_dataset_files() -> None:
    assert release_files("release_v6") == ["test.jsonl"] + [f"test{i}.jsonl" for i in range(2, 7)]
    assert release_files("release_latest") == release_files("release_v6")
    assert release_files("release_v1") == ["test.jsonl"]
    assert release_files("v6") == ["test6.jsonl"]
    assert release_files("v2_v4") == ["test2.jsonl", "test3.jsonl", "test4.jsonl"]
    assert [release_rows(r) for r in ("release_v1", "release_v5", "release_v6", "v6", "v5_v6")] == [
        400, 880, 1055, 175, 342,
    ]  # fmt: skip
    for bad in ("release_v7", "v0", "v3_v9", "latest", "release-v6"):
        with pytest.raises(ValueError, match="release"):
            release_files(bad)
    assert dataset_module.hub_data_files("v6") == [
        f"hf://datasets/livecodebench/code_generation_lite@{lcb.REVISION}/test6.jsonl"
    ]


def test_the_default_window_keeps_its_problems_both_ends_included() -> None:
    env = load_environment(str(PROBLEMS))
    rows = env.select_rows()
    assert [r["info"]["question_id"] for r in rows] == IN_WINDOW
    by_id = {r["info"]["question_id"]: r for r in rows}
    assert by_id["abc900_a"]["info"]["contest_date"] == "2024-08-01T00:00:00"  # the first day
    assert by_id["3533"]["info"]["contest_date"] == "2025-05-01T00:00:00"  # the last day
    for row in rows:  # every row says which window it belongs to, and where it comes from
        assert row["info"]["window"] == {"start_date": "2024-08-01", "end_date": "2025-05-01"}
        assert row["info"]["source"] == str(PROBLEMS)
    # example ids are positions in the source: stable whatever the window
    ids = {r["question_id"]: i for i, r in enumerate(records())}
    assert [r["example_id"] for r in rows] == [ids[q] for q in IN_WINDOW]


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        (None, None, sorted(IN_WINDOW + OUT_OF_WINDOW)),
        ("2025-01-01", None, ["abc912_c", "2090B", "3481", "3520", "3533", "2101A"]),
        (None, "2024-07-31", ["abc899_a"]),
        ("2024-08-02", "2025-04-30", ["abc905_b", "abc912_c", "2041A", "2090B", "3400", "3481", "3520"]),
    ],
)
def test_windows(start: str | None, end: str | None, expected: list[str]) -> None:
    env = load_environment(str(PROBLEMS), start_date=start, end_date=end)
    got = [r["info"]["question_id"] for r in env.select_rows()]
    assert sorted(got) == sorted(expected)
    assert all(r["info"]["window"] == {"start_date": start, "end_date": end} for r in env.select_rows())


def test_bad_windows_and_sources_fail_at_load() -> None:
    with pytest.raises(ValueError, match="start_date must be a date as YYYY-MM-DD"):
        load_environment(str(PROBLEMS), start_date="8/1/2024")
    with pytest.raises(ValueError, match="is after end_date"):
        load_environment(str(PROBLEMS), start_date="2025-01-01", end_date="2024-01-01")
    with pytest.raises(ValueError, match="source must be null"):
        load_environment("no/such/file.jsonl")
    with pytest.raises(ValueError, match="names versions outside 1 … 6"):
        load_environment(release="release_v9")
    with pytest.raises(ValueError, match="release must be"):
        load_environment(release="latest")
    with pytest.raises(ValueError, match=r"no problem has a contest_date in the window 2025-05-03 – …"):
        load_environment(str(PROBLEMS), start_date="2025-05-03", end_date=None).select_rows()
    assert Window.parse(None, None).contains(datetime(1990, 1, 1))


def fake_hub(monkeypatch: pytest.MonkeyPatch, rows: list[dict[str, Any]]) -> list[list[str]]:
    """The hub download replaced by ``rows`` (the files it was asked for are recorded)."""
    asked: list[list[str]] = []

    def load(files: list[str]) -> list[dict[str, Any]]:
        asked.append(files)
        return rows

    monkeypatch.setattr(dataset_module, "load_json_files", load)
    return asked


def test_the_default_source_checks_its_row_count(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = fake_hub(monkeypatch, records())
    env = load_environment()
    with pytest.raises(ValueError) as caught:
        env.select_rows()
    assert "livecodebench/code_generation_lite@0fe84c3 release_v6: expected 1055 rows, got 11" in str(
        caught.value
    )
    assert asked == [dataset_module.hub_data_files("release_v6")]


def test_the_default_window_checks_its_problem_count(monkeypatch: pytest.MonkeyPatch) -> None:
    # 1055 rows (the release's count) of which only a few fall in the default window
    many = [dict(records()[i % 11], question_id=f"q{i}") for i in range(1055)]
    fake_hub(monkeypatch, many)
    with pytest.raises(
        ValueError, match=r"expected 454 problems in the window 2024-08-01 – 2025-05-01, got 863"
    ):
        load_environment().select_rows()
    # another window: no count to check against
    assert len(load_environment(start_date="2025-05-02", end_date=None).select_rows()) == 96
    # another revision: no count check at all
    fake_hub(monkeypatch, records())
    assert len(load_environment(revision="0" * 40).select_rows()) == 9


def test_the_hub_files_load_through_datasets(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The real ``datasets`` json loader over the release's files (local copies standing in for the hub's):
    ``contest_date`` comes back as a timestamp, and the rows are the same as from the plain file."""
    pytest.importorskip("datasets")
    rows = records()
    write_rows(tmp_path / "test.jsonl", rows[:6])
    write_rows(tmp_path / "test2.jsonl", rows[6:])
    monkeypatch.setattr(
        dataset_module,
        "hub_data_files",
        lambda release, revision: [str(tmp_path / f) for f in release_files("release_v2")],
    )
    env = load_environment(release="release_v2", revision="local")
    from_hub = env.select_rows()
    from_file = load_environment(str(PROBLEMS)).select_rows()
    assert [r["prompt"] for r in from_hub] == [r["prompt"] for r in from_file]
    assert [r["info"]["contest_date"] for r in from_hub] == [r["info"]["contest_date"] for r in from_file]
    assert env.problems.rows_sha256() == load_environment(str(PROBLEMS)).problems.rows_sha256()


def test_rows_record_the_data_in_metadata(tmp_path: Path) -> None:
    meta = load_environment(str(PROBLEMS)).dataset_record()
    assert meta is not None
    assert meta.selection == {"start_date": "2024-08-01", "end_date": "2025-05-01", "source_rows": 11}
    assert meta.rows == 9 and meta.source == "file" and meta.dataset == str(PROBLEMS)
    assert len(meta.sha256) == 64
    changed = records()
    cases = json.loads(changed[1]["public_test_cases"])
    cases[0]["output"] = "0\n"
    changed[1]["public_test_cases"] = json.dumps(cases)
    other = load_environment(str(write_rows(tmp_path / "p.jsonl", changed))).dataset_record()
    assert other is not None and other.sha256 != meta.sha256
    hub = ProblemSource(None, release="release_v6", revision=lcb.REVISION, window=Window.parse(None, None))
    assert hub.describe() == "livecodebench/code_generation_lite@0fe84c3 release_v6"


def test_a_row_outside_the_schema_is_an_error_naming_it(tmp_path: Path) -> None:
    rows = records()
    rows[4] = dict(rows[4], platform="topcoder")
    env = load_environment(str(write_rows(tmp_path / "bad.jsonl", rows)))
    with pytest.raises(
        ValueError, match=r"livecodebench row 4 \(question_id '2041A'\): platform: Input should be"
    ):
        env.select_rows()
    rows = records()
    del rows[2]["question_content"]
    env = load_environment(str(write_rows(tmp_path / "bad2.jsonl", rows)))
    with pytest.raises(
        ValueError, match=r"row 2 \(question_id 'abc905_b'\): question_content: Field required"
    ):
        env.select_rows()


def test_the_fixture_file_is_what_its_generator_writes() -> None:
    import make_fixtures

    assert make_fixtures.render() == PROBLEMS.read_text()


# --- prompt and extraction -------------------------------------------------------------------------
def test_the_prompt_is_the_official_template() -> None:
    env = load_environment(str(PROBLEMS))
    rows = {r["info"]["question_id"]: r for r in env.select_rows()}
    system, user = rows["abc900_a"]["prompt"]
    assert system == {"role": "system", "content": lcb.SYSTEM_PROMPT}
    assert system["content"].startswith("You are an expert Python programmer.")
    assert user["content"] == (
        f"### Question:\n{record('abc900_a')['question_content']}\n\n"
        "### Format: Read the inputs from stdin solve the problem and write the answer to stdout (do not "
        "directly test on the sample inputs). Enclose your code within delimiters as follows. Ensure that "
        "when the python program runs, it reads the inputs, runs the algorithm and writes output to STDOUT.\n"
        "```python\n# YOUR CODE HERE\n```\n\n### Answer: (use the provided format with backticks)\n\n"
    )
    starter = record("3400")["starter_code"]
    assert rows["3400"]["prompt"][1]["content"] == (
        f"### Question:\n{record('3400')['question_content']}\n\n"
        "### Format: You will use the following starter code to write the solution to the problem and "
        f"enclose your code within delimiters.\n```python\n{starter}\n```\n\n"
        "### Answer: (use the provided format with backticks)\n\n"
    )
    assert [
        m["role"] for m in load_environment(str(PROBLEMS), system_prompt=None).select_rows(1)[0]["prompt"]
    ] == ["user"]


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("```python\nprint(1)\n```", "print(1)"),
        ("a\n```python\nprint(1)\n```\nb\n```\nprint(2)\n```\nc", "print(2)"),  # the last block
        ("```cpp\nint main() {}\n```", "int main() {}"),  # any tag, as LiveCodeBench extracts
        ("Answer: print(1)", None),  # strict: no block, no code
        ("```python\nprint(1)\n", None),  # an unclosed block
        ("```python\n\n```", None),
        ("<think>```python\nprint(0)\n```</think>\n```python\nprint(3)\n```", "print(3)"),
        ("<think>\n```python\nprint(0)\n```\nstill thinking", None),  # unclosed reasoning: no code
        ("<think>done</think>\nno code after the reasoning", None),
    ],
)
def test_extraction(text: str, code: str | None) -> None:
    assert extract_code(text) == code


def test_the_parser_reads_the_last_assistant_message() -> None:
    env = load_environment(str(PROBLEMS))
    completion = [{"role": "assistant", "content": "<think>x</think>```python\nprint(5)\n```"}]
    assert env.parser.parse_answer(completion) == "print(5)"


# --- comparison ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("got", "expected", "ok"),
    [
        ("3\n", "3", True),
        ("  3  \n\n", "3\n", True),  # trimmed, each line stripped
        ("1 2\n3\n", "1 2\n3", True),
        ("1  2\n", "1 2\n", True),  # as numbers
        ("2.5\n", "2.500000\n", True),  # Decimal equality
        ("1E+2\n", "100\n", True),
        ("0.3333\n", "0.33333\n", False),  # no tolerance
        ("1 2 3\n", "1\n2\n3\n", False),  # line by line, not token by token
        ("a\n\nb\n", "a\nb\n", False),  # inner blank lines count
        ("Yes\n", "yes\n", False),
        ("nan\n", "nan\n", True),  # the same text
        ("NaN\n", "nan\n", False),  # NaN is never equal to a number
        ("sNaN\n", "1\n", False),
        ("", "", True),
        ("", "0\n", False),
    ],
)
def test_stdout_comparison(got: str, expected: str, ok: bool) -> None:
    assert stdout_matches(got, expected) is ok


@pytest.mark.parametrize(
    ("got", "expected", "ok"),
    [
        ([1, 2], [1, 2], True),
        ((1, 2), [1, 2], True),  # a tuple counts as a list
        (3, 3.0, True),
        (True, 1, True),  # Python's == (as the official grader compares)
        (0.1 + 0.2, 0.3, False),  # no float tolerance
        ([[1]], [1], False),
        ({"a": 1}, {"a": 1}, True),
    ],
)
def test_value_comparison(got: Any, expected: Any, ok: bool) -> None:
    assert value_matches(got, expected) is ok


def test_the_harness_header_defines_what_the_official_one_does() -> None:
    probe = (
        "import collections, datetime as dt, math\n"
        "assert sqrt is math.sqrt and deque is collections.deque and gcd is math.gcd\n"
        "assert datetime is dt  # the module: imported by name after `from datetime import *`\n"
        "assert open is __builtins__.open and List is not None and accumulate is not None\n"
        "print(sys.getrecursionlimit(), sys.get_int_max_str_digits())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", lcb.harness_header() + probe], capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["50000", "50000"]


def test_unknown_arguments_are_refused() -> None:
    with pytest.raises(vf.errors.EnvArgumentError, match="timeout"):
        vf.load_environment("livecodebench", timeout=3)


def test_the_bundled_sample_is_in_the_schema_and_the_default_window() -> None:
    env = load_environment("sample")
    rows = env.select_rows()
    assert len(rows) == 3 and {r["info"]["platform"] for r in rows} == {"atcoder", "codeforces", "leetcode"}
    fixture_ids = {r["question_id"] for r in records()}
    assert {r["info"]["question_id"] for r in rows} <= fixture_ids  # written here, not LiveCodeBench's
    record = env.dataset_record()
    assert record is not None and record.source == "file" and record.rows == 3
