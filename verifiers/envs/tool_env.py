"""Tool-calling environments: the model calls Python functions until it answers without a tool call.

::

    def add(a: int, b: int) -> int:
        \"\"\"Add two integers.\"\"\"
        return a + b

    env = vf.ToolEnv(dataset=rows, tools=[add], rubric=rubric, max_turns=8)

Each assistant message's tool calls run concurrently; their results come back as ``tool`` messages in
call order. A mistake of the model (unknown tool, arguments that are not JSON or fail validation) or an
exception inside a tool becomes a tool message the model can read and react to, unless its type is
declared fatal (``fatal_errors=``), which ends the rollout with a ``ToolFatalError`` (category ``env``).
Errors of the SDK's own hierarchy raised by a tool (e.g. ``SandboxError``) end the rollout with their
own category: they are not the model's doing.

Per-rollout counts are written to ``state["metrics"]`` (which the rubric keeps and results report):
``tool_calls`` (all calls), ``tool_errors`` (calls answered with an error) and ``tool_calls/<name>``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from verifiers.envs.multiturn import MultiTurnEnv, stop
from verifiers.envs.tool_schema import Tool, ToolArgumentError, ToolCallError, UnknownToolError
from verifiers.errors import ToolFatalError, VerifiersError
from verifiers.types import ChatMessage, Messages, State

__all__ = [
    "ErrorFormatter",
    "Tool",
    "ToolArgumentError",
    "ToolCallError",
    "ToolEnv",
    "UnknownToolError",
    "format_tool_error",
    "format_tool_result",
]

#: ``(tool_name, exception) -> text`` of the tool message the model reads after a failed call.
ErrorFormatter = Callable[[str, BaseException], str]

TOOL_CALLS = "tool_calls"
TOOL_ERRORS = "tool_errors"


def format_tool_error(tool_name: str, exc: BaseException) -> str:
    """The default error text: what went wrong, without a traceback (the model cannot use one)."""
    if isinstance(exc, ToolCallError):
        return f"Error: {exc}"
    return f"Error: tool {tool_name!r} raised {type(exc).__name__}: {exc}"


def format_tool_result(result: Any) -> str:
    """Tool results as message text: strings as they are, everything else as JSON."""
    if isinstance(result, str):
        return result
    if isinstance(result, BaseModel):
        return result.model_dump_json()
    if result is None:
        return ""
    try:
        return json.dumps(result, ensure_ascii=False, default=str)
    except (TypeError, ValueError):  # e.g. circular structures
        return str(result)


def _truncate(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... truncated {len(text) - limit} characters]"


def _bump(state: State, key: str) -> None:
    metrics = state.setdefault("metrics", {})
    metrics[key] = metrics.get(key, 0.0) + 1.0


class ToolEnv(MultiTurnEnv):
    """A multi-turn environment whose environment turns are the results of the model's tool calls.

    Stops when the model answers without calling a tool (``no_tool_calls``) or at ``max_turns`` model
    turns; the tool calls of the last allowed turn still run (their results end the completion).

    Args:
        tools: Plain functions (sync or async); schemas come from their type hints and docstrings.
        fatal_errors: Exception types that end the rollout instead of being shown to the model.
        error_formatter: Text of the tool message after a failed call (default ``format_tool_error``).
        max_tool_output_chars: Cap on each tool message (longer results are cut and marked).
    """

    def __init__(
        self,
        *,
        tools: Sequence[Callable[..., Any]] = (),
        max_turns: int = 10,
        fatal_errors: Sequence[type[BaseException]] = (),
        error_formatter: ErrorFormatter | None = None,
        max_tool_output_chars: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(max_turns=max_turns, **kwargs)
        if self.message_type != "chat":
            raise ValueError(f"{type(self).__name__} needs chat messages (tool calls are a chat feature)")
        if max_tool_output_chars is not None and max_tool_output_chars < 1:
            raise ValueError("max_tool_output_chars must be positive")
        self.fatal_errors: tuple[type[BaseException], ...] = tuple(fatal_errors)
        self.error_formatter: ErrorFormatter = error_formatter or format_tool_error
        self.max_tool_output_chars = max_tool_output_chars
        self.tools: dict[str, Tool] = {}
        for func in tools:
            self.add_tool(func)

    # --- tools -------------------------------------------------------------------------------------
    def add_tool(self, func: Callable[..., Any] | Tool, *, name: str | None = None) -> Tool:
        """Offer another tool to the model (a function, or a ``Tool`` built by hand)."""
        tool = func if isinstance(func, Tool) else Tool.from_function(func, name=name)
        return self._register(tool)

    def _register(self, tool: Tool) -> Tool:
        if tool.name in self.tools:
            raise ValueError(f"{type(self).__name__} already has a tool named {tool.name!r}")
        self.tools[tool.name] = tool
        return tool

    def tool_names(self) -> list[str]:
        return [*self.tools, *(n for n in super().tool_names() if n not in self.tools)]

    @property
    def tool_schemas(self) -> list[dict[str, Any]]:
        return [t.schema for t in self.tools.values()]

    def tools_for(self, state: State) -> list[dict[str, Any]] | None:
        return self.tool_schemas or None

    # --- rollout -----------------------------------------------------------------------------------
    async def setup_state(self, state: State) -> None:
        # Zeros up front, so averages over a run count rollouts that never called a tool.
        metrics = state.setdefault("metrics", {})
        for key in (TOOL_CALLS, TOOL_ERRORS, *(f"{TOOL_CALLS}/{n}" for n in self.tools)):
            metrics.setdefault(key, 0.0)
        await super().setup_state(state)

    @stop
    def no_tool_calls(self, state: State) -> bool:
        completion = state["completion"]
        if not completion:
            return False
        last = completion[-1]
        return last.get("role") == "assistant" and not last.get("tool_calls")

    def responds_after_last_turn(self, state: State) -> bool:
        # Tool calls made on the last allowed turn run: a finish(answer) there is an answer, not lost.
        completion = state["completion"]
        return bool(completion) and bool(completion[-1].get("tool_calls"))

    async def env_response(self, messages: Messages | str, state: State) -> Messages:
        assert not isinstance(messages, str)
        calls = (messages[-1].get("tool_calls") or []) if messages else []
        if len(calls) <= 1:
            return [await self.call_tool(c, i, messages, state) for i, c in enumerate(calls)]
        try:
            async with asyncio.TaskGroup() as tg:
                tasks = [tg.create_task(self.call_tool(c, i, messages, state)) for i, c in enumerate(calls)]
        except BaseExceptionGroup as group:
            # One call ended the rollout (fatal error, dead sandbox…): the siblings were cancelled.
            raise group.exceptions[0] from None
        return [t.result() for t in tasks]

    async def prepare_tool_args(
        self, tool: Tool, args: dict[str, Any], messages: Messages, state: State
    ) -> dict[str, Any]:
        """The final keyword arguments of a call (validated ones in); ``StatefulToolEnv`` injects
        hidden arguments here. Errors raised here are the environment's, not the model's."""
        return args

    async def call_tool(
        self, call: Mapping[str, Any], index: int, messages: Messages, state: State
    ) -> ChatMessage:
        """Run one tool call and return its ``tool`` message."""
        call_id = str(call.get("id") or f"call_{index}")
        function = call.get("function") or {}
        name = str(function.get("name") or "")
        _bump(state, TOOL_CALLS)
        try:
            tool = self.tools.get(name)
            if tool is None:
                available = ", ".join(self.tools) or "none"
                raise UnknownToolError(f"there is no tool named {name!r} (available: {available})")
            _bump(state, f"{TOOL_CALLS}/{name}")
            args = tool.parse_arguments(function.get("arguments"))
        except ToolCallError as exc:
            return self._failed(call_id, name, exc, state)
        args = await self.prepare_tool_args(tool, args, messages, state)
        try:
            result = await tool.call(args)
        except VerifiersError:
            raise
        except Exception as exc:
            return self._failed(call_id, name, exc, state)
        return self._tool_message(call_id, format_tool_result(result))

    def _failed(self, call_id: str, name: str, exc: Exception, state: State) -> ChatMessage:
        if isinstance(exc, self.fatal_errors):
            raise ToolFatalError(f"tool {name!r} raised {type(exc).__name__}: {exc}") from exc
        _bump(state, TOOL_ERRORS)
        return self._tool_message(call_id, self.error_formatter(name, exc))

    def _tool_message(self, call_id: str, content: str) -> ChatMessage:
        return {
            "role": "tool",
            "tool_call_id": call_id,
            "content": _truncate(content, self.max_tool_output_chars),
        }
