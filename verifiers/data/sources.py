"""Where problems come from: local JSONL / JSON / parquet files and Hugging Face datasets (such as
INTELLECT-3's RL data). Nothing here imports ``datasets`` or ``pyarrow`` until a source that needs it
is read, and a missing one is reported with the install hint the environment gives."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: INTELLECT-3's RL training data; subsets ``math``, ``science``, ``logic``, ``code``, …
INTELLECT3_DATASET = "PrimeIntellect/INTELLECT-3-RL"
#: What ``source_kind`` calls INTELLECT-3's data, whichever of its spellings a ``source=`` used.
INTELLECT3 = "intellect3"
_INTELLECT3_NAMES = frozenset({INTELLECT3, "intellect-3"})
LOCAL_SUFFIXES = (".jsonl", ".json", ".parquet")


def is_intellect3(source: str) -> bool:
    """Whether ``source`` names INTELLECT-3's RL data (``"intellect3"`` or ``"intellect-3"``)."""
    return source.lower() in _INTELLECT3_NAMES


def local_path(source: str, suffixes: Sequence[str] = LOCAL_SUFFIXES) -> Path | None:
    """``source`` as an existing local file with one of ``suffixes``, else ``None``."""
    path = Path(source).expanduser()
    return path if path.suffix in suffixes and path.is_file() else None


def source_kind(source: str, choices: Sequence[str]) -> str:
    """What a ``source=`` argument names: INTELLECT-3's data (``INTELLECT3``, either spelling), one of the
    environment's own ``choices`` (returned as given) or an existing local data file (``"file"``).
    Anything else is an error that lists ``choices`` (which name INTELLECT-3 as the environment spells it)."""
    if is_intellect3(source):
        return INTELLECT3
    if source in choices:
        return source
    if local_path(source) is not None:
        return "file"
    raise ValueError(
        f"source must be {', '.join(repr(c) for c in choices)} or the path of an existing "
        f".jsonl, .json or .parquet file, not {source!r}"
    )


def read_records(path: str | Path, *, install_hint: str = "pip install pyarrow") -> list[dict[str, Any]]:
    """Every record of a local ``.jsonl``, ``.json`` (a list of objects) or ``.parquet`` file."""
    path = Path(path).expanduser()
    if path.suffix == ".jsonl":
        records = []
        with path.open(encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if line.strip():
                    try:
                        records.append(json.loads(line))
                    except ValueError as exc:
                        raise ValueError(f"{path}:{lineno}: not valid JSON ({exc})") from None
        return records
    if path.suffix == ".json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:  # name the file; JSON lines in a .json file is the usual cause
            raise ValueError(
                f"{path}: not valid JSON ({exc}); a .json file holds one list of records, "
                "a .jsonl file one record per line"
            ) from None
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a JSON list of records, got {type(data).__name__}")
        return data
    if path.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError as exc:
            raise ImportError(f"reading {path.name} needs pyarrow: {install_hint}") from exc
        return list(pq.read_table(path).to_pylist())
    raise ValueError(f"{path}: unsupported file type {path.suffix!r}; use one of {', '.join(LOCAL_SUFFIXES)}")


def hf_records(
    dataset: str,
    subset: str | None = None,
    *,
    split: str = "train",
    install_hint: str = "pip install datasets",
) -> Any:
    """A Hugging Face dataset split via ``datasets.load_dataset`` (downloads on first use; online only)."""
    try:
        import datasets
    except ImportError as exc:
        raise ImportError(f"loading {dataset} needs the `datasets` package: {install_hint}") from exc
    return datasets.load_dataset(dataset, subset, split=split)


def source_records(source: str, hub_subset: str, *, split: str = "train", install_hint: str) -> Any:
    """The records of INTELLECT-3's ``hub_subset`` when ``source`` names it, else of the local file ``source``;
    ``install_hint`` is what to install for either (``datasets`` or ``pyarrow``)."""
    if is_intellect3(source):
        return hf_records(INTELLECT3_DATASET, hub_subset, split=split, install_hint=install_hint)
    return read_records(source, install_hint=install_hint)
