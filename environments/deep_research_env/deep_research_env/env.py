"""The deep-research environment: a ``StatefulToolEnv`` whose tools share a per-rollout ``Session``."""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from typing import Any

import verifiers as vf
from deep_research_env.backends import Backend
from deep_research_env.tools import PRESETS, Session

# Set per tool call, so the error formatter (which gets no state) can say "this call failed": tool
# calls of one turn run as separate tasks, each with its own copy of the context.
_CALL_FAILED: contextvars.ContextVar[list[bool] | None] = contextvars.ContextVar(
    "dr_call_failed", default=None
)


def _format_error(tool_name: str, exc: BaseException) -> str:
    flag = _CALL_FAILED.get()
    if flag is not None:
        flag[0] = True
    if isinstance(exc, vf.ToolCallError):
        return f"Error: {exc}"
    return f"Error: tool {tool_name!r} raised {type(exc).__name__}: {exc}"


class DeepResearchEnv(vf.StatefulToolEnv):
    """Search, read pages, then ``finish(final_answer)``; the rollout ends at ``finish``, at an answer
    without a tool call, or at ``max_turns``.

    Per-rollout metrics (besides the SDK's ``tool_calls*``): ``searches`` (queries run), ``pages_opened``
    (distinct pages read), ``tool_errors/<tool>``.
    """

    def __init__(
        self, *, backend: Backend, preset: str = "research", max_output_chars: int = 8000, **kwargs: Any
    ) -> None:
        if preset not in PRESETS:
            raise ValueError(f"tools must be one of {', '.join(map(repr, PRESETS))}, not {preset!r}")
        super().__init__(error_formatter=_format_error, **kwargs)
        self.backend = backend
        self.preset = preset
        self.max_output_chars = max_output_chars
        for func in PRESETS[preset]:
            self.add_tool(func, hidden_args=["session"])

    async def setup_state(self, state: vf.State) -> None:
        await super().setup_state(state)
        metrics = state["metrics"]
        for key in ("searches", "pages_opened", *(f"tool_errors/{n}" for n in self.tools)):
            metrics.setdefault(key, 0.0)
        state["session"] = Session(self.backend, state, max_output_chars=self.max_output_chars)

    def update_tool_args(
        self, tool_name: str, tool_args: dict[str, Any], messages: vf.Messages, state: vf.State
    ) -> dict[str, Any]:
        return {**tool_args, "session": state["session"]}

    async def call_tool(
        self, call: Mapping[str, Any], index: int, messages: vf.Messages, state: vf.State
    ) -> vf.ChatMessage:
        flag = [False]
        token = _CALL_FAILED.set(flag)
        try:
            message = await super().call_tool(call, index, messages, state)
        finally:
            _CALL_FAILED.reset(token)
        name = str((call.get("function") or {}).get("name") or "")
        if flag[0] and name in self.tools:
            metrics = state["metrics"]
            metrics[f"tool_errors/{name}"] = metrics.get(f"tool_errors/{name}", 0.0) + 1.0
        return message

    async def cleanup_state(self, state: vf.State) -> None:
        session = state.pop("session", None)
        if isinstance(session, Session):  # plain values only: the state outlives the rollout
            state["search_queries"] = list(session.queries)
        await super().cleanup_state(state)

    async def teardown(self) -> None:
        try:
            await self.backend.aclose()
        finally:
            await super().teardown()
