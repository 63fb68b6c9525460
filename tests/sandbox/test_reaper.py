"""The reaper's choice of records: a backend starting reaps only its own orphans (the records of other
backends wait for their own teardown), ``reap_orphans()`` every backend's."""

from __future__ import annotations

from pathlib import Path

import pytest

from verifiers.sandbox._state import ID_PREFIX, StateDir, reap_orphans


def _orphan(backend: str) -> StateDir:
    """A record whose owner process is gone (pid 2**22 + 1 is above Linux's pid limit)."""
    sd = StateDir.create(f"{ID_PREFIX}{backend}", backend)
    (sd.path / "owner").write_text(f"{2**22 + 1} 0\n")
    return sd


@pytest.fixture(autouse=True)
def _own_state_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VF_SANDBOX_DIR", str(tmp_path / "state"))


def test_a_backend_reaps_only_its_own_orphans() -> None:
    mine, other, alive = _orphan("runsc"), _orphan("bwrap"), StateDir.create(f"{ID_PREFIX}live", "runsc")
    torn: list[str] = []
    reaped = reap_orphans({"runsc": lambda sd: torn.append(sd.id)}, only_these=True)
    assert reaped == torn == [mine.id]
    assert not mine.path.exists()
    assert other.path.exists() and alive.path.exists()  # bwrap's record waits for bwrap's teardown


def test_without_only_these_every_orphan_goes() -> None:
    mine, other = _orphan("runsc"), _orphan("bwrap")
    torn: list[str] = []
    reaped = reap_orphans({"runsc": lambda sd: torn.append(sd.id)})
    assert sorted(reaped) == sorted([mine.id, other.id]) and torn == [mine.id]
    assert not mine.path.exists() and not other.path.exists()
