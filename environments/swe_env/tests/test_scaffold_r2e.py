"""The R2E-Gym scaffold's tools on a real sandbox: views with line numbers, edits, undo, the non-unique
``str_replace`` error, search, bash observations, clipping, the timeout counter; and one whole rollout."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from swe_env.scaffolds.base import SANDBOX
from swe_env.scaffolds.output import CLIP_CHARS, CLIP_MARKER
from swe_env.scaffolds.r2e import HISTORY, R2EEnv, condensed_lines, occurrence_lines
from swe_testing import TINY, r2e_gold_agent, results_of

import verifiers as vf
from tests.scripted_server import Reply, ScriptedServer, tool_call
from verifiers.sandbox import Sandbox

pytestmark = pytest.mark.sandbox
ROOT = "/workspace/repo"


def make_env(**kwargs: Any) -> R2EEnv:
    return R2EEnv(tasks=[TINY], **kwargs)


def make_state(sandbox: Sandbox) -> vf.State:
    return vf.State(
        {SANDBOX: sandbox, HISTORY: {}, "metrics": {}, "turns": [], "stop_condition": None, "info": {}}
    )


async def test_view_file_directory_and_refusals(repo_sandbox: Sandbox) -> None:
    env, state = make_env(), make_state(repo_sandbox)
    out = await env.file_editor("view", f"{ROOT}/calc/core.py", state)
    assert out.startswith(
        "Execution output of [file_editor]:\nHere's the result of running `cat -n` on the file:"
    )
    assert "     6     return a - b" in out and "    14     return x + x + x" in out
    # relative paths are the repository's; view_range keeps the file's numbering
    part = await env.file_editor("view", "calc/core.py", state, view_range=[9, 10])
    assert part.splitlines()[-2:] == ["     9 def double(x):", "    10     return x + x"]
    assert "start line must be in [1, 14]" in await env.file_editor(
        "view", "calc/core.py", state, view_range=[0, 2]
    )
    listing = await env.file_editor("view", ROOT, state)
    assert "up to 2 levels deep in /workspace/repo, excluding hidden" in listing
    assert f"{ROOT}/calc/core.py" in listing and f"{ROOT}/tests" in listing
    assert "README.md" not in listing  # Python files and directories only, as R2E-Gym lists them
    assert "Viewing non-Python files is disallowed" in await env.file_editor("view", "README.md", state)
    assert "does not exist" in await env.file_editor("view", "nope.py", state)
    assert "outside the repository's workspace" in await env.file_editor("view", "/etc/passwd", state)
    assert "is a directory" in await env.file_editor("str_replace", "calc", state, old_str="x")
    assert state["metrics"]["edit_failures"] == 1.0


async def test_str_replace_not_unique_lists_every_line(repo_sandbox: Sandbox) -> None:
    env, state = make_env(), make_state(repo_sandbox)
    out = await env.file_editor("str_replace", "calc/core.py", state, old_str="return x + x", new_str="pass")
    assert (
        "ERROR: Multiple occurrences of 'return x + x' found in /workspace/repo/calc/core.py at lines 10, 14."
        in out
    )
    assert "No occurrences of 'zzz'" in await env.file_editor(
        "str_replace", "calc/core.py", state, old_str="zzz"
    )
    assert state["metrics"]["edit_failures"] == 2.0
    assert (await repo_sandbox.read_text("repo/calc/core.py")) == TINY.repo_files["calc/core.py"]
    assert occurrence_lines("ab\nab\nxab", "ab") == [1, 2, 3]


async def test_str_replace_insert_create_and_undo(repo_sandbox: Sandbox) -> None:
    env, state = make_env(), make_state(repo_sandbox)
    original = TINY.repo_files["calc/core.py"]
    out = await env.file_editor("str_replace", "calc/core.py", state, old_str="a - b", new_str="a + b")
    assert "The file /workspace/repo/calc/core.py has been edited." in out
    assert "     6\t    return a + b" in out  # the snippet, numbered from the file
    assert "return a + b" in await repo_sandbox.read_text("repo/calc/core.py")
    out = await env.file_editor("insert", "calc/core.py", state, insert_line=0, new_str="# header")
    assert (await repo_sandbox.read_text("repo/calc/core.py")).startswith("# header\n")
    assert "Invalid insert_line 99" in await env.file_editor(
        "insert", "calc/core.py", state, insert_line=99, new_str="x"
    )
    # two undos: back to the file as it was
    assert "undone successfully" in await env.file_editor("undo_edit", "calc/core.py", state)
    assert "undone successfully" in await env.file_editor("undo_edit", "calc/core.py", state)
    assert await repo_sandbox.read_text("repo/calc/core.py") == original
    assert "No previous edits found" in await env.file_editor("undo_edit", "calc/core.py", state)
    assert "File already exists" in await env.file_editor("create", "calc/core.py", state, file_text="x")
    out = await env.file_editor("create", "calc/new.py", state, file_text="Z = 1\n")
    assert "File created at /workspace/repo/calc/new.py." in out
    assert await repo_sandbox.read_text("repo/calc/new.py") == "Z = 1\n"
    assert "Cannot create file without 'file_text'" in await env.file_editor("create", "calc/other.py", state)


async def test_search_directory_file_and_narrowing(repo_sandbox: Sandbox) -> None:
    env, state = make_env(), make_state(repo_sandbox)
    out = await env.search("return", state)
    assert out.splitlines() == [
        "Execution output of [search]:",
        'Found 3 matches for "return" in /workspace/repo:',
        "./calc/core.py (3 matches)",
        'End of matches for "return" in /workspace/repo',
    ]
    out = await env.search("x + x", state, path="calc/core.py")
    assert out.splitlines()[1:] == [
        'Matches for "x + x" in /workspace/repo/calc/core.py:',
        "10:    return x + x",
        "14:    return x + x + x",
    ]
    assert 'No matches found for "zebra"' in await env.search("zebra", state)
    assert "not found or not a directory" in await env.search("x", state, path="missing")
    for i in range(101):
        await repo_sandbox.write_file(f"repo/many/m{i}.py", "needle = 1\n")
    assert "More than 101 files matched" in await env.search("needle", state)
    assert "Please narrow your search." in await env.search("needle", state)


async def test_execute_bash_observations(repo_sandbox: Sandbox) -> None:
    env, state = make_env(), make_state(repo_sandbox)
    out = await env.execute_bash("cat calc/__init__.py", state)
    assert out == (
        "Exit code: 0\nExecution output of [execute_bash]:\n[STDOUT]\n\n"
        "from calc.core import add, double, triple \n\n[STDERR]\n\n\n"
    )
    out = await env.execute_bash("ls nothing-here || exit 3", state)
    assert out.startswith(
        "Exit code: Error: Exit code 3\nExecution output of [execute_bash]:\nError executing"
    )
    assert "not allowed" in await env.execute_bash("cd /tmp", state)
    out = await env.execute_bash("python3 -c 'print(\"\\n\".join(map(str, range(200))))'", state)
    assert "<Observation truncated in middle for saving context>" in out
    assert "\n37\n" in out and "\n199 \n" in out and "\n100\n" not in out


async def test_long_views_are_clipped(repo_sandbox: Sandbox) -> None:
    env, state = make_env(), make_state(repo_sandbox)
    await repo_sandbox.write_file("repo/big.py", "".join(f"value_{i} = {'x' * 80!r}\n" for i in range(400)))
    out = await env.file_editor("view", "big.py", state, view_range=[1, -1])
    assert out.endswith(CLIP_MARKER) and len(out) == CLIP_CHARS + len(CLIP_MARKER)


def test_long_python_files_are_condensed() -> None:
    source = (
        "class A:\n    def f(self):\n"
        + "".join(f"        x{i} = {i}\n" for i in range(8))
        + "    def g(self):\n        return 1\n"
    )
    lines = condensed_lines(source, "a.py")
    assert (2, "... eliding lines 3-10 ...") in lines and (10, "    def g(self):") in lines
    assert all(not text.startswith("        x") for _, text in lines)


async def test_timeouts_are_counted_and_end_the_rollout(repo_sandbox: Sandbox) -> None:
    env, state = make_env(command_timeout=0.5, max_timeouts=2), make_state(repo_sandbox)
    out = await env.execute_bash("sleep 5", state)
    assert (
        out
        == "Exit code: -1\nExecution output of [execute_bash]:\nThe command took too long to execute (>0.5s)"
    )
    assert state["metrics"]["timeouts"] == 1.0 and state["stop_condition"] is None
    await env.execute_bash("sleep 5", state)
    assert state["metrics"]["timeouts"] == 2.0 and state["stop_condition"] == "max_timeouts"


async def test_a_scripted_agent_fixes_the_task(
    scripted: ScriptedServer, fast_backend: str, tmp_path: Path
) -> None:
    """View, search, str_replace the gold edit, run bash, finish: reward 1, with the counters."""
    env = make_env(backend=fast_backend, pool_size=1)
    scripted.handler = r2e_gold_agent([TINY])
    await env.a_evaluate(scripted.url, "m", output_dir=tmp_path / "run")
    [row] = results_of(tmp_path / "run")
    assert row["error"] is None and row["reward"] == 1.0, (row["error"], row["grading"])
    assert row["stop_condition"] == "submitted"
    m = row["metrics"]
    assert m["tool_calls/file_editor"] == 2 and m["tool_calls/search"] == 1 and m["tool_calls/finish"] == 1
    assert m["turns"] == 5 and m["format_errors"] == 0 and m["f2p"] == 1.0 and m["p2p"] == 1.0
    first_user = row["prompt"][-1]["content"]
    assert TINY.problem_statement.strip() in first_user and first_user.endswith("Steps Remaining: 200")
    tool_msgs = [msg for msg in row["completion"] if msg["role"] == "tool"]
    assert tool_msgs[0]["content"].endswith("Steps Remaining: 199")
    assert row["grading"]["statuses"]["tests/test_add.py::test_add"] == "PASSED"
    assert row["sandbox_backend"] == fast_backend and row["scaffold"] == "r2e"


async def test_replies_without_a_call_and_max_turns(
    scripted: ScriptedServer, fast_backend: str, tmp_path: Path
) -> None:
    """No function call: R2E-Gym's reminder, counted as a format error; max_turns ends and grades (0)."""
    env = make_env(backend=fast_backend, pool_size=1, max_turns=3)
    scripted.enqueue(
        Reply(content="thinking"),
        Reply(content="", tool_calls=[tool_call("execute_bash", {"cmd": "true"}, call_id="c1")]),
        Reply(content="still thinking"),
    )
    await env.a_evaluate(scripted.url, "m", output_dir=tmp_path / "run")
    [row] = results_of(tmp_path / "run")
    assert row["error"] is None and row["reward"] == 0.0 and row["stop_condition"] == "max_turns"
    assert row["metrics"]["format_errors"] == 1.0 and row["metrics"]["turns"] == 3.0  # the 3rd ends it
    assert "You did not call a function" in row["completion"][1]["content"]
    assert row["grading"]["statuses"]["tests/test_add.py::test_add"] == "FAILED"


