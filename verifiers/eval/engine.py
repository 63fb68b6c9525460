"""The rollout scheduler: many groups of rollouts, an exact cap on rollouts in flight, scoring per group
or per rollout, and a callback as each group completes.

It depends only on the small ``RolloutEnv`` protocol, so environments can call it (``env.evaluate``)
without the engine knowing any environment class.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from verifiers.clients import Client
from verifiers.clients.sampling import cap_max_tokens
from verifiers.errors import error_record
from verifiers.eval._gc import run_gc
from verifiers.eval.concurrency import AdaptiveLimit, FixedLimit, Limit, MaxConcurrent, make_limit
from verifiers.types import Row, SamplingArgs, State

ScoreMode = Literal["group", "rollout"]
#: Called (synchronously, on the event loop) with each finished, scored group of states.
ProgressCallback = Callable[[Sequence[State]], None]


class RolloutEnv(Protocol):
    """What the engine needs of an environment."""

    async def rollout(
        self,
        client: Client,
        model: str,
        row: Row,
        *,
        sampling_args: SamplingArgs | None = None,
        rollout_index: int = 0,
        endpoint: int | None = None,
    ) -> State: ...

    async def score_group(self, states: Sequence[State]) -> None: ...

    async def score_rollout(self, state: State) -> None: ...

    async def setup(self) -> None: ...

    async def teardown(self) -> None: ...

    def init_state(self, row: Row, rollout_index: int) -> State: ...

    def request_sampling_args(self, run_args: SamplingArgs | None, row: Row | None = None) -> SamplingArgs:
        """What a model request of ``row``'s family sends: the environment's defaults under the run's."""
        ...


@dataclass
class RunProgress:
    """Live counters of a run, mutated by the engine and read by progress displays."""

    total: int = 0
    #: Rollouts whose generation finished (scored or not yet); ``done`` counts scored groups' rollouts.
    generated: int = 0
    done: int = 0
    scored: int = 0
    reward_sum: float = 0.0
    errors: dict[str, int] = field(default_factory=dict)
    error_examples: dict[str, str] = field(default_factory=dict)
    in_flight: int = 0
    max_in_flight: int = 0
    #: Rollouts counted in ``done`` that an earlier (resumed) run produced; excluded from ``rate``.
    preloaded: int = 0
    started: float = field(default_factory=time.monotonic)
    client: Client | None = None
    #: The cap on rollouts in flight (adaptive with ``max_concurrent="auto"``), for displays.
    limit: Limit | None = None

    @property
    def concurrency_limit(self) -> int | None:
        return self.limit.limit if self.limit is not None else None

    @property
    def cap_text(self) -> str | None:
        """The adaptive cap as displays show it (``None`` for a fixed one)."""
        lim = self.limit
        if isinstance(lim, AdaptiveLimit):
            return f"cap {lim.limit} (auto {lim.floor}..{lim.ceiling})"
        return None

    @property
    def mean_reward(self) -> float | None:
        return self.reward_sum / self.scored if self.scored else None

    @property
    def rate(self) -> float:
        """Rollouts per second produced by this run since it started generating."""
        elapsed = time.monotonic() - self.started
        return (self.generated - self.preloaded) / elapsed if elapsed > 0 else 0.0

    def waiting_longer_than(self, seconds: float) -> int:
        """Model requests sent more than ``seconds`` ago and still unanswered (a silent server)."""
        return self.client.stats.waiting_longer_than(seconds) if self.client is not None else 0

    @property
    def retries_in_flight(self) -> int:
        return self.client.stats.retries_in_flight if self.client is not None else 0

    def record(self, states: Sequence[State]) -> None:
        for s in states:
            self.done += 1
            err = s.get("error")
            if err is not None:
                cat = err.get("category", "env")
                self.errors[cat] = self.errors.get(cat, 0) + 1
                self.error_examples.setdefault(cat, f"{err.get('type')}: {err.get('message')}")
            elif s.get("reward") is not None:
                self.scored += 1
                self.reward_sum += s["reward"]


@dataclass(slots=True)
class GroupPlan:
    """One example and the rollout indices still to run for it."""

    row: Row
    rollout_indices: list[int]


async def score_safely(fn: Callable[[Any], Any], states: State | list[State]) -> None:
    """Call a scoring function (``score_group`` / ``score_rollout``); if the rubric itself raises, record
    the error on every rollout it was scoring (reward ``None``) instead of losing the group."""
    try:
        await fn(states)
    except Exception as exc:
        for s in states if isinstance(states, list) else [states]:
            if s.get("error") is None:  # an earlier error (e.g. the model's) is the real cause
                s["error"] = error_record(exc)
            s["reward"] = None


