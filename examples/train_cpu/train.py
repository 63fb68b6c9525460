"""A CPU training loop that proves the wiring: tabular policy server ⇄ vf-serve ⇄ RL maths.

    policy server (policy_server.py)  ◄── chat requests ──  vf-serve logic-env  ◄── POST /rollouts ──┐
         ▲  POST /update_weights                              (rollouts, rewards, token ids, logprobs) │
         └────────────────────────────────────── this loop ◄─────────────────────────────────────────┘

Each step the loop takes groups of rollouts (``rollouts_per_example`` per prompt) streamed by vf-serve,
filters them by difficulty (``DifficultyPools``: uniform groups dropped, solved prompts retired), keeps them
in an ``OffPolicyBuffer`` (with ``--async-level 1`` the next batch is generated while this one trains, so
rollouts are one policy step old), computes group advantages and the IcePop loss with the inference
logprobs vf-serve returned as ``logp_old``, back-propagates the loss's gradient w.r.t. the token logprobs
into the policy's logits (``d logp(a) / d logits = onehot(a) - softmax(logits)``), takes an SGD step and
pushes the new weights to the policy server.

    python examples/train_cpu/train.py                  # 300 steps, about a minute or two on 2 cores
    python examples/train_cpu/train.py --steps 40 --metrics-out m.json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import AsyncIterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from policy_server import ANSWERS, MODEL, log_softmax, policy_server, prompt_key, write_weights

from verifiers.training import (
    DifficultyPools,
    OffPolicyBuffer,
    Stamped,
    group_advantages,
    icepop_loss,
)

#: The environment slice: logic-env's boolean expressions (answers True / False), easy, deterministic.
ENV_ID = "logic-env"
ENV_ARGS: dict[str, Any] = {"tasks": ["boolean_expressions"], "difficulty": "easy", "seed": 0}


@dataclass
class Config:
    steps: int = 300
    num_examples: int = 256
    prompts_per_step: int = 8
    rollouts_per_example: int = 8
    lr: float = 6.0
    async_level: int = 1
    #: Push the weights to the server every this many updates (prime-rl broadcasts checkpoints
    #: asynchronously, so inference runs on weights a few steps old); in between, rollouts are sampled
    #: from weights older than the trainer's and IcePop's ratios differ from 1.
    push_every: int = 1
    max_off_policy_steps: int = 1

    def __post_init__(self) -> None:
        # A batch is at most (push_every - 1) + async_level updates old; a tighter limit would drop every
        # batch once the server fell behind, and no update would ever come to catch it up.
        if self.push_every < 1 or self.async_level < 0:
            raise ValueError("push_every must be >= 1 and async_level >= 0")
        if self.push_every - 1 + self.async_level > self.max_off_policy_steps:
            raise ValueError(
                f"max_off_policy_steps={self.max_off_policy_steps} is below the staleness this loop "
                f"produces (push_every - 1 + async_level = {self.push_every - 1 + self.async_level})"
            )

    seed: int = 0
    temperature: float = 1.0
    log_every: int = 10
    #: Every this many steps (and before the first and after the last) the whole dataset is rolled out
    #: ``eval_rollouts`` times with the current weights: the learning curve, free of the sampling bias of
    #: training batches (which skip solved prompts). 0: never.
    eval_every: int = 50
    eval_rollouts: int = 4
    #: An already running vf-serve (``http://host:port``) instead of starting one.
    vf_serve_url: str | None = None
    #: Roll out in this process (``env.a_generate``) instead of through vf-serve.
    in_process: bool = False


# --- rollouts: vf-serve over HTTP ---------------------------------------------------------------------
@contextlib.asynccontextmanager
async def vf_serve(env_args: dict[str, Any]) -> AsyncIterator[str]:
    """``vf-serve ENV_ID`` as a subprocess on a free port; yields its base URL once it listens."""
    exe = shutil.which("vf-serve", path=str(Path(sys.executable).parent)) or shutil.which("vf-serve")
    cmd = [exe] if exe else [sys.executable, "-m", "verifiers.cli.serve"]
    cmd += [ENV_ID, "--env-args", json.dumps(env_args), "--port", "0", "--max-concurrent", "64"]
    proc = await asyncio.create_subprocess_exec(
        *cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    assert proc.stdout is not None
    drain: asyncio.Task[None] | None = None
    try:
        seen: list[str] = []
        while True:
            line = (await asyncio.wait_for(proc.stdout.readline(), timeout=120)).decode()
            if not line:
                raise RuntimeError("vf-serve exited before listening:\n" + "".join(seen))
            seen.append(line)
            if line.startswith("vf-serve listening"):
                http = line.split("http=", 1)[1].split()[0]
                break
        drain = asyncio.create_task(_drain(proc.stdout))
        yield f"http://{http}"
    finally:
        if proc.returncode is None:
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), timeout=20)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        if drain is not None:
            drain.cancel()


async def _drain(stream: asyncio.StreamReader) -> None:
    while await stream.readline():  # keep the pipe from filling up; vf-serve's logs are not needed here
        pass


def request_sampling_args(cfg: Config) -> dict[str, Any]:
    return {"temperature": cfg.temperature, "max_tokens": 32}


class VfServeSource:
    """Rollouts from vf-serve: one ``POST /rollouts`` per batch, groups streamed back as NDJSON."""

    def __init__(self, http: aiohttp.ClientSession, serve_url: str, policy_url: str, cfg: Config) -> None:
        self.http, self.serve_url, self.policy_url, self.cfg = http, serve_url, policy_url, cfg

    async def example_ids(self) -> list[int]:
        async with self.http.get(
            f"{self.serve_url}/dataset", params={"split": "train", "limit": "100000"}
        ) as resp:
            return [row["example_id"] for row in (await resp.json())["rows"]]

    async def groups(self, example_ids: Sequence[int], rollouts_per_example: int) -> list[dict[str, Any]]:
        request = {
            "example_ids": list(example_ids),
            "split": "train",
            "rollouts_per_example": rollouts_per_example,
            "model": MODEL,
            "base_url": self.policy_url,
            "api_key_var": None,
            "return_tokens": "both",
            "sampling_args": request_sampling_args(self.cfg),
        }
        groups: list[dict[str, Any]] = []
        headers = {"Accept": "application/x-ndjson"}
        async with self.http.post(f"{self.serve_url}/rollouts", json=request, headers=headers) as resp:
            if resp.status != 200:
                raise RuntimeError(f"vf-serve answered {resp.status}: {await resp.text()}")
            async for raw in resp.content:
                if not raw.strip():
                    continue
                msg = json.loads(raw)
                if msg.get("type") == "group":
                    groups.append(msg)
                elif msg.get("type") == "done":
                    break
                elif msg.get("type") == "error":
                    raise RuntimeError(f"vf-serve: {msg}")
        return groups


class InProcessSource:
    """The same rollouts from the environment in this process (``env.a_generate``), for comparison and
    debugging: the groups have the shape vf-serve streams."""

    def __init__(self, env: Any, policy_url: str, cfg: Config) -> None:
        self.env, self.policy_url, self.cfg = env, policy_url, cfg
        self.rows = {row["example_id"]: row for row in env.select_rows(split="train")}

    async def example_ids(self) -> list[int]:
        return list(self.rows)

    async def groups(self, example_ids: Sequence[int], rollouts_per_example: int) -> list[dict[str, Any]]:
        from verifiers.clients.sampling import merge_sampling_args, token_request_args

        args = merge_sampling_args(token_request_args("both"), request_sampling_args(self.cfg))
        states = await self.env.a_generate(
            [self.rows[i] for i in example_ids],
            self.policy_url,
            MODEL,
            rollouts_per_example=rollouts_per_example,
            sampling_args=args,
        )
        by_example: dict[int, list[dict[str, Any]]] = {}
        for state in states:
            by_example.setdefault(state["example_id"], []).append(self.env.result_record(state))
        return [{"type": "group", "example_id": i, "rollouts": r} for i, r in by_example.items()]


# --- the trainer side ---------------------------------------------------------------------------------
@dataclass
class Sample:
    """One rollout as the trainer sees it: its table row (prompt), the answer it sampled, and per
    completion token the inference logprob and loss mask. The answer's logprob sits on its first token;
    the rest of its tokens follow it deterministically (logprob 0 under every policy)."""

    key: str
    action: int
    logp_old: list[float]
    mask: list[int]
    advantage: float


def sample_of(rollout: dict[str, Any], advantage: float) -> Sample | None:
    """The training sample of a single-turn rollout (its trajectory step), or ``None`` when the server
    gave no tokens or the answer is not one of the policy's."""
    steps = rollout.get("trajectory") or []
    if not steps:
        return None
    step = steps[-1]
    completion, logprobs, mask = (
        step.get(k) for k in ("completion_ids", "completion_logprobs", "completion_mask")
    )
    if not completion or logprobs is None or len(logprobs) != len(completion):
        return None
    messages = rollout.get("completion") or []
    text = messages[-1].get("content") if messages else None
    if text not in ANSWERS:
        return None
    return Sample(prompt_key(rollout["prompt"]), ANSWERS.index(text), list(logprobs), list(mask), advantage)


