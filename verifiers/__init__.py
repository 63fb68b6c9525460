"""verifiers-sdk: write, run and train on verifiable LLM environments.

The public API is re-exported here lazily: ``import verifiers`` costs only what you use (no
``datasets``, ``rich`` or ``torch`` until something needs them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verifiers._exports import lazy_exports

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
    "integer_benchmark": "verifiers.envs.math_benchmark",
    "integer_benchmark_loader": "verifiers.envs.math_benchmark",
    # rubrics
    "Rubric": "verifiers.rubrics.rubric",
    "RubricGroup": "verifiers.rubrics.rubric",
    "Score": "verifiers.rubrics.rubric",
    "group_reward": "verifiers.rubrics.rubric",
    "compute_advantages": "verifiers.rubrics.rubric",
    "MathRubric": "verifiers.rubrics.math_rubric",
    "MultipleChoiceRubric": "verifiers.rubrics.choice_rubric",
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
    "EvalConfig": "verifiers.eval.config",
    "RunProgress": "verifiers.eval.engine",
    "pass_at_k": "verifiers.eval.metrics",
    # types
    "State": "verifiers.types",
    "RolloutResult": "verifiers.types",
    "RunMetadata": "verifiers.types",
    "ModelResponse": "verifiers.types",
    "Messages": "verifiers.types",
    "ChatMessage": "verifiers.types",
    "TrajectoryStep": "verifiers.types",
    "TokenSample": "verifiers.types",
    # token trajectories
    "token_samples": "verifiers.trajectory",
}
_SUBMODULES = ("errors", "types", "envs", "rubrics", "parsers", "clients", "data", "eval", "sandbox", "hub")

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, _SUBMODULES)


if TYPE_CHECKING:  # the same names, for type checkers and IDEs; no runtime cost
    from verifiers import (
        clients as clients,
        data as data,
        envs as envs,
        errors as errors,
        eval as eval,
        hub as hub,
        parsers as parsers,
        rubrics as rubrics,
        sandbox as sandbox,
        types as types,
    )
    from verifiers.clients.client import Client as Client, Endpoint as Endpoint
    from verifiers.envs.env_group import EnvGroup as EnvGroup
    from verifiers.envs.environment import Environment as Environment
    from verifiers.envs.loading import (
        installed_environments as installed_environments,
        load_environment as load_environment,
    )
    from verifiers.envs.math_benchmark import (
        integer_benchmark as integer_benchmark,
        integer_benchmark_loader as integer_benchmark_loader,
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
    from verifiers.eval.config import EvalConfig as EvalConfig
    from verifiers.eval.engine import RunProgress as RunProgress
    from verifiers.eval.metrics import pass_at_k as pass_at_k
    from verifiers.eval.run import EvalRun as EvalRun
    from verifiers.parsers.boxed import extract_boxed_answer as extract_boxed_answer
    from verifiers.parsers.parser import Parser as Parser
    from verifiers.parsers.think import MaybeThinkParser as MaybeThinkParser, ThinkParser as ThinkParser
    from verifiers.parsers.xml import XMLParser as XMLParser
    from verifiers.rubrics.choice_rubric import MultipleChoiceRubric as MultipleChoiceRubric
    from verifiers.rubrics.hybrid_math_rubric import HybridMathRubric as HybridMathRubric
    from verifiers.rubrics.judge_rubric import JudgeRubric as JudgeRubric
    from verifiers.rubrics.math_pool import MathVerifyPool as MathVerifyPool
    from verifiers.rubrics.math_rubric import MathRubric as MathRubric
    from verifiers.rubrics.rubric import (
        Rubric as Rubric,
        RubricGroup as RubricGroup,
        Score as Score,
        compute_advantages as compute_advantages,
        group_reward as group_reward,
    )
    from verifiers.trajectory import token_samples as token_samples
    from verifiers.types import (
        ChatMessage as ChatMessage,
        Messages as Messages,
        ModelResponse as ModelResponse,
        RolloutResult as RolloutResult,
        RunMetadata as RunMetadata,
        State as State,
        TokenSample as TokenSample,
        TrajectoryStep as TrajectoryStep,
    )
