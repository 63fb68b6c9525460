"""The embedded local model as the docs use it: a server the caller started (``base_url`` with
``local/…``), parallel slots, the honest waiting line, the warning for tool environments; and the first
steps' commands (vf-init's hint, vf-push --dry-run's files for vf-smoke)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

import verifiers as vf
from tests.cli._helpers import clean_env, read_results, run_cli, run_dirs
from tests.scripted_server import Reply, ScriptedServer
from verifiers.cli._display import SLOW_REQUEST_S, ProgressDisplay
from verifiers.clients import Client, Endpoint
from verifiers.eval.config import EvalConfig
from verifiers.eval.engine import RunProgress
from verifiers.eval.launch import local_slots

TOOL_ENV = '''\
import verifiers as vf


def lookup(word: str) -> str:
    """Look a word up.

    Args:
        word: The word.
    """
    return word.upper()


def load_environment() -> vf.Environment:
    rows = [{"question": f"q{i}", "answer": f"a{i}"} for i in range(2)]
    return vf.ToolEnv(dataset=rows, tools=[lookup], rubric=vf.Rubric([lambda completion: 1.0]), max_turns=3)
'''


def _rows_env() -> vf.Environment:
    rows = [{"question": f"q{i}", "answer": f"a{i}"} for i in range(3)]
    return vf.SingleTurnEnv(dataset=rows, rubric=vf.Rubric([lambda completion, answer: 0.0]))


def test_a_local_model_served_by_the_caller_is_used_at_its_base_url(scripted: ScriptedServer) -> None:
    """docs/cli.md: ``with LocalModelServer(...) as server: env.evaluate(server.base_url, server.model_name)``
    was refused ("base_url cannot be combined with the local model"). The given server is used, and the
    model is still the local one: context cap, recorded name; nothing is started."""
    run = _rows_env().evaluate(
        scripted.url, "local/smollm2", num_examples=2, save_results=False, sampling_args={"max_tokens": 4096}
    )
    assert run.metadata.model == "local/smollm2"
    assert run.metadata.counts.completed == 2 and run.metadata.counts.errored == {}
    assert len(scripted.requests) == 2
    # local/smollm2's 2048-token context: max_tokens is capped at half of it, as when vf-eval starts it.
    assert {r["max_tokens"] for r in scripted.requests} == {1024}


def test_vf_eval_with_a_local_model_and_a_base_url_uses_that_server(
    workdir: Path, scripted: ScriptedServer
) -> None:
    res = run_cli(
        "vf-eval", "cli-env", "-m", "local/smollm2", "-b", scripted.url, "-n", "2", "-r", "1", cwd=workdir
    )
    assert res.code == 0, res.stderr
    assert "starting the local model" not in res.stderr + res.stdout
    [run] = run_dirs(workdir)
    assert len(read_results(run)) == 2 and len(scripted.requests) == 2


@pytest.mark.parametrize(
    ("settings", "cores", "slots"),
    [
        ({"num_examples": 2, "rollouts_per_example": 1}, 2, 2),  # the README's -n 2 -r 1
        ({"num_examples": 1, "rollouts_per_example": 1}, 8, 1),  # one rollout: one slot
        ({"num_examples": 5, "rollouts_per_example": 3}, 4, 4),  # capped at the cores
        ({"num_examples": 5, "rollouts_per_example": 3, "max_concurrent": 2}, 8, 2),  # at the run's -c
        ({"num_examples": -1, "max_concurrent": "auto"}, 3, 3),
        ({"num_examples": -1, "max_concurrent": "2:6"}, 8, 6),  # an adaptive cap's ceiling
    ],
)
def test_local_slots_follow_the_runs_concurrency(settings: dict[str, object], cores: int, slots: int) -> None:
    config = EvalConfig.resolve("x", ("argument", {"model": "local/smollm2", **settings}))
    assert local_slots(config, cores=cores) == slots


async def test_least_busy_sends_a_pinned_group_to_idle_replicas() -> None:
    """Rollouts of one group are pinned to one endpoint; with replicas that answer one request at a time
    (the local model's slots) that queues them behind each other: least_busy spreads them instead."""
    with ScriptedServer() as a, ScriptedServer() as b:
        for server in (a, b):
            server.enqueue(Reply("slow", delay=1.0), Reply("slow", delay=1.0))
        for balance, expected in (("group", (2, 0)), ("least_busy", (1, 1))):
            client = Client([Endpoint(a.url), Endpoint(b.url)], balance=balance)  # type: ignore[arg-type]
            before = (len(a.requests), len(b.requests))
            msgs = [{"role": "user", "content": "hi"}]
            await asyncio.gather(*(client.chat("m", msgs, endpoint=0) for _ in range(2)))
            await client.aclose()
            assert (len(a.requests) - before[0], len(b.requests) - before[1]) == expected, balance
            assert client.stats.answered == 2


def _display_text(progress: RunProgress) -> str:
    display = ProgressDisplay(Console(width=200), progress, "t", live=False)
    return display.plain_line()


def test_the_waiting_line_says_a_local_model_is_busy_not_silent() -> None:
    client = Client("http://127.0.0.1:9/v1")
    progress = RunProgress(total=3, client=client)
    stale = time.monotonic() - SLOW_REQUEST_S - 1
    client.stats.waiting.update({1: stale, 2: stale})
    client.stats.answered = 1
    assert "(server silent?)" in _display_text(progress)  # a remote server: capacity unknown
    client.stats.capacity = 1  # what launch sets for the local model: one request at a time per slot
    text = _display_text(progress)
    assert "local model busy: 1 of 3 requests answered (1 at a time)" in text
    assert "silent" not in text


def test_a_tool_environment_with_the_local_model_is_warned_before_the_run(
    workdir: Path, scripted: ScriptedServer
) -> None:
    pkg = workdir / "environments" / "cli_env" / "cli_env" / "__init__.py"
    pkg.write_text(TOOL_ENV)
    res = run_cli("vf-eval", "cli-env", "-m", "local/smollm2", "-b", scripted.url, "-n", "1", cwd=workdir)
    assert res.code == 0, res.stderr
    out = " ".join((res.stdout + res.stderr).split())
    assert "local/smollm2 does not call tools, and cli-env offers 1 (lookup)" in out
    # Said before the first rollout, not after the run.
    assert out.index("does not call tools") < out.index("rollouts")
    # A model that may call tools gets no such warning.
    res = run_cli("vf-eval", "cli-env", "-m", "scripted", "-b", scripted.url, "-n", "1", cwd=workdir)
    assert res.code == 0 and "does not call tools" not in res.stdout + res.stderr


def test_tool_names_cover_groups() -> None:
    def lookup(word: str) -> str:
        """Look a word up.

        Args:
            word: The word.
        """
        return word

    rows = [{"question": "q", "answer": "a"}]
    tools = vf.ToolEnv(dataset=rows, tools=[lookup], rubric=vf.Rubric([lambda completion: 1.0]))
    group = vf.EnvGroup({"plain": _rows_env(), "tools": tools})
    assert tools.tool_names() == ["lookup"] and _rows_env().tool_names() == []
    assert group.tool_names() == ["lookup"]


# --- the first steps: vf-init's hint, vf-push --dry-run's files --------------------------------------
def _vf_init_without_pytest(cwd: Path, name: str) -> str:
    """vf-init's output in an interpreter that cannot import pytest (the README's venv has none)."""
    code = (
        "import sys; sys.modules['pytest'] = None\n"
        "import importlib.util; orig = importlib.util.find_spec\n"
        "importlib.util.find_spec = lambda n, *a: None if n == 'pytest' else orig(n, *a)\n"
        f"from verifiers.cli.init import main; main([{name!r}])"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, env=clean_env()
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_vf_init_hint_runs_the_tests_in_the_venv_it_was_printed_in(tmp_path: Path) -> None:
    """vf-init printed `pytest environments/my_env/tests`, which fails where pytest is not installed."""
    out = _vf_init_without_pytest(tmp_path, "hint-env")
    [hint] = [line.strip() for line in out.splitlines() if "pytest" in line]
    assert hint.endswith("-m pip install pytest && " + hint.split(" && ")[1])
    assert hint.split(" && ")[1].endswith("-m pytest environments/hint_env/tests")
    # Where pytest is installed the hint is the test run itself, and it passes as printed.
    res = run_cli("vf-init", "hint-env", cwd=tmp_path)
    [hint] = [line.strip() for line in res.stdout.splitlines() if "pytest" in line]
    assert "pip install" not in hint
    env = clean_env(PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")
    proc = subprocess.run(
        ["bash", "-c", hint], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "passed" in proc.stdout


def test_vf_push_dry_run_keeps_the_files_for_vf_smoke(tmp_path: Path) -> None:
    """README: `vf-smoke dist/…whl` — but nothing made dist/ unless --outdir was passed. A dry run keeps
    what it built in PATH/dist/ (like `python -m build`), says how to smoke-check it, and can run again."""
    assert run_cli("vf-init", "dist-env", cwd=tmp_path).code == 0
    for _ in range(2):  # a second build next to the first one's files works too
        res = run_cli(
            "vf-push", "environments/dist_env", "--dry-run", "--no-isolation", cwd=tmp_path, timeout=300
        )
        assert res.code == 0, res.stderr
    dist = tmp_path / "environments" / "dist_env" / "dist"
    wheel = dist / "dist_env-0.1.0-py3-none-any.whl"
    assert wheel.is_file() and (dist / "dist_env-0.1.0.tar.gz").is_file()
    assert "vf-smoke environments/dist_env/dist/dist_env-0.1.0-py3-none-any.whl" in res.stdout
    # The kept files do not end up in the next build's sdist.
    import tarfile

    with tarfile.open(dist / "dist_env-0.1.0.tar.gz") as tar:
        assert not [n for n in tar.getnames() if "/dist/" in n]


@pytest.mark.smollm
def test_local_model_slots_answer_at_once(smollm: None) -> None:
    """Two slots are two llama.cpp servers: two requests in flight are answered by both (each slot's
    access log shows one), not queued at one."""
    from verifiers.clients.local_model import LocalModelServer

    async def two(urls: list[str]) -> None:
        client = Client([Endpoint(u) for u in urls], balance="least_busy")
        msgs = [{"role": "user", "content": "Say hi."}]
        await asyncio.gather(
            *(client.chat("local/smollm2", msgs, sampling_args={"max_tokens": 8}) for _ in range(2))
        )
        await client.aclose()

    with LocalModelServer("local/smollm2", slots=2) as server:
        assert len(set(server.base_urls)) == 2 and server.n_threads >= 1
        asyncio.run(two(server.base_urls))
        logs = [s.log_path for s in server._servers]
        assert all(p is not None and "POST /v1/chat/completions" in p.read_text() for p in logs)
    assert not server.running
