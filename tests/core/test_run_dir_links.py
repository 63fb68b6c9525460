"""Issue 33 item 5: a run directory is never written (or read) through a planted link, and a run never
adopts a directory that is not a run directory.

Each run file is tried as a symbolic link to a victim file outside the directory (the lock, the results,
the metadata, its temporary file, the ``env_args`` directory and a file in it), in a new directory and in
one holding an earlier run that is resumed; the victim must come out unchanged."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.core.test_engine import make_env
from tests.scripted_server import ScriptedServer
from verifiers.eval.results import RunDirectory, RunDirectoryError
from verifiers.hub.env_args import ENV_ARGS_DIR, canonical_json, reference
from verifiers.types import RunMetadata

VICTIM = b"precious: not a pid, not a result\n"


def victim(tmp_path: Path) -> Path:
    path = tmp_path / "victim.txt"
    path.write_bytes(VICTIM)
    return path


TEMP = ".metadata.json.<pid>.tmp"  # what a run of this process writes first


def run_file(name: str) -> str:
    return name.replace("<pid>", str(os.getpid()))


@pytest.mark.parametrize("name", [".lock", "results.jsonl", "metadata.json", TEMP, ENV_ARGS_DIR])
async def test_a_planted_link_in_a_new_run_directory_is_refused(
    tmp_path: Path, scripted: ScriptedServer, name: str
) -> None:
    target, name = victim(tmp_path), run_file(name)
    out = tmp_path / "run"
    out.mkdir()
    (out / name).symlink_to(target)
    with pytest.raises(RunDirectoryError, match=f"{name}@|symbolic link"):
        await make_env(2).a_evaluate(scripted.url, "m", output_dir=out)
    assert target.read_bytes() == VICTIM
    assert not scripted.requests  # refused before any work


@pytest.mark.parametrize("name", [".lock", "results.jsonl", "metadata.json", TEMP])
async def test_a_link_planted_in_an_earlier_run_is_refused_on_resume(
    tmp_path: Path, scripted: ScriptedServer, name: str
) -> None:
    target, name = victim(tmp_path), run_file(name)
    out = tmp_path / "run"
    await make_env(1).a_evaluate(scripted.url, "m", output_dir=out)
    (out / name).unlink(missing_ok=True)
    (out / name).symlink_to(target)
    before = len(scripted.requests)
    with pytest.raises(RunDirectoryError, match=f"{name}@"):
        await make_env(2).a_evaluate(scripted.url, "m", output_dir=out, resume=True)
    assert target.read_bytes() == VICTIM
    assert len(scripted.requests) == before


async def test_an_output_directory_that_is_a_link_is_refused(
    tmp_path: Path, scripted: ScriptedServer
) -> None:
    real = tmp_path / "elsewhere"
    real.mkdir()
    link = tmp_path / "run"
    link.symlink_to(real)
    with pytest.raises(RunDirectoryError, match="symbolic link or not a directory"):
        await make_env(1).a_evaluate(scripted.url, "m", output_dir=link)
    assert list(real.iterdir()) == []


async def test_a_directory_that_is_not_a_run_directory_is_refused(
    tmp_path: Path, scripted: ScriptedServer
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("export PATH=$PATH\n")
    (home / "notes").mkdir()
    with pytest.raises(RunDirectoryError, match=r"is not a run directory: it holds \.bashrc, notes/") as info:
        await make_env(1).a_evaluate(scripted.url, "m", output_dir=home)
    assert "--output-dir" in str(info.value)
    assert sorted(p.name for p in home.iterdir()) == [".bashrc", "notes"]  # not even a .lock
    assert not scripted.requests


async def test_empty_and_run_directories_are_still_taken(tmp_path: Path, scripted: ScriptedServer) -> None:
    out = tmp_path / "empty"
    out.mkdir()
    first = await make_env(2).a_evaluate(scripted.url, "m", output_dir=out)
    assert first.metadata.counts.completed == 2
    again = await make_env(2).a_evaluate(scripted.url, "m", output_dir=out, resume=True)
    assert again.metadata.counts.completed == 2 and len(again.results) == 2


def _meta(env_args: dict[str, object]) -> RunMetadata:
    return RunMetadata(
        env_id="t", env_version="1", env_content_hash="", sdk_version="0", env_args=env_args, model="m",
        base_url="http://x/v1", num_examples=1, rollouts_per_example=1, started_at="now",
    )  # fmt: skip


def test_env_args_files_are_neither_written_nor_read_through_links(tmp_path: Path) -> None:
    big = {"rows": ["x" * 100] * 100}  # over the inline limit: recorded in env_args/<sha256>.json
    ref = reference(canonical_json(big["rows"]))
    target = victim(tmp_path)

    linked_dir = RunDirectory(tmp_path / "a")
    linked_dir.path.mkdir()
    (linked_dir.path / ENV_ARGS_DIR).symlink_to(tmp_path)
    with pytest.raises(RunDirectoryError):
        linked_dir.write_metadata(_meta(big))

    linked_file = RunDirectory(tmp_path / "b")
    (linked_file.path / ENV_ARGS_DIR).mkdir(parents=True)
    (linked_file.path / str(ref["$file"])).symlink_to(target)
    linked_file.write_metadata(_meta(big))  # the link is replaced by the file, never written through
    assert target.read_bytes() == VICTIM
    assert not (linked_file.path / str(ref["$file"])).is_symlink()

    written = RunDirectory(tmp_path / "c")
    written.write_metadata(_meta(big))
    stored = written.path / str(ref["$file"])
    stored.unlink()
    stored.symlink_to(target)
    with pytest.raises(ValueError, match="cannot be read"):
        written.read_metadata()
