"""``vf.data``: local files (JSONL / JSON / parquet), the INTELLECT-3 name, hub loading through a fake
``datasets`` (never online), column filters and lazily converted rows."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import verifiers as vf

RECORDS: list[dict[str, Any]] = [
    {"question": "1+1", "answer": "2", "rate": 0.25, "info": {"tags": ["easy"]}},
    {"question": "2+2", "answer": "4", "rate": None, "info": {"tags": []}},
    {"question": "3+3", "answer": "6", "rate": 0.75, "info": {"tags": ["hard", "x"]}},
]


class FakeDataset:
    """The slice of ``datasets.Dataset`` the helpers use; counts row reads to check laziness."""

    def __init__(self, records: list[dict[str, Any]]) -> None:
        self._records = records
        self.column_names = list(records[0])
        self.row_reads: list[int] = []

    def __len__(self) -> int:
        return len(self._records)

    def __getitem__(self, key: int | str) -> Any:
        if isinstance(key, str):
            return [r[key] for r in self._records]
        self.row_reads.append(key)
        return self._records[key]


# --- the public surface ------------------------------------------------------------------------------
def test_vf_data_is_lazy_and_imports_no_heavy_dependency() -> None:
    code = (
        "import sys, verifiers as vf; "
        "heavy = lambda: sorted(m for m in sys.modules if m.split('.')[0] in ('datasets', 'pyarrow')); "
        "before = 'verifiers.data' in sys.modules; "
        "vf.data.is_intellect3('intellect3'); "
        "print(before, heavy())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "[]"]
    assert "data" in dir(vf)


@pytest.mark.parametrize("name", ["intellect3", "intellect-3", "INTELLECT-3", "Intellect3"])
def test_is_intellect3_accepts_both_spellings(name: str) -> None:
    assert vf.data.is_intellect3(name)


@pytest.mark.parametrize("name", ["intellect", "intellect_3", "intellect-3-rl", "sample", ""])
def test_is_intellect3_rejects_other_names(name: str) -> None:
    assert not vf.data.is_intellect3(name)


def test_decode_json() -> None:
    assert vf.data.decode_json('{"a": [1, 2]}') == {"a": [1, 2]}
    assert vf.data.decode_json("[1, 2]") == [1, 2]
    assert vf.data.decode_json("not json") == {"raw": "not json"}
    assert vf.data.decode_json("") == {"raw": ""}
    nested = {"a": "{}"}
    assert vf.data.decode_json(nested) is nested  # not a string: unchanged, not decoded deeper
    assert vf.data.decode_json(None) is None
    assert vf.data.decode_json(3) == 3


# --- local files -------------------------------------------------------------------------------------
def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_local_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = write_jsonl(tmp_path / "data.jsonl", RECORDS)
    assert vf.data.local_path(str(data)) == data
    assert vf.data.local_path(str(tmp_path / "missing.jsonl")) is None
    (tmp_path / "dir.jsonl").mkdir()
    assert vf.data.local_path(str(tmp_path / "dir.jsonl")) is None  # a folder is not a file
    (tmp_path / "data.csv").write_text("a,b\n")
    assert vf.data.local_path(str(tmp_path / "data.csv")) is None
    assert vf.data.local_path(str(tmp_path / "data.csv"), (".csv",)) == tmp_path / "data.csv"
    assert vf.data.local_path(str(data), (".parquet",)) is None
    monkeypatch.setenv("HOME", str(tmp_path))
    assert vf.data.local_path("~/data.jsonl") == data


def test_jsonl_records_skip_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text(json.dumps(RECORDS[0]) + "\n\n   \n" + json.dumps(RECORDS[1]) + "\n", encoding="utf-8")
    assert vf.data.read_records(path) == RECORDS[:2]
    assert vf.data.read_records(str(path)) == RECORDS[:2]  # str paths work too


def test_jsonl_bad_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(RECORDS[0]) + "\n\n{oops\n" + json.dumps(RECORDS[1]) + "\n")
    with pytest.raises(ValueError, match=r"bad\.jsonl:3: not valid JSON") as err:
        vf.data.read_records(path)
    assert str(path) in str(err.value)


def test_json_list(tmp_path: Path) -> None:
    path = tmp_path / "data.json"
    path.write_text(json.dumps(RECORDS), encoding="utf-8")
    assert vf.data.read_records(path) == RECORDS


def test_json_that_is_not_a_list_or_not_json(tmp_path: Path) -> None:
    obj = tmp_path / "obj.json"
    obj.write_text(json.dumps({"rows": RECORDS}))
    with pytest.raises(ValueError, match=r"obj\.json: expected a JSON list of records, got dict"):
        vf.data.read_records(obj)
    lines = write_jsonl(tmp_path / "lines.json", RECORDS)  # JSON lines under a .json name
    with pytest.raises(ValueError, match=r"lines\.json: not valid JSON .*\.jsonl file one record per line"):
        vf.data.read_records(lines)


def test_parquet_round_trip(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "data.parquet"
    pq.write_table(pa.Table.from_pylist(RECORDS), path)
    assert vf.data.read_records(path) == RECORDS


def test_parquet_without_pyarrow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "data.parquet"
    path.write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow -> ImportError
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(ImportError, match=r"data\.parquet needs pyarrow: pip install 'x-env\[data\]'"):
        vf.data.read_records(path, install_hint="pip install 'x-env[data]'")


def test_unsupported_suffix(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    path.write_text("question,answer\n1+1,2\n")
    with pytest.raises(ValueError, match=r"data\.csv: unsupported file type '\.csv'; use one of \.jsonl"):
        vf.data.read_records(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        vf.data.read_records(tmp_path / "missing.jsonl")


# --- hub datasets (a fake `datasets` module: never online) -------------------------------------------
def fake_datasets(monkeypatch: pytest.MonkeyPatch, result: Any) -> list[tuple[Any, ...]]:
    calls: list[tuple[Any, ...]] = []

    def load_dataset(*args: Any, **kwargs: Any) -> Any:
        calls.append((*args, kwargs))
        return result

    fake = types.ModuleType("datasets")
    fake.load_dataset = load_dataset  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "datasets", fake)
    return calls


def test_hf_records_loads_the_subset_and_split(monkeypatch: pytest.MonkeyPatch) -> None:
    dataset = FakeDataset(RECORDS)
    calls = fake_datasets(monkeypatch, dataset)
    assert vf.data.hf_records(vf.data.INTELLECT3_DATASET, "math") is dataset
    assert vf.data.hf_records("org/other", split="test") is dataset
    assert calls == [
        ("PrimeIntellect/INTELLECT-3-RL", "math", {"split": "train"}),
        ("org/other", None, {"split": "test"}),
    ]


def test_hf_records_without_datasets_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "datasets", None)  # import datasets -> ImportError
    with pytest.raises(ImportError, match=r"INTELLECT-3-RL needs the `datasets` package: pip install 'y\["):
        vf.data.hf_records(vf.data.INTELLECT3_DATASET, "code", install_hint="pip install 'y[hub]'")


# --- columns and range filters -----------------------------------------------------------------------
def test_column_of_records_and_of_a_dataset() -> None:
    assert vf.data.column(RECORDS, "rate") == [0.25, None, 0.75]
    assert vf.data.column(FakeDataset(RECORDS), "answer") == ["2", "4", "6"]
    assert vf.data.column([], "rate") == []
    with pytest.raises(ValueError, match="no record has the field 'nope'"):
        vf.data.column(RECORDS, "nope")
    with pytest.raises(ValueError, match="the dataset has no column 'nope'"):
        vf.data.column(FakeDataset(RECORDS), "nope")


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [
        (None, None, None),  # no filter at all (not even dropping missing values)
        (0.25, 0.75, [0, 2]),  # bounds are inclusive
        (0.3, None, [2]),
        (None, 0.5, [0]),
        (0.0, 1.0, [0, 2]),  # a record without a value is dropped once a bound is set
        (0.5, 0.5, []),
        (0.75, 0.75, [2]),
    ],
)
def test_range_indices(low: float | None, high: float | None, expected: list[int] | None) -> None:
    assert vf.data.range_indices(RECORDS, "rate", low, high) == expected
    assert vf.data.range_indices(FakeDataset(RECORDS), "rate", low, high) == expected


def test_range_indices_errors() -> None:
    with pytest.raises(ValueError, match=r"lower bound \(0\.8\) is above the upper bound \(0\.2\)"):
        vf.data.range_indices(RECORDS, "rate", 0.8, 0.2)
    with pytest.raises(ValueError, match="no column 'nope'"):
        vf.data.range_indices(FakeDataset(RECORDS), "nope", 0.1, None)
    assert vf.data.range_indices(RECORDS, "nope", None, None) is None  # no filter: column not read


# --- lazily converted rows ---------------------------------------------------------------------------
def to_row(record: Mapping[str, Any], index: int) -> dict[str, Any]:
    return {"example_id": index, "question": record["question"], "answer": record["answer"]}


def test_lazy_rows_without_indices() -> None:
    rows = vf.data.Rows(RECORDS, to_row)
    assert len(rows) == 3
    assert [rows[i]["example_id"] for i in range(len(rows))] == [0, 1, 2]
    assert list(rows) == [to_row(r, i) for i, r in enumerate(RECORDS)]  # iterable (stops at IndexError)


def test_lazy_rows_indices_select_and_order_but_ids_stay_source_positions() -> None:
    rows = vf.data.Rows(RECORDS, to_row, subset=[2, 0])
    assert len(rows) == 2
    assert rows[0] == {"example_id": 2, "question": "3+3", "answer": "6"}
    assert rows[1]["example_id"] == 0
    with pytest.raises(IndexError):
        rows[2]
    assert len(vf.data.Rows(RECORDS, to_row, subset=[])) == 0
    assert [r["example_id"] for r in vf.data.Rows(RECORDS, to_row, subset=range(1, 3))] == [1, 2]


def test_lazy_rows_convert_only_what_is_read() -> None:
    dataset = FakeDataset(RECORDS)
    converted: list[int] = []

    def counting(record: Mapping[str, Any], index: int) -> dict[str, Any]:
        converted.append(index)
        return to_row(record, index)

    rows = vf.data.Rows(dataset, counting, subset=[2, 1])
    assert len(rows) == 2
    assert converted == [] and dataset.row_reads == []  # nothing read or converted up front
    assert rows[1]["example_id"] == 1
    assert converted == [1] and dataset.row_reads == [1]
    rows[1]
    assert converted == [1, 1]  # converted on every access, never cached


def test_filter_then_lazy_rows_on_a_file(tmp_path: Path) -> None:
    """The pipeline the environments use: file → range filter → rows converted on access."""
    records = vf.data.read_records(write_jsonl(tmp_path / "data.jsonl", RECORDS))
    indices = vf.data.range_indices(records, "rate", 0.5, None)
    rows = vf.data.Rows(records, to_row, subset=indices)
    assert [dict(r) for r in rows] == [{"example_id": 2, "question": "3+3", "answer": "6"}]


def test_qa_fields_merges_info_and_names_missing_keys() -> None:
    record = {"q": "2+2?", "a": 4, "info": '{"src": "x"}', "avg@8": 0.5, "prompt": "ignored"}
    question, answer, info = vf.data.qa_fields(record, 3, question_key="q", answer_key="a")
    assert (question, answer) == ("2+2?", "4")
    assert info == {"src": "x", "avg@8": 0.5, "question": "2+2?"}
    with pytest.raises(ValueError, match=r"record 7 has no 'question'.*set question_key"):
        vf.data.qa_fields({"q": "x", "answer": "y"}, 7)


def test_rows_in_range_filters_then_cuts_and_keeps_source_positions() -> None:
    records = [{"r": v} for v in (0.1, None, 0.5, 0.9, 0.6)]
    rows = vf.data.rows_in_range(
        records, lambda rec, i: {"i": i}, column_name="r", low=0.5, high=None, limit=2
    )
    assert [rows[k]["i"] for k in range(len(rows))] == [2, 3]
    everything = vf.data.rows_in_range(records, lambda rec, i: {"i": i}, column_name="r")
    assert len(everything) == 5  # no bound, no filter (and no column access)
    assert len(vf.data.rows_in_range(records, lambda rec, i: {"i": i}, limit=0)) == 0


# --- Rows as an environment holds its dataset --------------------------------------------------------
def test_rows_run_the_builder_once_on_first_use() -> None:
    calls: list[int] = []

    def build() -> list[dict[str, Any]]:
        calls.append(1)
        return RECORDS

    rows = vf.data.Rows(build)
    assert calls == []  # never at construction
    assert len(rows) == 3 and rows[2]["answer"] == "6"
    assert calls == [1]
    assert [r["answer"] for r in vf.data.Rows(r for r in RECORDS)] == ["2", "4", "6"]  # any iterable


def test_rows_wrap_rows() -> None:
    """An environment holds a builder's ``Rows`` in its own ``Rows``: still lazy, still converted."""
    inner = vf.data.Rows(RECORDS, to_row, subset=[2, 0])
    outer = vf.data.Rows(lambda: inner)
    assert [r["example_id"] for r in outer] == [2, 0]


