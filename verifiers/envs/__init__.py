"""Environments: the rollout protocols (single-turn, multi-turn, tools, sandboxes) and loading."""

from verifiers.envs.env_group import EnvGroup, UnknownRouteError
from verifiers.envs.environment import Environment
from verifiers.envs.loading import installed_environments, load_environment, local_environments
from verifiers.envs.multiturn import MultiTurnEnv, stop
from verifiers.envs.sandbox_env import SandboxEnv
from verifiers.envs.singleturn import SingleTurnEnv
from verifiers.envs.stateful_tool_env import StatefulToolEnv
from verifiers.envs.tool_env import ToolEnv
from verifiers.envs.tool_schema import Tool, ToolArgumentError, ToolCallError, UnknownToolError

__all__ = [
    "EnvGroup",
    "Environment",
    "MultiTurnEnv",
    "SandboxEnv",
    "SingleTurnEnv",
    "StatefulToolEnv",
    "Tool",
    "ToolArgumentError",
    "ToolCallError",
    "ToolEnv",
    "UnknownRouteError",
    "UnknownToolError",
    "installed_environments",
    "load_environment",
    "local_environments",
    "stop",
]
