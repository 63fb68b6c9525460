"""Rubrics: weighted reward functions over finished rollouts.

A reward function is a plain function (sync or async) that names the arguments it wants::

    def correct(completion, answer, parser) -> float: ...

Available per-rollout arguments: ``prompt``, ``completion``, ``answer``, ``info``, ``state``, ``task``,
``example_id``, ``parser`` and any object registered with ``add_class_object``. Group reward functions
are declared with ``@group_reward`` and receive the plural forms (``prompts``, ``completions``,
``answers``, ``infos``, ``states``, ``tasks``, ``example_ids``) plus ``parser`` and class objects, and
return one float per rollout.

A function of weight 0 is a metric: recorded, not added to the reward. A function that raises gives
the rollout a scoring error (``reward = None``); it is never turned into 0.0.

A *run-level* metric (``add_run_metric``) is defined over the whole run, not averaged per rollout (HLE's
calibration error): the run folds every scored rollout's values of its ``keys`` into it at the end
(``metadata.json``'s ``run_metrics``), and a re-score computes it again.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from verifiers.errors import RewardFunctionError, VerifiersError, error_record
from verifiers.parsers.parser import Parser
from verifiers.types import State

RewardFunc = Callable[..., float | Awaitable[float] | Any]

_ROLLOUT_ARGS = ("prompt", "completion", "answer", "info", "state", "task", "example_id")
_GROUP_ARGS = {
    "prompts": "prompt",
    "completions": "completion",
    "answers": "answer",
    "infos": "info",
    "states": "state",
    "tasks": "task",
    "example_ids": "example_id",
}


@dataclass(slots=True)
class Score:
    """What a reward function may return instead of a bare float: its value plus extra metrics."""

    value: float
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RunMetric:
    """A metric of a whole run: ``fn`` gets one tuple of the metric values named by ``keys`` per scored
    rollout that recorded them all (in no particular order) and returns the run's value, or ``None`` when
    there are not enough rollouts for one."""

    name: str
    keys: tuple[str, ...]
    fn: Callable[[Sequence[tuple[float, ...]]], float | None]


def group_reward(func: RewardFunc) -> RewardFunc:
    """Mark a reward function as group-level: it scores all rollouts of one example together."""
    func.__vf_group__ = True  # type: ignore[attr-defined]
    return func


def is_group_reward(func: RewardFunc) -> bool:
    return bool(getattr(func, "__vf_group__", False))


@dataclass(slots=True)
class _RewardSpec:
    func: RewardFunc
    name: str
    weight: float
    is_group: bool
    is_async: bool
    wants: tuple[str, ...]  # argument names to pass
    wants_all: bool  # has **kwargs


def _func_name(func: RewardFunc) -> str:
    return getattr(func, "__name__", None) or type(func).__name__


def _as_value(name: str, raw: Any) -> tuple[float, dict[str, float]]:
    if isinstance(raw, Score):
        value, extra = raw.value, raw.metrics
    else:
        value, extra = raw, {}
    if isinstance(value, bool):
        value = float(value)
    if not isinstance(value, int | float) or not math.isfinite(value):
        raise RewardFunctionError(f"reward function {name!r} returned {value!r}, not a finite number")
    return float(value), extra


class Rubric:
    """A weighted sum of reward functions, plus metrics."""

    def __init__(
        self,
        funcs: Sequence[RewardFunc] = (),
        weights: Sequence[float] | None = None,
        parser: Parser | None = None,
    ) -> None:
        if weights is not None and len(weights) != len(funcs):
            raise ValueError(f"Rubric got {len(funcs)} functions but {len(weights)} weights")
        self.parser = parser or Parser()
        #: True when no parser was given: an environment may then lend the rubric its own parser.
        self.parser_is_default = parser is None
        self._specs: list[_RewardSpec] = []
        self._objects: dict[str, Any] = {}
        self._run_metrics: list[RunMetric] = []
        for i, f in enumerate(funcs):
            self.add_reward_func(f, 1.0 if weights is None else float(weights[i]))

    # --- building ----------------------------------------------------------------------------------
    def add_class_object(self, name: str, obj: Any) -> None:
        """Make ``obj`` available to reward functions that name ``name`` (e.g. a judge client)."""
        if name in _ROLLOUT_ARGS or name in _GROUP_ARGS or name == "parser":
            raise ValueError(f"{name!r} is a built-in reward function argument")
        self._objects[name] = obj

    def add_reward_func(self, func: RewardFunc, weight: float = 1.0) -> None:
        is_group = is_group_reward(func)
        known = set(_GROUP_ARGS if is_group else _ROLLOUT_ARGS) | {"parser"}
        sig = inspect.signature(func)
        wants: list[str] = []
        wants_all = False
        for p in sig.parameters.values():
            if p.kind is p.VAR_KEYWORD:
                wants_all = True
            elif p.kind is p.VAR_POSITIONAL:
                continue
            elif p.name in known or p.name in self._objects:
                wants.append(p.name)
            elif p.default is p.empty:
                kind = "group reward" if is_group else "reward"
                raise ValueError(
                    f"{kind} function {_func_name(func)!r} asks for {p.name!r}, which is not available; "
                    f"choose from {sorted(known | set(self._objects))} or register it with add_class_object"
                )
        name = _func_name(func)
        if any(s.name == name for s in self._specs):
            raise ValueError(f"a reward function named {name!r} is already in this rubric")
        # callable objects with an async __call__ count as async too
        is_async = inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(type(func).__call__)
        self._specs.append(
            _RewardSpec(func, name, float(weight), is_group, is_async, tuple(wants), wants_all)
        )

    def add_metric(self, func: RewardFunc) -> None:
        self.add_reward_func(func, weight=0.0)

    def add_run_metric(self, metric: RunMetric) -> None:
        """Add a metric computed over the whole run from per-rollout metrics (see ``RunMetric``)."""
        if any(m.name == metric.name for m in self.run_metrics):
            raise ValueError(f"a run metric named {metric.name!r} is already in this rubric")
        self._run_metrics.append(metric)

    @property
    def run_metrics(self) -> list[RunMetric]:
        return list(self._run_metrics)

    @property
    def func_names(self) -> list[str]:
        return [s.name for s in self._specs]

    # --- lifecycle (the environment calls these around a run) --------------------------------------
    async def setup(self) -> None:
        """Start what scoring needs (worker pools, clients). Called by ``Environment.setup``."""

    async def teardown(self) -> None:
        """Stop what ``setup`` started. Called by ``Environment.teardown``, also after a failed run."""

    @property
    def weights(self) -> list[float]:
        return [s.weight for s in self._specs]

    @property
    def has_group_funcs(self) -> bool:
        return any(s.is_group for s in self._specs)

    # --- calling -----------------------------------------------------------------------------------
    def _rollout_kwargs(self, spec: _RewardSpec, state: State) -> dict[str, Any]:
        names = (*_ROLLOUT_ARGS, "parser", *self._objects) if spec.wants_all else spec.wants
        kw: dict[str, Any] = {}
        for n in names:
            if n == "state":
                kw[n] = state
            elif n == "parser":
                kw[n] = self.parser
            elif n in self._objects:
                kw[n] = self._objects[n]
            else:
                kw[n] = state.get(n)
        return kw

    def _group_kwargs(self, spec: _RewardSpec, states: Sequence[State]) -> dict[str, Any]:
        names = (*_GROUP_ARGS, "parser", *self._objects) if spec.wants_all else spec.wants
        kw: dict[str, Any] = {}
        for n in names:
            if n == "parser":
                kw[n] = self.parser
            elif n in self._objects:
                kw[n] = self._objects[n]
            elif n == "states":
                kw[n] = list(states)
            else:
                kw[n] = [s.get(_GROUP_ARGS[n]) for s in states]
        return kw

    @staticmethod
    async def _call(spec: _RewardSpec, kwargs: dict[str, Any]) -> Any:
        try:
            result: Any = spec.func(**kwargs)
            if spec.is_async or inspect.isawaitable(result):
                result = await result
            return result
        except VerifiersError:
            raise
        except Exception as exc:
            raise RewardFunctionError(
                f"reward function {spec.name!r} raised {type(exc).__name__}: {exc}"
            ) from exc

    async def _score_one(self, state: State, partial: dict[str, float], specs: Sequence[_RewardSpec]) -> None:
        """Run per-rollout functions on one rollout, accumulating their values into ``partial``."""
        for spec in specs:
            if state.get("error") is not None:
                return
            try:
                value, extra = _as_value(spec.name, await self._call(spec, self._rollout_kwargs(spec, state)))
            except Exception as exc:
                state["error"] = error_record(exc)
                return
            partial[spec.name] = value
            partial.update(extra)

    async def score_rollout(self, state: State) -> None:
        """Score one rollout in place (``reward``, ``metrics``, or ``error``). Group functions see a
        group of one."""
        await self.score_group([state])

    async def score_group(self, states: Sequence[State]) -> None:
        """Score the rollouts of one example in place. Rollouts that already errored are left unscored."""
        t0 = time.perf_counter()
        partials: dict[int, dict[str, float]] = {id(s): {} for s in states}  # function values per rollout
        live = [s for s in states if s.get("error") is None]
        rollout_specs = [s for s in self._specs if not s.is_group]
        group_specs = [s for s in self._specs if s.is_group]
        if rollout_specs and live:
            await asyncio.gather(*(self._score_one(s, partials[id(s)], rollout_specs) for s in live))
        for spec in group_specs:
            live = [s for s in live if s.get("error") is None]
            if not live:
                break
            try:
                raw = await self._call(spec, self._group_kwargs(spec, live))
                if not isinstance(raw, Sequence) or len(raw) != len(live):
                    raise RewardFunctionError(
                        f"group reward function {spec.name!r} must return one value per rollout "
                        f"({len(live)}), got {raw!r:.200}"
                    )
                values = [_as_value(spec.name, v) for v in raw]
            except Exception as exc:
                rec = error_record(exc)
                for s in live:
                    s["error"] = rec
                break
            for s, (value, extra) in zip(live, values, strict=True):
                partials[id(s)][spec.name] = value
                partials[id(s)].update(extra)
        elapsed = time.perf_counter() - t0
        for s in states:
            self._finish(s, partials[id(s)], elapsed)

    def _finish(self, state: State, partial: dict[str, float], elapsed: float) -> None:
        metrics = state.setdefault("metrics", {})
        metrics.update(partial)
        timing = state.get("timing")
        if isinstance(timing, dict):
            timing["scoring"] = timing.get("scoring", 0.0) + elapsed
        if state.get("error") is not None:
            state["reward"] = None
            return
        state["reward"] = sum(spec.weight * partial.get(spec.name, 0.0) for spec in self._specs)


class RubricGroup(Rubric):
    """Several rubrics scored concurrently; rewards add up and metrics merge."""

    def __init__(self, rubrics: Sequence[Rubric]) -> None:
        if not rubrics:
            raise ValueError("RubricGroup needs at least one rubric")
        super().__init__(parser=rubrics[0].parser)
        self.rubrics = list(rubrics)

    @property
    def func_names(self) -> list[str]:
        return [n for r in self.rubrics for n in r.func_names]

    @property
    def weights(self) -> list[float]:
        return [w for r in self.rubrics for w in r.weights]

    @property
    def has_group_funcs(self) -> bool:
        return any(r.has_group_funcs for r in self.rubrics)

    @property
    def run_metrics(self) -> list[RunMetric]:
        return [*self._run_metrics, *(m for r in self.rubrics for m in r.run_metrics)]

    def add_reward_func(self, func: RewardFunc, weight: float = 1.0) -> None:
        raise TypeError("add reward functions to one of the RubricGroup's rubrics, not to the group")

    async def setup(self) -> None:
        for r in self.rubrics:
            await r.setup()

    async def teardown(self) -> None:
        errors: list[BaseException] = []
        for r in self.rubrics:  # every member is torn down even if one fails
            try:
                await r.teardown()
            except Exception as exc:
                errors.append(exc)
        if errors:
            raise errors[0]

    async def score_group(self, states: Sequence[State]) -> None:
        t0 = time.perf_counter()
        # Each member scores its own copy of the per-rollout results, then they are summed. Members see
        # the metrics the rollout already recorded (e.g. tool-call counts), as a lone rubric would.
        copies = [
            [State(s, metrics=dict(s.get("metrics") or {}), timing={}) for s in states] for _ in self.rubrics
        ]
        await asyncio.gather(*(r.score_group(c) for r, c in zip(self.rubrics, copies, strict=True)))
        elapsed = time.perf_counter() - t0
        for i, s in enumerate(states):
            metrics = s.setdefault("metrics", {})
            total = 0.0
            for member in copies:
                m = member[i]
                metrics.update(m.get("metrics", {}))
                if m.get("error") is not None and s.get("error") is None:
                    s["error"] = m["error"]
                total += m.get("reward") or 0.0
            s["reward"] = None if s.get("error") is not None else total
            timing = s.get("timing")
            if isinstance(timing, dict):
                timing["scoring"] = timing.get("scoring", 0.0) + elapsed


def compute_advantages(rewards: Sequence[float | None]) -> list[float | None]:
    """Group-relative advantages: reward minus the mean of the group's scored rewards.

    Unscored (``None``) rewards get ``None``: a trainer masks them rather than treating them as 0.
    """
    scored = [r for r in rewards if r is not None]
    if not scored:
        return [None for _ in rewards]
    mean = sum(scored) / len(scored)
    return [None if r is None else r - mean for r in rewards]
