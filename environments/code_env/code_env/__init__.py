"""code-env: Python programming problems, scored by running their tests in a sandbox.

``load_environment()`` gives a single-turn environment over the bundled sample of problems;
``score_solution(code, tests, sandbox)`` is the scorer on its own (one sandbox round trip per problem), and
``PooledScorer`` runs it on a warm pool of sandboxes with retries (both used by other environments, such as
livecodebench).
See README.md for the data formats, the comparison rules and the arguments.
"""

from __future__ import annotations

from code_env.env import CodeEnv
from code_env.parsing import CodeParser, extract_code
from code_env.pooled import PooledScorer
from code_env.scoring import (
    CaseResult,
    OutputComparator,
    ProblemTests,
    ScoreReport,
    ScoringLimits,
    default_comparator,
    score_solution,
    stdout_matches,
    values_match,
)
from code_env.sources import INSTRUCTION, SAMPLE, check_source, dataset_builder, sample_records

__all__ = [
    "INSTRUCTION",
    "CaseResult",
    "CodeEnv",
    "CodeParser",
    "OutputComparator",
    "PooledScorer",
    "ProblemTests",
    "ScoreReport",
    "ScoringLimits",
    "default_comparator",
    "extract_code",
    "load_environment",
    "sample_records",
    "score_solution",
    "stdout_matches",
    "values_match",
]


def load_environment(
    source: str = SAMPLE,
    *,
    split: str = "train",
    max_tests: int = 15,
    seed: int = 0,
    timeout_per_test: float = 6.0,
    memory_mb: int = 1024,
    backend: str | None = None,
    pool_size: int = 8,
    sandbox_retries: int = 2,
    system_prompt: str | None = None,
) -> CodeEnv:
    """The code environment.

    Args:
        source: ``"sample"`` (the bundled problems), ``"intellect-3"`` or ``"intellect3"``
            (``PrimeIntellect/INTELLECT-3-RL``, subset ``code``, via ``datasets``) or the path of a local
            ``.jsonl``, ``.json`` (a list) or ``.parquet`` file.
        split: Split of the hub dataset.
        max_tests: At most this many tests per problem (a seeded sample when there are more).
        seed: Seed of that sample.
        timeout_per_test: Wall-clock seconds each test may run.
        memory_mb: Address-space limit of each test.
        backend: Sandbox backend (``runsc``, ``bwrap``, ``local``); default: the best secure one.
        pool_size: Sandboxes kept warm.
        sandbox_retries: Fresh sandboxes to try after a sandbox failure before recording an infra error.
        system_prompt: Optional system message before the problem.
    """
    if max_tests < 1:
        raise ValueError("max_tests must be at least 1")
    check_source(source)
    return CodeEnv(
        eval_dataset=dataset_builder(source, max_tests=max_tests, seed=seed, split=split),
        max_tests=max_tests,
        limits=ScoringLimits(timeout=timeout_per_test, memory_mb=memory_mb),
        backend=backend,
        pool_size=pool_size,
        sandbox_retries=sandbox_retries,
        system_prompt=system_prompt,
    )