def test_rows_items_must_be_mappings() -> None:
    with pytest.raises(TypeError, match="dataset row 1 is a str, expected a mapping"):
        vf.data.Rows([{"question": "q"}, "oops"])[1]


def test_rows_indices_are_deterministic() -> None:
    rows = vf.data.Rows([{"question": str(i)} for i in range(10)])
    assert rows.indices() == list(range(10))
    assert rows.indices(3) == [0, 1, 2]
    shuffled = rows.indices(5, seed=3, shuffle=True)
    assert shuffled == rows.indices(5, seed=3, shuffle=True)
    assert shuffled != rows.indices(5, seed=4, shuffle=True)
    assert rows.indices(seed=None, shuffle=True) == rows.indices(seed=0, shuffle=True)
    assert sorted(rows.indices(-1, seed=1, shuffle=True)) == list(range(10))


def test_normalize_row_decodes_info_and_builds_the_prompt() -> None:
    row = vf.data.normalize_row(
        {"question": "1+1", "answer": 2, "info": '{"k": 1}'},
        4,
        system_prompt="S",
        few_shot=None,
        message_type="chat",
        default_task="t",
    )
    assert row == {
        "example_id": 4,
        "prompt": [{"role": "system", "content": "S"}, {"role": "user", "content": "1+1"}],
        "answer": "2",
        "info": {"k": 1},
        "task": "t",
    }