class Trainer:
    """The trainer's copy of the tabular policy's logits, updated by SGD on the IcePop loss."""

    def __init__(self, n_answers: int, lr: float) -> None:
        self.logits: dict[str, np.ndarray] = {}
        self.n_answers = n_answers
        self.lr = lr
        self.step = 0

    def update(self, samples: Sequence[Sample]) -> dict[str, float]:
        # One position per sample, the answer's first token: the tokens after it follow deterministically
        # (logprob 0 under every policy), so they carry no gradient, and counting them in the loss's
        # normaliser would only shrink the step.
        shape = (len(samples), 1)
        logp_old, logp_new = np.zeros(shape), np.zeros(shape)
        mask = np.array([[bool(s.mask[0])] for s in samples])
        rows = [self.logits.setdefault(s.key, np.zeros(self.n_answers)) for s in samples]  # new: uniform
        logp_all = log_softmax(np.stack(rows))  # (batch, answers)
        for b, s in enumerate(samples):
            logp_old[b, 0] = s.logp_old[0]
            logp_new[b, 0] = logp_all[b, s.action]
        res = icepop_loss(logp_new, logp_old, np.array([s.advantage for s in samples]), mask)
        # chain rule, first token only: d loss / d logits[row] = grad[b, 0] * (onehot(a) - softmax(logits[row]))
        probs = np.exp(logp_all)
        for b, s in enumerate(samples):
            d = -res.grad[b, 0] * probs[b]
            d[s.action] += res.grad[b, 0]
            self.logits[s.key] = self.logits[s.key] - self.lr * d
        self.step += 1
        return {"loss": res.loss, **res.metrics}


