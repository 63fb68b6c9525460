"""Published benchmarks' data: a Hugging Face dataset pinned to a commit, or a local copy in its schema.

A benchmark environment declares its data once (``PinnedDataset``: dataset id, revision, configs, split, the
row count that revision has, the schema columns it reads) and builds its rows with ``benchmark_rows``:

- ``source=None`` loads the pinned revision with ``datasets`` (online; gated datasets need ``HF_TOKEN``) and
  checks its row count, so a changed or partial download fails loudly instead of scoring other problems;
- ``source=PATH`` reads a local ``.jsonl`` / ``.json`` / ``.parquet`` file holding the same columns (a mirror,
  a private copy, a test fixture); its size is the user's business, its schema is checked;
- either way the run records a ``DatasetRecord`` (``metadata.json``'s ``dataset``): id or path, revision,
  configs, split, rows, and a sha256 over the rows reduced to the schema columns, so a local mirror of the
  pinned data fingerprints the same as the hub.

Nothing is read before rows are first needed; ``datasets`` is imported only then.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verifiers.data.fields import qa_fields
from verifiers.data.rows import RowConverter, Rows
from verifiers.data.sources import LOCAL_SUFFIXES, local_path, read_records
from verifiers.errors import DatasetAccessError, DatasetError
from verifiers.types import DatasetRecord

#: The environment variable ``huggingface_hub`` reads a token from (gated datasets need one).
TOKEN_VAR = "HF_TOKEN"
_COMMIT = re.compile(r"[0-9a-f]{40}")
#: Keeps a source record (``select(record)``): e.g. HLE's text-only questions.
RecordFilter = Callable[[Mapping[str, Any]], bool]


@dataclass(frozen=True)
class PinnedDataset:
    """A Hugging Face dataset at one commit: what ``benchmark_rows`` loads for ``source=None``.

    ``rows`` is how many records that commit's ``split`` holds (all ``configs`` together); ``columns`` are
    the schema columns the environment reads — a local source must have them, and the fingerprint covers
    exactly them. ``drop_columns`` are removed right after loading (e.g. decoded image previews that would
    need Pillow and are never read). ``gated``: access needs accepting terms on the dataset's page.
    """

    dataset: str
    revision: str
    split: str
    rows: int
    columns: tuple[str, ...]
    configs: tuple[str, ...] = ()
    gated: bool = False
    drop_columns: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not _COMMIT.fullmatch(self.revision):
            raise ValueError(f"{self.dataset}: revision must be a full 40-hex commit, not {self.revision!r}")
        if not self.columns:
            raise ValueError(f"{self.dataset}: name the schema columns the environment reads")

    @property
    def page(self) -> str:
        """The dataset's page on the hub (where a gated dataset's terms are accepted)."""
        return f"https://huggingface.co/datasets/{self.dataset}"

    @property
    def label(self) -> str:
        """``id@rev7 (configs, split)``, for messages."""
        parts = [*self.configs, self.split]
        return f"{self.dataset}@{self.revision[:7]} ({', '.join(parts)})"


def row_fingerprint(records: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """sha256 (hex) of ``records`` reduced to ``columns``: one canonical JSON object per line (sorted keys,
    no whitespace, UTF-8), in order. Independent of the file format the records came from."""
    digest = hashlib.sha256()
    for record in records:
        reduced = {c: record.get(c) for c in columns}
        line = json.dumps(reduced, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
        digest.update(line.encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def _access_refused(exc: BaseException) -> bool:
    """Whether a load failed because the hub refused this token the dataset (gated, 401/403)."""
    seen: BaseException | None = exc
    while seen is not None:
        name = type(seen).__name__
        status = getattr(getattr(seen, "response", None), "status_code", None)
        if name == "GatedRepoError" or status in (401, 403) or "gated" in str(seen).lower():
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def access_message(spec: PinnedDataset) -> str:
    """The one line a refused gated dataset gets: where to accept the terms, which variable holds the token."""
    token = (
        f"{TOKEN_VAR} is set, but its account has not been granted access"
        if os.environ.get(TOKEN_VAR)
        else f"{TOKEN_VAR} is not set"
    )
    return (
        f"{spec.dataset} is gated on Hugging Face and this machine may not read it ({token}): accept its "
        f"terms at {spec.page} with your account, then set {TOKEN_VAR} to a read token of that account, "
        "or pass source= a local copy in the same schema"
    )


def load_pinned(spec: PinnedDataset, *, install_hint: str) -> list[dict[str, Any]]:
    """Every record of ``spec`` (its configs in order; each record gets ``config`` when there are several),
    from the hub at the pinned revision. Errors are ``DatasetError`` / ``DatasetAccessError`` lines."""
    try:
        import datasets
    except ImportError as exc:
        raise DatasetError(f"loading {spec.dataset} needs the `datasets` package: {install_hint}") from exc
    records: list[dict[str, Any]] = []
    for config in spec.configs or (None,):
        try:
            ds = datasets.load_dataset(spec.dataset, config, split=spec.split, revision=spec.revision)
        except Exception as exc:
            if (spec.gated and type(exc).__name__ == "DatasetNotFoundError") or _access_refused(exc):
                raise DatasetAccessError(access_message(spec)) from exc
            raise DatasetError(
                f"loading {spec.label} failed ({type(exc).__name__}: {exc}); offline, pass source= a local "
                "copy in the same schema"
            ) from exc
        drop = [c for c in spec.drop_columns if c in getattr(ds, "column_names", ())]
        if drop:
            ds = ds.remove_columns(drop)
        for record in ds:
            row = dict(record)
            if len(spec.configs) > 1:
                row.setdefault("config", config)
            records.append(row)
    return records


def check_columns(records: Sequence[Mapping[str, Any]], columns: Sequence[str], where: str) -> None:
    """Every record has every schema column, else a ``DatasetError`` naming the first record that lacks one."""
    for i, record in enumerate(records):
        missing = [c for c in columns if c not in record]
        if missing:
            raise DatasetError(
                f"{where}: record {i} lacks {', '.join(map(repr, missing))} (has {sorted(record)}); a source "
                f"must be in the dataset's own schema: {', '.join(map(repr, columns))}"
            )


def check_row_count(got: int, expected: int, what: str) -> None:
    """Fail loudly when the pinned data does not hold the rows it must."""
    if got != expected:
        raise DatasetError(
            f"{what} has {got} rows, expected {expected}: the pinned data did not load whole (a partial "
            "cache or a changed dataset); clear the Hugging Face cache or pass source= a verified copy"
        )


def benchmark_rows(
    spec: PinnedDataset,
    source: str | None,
    convert: RowConverter,
    *,
    install_hint: str,
    bundled: Mapping[str, Path] | None = None,
    select: RecordFilter | None = None,
    selection: Mapping[str, Any] | None = None,
    selected_rows: int | None = None,
) -> Callable[[], Rows]:
    """A dataset builder for ``Environment(eval_dataset=...)``: ``source`` is checked now, read at first use.

    ``source`` is ``None`` (the pinned data), a name in ``bundled`` (a file the package ships in the same
    schema, e.g. ``"sample"`` for offline checks) or a local file. ``select`` keeps some records (``selection`` says which, for the record; ``selected_rows`` is how many
    the pinned data must then hold). ``convert(record, index)`` makes each row; ``index`` is the record's
    position in its source, a stable ``example_id``. The rows carry the ``DatasetRecord`` of what was read.
    """
    path: Path | None = None
    if source is not None:
        path = (bundled or {}).get(source) or local_path(source)
        if path is None:
            names = "".join(f", {name!r}" for name in bundled or {})
            raise ValueError(
                f"source must be omitted (the pinned {spec.label}){names} or the path of an existing "
                f"{', '.join(LOCAL_SUFFIXES)} file in its schema, not {source!r}"
            )

    def build() -> Rows:
        if path is None:
            records = load_pinned(spec, install_hint=install_hint)
            check_row_count(len(records), spec.rows, spec.label)
        else:
            try:
                records = read_records(path, install_hint=install_hint)
            except ImportError as exc:
                raise DatasetError(str(exc)) from exc
        check_columns(records, spec.columns, str(path) if path is not None else spec.label)
        kept = [i for i, r in enumerate(records) if select is None or select(r)]
        if path is None and selected_rows is not None:
            check_row_count(len(kept), selected_rows, f"{spec.label} selected by {dict(selection or {})}")
        record = DatasetRecord(
            dataset=spec.dataset if path is None else str(path),
            source="hub" if path is None else "file",
            revision=spec.revision if path is None else None,
            configs=list(spec.configs) if path is None else [],
            split=spec.split if path is None else None,
            rows=len(kept),
            sha256=row_fingerprint([records[i] for i in kept], spec.columns),
            selection=dict(selection or {}),
        )
        return Rows(records, convert, subset=kept if len(kept) != len(records) else None, provenance=record)

    return build


def benchmark_qa(
    spec: PinnedDataset,
    source: str | None,
    *,
    task: str,
    install_hint: str,
    question_key: str = "question",
    answer_key: str = "answer",
    format_question: Callable[[str], str] | None = None,
    format_answer: Callable[[str, int], str] | None = None,
    omit: Sequence[str] = (),
    bundled: Mapping[str, Path] | None = None,
) -> Callable[[], Rows]:
    """``benchmark_rows`` for a question/answer benchmark: each record's ``question_key`` (formatted by
    ``format_question``) and ``answer_key`` (checked and normalised by ``format_answer(answer, index)``)
    make the row; its other fields but ``omit`` (e.g. worked solutions) go to ``info``, with the bare
    question (``qa_fields``)."""

    def convert(record: Mapping[str, Any], index: int) -> dict[str, Any]:
        kept = {k: v for k, v in record.items() if k not in omit}
        question, answer, info = qa_fields(kept, index, question_key=question_key, answer_key=answer_key)
        return {
            "example_id": index,
            "question": format_question(question) if format_question is not None else question,
            "answer": format_answer(answer, index) if format_answer is not None else answer,
            "info": info,
            "task": task,
        }

    return benchmark_rows(spec, source, convert, install_hint=install_hint, bundled=bundled)