async def test_a_broken_test_run_is_an_infra_error_not_a_zero(
    scripted: ScriptedServer, fast_backend: str, tmp_path: Path
) -> None:
    broken = dataclasses.replace(TINY, test_cmd="no-such-test-runner tests")
    env = R2EEnv(tasks=[broken], backend=fast_backend, pool_size=1)
    scripted.enqueue(Reply(content="", tool_calls=[tool_call("finish", {"command": "submit"}, call_id="f")]))
    await env.a_evaluate(scripted.url, "m", output_dir=tmp_path / "run")
    [row] = results_of(tmp_path / "run")
    assert row["reward"] is None and row["stop_condition"] == "submitted"
    assert row["error"]["category"] == "infra" and row["error"]["type"] == "GradingInfraError"
    assert row["grading"]["infra_error"] == row["error"]["message"]


async def test_the_wall_clock_ends_the_rollout_and_it_is_graded(
    scripted: ScriptedServer, fast_backend: str, tmp_path: Path
) -> None:
    env = make_env(backend=fast_backend, pool_size=1, wall_clock=1e-6)
    await env.a_evaluate(scripted.url, "m", output_dir=tmp_path / "run")
    [row] = results_of(tmp_path / "run")
    assert row["stop_condition"] == "out_of_time" and row["error"] is None and row["reward"] == 0.0
    assert row["metrics"]["turns"] == 0.0 and not scripted.requests


async def test_edits_to_the_hidden_tests_are_discarded(
    scripted: ScriptedServer, fast_backend: str, tmp_path: Path
) -> None:
    """An agent that writes its own always-passing version of the hidden test, and weakens a visible one,
    fixes nothing: grading restores both and the reward is 0."""
    env = make_env(backend=fast_backend, pool_size=1)
    fake = "def test_add():\n    pass\n"
    scripted.enqueue(
        Reply(content="", tool_calls=[tool_call("file_editor", {"command": "create", "path": "tests/test_add.py", "file_text": fake}, call_id="a")]),
        Reply(content="", tool_calls=[tool_call("file_editor", {"command": "str_replace", "path": "tests/test_double.py", "old_str": "== 8", "new_str": "== 8 or True"}, call_id="b")]),
        Reply(content="", tool_calls=[tool_call("finish", {"command": "submit"}, call_id="c")]),
    )  # fmt: skip
    await env.a_evaluate(scripted.url, "m", output_dir=tmp_path / "run")
    [row] = results_of(tmp_path / "run")
    assert row["error"] is None and row["reward"] == 0.0 and row["metrics"]["edit_failures"] == 0.0
    assert row["grading"]["statuses"]["tests/test_add.py::test_add"] == "FAILED"