async def push_weights(http: aiohttp.ClientSession, policy_url: str, trainer: Trainer, weights: Path) -> None:
    """Publish the weights as prime-rl's filesystem broadcast does (a directory per step), then tell
    the inference server to load them."""
    weight_dir = write_weights(weights / f"step_{trainer.step}", trainer.logits, trainer.step)
    root = policy_url.removesuffix("/v1")
    async with http.post(f"{root}/update_weights", json={"weight_dir": str(weight_dir)}) as resp:
        if resp.status != 200:
            raise RuntimeError(f"update_weights failed: {resp.status} {await resp.text()}")


def mean_reward(groups: Sequence[dict[str, Any]]) -> float:
    rewards = [r["reward"] for g in groups for r in g["rollouts"] if r.get("reward") is not None]
    return float(np.mean(rewards)) if rewards else float("nan")


def log_line(window: Sequence[dict[str, float]]) -> str:
    """Means over the last steps: batch reward, mismatch KL, IcePop's masked fractions, off-policyness."""

    def avg(key: str) -> float:
        vals = [h[key] for h in window if key in h and h[key] == h[key]]
        return float(np.mean(vals)) if vals else 0.0

    last = window[-1]
    return (
        f"step {last['step']:4.0f}  reward {avg('reward'):.3f}  mismatch_kl {avg('mismatch_kl'):.4f}  "
        f"masked low/high {avg('masked_low'):.3f}/{avg('masked_high'):.3f}  "
        f"off-policy {avg('off_policy_steps'):.2f}  retired {last['retired']:.0f}  {last['elapsed_s']:.1f}s"
    )


