"""The mini-swe-agent scaffold: the one-block rule, observations and their elision, submission, the
timeout counter, and whole rollouts on a real sandbox; plus the shell fast path both scaffolds share."""

from __future__ import annotations

from pathlib import Path

import pytest
from swe_env.scaffolds.mini import MiniEnv, format_error, observation, parse_actions, submission_of
from swe_env.scaffolds.shell import direct_argv
from swe_testing import TINY, mini_gold_agent, results_of

from tests.scripted_server import Reply, ScriptedServer

SUBMIT = "```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached\n```"


def test_exactly_one_bash_block() -> None:
    assert parse_actions("THOUGHT: x\n\n```bash\nls -la\n```\n") == ["ls -la"]
    assert parse_actions("no block at all") == []
    assert parse_actions("```bash\nls\n```\ntext\n```bash\npwd\n```") == ["ls", "pwd"]
    assert parse_actions("```python\nprint(1)\n```") == []  # only bash blocks count
    assert parse_actions("```bash\ncat <<'EOF' > a.py\nx = 1\nEOF\n```") == ["cat <<'EOF' > a.py\nx = 1\nEOF"]
    msg = format_error(2)
    assert msg.startswith("Please always provide EXACTLY ONE action in triple backticks, found 2 actions.")


def test_observation_and_elision() -> None:
    assert observation(0, "hi\n") == "<returncode>0</returncode>\n<output>\nhi\n</output>"
    long = "a" * 6000 + "b" * 6000
    text = observation(1, long)
    assert text.startswith(
        "<returncode>1</returncode>\n<warning>\nThe output of your last command was too long."
    )
    assert "<elided_chars>\n2000 characters elided\n</elided_chars>" in text
    assert "<output_head>\n" + "a" * 5000 + "\n</output_head>" in text
    assert "<output_tail>\n" + "a" * 1000 + "b" * 4000 not in text and "b" * 5000 + "\n</output_tail>" in text
    assert "<output>" not in text
    assert observation(0, "x" * 9999).endswith("x" * 9999 + "</output>")  # just under: shown whole


def test_submission_needs_the_sentinel_first_and_success() -> None:
    assert (
        submission_of(0, "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\ndiff --git a/x b/x\n")
        == "diff --git a/x b/x\n"
    )
    assert submission_of(0, "\n  COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n") == ""
    assert submission_of(1, "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n") is None  # failed: the agent goes on
    assert submission_of(0, "note: COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n") is None


def test_plain_commands_skip_bash() -> None:
    assert direct_argv("cat calc/core.py") == ["cat", "calc/core.py"]
    assert direct_argv("python3 -c 'import sys; print(sys.argv)' a") == [
        "python3",
        "-c",
        "import sys; print(sys.argv)",
        "a",
    ]
    assert direct_argv('grep -n "def add" calc/core.py') == ["grep", "-n", "def add", "calc/core.py"]
    for shell_only in (
        "cat a | head",
        "ls *.py",
        "echo $HOME",
        'echo "$HOME"',
        "cd x && ls",
        "A=1 env",
        "ls > out",
        "ls ~",
        "ls # comment",
        "true",
        "export X=1",
        "cat 'unterminated",
        "ls\npwd",
        "echo `id`",
    ):
        assert direct_argv(shell_only) is None, shell_only


pytestmark = pytest.mark.sandbox


async def test_a_scripted_agent_fixes_the_task(
    scripted: ScriptedServer, fast_backend: str, tmp_path: Path
) -> None:
    """Read the file, break the one-block rule once, apply the gold patch with git, submit: reward 1."""
    env = MiniEnv(tasks=[TINY], backend=fast_backend, pool_size=1)
    scripted.handler = mini_gold_agent([TINY])
    await env.a_evaluate(scripted.url, "m", output_dir=tmp_path / "run")
    [row] = results_of(tmp_path / "run")
    assert row["error"] is None and row["reward"] == 1.0, (row["error"], row["grading"])
    assert row["stop_condition"] == "submitted" and row["scaffold"] == "mini"
    assert row["metrics"]["format_errors"] == 1.0 and row["metrics"]["commands"] == 3.0
    assert row["metrics"]["turns"] == 4.0
    user = [m["content"] for m in row["completion"] if m["role"] == "user"]
    assert user[0].startswith("<returncode>0</returncode>\n<output>\n") and "return a - b" in user[0]
    assert user[1].startswith(
        "Please always provide EXACTLY ONE action in triple backticks, found 2 actions."
    )
    assert user[2] == "<returncode>0</returncode>\n<output>\n</output>"
    assert user[3].startswith("diff --git a/calc/core.py b/calc/core.py")  # the submission
    assert "tools" not in scripted.requests[0]  # bash-only: no function tools offered


async def test_each_command_gets_a_fresh_shell_with_merged_output(
    scripted: ScriptedServer, fast_backend: str, tmp_path: Path
) -> None:
    env = MiniEnv(tasks=[TINY], backend=fast_backend, pool_size=1, max_turns=5)
    scripted.enqueue(
        Reply(content="```bash\ncd calc && export X=1 && echo out && echo err >&2 && pwd\n```"),
        Reply(content='```bash\npwd; echo "X=$X"\n```'),
        Reply(content="```bash\npython3 -c 'import pytest; print(pytest.__name__)'\n```"),
        Reply(content=SUBMIT),
    )
    await env.a_evaluate(scripted.url, "m", output_dir=tmp_path / "run")
    [row] = results_of(tmp_path / "run")
    user = [m["content"] for m in row["completion"] if m["role"] == "user"]
    assert user[0] == "<returncode>0</returncode>\n<output>\nout\nerr\n/workspace/repo/calc\n</output>"
    assert user[1] == "<returncode>0</returncode>\n<output>\n/workspace/repo\nX=\n</output>"
    assert user[2] == "<returncode>0</returncode>\n<output>\npytest\n</output>"  # the runner is importable
    assert row["stop_condition"] == "submitted" and row["reward"] == 0.0 and user[3] == ""


async def test_timeouts_are_counted_and_end_the_rollout(
    scripted: ScriptedServer, fast_backend: str, tmp_path: Path
) -> None:
    env = MiniEnv(tasks=[TINY], backend=fast_backend, pool_size=1, command_timeout=0.5, max_timeouts=2)
    scripted.default = "```bash\nsleep 5\n```"
    await env.a_evaluate(scripted.url, "m", output_dir=tmp_path / "run")
    [row] = results_of(tmp_path / "run")
    assert row["stop_condition"] == "max_timeouts" and row["metrics"]["timeouts"] == 2.0
    assert row["metrics"]["turns"] == 2.0 and row["error"] is None and row["reward"] == 0.0
    first = row["completion"][1]["content"]
    assert first.startswith("The last command <command>sleep 5</command> timed out and has been killed.")
