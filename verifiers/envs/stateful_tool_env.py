"""Tools with per-rollout state: hidden arguments the environment injects and the model never sees.

::

    def run(code: str, sandbox: Sandbox) -> str:
        \"\"\"Run Python code.

        Args:
            code: The program.
        \"\"\"

    class MyEnv(vf.StatefulToolEnv):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.add_tool(run, hidden_args=["sandbox"])

        def update_tool_args(self, tool_name, tool_args, messages, state):
            return {**tool_args, "sandbox": state["sandbox"]}

Hidden arguments are removed before the schema is built (so their types need not be JSON-schema-able)
and are rejected if the model sends them anyway.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection
from typing import Any

from verifiers.envs.tool_env import ToolEnv
from verifiers.envs.tool_schema import Tool
from verifiers.errors import EnvError
from verifiers.types import Messages, State

__all__ = ["StatefulToolEnv"]


class StatefulToolEnv(ToolEnv):
    """A ``ToolEnv`` whose tools may take hidden arguments filled in from the rollout's state by
    ``update_tool_args``."""

    def add_tool(
        self,
        func: Callable[..., Any] | Tool,
        *,
        name: str | None = None,
        hidden_args: Collection[str] = (),
    ) -> Tool:
        """Offer a tool; ``hidden_args`` are left out of its schema and supplied by ``update_tool_args``."""
        if isinstance(func, Tool):
            if hidden_args:
                raise ValueError("a prebuilt Tool already fixes its hidden arguments")
            return self._register(func)
        return self._register(Tool.from_function(func, name=name, hidden_args=hidden_args))

    def update_tool_args(
        self, tool_name: str, tool_args: dict[str, Any], messages: Messages, state: State
    ) -> dict[str, Any]:
        """Return the keyword arguments to call ``tool_name`` with: the model's validated arguments
        plus the hidden ones. May be ``async``. Override it; the default adds nothing."""
        return tool_args

    async def prepare_tool_args(
        self, tool: Tool, args: dict[str, Any], messages: Messages, state: State
    ) -> dict[str, Any]:
        result = self.update_tool_args(tool.name, args, messages, state)
        if inspect.isawaitable(result):
            result = await result
        missing = tool.required_hidden - set(result)
        if missing:
            raise EnvError(
                f"update_tool_args gave tool {tool.name!r} no value for hidden argument(s) {sorted(missing)}"
            )
        return result