def admit(
    groups: Sequence[dict[str, Any]],
    pools: DifficultyPools,
    buffer: OffPolicyBuffer[dict[str, Any]],
    policy_step: int,
) -> tuple[list[float], int]:
    """Record arrived groups in the difficulty pools and buffer the informative ones (errored rollouts
    are left out of training and counted, never scored 0); returns the scored rewards and the errors."""
    rewards: list[float] = []
    errored = 0
    for group in groups:
        scored = [r for r in group["rollouts"] if r.get("error") is None and r.get("reward") is not None]
        errored += len(group["rollouts"]) - len(scored)
        rewards.extend(r["reward"] for r in scored)
        if scored and pools.observe(group["example_id"], [r["reward"] for r in scored]):
            buffer.put({"example_id": group["example_id"], "rollouts": scored}, policy_step)
    return rewards, errored


def training_samples(entries: Sequence[Stamped[dict[str, Any]]]) -> list[Sample]:
    """Group advantages of each buffered group, attached to its rollouts' token samples."""
    samples: list[Sample] = []
    for entry in entries:
        scored = entry.item["rollouts"]
        advs = group_advantages([r["reward"] for r in scored], len(scored))
        samples.extend(s for r, a in zip(scored, advs, strict=True) if (s := sample_of(r, float(a))))
    return samples


# --- the loop ------------------------------------------------------------------------------------------
async def train(cfg: Config) -> dict[str, list[dict[str, float]]]:
    """Run the loop; returns ``{"history": one metrics dict per step, "evals": [{"step", "reward"}]}``
    (a step's ``reward``: the mean reward of the rollouts that arrived in it, before filtering)."""
    history: list[dict[str, float]] = []
    evals: list[dict[str, float]] = []
    env_args = {**ENV_ARGS, "num_examples": cfg.num_examples, "seed": cfg.seed}
    weights = Path(tempfile.mkdtemp(prefix="train-cpu-weights-"))
    with policy_server(cfg.seed) as policy, contextlib.ExitStack() as cleanup:
        cleanup.callback(shutil.rmtree, weights, True)
        async with contextlib.AsyncExitStack() as stack:
            http = await stack.enter_async_context(
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=300))
            )
            source: VfServeSource | InProcessSource
            if cfg.in_process:
                import verifiers as vf

                source = InProcessSource(vf.load_environment(ENV_ID, **env_args), policy.url, cfg)
            else:
                serve_url = cfg.vf_serve_url
                if serve_url is None:
                    serve_url = await stack.enter_async_context(vf_serve(env_args))
                source = VfServeSource(http, serve_url, policy.url, cfg)
            ids = await source.example_ids()
            pools = DifficultyPools(ids, seed=cfg.seed)
            buffer: OffPolicyBuffer[dict[str, Any]] = OffPolicyBuffer(cfg.max_off_policy_steps)
            trainer = Trainer(len(ANSWERS), cfg.lr)
            pending: deque[tuple[int, asyncio.Task[list[dict[str, Any]]]]] = deque()
            t0 = time.perf_counter()
            served_step = 0  # the trainer step whose weights the server holds (as last pushed)

            async def evaluate(step: int) -> None:
                groups = await source.groups(ids, cfg.eval_rollouts)
                evals.append({"step": float(step), "reward": mean_reward(groups)})
                print(
                    f"eval after {step} steps: mean reward {evals[-1]['reward']:.3f} over {len(ids)} prompts",
                    flush=True,
                )

            try:
                if cfg.eval_every:
                    await evaluate(0)
                for step in range(cfg.steps):
                    # Keep `async_level` batches generating ahead of the trainer (tagged with the policy
                    # step whose weights the server holds when they are requested).
                    while len(pending) <= cfg.async_level:
                        batch_ids = pools.sample(cfg.prompts_per_step)
                        if not batch_ids:
                            break
                        task = asyncio.create_task(source.groups(batch_ids, cfg.rollouts_per_example))
                        pending.append((served_step, task))
                    if not pending:
                        print(f"step {step}: every prompt is solved and retired; stopping", flush=True)
                        break
                    policy_step, task = pending.popleft()
                    groups = await task
                    rewards, errored = admit(groups, pools, buffer, policy_step)
                    fresh = buffer.take(10**9, current_step=trainer.step)
                    samples = training_samples(fresh)
                    metrics: dict[str, float] = {
                        "step": float(step),
                        "reward": float(np.mean(rewards)) if rewards else float("nan"),
                    }
                    metrics["errored"] = float(errored)
                    metrics["samples"] = float(len(samples))
                    metrics["stale_dropped"] = float(buffer.dropped)
                    metrics["off_policy_steps"] = float(
                        max((trainer.step - e.policy_step for e in fresh), default=0)
                    )
                    if samples:
                        metrics.update(trainer.update(samples))
                        if trainer.step % cfg.push_every == 0:
                            await push_weights(http, policy.url, trainer, weights)
                            served_step = trainer.step
                    metrics.update(pools.metrics())
                    metrics["elapsed_s"] = time.perf_counter() - t0
                    history.append(metrics)
                    if cfg.log_every and (step % cfg.log_every == 0 or step == cfg.steps - 1):
                        print(log_line(history[-cfg.log_every :]), flush=True)
                    if cfg.eval_every and (step + 1) % cfg.eval_every == 0 and step + 1 < cfg.steps:
                        await evaluate(step + 1)
            finally:
                for _, task in pending:
                    task.cancel()
                await asyncio.gather(*(t for _, t in pending), return_exceptions=True)
            if trainer.step != served_step:  # the final weights, for the last evaluation
                await push_weights(http, policy.url, trainer, weights)
            if cfg.eval_every:
                await evaluate(len(history))
    return {"history": history, "evals": evals}