# --- what a source= names, and the question/answer path --------------------------------------------
def test_source_kind(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "data.jsonl", RECORDS)
    assert vf.data.source_kind("Intellect-3", ("sample",)) == vf.data.INTELLECT3 == "intellect3"
    assert vf.data.source_kind("sample", ("sample", "intellect-3")) == "sample"
    assert vf.data.source_kind(str(data), ("sample",)) == "file"
    with pytest.raises(
        ValueError, match=r"^source must be 'sample', 'intellect-3' or the path of an existing "
    ):
        vf.data.source_kind("nope", ("sample", "intellect-3"))


def test_source_records_reads_the_hub_or_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = fake_datasets(monkeypatch, FakeDataset(RECORDS))
    vf.data.source_records("intellect-3", "math", split="test", install_hint="pip install x")
    assert calls == [("PrimeIntellect/INTELLECT-3-RL", "math", {"split": "test"})]
    path = write_jsonl(tmp_path / "data.jsonl", RECORDS)
    assert vf.data.source_records(str(path), "math", install_hint="pip install x") == RECORDS


def qa(source: str, **kwargs: Any) -> list[Mapping[str, Any]]:
    build = vf.data.qa_dataset(
        source,
        task="t",
        hub_subset="math",
        bundled={"sample": lambda: RECORDS},
        install_hint="pip install x",
        **kwargs,
    )
    return list(build())


