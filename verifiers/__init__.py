"""verifiers-sdk: write, run and train on verifiable LLM environments.

The public API is re-exported here lazily: ``import verifiers`` costs only what you use (no
``datasets``, ``rich`` or ``torch`` until something needs them).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # envs
    "Environment": "verifiers.envs.environment",
    "SingleTurnEnv": "verifiers.envs.singleturn",
    "MultiTurnEnv": "verifiers.envs.multiturn",
    "stop": "verifiers.envs.multiturn",
    "EnvGroup": "verifiers.envs.env_group",
    "ToolEnv": "verifiers.envs.tool_env",
    "StatefulToolEnv": "verifiers.envs.stateful_tool_env",
    "SandboxEnv": "verifiers.envs.sandbox_env",
    "Tool": "verifiers.envs.tool_schema",
    "ToolCallError": "verifiers.envs.tool_schema",
    "ToolArgumentError": "verifiers.envs.tool_schema",
    "UnknownToolError": "verifiers.envs.tool_schema",
    "load_environment": "verifiers.envs.loading",
    "installed_environments": "verifiers.envs.loading",
    # rubrics
    "Rubric": "verifiers.rubrics.rubric",
    "RubricGroup": "verifiers.rubrics.rubric",
    "Score": "verifiers.rubrics.rubric",
    "group_reward": "verifiers.rubrics.rubric",
    "compute_advantages": "verifiers.rubrics.rubric",
    "MathRubric": "verifiers.rubrics.math_rubric",
    "JudgeRubric": "verifiers.rubrics.judge_rubric",
    "HybridMathRubric": "verifiers.rubrics.hybrid_math_rubric",
    "MathVerifyPool": "verifiers.rubrics.math_pool",
    # parsers
    "Parser": "verifiers.parsers.parser",
    "XMLParser": "verifiers.parsers.xml",
    "ThinkParser": "verifiers.parsers.think",
    "MaybeThinkParser": "verifiers.parsers.think",
    "extract_boxed_answer": "verifiers.parsers.boxed",
    # clients
    "Client": "verifiers.clients.client",
    "Endpoint": "verifiers.clients.client",
    # eval
    "EvalRun": "verifiers.eval.run",
    "RunProgress": "verifiers.eval.engine",
    "pass_at_k": "verifiers.eval.metrics",
    # types
    "State": "verifiers.types",
    "RolloutResult": "verifiers.types",
    "RunMetadata": "verifiers.types",
    "ModelResponse": "verifiers.types",
    "Messages": "verifiers.types",
    "ChatMessage": "verifiers.types",
}
_SUBMODULES = {
    "errors",
    "types",
    "envs",
    "rubrics",
    "parsers",
    "clients",
    "eval",
    "sandbox",
    "hub",
    "data",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"verifiers.{name}")
    raise AttributeError(f"module 'verifiers' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS, *_SUBMODULES])


if TYPE_CHECKING:  # for type checkers and IDEs; no runtime cost
    from verifiers import data as data
    from verifiers.clients.client import Client, Endpoint
    from verifiers.envs.env_group import EnvGroup
    from verifiers.envs.environment import Environment
    from verifiers.envs.loading import installed_environments, load_environment
    from verifiers.envs.multiturn import MultiTurnEnv, stop
    from verifiers.envs.sandbox_env import SandboxEnv
    from verifiers.envs.singleturn import SingleTurnEnv
    from verifiers.envs.stateful_tool_env import StatefulToolEnv
    from verifiers.envs.tool_env import ToolEnv
    from verifiers.envs.tool_schema import Tool, ToolArgumentError, ToolCallError, UnknownToolError
    from verifiers.eval.engine import RunProgress
    from verifiers.eval.metrics import pass_at_k
    from verifiers.eval.run import EvalRun
    from verifiers.parsers.boxed import extract_boxed_answer
    from verifiers.parsers.parser import Parser
    from verifiers.parsers.think import MaybeThinkParser, ThinkParser
    from verifiers.parsers.xml import XMLParser
    from verifiers.rubrics.hybrid_math_rubric import HybridMathRubric
    from verifiers.rubrics.judge_rubric import JudgeRubric
    from verifiers.rubrics.math_pool import MathVerifyPool
    from verifiers.rubrics.math_rubric import MathRubric
    from verifiers.rubrics.rubric import Rubric, RubricGroup, Score, compute_advantages, group_reward
    from verifiers.types import ChatMessage, Messages, ModelResponse, RolloutResult, RunMetadata, State
