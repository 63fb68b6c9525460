"""Helpers shared by the environment packages' tests (``environments/*/tests``): the state of a finished
single-turn rollout, a stand-in for the ``datasets`` package, and the installed ``vf-eval`` script."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

import verifiers as vf
from verifiers.types import Row, State


def answered(env: vf.Environment, row: Row, text: str, rollout_index: int = 0) -> State:
    """The state of a rollout of ``row`` whose one reply was ``text``, ready to be scored."""
    state = env.init_state(row, rollout_index)
    state["completion"] = [{"role": "assistant", "content": text}]
    return state


class FakeDataset:
    """The slice of ``datasets.Dataset`` the loaders use: len, row and column access, column_names."""

    def __init__(self, records: Sequence[dict[str, Any]]) -> None:
        self._records = list(records)
        self.column_names = list(self._records[0])

    def __len__(self) -> int:
        return len(self._records)

    def __getitem__(self, key: int | str) -> Any:
        if isinstance(key, str):
            return [r[key] for r in self._records]
        return self._records[key]

    def remove_columns(self, names: Sequence[str]) -> FakeDataset:
        return FakeDataset([{k: v for k, v in r.items() if k not in names} for r in self._records])


def fake_datasets(
    monkeypatch: pytest.MonkeyPatch,
    records: Sequence[dict[str, Any]] | Callable[[str | None], Sequence[dict[str, Any]]],
) -> list[tuple[Any, ...]]:
    """Install a ``datasets`` module whose ``load_dataset(name, subset, split=, revision=)`` answers
    ``records`` (or ``records(subset)``; no network); returns the list its calls are recorded in, as
    ``(name, subset, split)``, with the ``revision`` appended when one is asked for."""
    calls: list[tuple[Any, ...]] = []

    def load_dataset(
        name: str, subset: str | None = None, *, split: str, revision: str | None = None
    ) -> FakeDataset:
        calls.append((name, subset, split) if revision is None else (name, subset, split, revision))
        return FakeDataset(records(subset) if callable(records) else records)

    fake = types.ModuleType("datasets")
    fake.load_dataset = load_dataset  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "datasets", fake)
    return calls


def refuse_dataset_access(monkeypatch: pytest.MonkeyPatch, error_name: str = "GatedRepoError") -> None:
    """Install a ``datasets`` module whose ``load_dataset`` raises what the hub's libraries raise for a gated
    dataset this token may not read (an exception named ``error_name``: ``GatedRepoError`` from
    huggingface_hub, ``DatasetNotFoundError`` from datasets), with ``HF_TOKEN`` unset."""
    refusal = type(error_name, (Exception,), {})

    def load_dataset(name: str, *args: Any, **kwargs: Any) -> Any:
        raise refusal(
            f"Dataset '{name}' is a gated dataset on the Hub. You must be authenticated to access it."
        )

    fake = types.ModuleType("datasets")
    fake.load_dataset = load_dataset  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "datasets", fake)
    monkeypatch.delenv("HF_TOKEN", raising=False)


def run_vf_eval(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """The installed ``vf-eval`` console script run with ``args``. It ships with verifiers-sdk: its absence
    is a broken install, so the test fails rather than skips."""
    exe = shutil.which("vf-eval", path=str(Path(sys.executable).parent)) or shutil.which("vf-eval")
    if exe is None:
        pytest.fail("vf-eval is not installed next to this interpreter: reinstall verifiers-sdk")
    return subprocess.run(
        [exe, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, "OPENAI_API_KEY": "unused"},
    )
