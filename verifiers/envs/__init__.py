"""Environments: the rollout protocols (single-turn, multi-turn, tools, sandboxes) and loading."""

from __future__ import annotations

from typing import TYPE_CHECKING

from verifiers._exports import lazy_exports

_EXPORTS: dict[str, str] = {
    "EnvGroup": "verifiers.envs.env_group",
    "UnknownRouteError": "verifiers.envs.env_group",
    "Environment": "verifiers.envs.environment",
    "installed_environments": "verifiers.envs.loading",
    "load_environment": "verifiers.envs.loading",
    "local_environments": "verifiers.envs.loading",
    "MultiTurnEnv": "verifiers.envs.multiturn",
    "stop": "verifiers.envs.multiturn",
    "SandboxEnv": "verifiers.envs.sandbox_env",
    "SingleTurnEnv": "verifiers.envs.singleturn",
    "StatefulToolEnv": "verifiers.envs.stateful_tool_env",
    "ToolEnv": "verifiers.envs.tool_env",
    "Tool": "verifiers.envs.tool_schema",
    "ToolArgumentError": "verifiers.envs.tool_schema",
    "ToolCallError": "verifiers.envs.tool_schema",
    "UnknownToolError": "verifiers.envs.tool_schema",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names, for type checkers and IDEs
    from verifiers.envs.env_group import EnvGroup as EnvGroup, UnknownRouteError as UnknownRouteError
    from verifiers.envs.environment import Environment as Environment
    from verifiers.envs.loading import (
        installed_environments as installed_environments,
        load_environment as load_environment,
        local_environments as local_environments,
    )
    from verifiers.envs.multiturn import MultiTurnEnv as MultiTurnEnv, stop as stop
    from verifiers.envs.sandbox_env import SandboxEnv as SandboxEnv
    from verifiers.envs.singleturn import SingleTurnEnv as SingleTurnEnv
    from verifiers.envs.stateful_tool_env import StatefulToolEnv as StatefulToolEnv
    from verifiers.envs.tool_env import ToolEnv as ToolEnv
    from verifiers.envs.tool_schema import (
        Tool as Tool,
        ToolArgumentError as ToolArgumentError,
        ToolCallError as ToolCallError,
        UnknownToolError as UnknownToolError,
    )