def parse_args(argv: Sequence[str] | None = None) -> tuple[Config, Path | None]:
    p = argparse.ArgumentParser(description="Train a tabular policy on logic-env through vf-serve, on CPU.")
    d = Config()
    p.add_argument("--steps", type=int, default=d.steps)
    p.add_argument("--num-examples", type=int, default=d.num_examples)
    p.add_argument("--prompts-per-step", type=int, default=d.prompts_per_step)
    p.add_argument("--rollouts-per-example", type=int, default=d.rollouts_per_example)
    p.add_argument("--lr", type=float, default=d.lr)
    p.add_argument("--async-level", type=int, default=d.async_level)
    p.add_argument("--push-every", type=int, default=d.push_every)
    p.add_argument("--max-off-policy-steps", type=int, default=d.max_off_policy_steps)
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--temperature", type=float, default=d.temperature)
    p.add_argument("--log-every", type=int, default=d.log_every)
    p.add_argument("--eval-every", type=int, default=d.eval_every)
    p.add_argument("--eval-rollouts", type=int, default=d.eval_rollouts)
    p.add_argument("--vf-serve-url", default=None, help="use a running vf-serve instead of starting one")
    p.add_argument("--in-process", action="store_true", help="roll out in this process, without vf-serve")
    p.add_argument("--metrics-out", type=Path, default=None, help="write per-step metrics as JSON here")
    a = p.parse_args(argv)
    cfg = Config(
        steps=a.steps,
        num_examples=a.num_examples,
        prompts_per_step=a.prompts_per_step,
        rollouts_per_example=a.rollouts_per_example,
        lr=a.lr,
        async_level=a.async_level,
        push_every=a.push_every,
        max_off_policy_steps=a.max_off_policy_steps,
        seed=a.seed,
        temperature=a.temperature,
        log_every=a.log_every,
        eval_every=a.eval_every,
        eval_rollouts=a.eval_rollouts,
        vf_serve_url=a.vf_serve_url,
        in_process=a.in_process,
    )
    return cfg, a.metrics_out


def main(argv: Sequence[str] | None = None) -> None:
    cfg, out = parse_args(argv)
    result = asyncio.run(train(cfg))
    if out is not None:
        out.write_text(json.dumps({"config": asdict(cfg), **result}, indent=1))


if __name__ == "__main__":
    main()
