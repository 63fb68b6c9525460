"""``EnvGroup``: several environments behind one, routed by an explicit key on each row."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from verifiers.clients import Client
from verifiers.clients.sampling import merge_sampling_args
from verifiers.envs.environment import Environment
from verifiers.errors import EnvError
from verifiers.types import Row, SamplingArgs, State


class UnknownRouteError(EnvError, KeyError):
    """A row's routing key names no environment of the group."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class EnvGroup(Environment):
    """Mixes environments. Each row's ``route_key`` (default ``task``) names the environment that rolls it
    out and scores it; its rows are that environment's own (system prompt, few-shot and all), tagged with
    the environment's name and renumbered so ``example_id`` stays unique across the group (the original id
    is kept in ``info['source_example_id']``)."""

    def __init__(self, envs: Mapping[str, Environment], *, route_key: str = "task", **kwargs: Any) -> None:
        if not envs:
            raise ValueError("EnvGroup needs at least one environment")
        self.envs: dict[str, Environment] = dict(envs)
        self.route_key = route_key
        super().__init__(
            dataset=lambda: self._concat("train"),
            eval_dataset=lambda: self._concat("eval"),
            **kwargs,
        )

    def _concat(self, split: str) -> list[Row]:
        out: list[Row] = []
        for name, env in self.envs.items():
            rows = env.rows(split)
            for i in range(len(rows)):
                row = env.format_row(rows[i], i)
                row["info"] = {**row["info"], "source_example_id": row["example_id"]}
                row[self.route_key] = name
                out.append(row)
        return out

    def format_row(self, raw: Mapping[str, Any], index: int) -> Row:
        row = dict(raw)
        row["example_id"] = index
        return row

    def sub_environments(self) -> Sequence[Environment]:
        return list(self.envs.values())

    def env_for(self, row: Mapping[str, Any]) -> Environment:
        key = row.get(self.route_key)
        try:
            return self.envs[key]  # type: ignore[index]
        except KeyError:
            raise UnknownRouteError(
                f"row {self.route_key}={key!r} names no environment of this group; known: {sorted(self.envs)}"
            ) from None

    async def rollout(
        self,
        client: Client,
        model: str,
        row: Row,
        *,
        sampling_args: SamplingArgs | None = None,
        rollout_index: int = 0,
        endpoint: int | None = None,
    ) -> State:
        env = self.env_for(row)
        state = await env.rollout(
            client,
            model,
            row,
            sampling_args=sampling_args
            if sampling_args is not None
            else self.request_sampling_args(None, row),
            rollout_index=rollout_index,
            endpoint=endpoint,
        )
        state[self.route_key] = row[self.route_key]
        return state

    def request_sampling_args(self, run_args: SamplingArgs | None, row: Row | None = None) -> SamplingArgs:
        """The row's environment's defaults, under the group's, under the run's."""
        group_layer = merge_sampling_args(self.sampling_args, run_args)
        if row is None:
            return group_layer
        return self.env_for(row).request_sampling_args(group_layer, row)

    def sampling_families(self, run_args: SamplingArgs | None) -> dict[str, SamplingArgs]:
        group_layer = merge_sampling_args(self.sampling_args, run_args)
        return {name: env.request_sampling_args(group_layer) for name, env in self.envs.items()}

    async def score_group(self, states: Sequence[State]) -> None:
        if states:
            await self.env_for(states[0]).score_group(states)

    async def score_rollout(self, state: State) -> None:
        await self.env_for(state).score_rollout(state)

    async def setup(self) -> None:
        await super().setup()
        for env in self.envs.values():
            await env.setup()

    async def teardown(self) -> None:
        try:
            for env in self.envs.values():
                await env.teardown()
        finally:
            await super().teardown()
