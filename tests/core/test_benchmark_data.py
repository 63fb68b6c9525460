"""Pinned benchmark data (``verifiers.data.benchmark``): the pinned revision is what is asked for, the row
count is checked, a gated dataset without access gets one line naming its terms page and the token
variable, a local source must be in the dataset's schema, and the fingerprint of the rows is the same from
the hub, a .jsonl or a .parquet copy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.env_testing import fake_datasets, refuse_dataset_access
from verifiers.data.benchmark import (
    PinnedDataset,
    access_message,
    benchmark_rows,
    row_fingerprint,
)
from verifiers.data.rows import Rows
from verifiers.errors import DatasetAccessError, DatasetError

REV = "0123456789abcdef0123456789abcdef01234567"
SPEC = PinnedDataset(dataset="org/bench", revision=REV, split="test", rows=3, columns=("q", "a"))
RECORDS = [{"q": f"question {i}", "a": str(i), "extra": i} for i in range(3)]


def convert(record: dict[str, Any], index: int) -> dict[str, Any]:
    return {"example_id": index, "question": record["q"], "answer": record["a"]}


def rows_of(spec: PinnedDataset, source: str | None = None, **kw: Any) -> Rows:
    rows = benchmark_rows(spec, source, convert, install_hint="pip install bench[data]", **kw)()
    assert isinstance(rows, Rows)
    return rows


def test_a_revision_must_be_a_full_commit() -> None:
    with pytest.raises(ValueError, match="full 40-hex commit"):
        PinnedDataset(dataset="org/bench", revision="main", split="test", rows=1, columns=("q",))
    with pytest.raises(ValueError, match="schema columns"):
        PinnedDataset(dataset="org/bench", revision=REV, split="test", rows=1, columns=())


def test_pinned_load_asks_for_the_revision_and_records_it(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = fake_datasets(monkeypatch, RECORDS)
    rows = rows_of(SPEC)
    assert calls == [("org/bench", None, "test", REV)]
    assert [r["answer"] for r in rows] == ["0", "1", "2"]
    record = rows.provenance
    assert record is not None
    assert (record.dataset, record.source, record.revision, record.split, record.rows) == (
        "org/bench",
        "hub",
        REV,
        "test",
        3,
    )
    assert record.sha256 == row_fingerprint(RECORDS, ("q", "a"))


def test_configs_are_loaded_in_order_and_tagged(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = PinnedDataset(
        dataset="org/bench", revision=REV, split="test", rows=4, columns=("q", "a"), configs=("I", "II")
    )
    calls = fake_datasets(monkeypatch, lambda config: [{"q": f"{config}-{i}", "a": "1"} for i in range(2)])
    rows = rows_of(spec)
    assert [c[1] for c in calls] == ["I", "II"]
    assert [r["question"] for r in rows] == ["I-0", "I-1", "II-0", "II-1"]
    assert rows.provenance is not None and rows.provenance.configs == ["I", "II"]


def test_a_row_count_that_is_not_the_pinned_one_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_datasets(monkeypatch, RECORDS[:2])
    with pytest.raises(DatasetError, match=r"org/bench@0123456 \(test\) has 2 rows, expected 3"):
        rows_of(SPEC)


def test_a_selection_checks_its_own_count(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_datasets(monkeypatch, RECORDS)
    kept = rows_of(SPEC, select=lambda r: r["extra"] != 1, selection={"odd": False}, selected_rows=2)
    assert [r["answer"] for r in kept] == ["0", "2"]
    assert kept.provenance is not None and kept.provenance.selection == {"odd": False}
    assert kept.provenance.sha256 == row_fingerprint([RECORDS[0], RECORDS[2]], ("q", "a"))
    with pytest.raises(DatasetError, match="has 2 rows, expected 1"):
        rows_of(SPEC, select=lambda r: r["extra"] != 1, selection={"odd": False}, selected_rows=1)


def test_gated_dataset_without_access_names_terms_page_and_token(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = PinnedDataset(
        dataset="org/gated", revision=REV, split="test", rows=3, columns=("q", "a"), gated=True
    )
    refuse_dataset_access(monkeypatch)
    with pytest.raises(DatasetAccessError) as info:
        rows_of(spec)
    message = str(info.value)
    assert "\n" not in message
    assert "https://huggingface.co/datasets/org/gated" in message
    assert "HF_TOKEN is not set" in message and "source=" in message
    monkeypatch.setenv("HF_TOKEN", "hf_x")
    assert "HF_TOKEN is set, but its account has not been granted access" in access_message(spec)


def test_other_load_failures_say_what_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_datasets(monkeypatch, RECORDS)
    import datasets

    def offline(*args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("no route to host")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(
        DatasetError, match=r"loading org/bench@0123456 .*ConnectionError.*pass source= a local"
    ):
        rows_of(SPEC)


def test_a_local_source_must_be_in_the_schema(tmp_path: Path) -> None:
    path = tmp_path / "copy.jsonl"
    path.write_text("\n".join(json.dumps({"question": r["q"], "a": r["a"]}) for r in RECORDS))
    with pytest.raises(DatasetError, match=r"record 0 lacks 'q'.*schema: 'q', 'a'"):
        list(rows_of(SPEC, str(path)))
    with pytest.raises(ValueError, match=r"source must be omitted .* or the path of an existing"):
        rows_of(SPEC, str(tmp_path / "missing.jsonl"))


def test_fingerprint_is_the_same_from_jsonl_parquet_and_the_hub(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    jsonl = tmp_path / "copy.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in RECORDS))
    parquet = tmp_path / "copy.parquet"
    pq.write_table(pa.Table.from_pylist(RECORDS), parquet)
    fake_datasets(monkeypatch, [{**r, "extra": "other"} for r in RECORDS])  # non-schema columns differ
    prints = {rows_of(SPEC, src).provenance.sha256 for src in (str(jsonl), str(parquet), None)}  # type: ignore[union-attr]
    assert len(prints) == 1
    changed = [dict(RECORDS[0], a="9"), *RECORDS[1:]]
    assert row_fingerprint(changed, ("q", "a")) not in prints
    assert row_fingerprint(list(reversed(RECORDS)), ("q", "a")) not in prints  # order is part of it


def test_nothing_is_read_before_rows_are_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = fake_datasets(monkeypatch, RECORDS)
    build = benchmark_rows(SPEC, None, convert, install_hint="x")
    assert calls == []
    build()
    assert len(calls) == 1
