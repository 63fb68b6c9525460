"""prime-rl v0.5.0's **real** orchestrator against our env servers (the ``VF_REQUIRE_PRIME_RL`` tier).

prime-rl is installed, from its unmodified source snapshot, into ``.venv-prime-rl`` by scripts/setup.sh
(with ``verifiers==0.1.12``, CPU torch, no vLLM). Per environment the test goes the way a user goes:

1. ``vf-train render --preset single-node`` (small batch, free ports, the tiny tokenizer as the model),
   ``vf-train validate`` and ``vf-train bridge``;
2. a vLLM-compatible token server over the tiny tokenizer (examples/train_cpu/token_server.py: the CPU
   loop's too) plays the policy, and a stand-in trainer (tests/training/prime_rl_trainer.py, prime-rl's own
   ``TrainingBatch`` type and packer) consumes each step and publishes its weights' ``STABLE`` marker;
3. ``vf-train launch --orchestrator-only --prime-rl-python .venv-prime-rl/bin/python`` installs the bridge
   and loss packages, starts ``vf-serve`` with the run's ``seq_len`` and scoring, resolves the run with
   prime-rl's own ``rl @ rl.toml --dry-run`` and runs ``orchestrator @ configs/orchestrator.toml`` for 3
   steps.

Then, on what the trainer received: every sample valid for the packer; one sample per rollout, whose
model tokens (mask 1) are exactly the token ids the model produced, turn after turn, with the
environment's tokens between them masked (token-in, token-out: the server samples non-canonical
tokenizations, so a client that re-sent messages would show re-tokenized ids and split the rollout);
logprobs as produced; rewards equal to our own re-scoring of the decoded completion (replayed through the
environment in this process); advantages equal to reward minus the group mean; every request carrying
``X-Session-ID`` = the rollout's example id, ``max_completion_tokens`` and no null; the weights updated
through ``/pause``, ``/update_weights``, ``/resume``.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import random
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.scripted_server import Reply, ScriptedServer
from tests.tiers import component_missing
from verifiers.clients.local_model import free_port
from verifiers.envs import load_environment

ROOT = Path(__file__).resolve().parents[2]
PRIME_RL_PYTHON = ROOT / ".venv-prime-rl" / "bin" / "python"
TRAINER = Path(__file__).with_name("prime_rl_trainer.py")
TRAIN_CPU = ROOT / "examples" / "train_cpu"
sys.path.insert(0, str(TRAIN_CPU))  # the example's modules import each other by name
from tiny_tokenizer import TinyTokenizer, write  # noqa: E402
from token_server import TokenServer  # noqa: E402

MODEL_NAME = "tiny-chatml"
STEPS = 3
ROLLOUTS_PER_EXAMPLE = 2


@cache
def _tokenizer() -> TinyTokenizer:
    return TinyTokenizer()


def _prime_rl_python() -> Path:
    probe = "import prime_rl.orchestrator.orchestrator, prime_rl.trainer.rl.packer, verifiers"
    ok = PRIME_RL_PYTHON.exists() and (
        subprocess.run([str(PRIME_RL_PYTHON), "-I", "-c", probe], capture_output=True, cwd="/").returncode
        == 0
    )
    if not ok:
        component_missing(
            "VF_REQUIRE_PRIME_RL",
            f"prime-rl v0.5.0 is not installed in {PRIME_RL_PYTHON.parent.parent} (scripts/setup.sh installs "
            "it from ../shared/third_party)",
        )
    return PRIME_RL_PYTHON


# --- policies: what the token server's model answers, per environment ------------------------------
def _first_user(messages: list[dict[str, Any]]) -> str:
    return next(str(m.get("content")) for m in messages if m.get("role") == "user")


def _tool_call(name: str, arguments: dict[str, Any]) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def math_script(answer: str, turn: int) -> list[str]:
    wrong = "0" if answer != "0" else "1"
    return [f"The answer is \\boxed{{{answer}}}.", f"The answer is \\boxed{{{wrong}}}."]


def logic_script(answer: str, turn: int) -> list[str]:
    return [f"<answer>{answer}</answer>", "<answer>Unknown</answer>"]


def research_script(answer: str, turn: int) -> list[str]:
    """A tool environment over several turns: search, then (maybe search again and) finish, with the right
    answer or a wrong one."""
    if turn == 0:
        return [_tool_call("search_web", {"queries": ["capital city province"]})]
    if turn == 1:
        return [
            _tool_call("finish", {"final_answer": answer}),
            _tool_call("search_web", {"queries": [answer]}),
        ]
    return [_tool_call("finish", {"final_answer": answer}), _tool_call("finish", {"final_answer": "Nowhere"})]


def swe_script(patch: str, turn: int) -> list[str]:
    """mini-swe-agent's protocol: one bash block per reply; apply the task's gold patch (or only look), then
    submit."""
    body = patch if patch.endswith("\n") else patch + "\n"  # a patch's last line may be blank context
    if turn == 0:
        return [
            f"THOUGHT: apply the fix.\n\n```bash\ngit apply <<'PATCH'\n{body}PATCH\n```",
            "THOUGHT: look first.\n\n```bash\ngit status\n```",
        ]
    return ["```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached\n```"]


class AnswerKeyPolicy:
    """Answers each prompt with one of a few replies of its environment's script, uniformly at random
    (seeded): some right (from the answer key the test builds from the environments' own rows), some
    wrong, so rewards vary within a group. The logprob of a reply is that of having chosen it."""

    def __init__(self, key: dict[str, tuple[Callable[[str, int], list[str]], str]], seed: int = 0):
        self.key = key
        self.rng = random.Random(seed)

    def reply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> tuple[str, float]:
        # An environment may wrap its row's question in a prompt of its own (swe-env's instance prompt).
        text = _first_user(messages)
        question = max((q for q in self.key if q in text), key=len)
        script, answer = self.key[question]
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        candidates = script(answer, turn)
        return self.rng.choice(candidates), -math.log(len(candidates))


@dataclass
class Case:
    env_id: str
    env_args: dict[str, Any]
    script: Callable[[str, int], list[str]]
    multi_turn: bool = False


def _swe_gold() -> dict[str, str]:
    from swe_env.task import load_bundled

    return {t.problem_statement: t.gold_patch or "" for t in load_bundled()}


MATH, LOGIC, RESEARCH, SWE = (
    Case("math-env", {"num_examples": 4}, math_script),
    Case("logic-env", {"tasks": ["boolean_expressions"], "num_examples": 4, "seed": 3}, logic_script),
    Case(
        "deep-research-env",
        {"num_examples": 4, "max_turns": 3, "max_output_chars": 1200},
        research_script,
        multi_turn=True,
    ),
    Case(
        "swe-env",
        {"scaffold": "mini", "backend": "bwrap", "num_tasks": 2, "pool_size": 2, "max_turns": 3},
        swe_script,
        multi_turn=True,
    ),
)


@dataclass(frozen=True)
class Plan:
    """One orchestrator run: its environments (one EnvGroup) and rollouts per step."""

    cases: tuple[Case, ...]
    batch: int


#: Two runs: the orchestrator fills a step with whichever groups finish first, so swe-env's slower
#: rollouts (a sandbox, a patch, the hidden tests) would rarely make it into 3 quick steps beside the
#: others. The first run draws 16 groups of 2 per step over three environments at random: each is drawn
#: in 3 steps but with odds of about 1 in 10^8.
PLANS = {"math-logic-research": Plan((MATH, LOGIC, RESEARCH), batch=32), "swe": Plan((SWE,), batch=4)}
MAX_TOKENS = 2048
SEQ_LEN = 16384


# --- the run -----------------------------------------------------------------------------------------
@dataclass
class Env:
    case: Case
    env: Any
    rows: list[dict[str, Any]]
    #: The example id of the env's first row in the orchestrator's EnvGroup (its datasets concatenated).
    offset: int


@dataclass
class Run:
    plan: Plan
    run_dir: Path
    reports: list[dict[str, Any]]
    server: TokenServer
    envs: list[Env]
    launch_output: str
    resolved: dict[str, Any]
    resolved_trainer: dict[str, Any]

    def row_of(self, prompt_ids: list[int]) -> tuple[Env, dict[str, Any]]:
        """The environment and row whose question the prompt holds (an environment may wrap it in a
        prompt of its own): the longest such question."""
        text = _tokenizer().decode(prompt_ids)
        found = [(e, row) for e in self.envs for row in e.rows if _first_user(row["prompt"]) in text]
        assert found, "a sample whose prompt holds no row's question"
        return max(found, key=lambda er: len(_first_user(er[1]["prompt"])))


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write(tmp_path_factory.mktemp("tokenizer") / MODEL_NAME)


def _vf(tool: str) -> str:
    return str(Path(sys.executable).with_name(tool))


def _toml_inline(value: dict[str, Any]) -> str:
    """A TOML inline table (JSON scalars and arrays are TOML values too)."""
    return "{" + ", ".join(f"{k} = {json.dumps(v)}" for k, v in value.items()) + "}"


def _check(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _logs(orch_out: Path) -> str:
    parts = []
    for log in sorted(orch_out.glob("logs/*.log")):
        parts.append(f"\n--- {log}\n" + log.read_text(errors="replace")[-4000:])
    return "".join(parts)


def _envs(plan: Plan) -> list[Env]:
    out, offset = [], 0
    for case in plan.cases:
        env = load_environment(case.env_id, **case.env_args)
        rows = env.select_rows(split="train")
        out.append(Env(case, env, rows, offset))
        offset += len(rows)
    return out


def run_orchestrator(plan: Plan, tokenizer_dir: Path, tmp: Path) -> Run:
    python = _prime_rl_python()
    tokenizer = _tokenizer()
    envs = _envs(plan)
    gold = _swe_gold()
    key: dict[str, tuple[Callable[[str, int], list[str]], str]] = {}
    for e in envs:
        for row in e.rows:
            question = _first_user(row["prompt"])
            answer = gold.get(question, "") if e.case.env_id == "swe-env" else str(row.get("answer", ""))
            key[question] = (e.case.script, answer)
    run_dir, outputs = tmp / "run", tmp / "outputs"
    server = TokenServer(AnswerKeyPolicy(key), tokenizer, model=str(tokenizer_dir), max_model_len=SEQ_LEN)
    with server:
        sets = [
            f"vf_train.prompt_budget={SEQ_LEN - MAX_TOKENS}",
            f"output_dir={json.dumps(str(outputs))}",
            f"seq_len={SEQ_LEN}",
            f"max_steps={STEPS}",
            f"orchestrator.batch_size={plan.batch}",
            f"orchestrator.rollouts_per_example={ROLLOUTS_PER_EXAMPLE}",
            f"orchestrator.sampling.max_tokens={MAX_TOKENS}",
            f"orchestrator.client.base_url=[{json.dumps(server.url)}]",
            "deployment.num_train_gpus=1",
            "deployment.num_infer_gpus=1",
            "inference.parallel.dp=1",
            f"inference.model.max_model_len={SEQ_LEN}",
        ]
        for i, case in enumerate(plan.cases):
            sets += [
                f"vf_train.env.{i}.http_port={free_port()}",
                f"vf_train.env.{i}.zmq_port={free_port()}",
                f"vf_train.env.{i}.args={_toml_inline(case.env_args)}",
                f"vf_train.env.{i}.max_concurrent=8",
                f"vf_train.env.{i}.workers=1",
            ]
        render = [_vf("vf-train"), "render", "--preset", "single-node", "--model", str(tokenizer_dir)]
        for case in plan.cases:
            render += ["--env", case.env_id]
        render += ["--out", str(run_dir)]
        for s in sets:
            render += ["--set", s]
        _check(subprocess.run(render, capture_output=True, text=True, timeout=300))
        for cmd in ("validate", "bridge"):
            _check(
                subprocess.run(
                    [_vf("vf-train"), cmd, str(run_dir)], capture_output=True, text=True, timeout=300
                )
            )
        reports_dir = tmp / "trainer"
        orch_out = outputs / "run_default"
        trainer = subprocess.Popen(
            [
                *(str(python), str(TRAINER), "--output-dir", str(orch_out), "--steps", str(STEPS)),
                *("--seq-len", str(SEQ_LEN), "--report-dir", str(reports_dir)),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            launch = subprocess.run(
                [
                    _vf("vf-train"),
                    "launch",
                    str(run_dir),
                    "--orchestrator-only",
                    "--prime-rl-python",
                    str(python),
                    "--timeout",
                    "600",
                ],
                capture_output=True,
                text=True,
                timeout=2400,
                env={
                    **os.environ,
                    "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
                },
            )
            out = launch.stdout + launch.stderr
            assert launch.returncode == 0, out[-6000:] + _logs(orch_out)
            trainer_out, _ = trainer.communicate(timeout=300)
            assert trainer.returncode == 0, trainer_out
        finally:
            if trainer.poll() is None:
                trainer.kill()
                trainer.wait()
        reports = [json.loads((reports_dir / f"step_{i}.json").read_text()) for i in range(STEPS)]
        resolved = tomllib.loads((outputs / "configs" / "orchestrator.toml").read_text())
        resolved_trainer = tomllib.loads((outputs / "configs" / "trainer.toml").read_text())
    return Run(plan, run_dir, reports, server, envs, out, resolved, resolved_trainer)


@pytest.fixture(scope="module", params=sorted(PLANS))
def run(
    request: pytest.FixtureRequest, tokenizer_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Run]:
    yield run_orchestrator(PLANS[request.param], tokenizer_dir, tmp_path_factory.mktemp(request.param))


# --- the checks --------------------------------------------------------------------------------------
def _samples(run: Run) -> list[dict[str, Any]]:
    return [s for r in run.reports for s in r["samples"]]


def test_the_orchestrator_took_every_step_on_every_environment(run: Run) -> None:
    assert [r["step"] for r in run.reports] == list(range(STEPS))
    for r in run.reports:
        assert r["invalid"] == [], r["invalid"]  # MultiPacker._validate_sample on every sample
        assert r["micro_batches"], "prepare_batch packed nothing"
    seen = {run.row_of(s["prompt_ids"])[0].case.env_id for s in _samples(run)}
    ids = {c.env_id for c in run.plan.cases}
    assert seen == ids, f"environments never sampled in {STEPS} steps: {ids - seen}"
    assert "orchestrator finished" in run.launch_output


def test_one_sample_per_rollout_whose_model_tokens_are_what_the_model_produced(run: Run) -> None:
    """Token-in, token-out: each rollout is one interleaved sample, and its mask-1 runs are the model's
    completions, id for id, each generated from exactly the sample's tokens before it; the tokens in
    between (the environment's messages and the template's markers) are masked."""
    generations = {tuple(g.prompt_ids + g.completion_ids): g for g in run.server.generations}
    turns_seen = 0
    for report in run.reports:
        assert len(report["samples"]) == run.plan.batch, (
            "a rollout became several samples (its history re-tokenized)"
        )
        for s in report["samples"]:
            ids = s["prompt_ids"] + s["completion_ids"]
            mask = [False] * len(s["prompt_ids"]) + s["completion_mask"]
            logprobs = [0.0] * len(s["prompt_ids"]) + s["completion_logprobs"]
            assert not any(s["prompt_mask"])
            runs, i = [], 0
            while i < len(ids):
                j = i
                while j < len(ids) and mask[j]:
                    j += 1
                if j > i:
                    runs.append((i, j))
                i = j + 1
            assert runs, "no model tokens in a sample"
            for start, end in runs:
                g = generations.get(tuple(ids[:end]))
                assert g is not None, (
                    "a model turn whose ids, with everything before them, no model call produced: "
                    f"{ids[start:end][:20]}"
                )
                assert g.completion_ids == ids[start:end] and g.prompt_ids == ids[:start]
                assert g.completion_logprobs == pytest.approx(logprobs[start:end])
            turns_seen = max(turns_seen, len(runs))
    assert turns_seen >= 2, "no multi-turn rollout reached the trainer"


def test_advantages_are_reward_minus_the_group_mean(run: Run) -> None:
    for report in run.reports:
        samples = report["samples"]
        for g in range(0, len(samples), ROLLOUTS_PER_EXAMPLE):
            group = samples[g : g + ROLLOUTS_PER_EXAMPLE]
            assert len({tuple(s["prompt_ids"]) for s in group}) == 1, "a group mixes prompts"
            mean = sum(s["reward"] for s in group) / len(group)
            for s in group:
                assert s["advantage"] == pytest.approx(s["reward"] - mean)


def _model_turns(sample: dict[str, Any]) -> list[list[int]]:
    turns: list[list[int]] = []
    current: list[int] = []
    for tid, m in zip(sample["completion_ids"], sample["completion_mask"], strict=True):
        if m:
            current.append(tid)
        elif current:
            turns.append(current)
            current = []
    if current:
        turns.append(current)
    return turns


def _reply(message: dict[str, Any]) -> Reply:
    return Reply(content=message.get("content"), tool_calls=message.get("tool_calls"))


async def _rescore_all(
    env: Any, url: str, jobs: list[tuple[dict[str, Any], list[Reply]]], server: ScriptedServer
) -> list[Any]:
    from verifiers.clients import Client

    states = []
    await env.setup()
    try:
        async with Client(url, None, max_retries=0) as client:
            for row, replies in jobs:
                server.enqueue(*replies)
                state = await env.rollout(client, "replay", row)
                await env.score_rollout(state)
                states.append(state)
    finally:
        await env.teardown()
    return states


def test_rewards_equal_our_rescoring_of_the_decoded_completions(run: Run) -> None:
    """Each sample's model turns, decoded and replayed as the model through its environment in this
    process (a scripted server answers with them, one rollout at a time), score what the orchestrator
    received."""
    tokenizer = _tokenizer()
    parse = TokenServer(policy=None, tokenizer=tokenizer).parse  # type: ignore[arg-type]
    by_env: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for s in _samples(run):
        e, row = run.row_of(s["prompt_ids"])
        by_env.setdefault(e.case.env_id, []).append((row, s))
    rewards_seen = set()
    with ScriptedServer() as replay:
        for e in run.envs:
            items = by_env.get(e.case.env_id, [])
            jobs = [(row, [_reply(parse(tokenizer.decode(t))) for t in _model_turns(s)]) for row, s in items]
            states = asyncio.run(_rescore_all(e.env, replay.url, jobs, replay))
            for (row, s), (_, replies), state in zip(items, jobs, states, strict=True):
                assert state["error"] is None, state["error"]
                assert len(state["turns"]) == len(replies)
                assert state["reward"] == pytest.approx(s["reward"]), (e.case.env_id, row["example_id"])
                rewards_seen.add((e.case.env_id, s["reward"]))
    for case in run.plan.cases:
        assert {r for i, r in rewards_seen if i == case.env_id} == {0.0, 1.0}, (case.env_id, rewards_seen)


def test_requests_carry_the_session_header_and_the_reference_body(run: Run) -> None:
    """``X-Session-ID`` (prime-rl's ``extra_headers_from_state``) = the rollout's example id in the
    orchestrator's EnvGroup; the body as the reference client sends it."""
    for g in run.server.generations:
        e, row = run.row_of(g.prompt_ids)
        assert g.headers.get("x-session-id") == str(e.offset + row["example_id"]), g.headers
        assert "max_tokens" not in g.body and g.body["max_completion_tokens"] == MAX_TOKENS
        assert None not in g.body.values(), g.body
    paths = {g.path for g in run.server.generations}
    assert paths == {"/v1/chat/completions", "/v1/chat/completions/tokens"}, paths


def test_the_weights_moved_through_pause_update_resume(run: Run) -> None:
    broadcasts = run.resolved["output_dir"] + "/broadcasts"
    assert run.server.weight_updates, "the orchestrator never updated the inference weights"
    assert all(str(w).startswith(broadcasts + "/step_") for w in run.server.weight_updates)
    calls = run.server.admin_calls
    assert calls[:2] == ["pause", "resume"] and calls.count("pause") == len(run.server.weight_updates)


def test_prime_rl_resolves_one_model_and_tokenizer_and_the_token_client(run: Run) -> None:
    """prime-rl's own resolution (``rl @ rl.toml --dry-run``) of the rendered run names the model, and the
    trainer's tokenizer, everywhere (v0.5.0 resolves an unset tokenizer to Qwen/Qwen3-0.6B), and turns on
    the token client and the session header."""
    model = run.server.model
    assert run.resolved["model"]["name"] == model
    assert run.resolved_trainer["model"]["name"] == model
    assert run.resolved_trainer["tokenizer"]["name"] == model
    assert run.resolved["client"]["extra_headers_from_state"] == {"X-Session-ID": "example_id"}
    assert run.resolved["use_token_client"] is True


def test_the_env_servers_ran_with_the_runs_budget_and_scoring(run: Run) -> None:
    """prime-rl passes ``max_seq_len`` and ``score_rollouts`` only to env servers it spawns: launch gave
    them to each vf-serve."""
    started = [line for line in run.launch_output.splitlines() if line.startswith("$ vf-serve ")]
    assert len(started) == len(run.plan.cases)
    assert all(f"--max-seq-len {SEQ_LEN} --score-rollouts" in line for line in started)
    for i in range(len(run.plan.cases)):
        assert "vf-serve listening" in (run.run_dir / "logs" / f"vf-serve-{i}.log").read_text()