def test_qa_dataset_filters_cuts_and_converts(tmp_path: Path) -> None:
    path = str(write_jsonl(tmp_path / "data.jsonl", RECORDS))
    (row,) = qa(path, solve_rate_column="rate", min_solve_rate=0.5, format_question=lambda q: q + "!")
    assert row == {
        "example_id": 2,  # the record's position in its source, not in the filtered rows
        "question": "3+3!",
        "answer": "6",
        "info": {"tags": ["hard", "x"], "rate": 0.75, "question": "3+3"},
        "task": "t",
    }
    assert [r["example_id"] for r in qa("sample", num_examples=2)] == [0, 1]


def test_qa_dataset_checks_its_arguments_before_reading() -> None:
    with pytest.raises(ValueError, match=r"source must be 'sample', 'intellect3' or the path"):
        vf.data.qa_dataset("nope", task="t", hub_subset="s", bundled={"sample": list}, install_hint="")
    with pytest.raises(ValueError, match=r"source='sample' has no solve-rate column to filter on"):
        qa("sample", solve_rate_column="rate", max_solve_rate=0.5)
    with pytest.raises(ValueError, match=r"min_solve_rate \(0\.8\) is above max_solve_rate \(0\.2\)"):
        qa("intellect3", solve_rate_column="rate", min_solve_rate=0.8, max_solve_rate=0.2)