class GroupRunner:
    """Runs one planned group: its rollouts under the shared limit, then its scoring, then the callback.

    ``schedule`` drives one over a whole plan; the Ray actors in ``verifiers.eval.distributed`` drive
    one per batch they are handed, so both count, cap and score rollouts the same way."""

    def __init__(
        self,
        env: RolloutEnv,
        client: Client,
        model: str,
        *,
        limit: Limit,
        sampling_args: SamplingArgs | None,
        score: ScoreMode,
        on_group: ProgressCallback | None,
        progress: RunProgress,
        max_tokens_limit: int | None = None,
    ) -> None:
        if score not in ("group", "rollout"):
            raise ValueError(f"score must be 'group' or 'rollout', not {score!r}")
        self.env, self.client, self.model = env, client, model
        self.limit = limit
        self.sampling_args = sampling_args  # the run's layer; each group resolves its family's once
        self.max_tokens_limit = max_tokens_limit
        self.score = score
        self.on_group = on_group
        self.progress = progress

    async def _one(self, row: Row, index: int, endpoint: int, args: SamplingArgs) -> State:
        p = self.progress
        await self.limit.acquire()
        try:
            p.in_flight += 1
            if p.in_flight > p.max_in_flight:
                p.max_in_flight = p.in_flight
            t0 = time.perf_counter()
            try:
                state = await self.env.rollout(
                    self.client,
                    self.model,
                    row,
                    sampling_args=args,
                    rollout_index=index,
                    endpoint=endpoint,
                )
            except Exception as exc:  # a rollout implementation that raised instead of recording
                state = self.env.init_state(row, index)
                state["error"] = error_record(exc)
                state["stop_condition"] = "error"
            finally:
                p.in_flight -= 1
            p.generated += 1
            state["timing"]["generation"] = time.perf_counter() - t0
        finally:
            self.limit.release()
        if self.score == "rollout":
            await score_safely(self.env.score_rollout, state)
        return state

    async def group(self, plan: GroupPlan) -> list[State]:
        endpoint = self.client.next_endpoint()
        args = cap_max_tokens(
            self.env.request_sampling_args(self.sampling_args, plan.row), self.max_tokens_limit
        )
        if len(plan.rollout_indices) == 1:
            states = [await self._one(plan.row, plan.rollout_indices[0], endpoint, args)]
        else:
            states = list(
                await asyncio.gather(*(self._one(plan.row, i, endpoint, args) for i in plan.rollout_indices))
            )
        if self.score == "group":
            await score_safely(self.env.score_group, states)
        for s in states:
            t = s["timing"]
            t["total"] = t["generation"] + t["scoring"]
        self.progress.record(states)
        if self.on_group is not None:
            self.on_group(states)
        return states


async def schedule(
    env: RolloutEnv,
    plans: Sequence[GroupPlan],
    client: Client,
    model: str,
    *,
    max_concurrent: MaxConcurrent | Limit = 32,
    sampling_args: SamplingArgs | None = None,
    score: ScoreMode = "group",
    on_group: ProgressCallback | None = None,
    progress: RunProgress | None = None,
    collect: bool = True,
    max_tokens_limit: int | None = None,
) -> list[list[State]]:
    """Run every planned group; at most ``max_concurrent`` rollouts are generating at any moment
    (an int; ``"auto"`` or ``(floor, ceiling)`` adapt it to the endpoint's push-back, see
    ``verifiers.eval.concurrency``; or a ready ``Limit`` shared with the caller).

    Groups are started in order through a bounded window (so a million-row run does not create a million
    tasks up front). On cancellation every running group is cancelled and awaited before re-raising;
    groups already handed to ``on_group`` stay handed.
    """
    progress = progress if progress is not None else RunProgress()
    progress.client = client
    progress.total += sum(len(p.rollout_indices) for p in plans)
    limit = (
        max_concurrent
        if isinstance(max_concurrent, AdaptiveLimit | FixedLimit)
        else make_limit(max_concurrent)
    )
    progress.limit = limit
    ceiling = limit.ceiling if isinstance(limit, AdaptiveLimit) else limit.limit
    runner = GroupRunner(
        env,
        client,
        model,
        limit=limit,
        sampling_args=sampling_args,
        score=score,
        on_group=on_group,
        progress=progress,
        max_tokens_limit=max_tokens_limit,
    )
    per_group = max(1, max((len(p.rollout_indices) for p in plans), default=1))
    window = asyncio.Semaphore(2 * math.ceil(ceiling / per_group) + 1)
    results: list[list[State]] = [[] for _ in plans] if collect else []
    tasks: set[asyncio.Task[None]] = set()
    failure: list[BaseException] = []

    async def run_group(i: int, plan: GroupPlan) -> None:
        try:
            states = await runner.group(plan)
            if collect:
                results[i] = states
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # a callback or env bug: stop the whole run, loudly
            failure.append(exc)
        finally:
            window.release()

    stop_listening = (
        client.add_throttle_listener(limit.throttled) if isinstance(limit, AdaptiveLimit) else None
    )
    # Set when the last running group ends or one fails: waiting on it costs O(1) per group, where
    # asyncio.wait over thousands of tasks cost O(tasks) per completion.
    settled = asyncio.Event()

    def finished(t: asyncio.Task[None]) -> None:
        tasks.discard(t)
        if not tasks or failure:
            settled.set()

    try:
        with run_gc():
            for i, plan in enumerate(plans):
                if failure:
                    break
                await window.acquire()
                t = asyncio.create_task(run_group(i, plan))
                tasks.add(t)
                t.add_done_callback(finished)
            while tasks and not failure:
                settled.clear()
                await settled.wait()
    finally:
        if stop_listening is not None:
            stop_listening()
        pending = [t for t in tasks if not t.done()]
        for t in pending:
            t.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
    if failure:
        raise failure[0]
    return results


async def run_generate(
    env: RolloutEnv,
    rows: Sequence[Row],
    client: Client,
    model: str,
    *,
    rollouts_per_example: int = 1,
    max_concurrent: MaxConcurrent = 32,
    sampling_args: SamplingArgs | None = None,
    score: ScoreMode = "group",
) -> list[State]:
    """Generate and score ``rollouts_per_example`` rollouts of every row, in (row, rollout) order."""
    if rollouts_per_example < 1:
        raise ValueError("rollouts_per_example must be at least 1")
    plans = [GroupPlan(row, list(range(rollouts_per_example))) for row in rows]
    await env.setup()
    try:
        groups = await schedule(
            env,
            plans,
            client,
            model,
            max_concurrent=max_concurrent,
            sampling_args=sampling_args,
            score=score,
        )
    finally:
        await env.teardown()
    return [s for g in groups for s in g]
