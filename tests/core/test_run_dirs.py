"""Run directories (issue 11, part 2; issue 22): one writer per directory, made at the first rollout (a
start-up that fails or is killed leaves none), and records the results writer cannot lose (big integers exact, everything else by one conversion rule)."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import verifiers as vf
from tests.core.test_engine import JOB, ROOT, exact, make_env
from tests.scripted_server import ScriptedServer
from verifiers.eval.results import (
    LOCK_FILE,
    RunDirectory,
    RunDirectoryBusyError,
    to_json_value,
)
from verifiers.types import RunMetadata


# --- one writer ------------------------------------------------------------------------------------
async def test_a_second_run_on_a_locked_directory_fails_at_once_naming_the_holder(
    tmp_path: Path, scripted: ScriptedServer
) -> None:
    out = tmp_path / "run"
    holder = RunDirectory(out)
    holder.lock()  # another run holds it (a flock conflicts across open files, even in one process)
    try:
        t0 = time.monotonic()
        with pytest.raises(RunDirectoryBusyError, match=f"in use by another run \\(pid {os.getpid()}\\)"):
            await make_env(2).a_evaluate(scripted.url, "m", output_dir=out, resume=True)
        assert time.monotonic() - t0 < 5
        assert not (out / "results.jsonl").exists() and not scripted.requests
    finally:
        holder.unlock()
    run = await make_env(2).a_evaluate(scripted.url, "m", output_dir=out, resume=True)
    assert run.metadata.counts.completed == 2


def test_the_lock_of_a_killed_holder_does_not_block(tmp_path: Path, scripted: ScriptedServer) -> None:
    out = tmp_path / "run"
    code = (
        "import sys, time; from verifiers.eval.results import RunDirectory; "
        "RunDirectory(sys.argv[1]).lock(); print('LOCKED', flush=True); time.sleep(600)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(out)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "LOCKED"
    with pytest.raises(RunDirectoryBusyError, match=f"pid {proc.pid}"):
        make_env(1).evaluate(scripted.url, "m", output_dir=out)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert (out / LOCK_FILE).exists()  # the file stays; the kernel dropped the lock
    run = make_env(3).evaluate(scripted.url, "m", output_dir=out, resume=True)
    assert run.metadata.status == "completed" and run.metadata.counts.completed == 3


# --- resumable from the start ----------------------------------------------------------------------
async def test_a_directory_killed_before_its_first_metadata_is_resumable(
    tmp_path: Path, scripted: ScriptedServer
) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / LOCK_FILE).write_text("12345\n")  # what a run killed right after taking its lock leaves
    (out / "results.jsonl").touch()
    run = await make_env(3).a_evaluate(scripted.url, "m", resume=str(out))
    assert run.path == out and run.metadata.counts.completed == 3
    # A directory that holds something else is still not taken for a run.
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(vf.eval.ConfigError, match="nothing to resume"):
        await make_env(1).a_evaluate(scripted.url, "m", resume=str(other))


def test_a_run_killed_in_setup_leaves_no_directory_and_runs_again(tmp_path: Path) -> None:
    """The run directory is made at the first rollout (issue 22): a run killed in its start-up leaves
    nothing to resume, and the same run again (``resume=True`` too) starts there afresh."""
    out = tmp_path / "run"
    with ScriptedServer() as srv:
        proc = subprocess.Popen(
            [sys.executable, str(JOB), srv.url, str(out), "5", "2", "--block-setup"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == b"SETUP"  # in env.setup(), which never returns
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert not out.exists() and not srv.requests
        resumed = subprocess.run(
            [sys.executable, str(JOB), srv.url, str(out), "5", "2", "--resume"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert resumed.returncode == 0, resumed.stderr
        assert "STATUS completed 10" in resumed.stdout


async def test_a_failed_setup_leaves_no_directory(tmp_path: Path, scripted: ScriptedServer) -> None:
    env = make_env(2)

    async def setup() -> None:
        raise RuntimeError("no sandbox today")

    env.setup = setup  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="no sandbox today"):
        await env.a_evaluate(scripted.url, "m", output_dir=tmp_path / "deep" / "run")
    assert not (tmp_path / "deep").exists() and not scripted.requests


# --- values the writer must not lose ---------------------------------------------------------------
def _env_with_info(infos: list[dict[str, Any]]) -> vf.SingleTurnEnv:
    rows = [{"question": f"q{i}", "answer": "ok", "info": info} for i, info in enumerate(infos)]
    return vf.SingleTurnEnv(dataset=rows, rubric=vf.Rubric([exact]), env_id="t")


async def test_an_integer_beyond_64_bits_is_written_exactly(tmp_path: Path, scripted: ScriptedServer) -> None:
    out = tmp_path / "run"
    big = 2**70 + 1
    run = await _env_with_info([{"big": big, "neg": -(2**80)}, {"small": 1}]).a_evaluate(
        scripted.url, "m", output_dir=out
    )
    assert run.metadata.counts.errored == {} and run.metadata.avg_reward == 1.0
    records = RunDirectory(out).load_results()
    assert records[0]["info"] == {"big": big, "neg": -(2**80)}
    assert records[1]["info"] == {"small": 1}


async def test_a_record_that_cannot_be_written_is_an_env_error_and_the_run_goes_on(
    tmp_path: Path, scripted: ScriptedServer
) -> None:
    class Unprintable:
        def __str__(self) -> str:
            raise RuntimeError("no text for me")

    def poison(info, example_id) -> float:
        if example_id == 1:
            info["bad"] = Unprintable()
        if example_id == 2:
            info["odd"] = {(1, 2): {3}, "nan": math.nan, "raw": b"\xffab"}
        return 1.0

    out = tmp_path / "run"
    env = vf.SingleTurnEnv(
        dataset=[{"question": f"q{i}", "answer": "ok", "info": {"i": i}} for i in range(4)],
        rubric=vf.Rubric([poison]),
        env_id="t",
    )
    progress = vf.RunProgress()
    run = await env.a_evaluate(scripted.url, "m", output_dir=out, progress=progress, max_concurrent=1)
    assert run.metadata.status == "completed" and run.metadata.counts.completed == 4
    assert run.metadata.counts.errored == {"env": 1} and progress.errors == {"env": 1}
    records = {r["example_id"]: r for r in RunDirectory(out).load_results()}
    bad = records[1]
    assert bad["error"]["category"] == "env" and bad["error"]["type"] == "UnwritableRecordError"
    assert "no text for me" in bad["error"]["message"] and bad["reward"] is None
    assert bad["info"] == {} and bad["completion"][-1]["content"] == "ok"  # what could be kept is
    assert records[2]["info"]["odd"] == {"(1, 2)": [3], "nan": None, "raw": "\ufffdab"}
    assert run.results[2]["info"]["odd"] == records[2]["info"]["odd"]  # in memory as on disk


# --- the conversion rule, property-tested --------------------------------------------------------
class Thing:
    def __str__(self) -> str:
        return "<thing>"


def meant(v: Any) -> Any:
    """docs/core.md's rule, written out independently of the writer."""
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, str):
        return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in v)
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, list | tuple):
        return [meant(x) for x in v]
    if isinstance(v, frozenset | set):
        return sorted((meant(x) for x in v), key=lambda x: json.dumps(x, sort_keys=True))
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if isinstance(k, str):
                key = meant(k)
            elif k is None or isinstance(k, bool | int | float):
                key = json.dumps(meant(k))
            else:
                key = str(k)
            out[key] = meant(x)
        return out
    return str(v)


