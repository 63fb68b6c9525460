"""Single-turn environments: one prompt, one model answer, scored by the rubric."""

from __future__ import annotations

from typing import Any

from verifiers.envs.multiturn import MultiTurnEnv, stop
from verifiers.types import Messages, State


class SingleTurnEnv(MultiTurnEnv):
    """The model answers once; ``stop_condition`` is ``answered`` (or ``truncated``/an error)."""

    def __init__(self, **kwargs: Any) -> None:
        if kwargs.pop("max_turns", 1) != 1:
            raise ValueError("SingleTurnEnv always has exactly one turn; use MultiTurnEnv for more")
        super().__init__(max_turns=1, **kwargs)

    @stop
    def answered(self, state: State) -> bool:
        return len(state["turns"]) >= 1

    async def env_response(self, messages: Messages | str, state: State) -> Messages | str:
        raise RuntimeError("SingleTurnEnv never produces an environment response")