_keys = st.one_of(
    st.text(max_size=5), st.integers(), st.booleans(), st.none(), st.floats(), st.tuples(st.integers())
)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),  # unbounded: beyond 64 bits too
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(alphabet=st.characters(codec=None, exclude_categories=[]), max_size=8),  # surrogates too
    st.binary(max_size=8),
    st.just(Thing()),
)
_hashable = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5))
values = st.recursive(
    _scalars,
    lambda kids: st.one_of(
        st.lists(kids, max_size=4),
        st.tuples(kids, kids),
        st.frozensets(_hashable, max_size=4),
        st.dictionaries(_keys, kids, max_size=4),
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=values)
def test_results_read_back_what_the_rule_means(tmp_path: Path, value: Any) -> None:
    rd = RunDirectory(tmp_path / "rule")
    if rd.results_path.exists():
        rd.results_path.unlink()
    record = {"example_id": 0, "rollout_index": 0, "info": {"v": value}}
    rd.open_for_append()
    try:
        rd.append([record])
    finally:
        rd.close()
    (back,) = rd.load_results(repair=False)
    assert back["info"]["v"] == meant(value)
    assert to_json_value(value) == meant(value)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(env_args=st.dictionaries(st.text(max_size=5), values, max_size=3), sampling=values)
def test_metadata_reads_back_what_the_rule_means(
    tmp_path: Path, env_args: dict[str, Any], sampling: Any
) -> None:
    meta = RunMetadata(
        env_id="t",
        env_version="1",
        env_content_hash="",
        sdk_version="0",
        env_args=env_args,
        model="m",
        base_url="http://x/v1",
        sampling_args={"extra_body": sampling},
        num_examples=1,
        rollouts_per_example=1,
        started_at="now",
    )
    rd = RunDirectory(tmp_path / "meta")
    rd.write_metadata(meta)
    back = rd.read_metadata()
    assert back is not None
    assert back.env_args == meant(env_args) and back.sampling_args == {"extra_body": meant(sampling)}


async def test_resume_compares_settings_as_written(tmp_path: Path, scripted: ScriptedServer) -> None:
    out = tmp_path / "run"
    env = make_env(2)
    args = {"max_tokens": 5, "extra_body": {"big": 2**70, "pair": (1, 2)}}
    await env.a_evaluate(scripted.url, "m", output_dir=out, sampling_args=args, num_examples=1)
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["sampling_args"]["extra_body"] == {"big": 2**70, "pair": [1, 2]}
    meta["status"], meta["num_examples"] = "cancelled", 2
    (out / "metadata.json").write_text(json.dumps(meta))
    run = await env.a_evaluate(
        scripted.url, "m", output_dir=out, sampling_args=args, resume=True, num_examples=2
    )
    assert run.metadata.counts.completed == 2
    pairs = Counter((r["example_id"], r["rollout_index"]) for r in RunDirectory(out).load_results())
    assert set(pairs.values()) == {1}


# --- large env_args by content hash (issue 25 item 4; contract 3.4) -------------------------------------
def test_large_env_args_are_recorded_by_content_hash_and_read_back(tmp_path: Path) -> None:
    import hashlib

    from verifiers.hub import env_args as ea

    rows = [{"question": f"q{i}", "answer": "ok", "info": {"repo": "x" * 5000}} for i in range(20)]
    rd = RunDirectory(tmp_path / "run")
    meta = RunMetadata(
        env_id="t",
        env_version="0",
        env_content_hash="",
        sdk_version="0",
        env_args={"rows": rows, "split": "test", "pair": (1, 2)},
        model="m",
        base_url="",
        num_examples=1,
        rollouts_per_example=1,
        started_at="2026-01-01T00:00:00+00:00",
    )
    rd.write_metadata(meta)
    rd.write_metadata(meta)  # rewritten as the run goes: the file is written once, by its name
    on_disk = json.loads(rd.metadata_path.read_text())["env_args"]
    assert on_disk["split"] == "test" and on_disk["pair"] == [1, 2]  # small values stay inline
    ref = on_disk["rows"]
    assert ea.is_reference(ref) and ref["$file"] == f"env_args/{ref['sha256']}.json"
    data = (rd.path / ref["$file"]).read_bytes()
    assert hashlib.sha256(data).hexdigest() == ref["sha256"] and len(data) == ref["bytes"]
    assert rd.metadata_path.stat().st_size < 2000
    assert list(json.loads(rd.metadata_path.read_text())) == list(RunMetadata.model_fields)  # field order
    back = rd.read_metadata()
    assert back is not None and back.env_args == {"rows": rows, "split": "test", "pair": [1, 2]}
    # Altered or missing: a clear error, never the reference taken for the value.
    (rd.path / ref["$file"]).write_bytes(data.replace(b"q1", b"q9", 1))
    with pytest.raises(ea.EnvArgsFileError, match="sha256 differs"):
        rd.read_metadata()
    (rd.path / ref["$file"]).unlink()
    with pytest.raises(ValueError, match="cannot be read"):
        rd.read_metadata()


def test_run_directories_with_inline_env_args_still_read(tmp_path: Path) -> None:
    out = tmp_path / "old"
    out.mkdir()
    big = {"rows": ["y" * 10_000]}  # what a run directory held before the rule: every value inline
    (out / "metadata.json").write_text(
        json.dumps(
            {
                "env_id": "t",
                "env_version": "0",
                "env_content_hash": "",
                "sdk_version": "0",
                "env_args": big,
                "model": "m",
                "base_url": "",
                "num_examples": 1,
                "rollouts_per_example": 1,
                "started_at": "2026-01-01T00:00:00+00:00",
                "status": "completed",
            }
        )
    )
    meta = RunDirectory(out).read_metadata()
    assert meta is not None and meta.env_args == big


def test_a_value_that_looks_like_a_reference_round_trips(tmp_path: Path) -> None:
    from verifiers.hub import env_args as ea

    lookalike = {"$file": "env_args/x.json", "sha256": "x", "bytes": 1}  # a user's own value

    def store(relative: str, data: bytes) -> None:
        (tmp_path / relative).parent.mkdir(exist_ok=True)
        (tmp_path / relative).write_bytes(data)

    recorded = ea.compact({"a": lookalike}, store)
    assert recorded["a"] != lookalike
    assert ea.expand(recorded, tmp_path) == {"a": lookalike}
    assert ea.compact({"a": recorded["a"]}) == recorded  # an upload sends a reference as it is


async def test_a_run_over_large_env_args_resumes(tmp_path: Path, scripted: ScriptedServer) -> None:
    rows = [{"question": f"q{i}", "answer": "ok", "info": {"pad": "z" * 3000}} for i in range(4)]

    def make() -> vf.SingleTurnEnv:
        env = vf.SingleTurnEnv(dataset=[dict(r) for r in rows], rubric=vf.Rubric([exact]), env_id="t")
        env.set_identity("t", "0", "", {"rows": rows})
        return env

    out = tmp_path / "run"
    first = await make().a_evaluate(scripted.url, "m", output_dir=out, num_examples=2)
    assert first.metadata.counts.completed == 2
    assert (out / "env_args").is_dir()
    (out / "results.jsonl").write_text((out / "results.jsonl").read_text().splitlines()[0] + "\n")
    resumed = await make().a_evaluate(scripted.url, "m", output_dir=out, num_examples=2, resume=True)
    assert resumed.metadata.counts.completed == 2 and resumed.metadata.env_args == {"rows": rows}
