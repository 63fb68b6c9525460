"""livecodebench: LiveCodeBench's code-generation benchmark (release v6 by default), scored in sandboxes.

``load_environment()`` gives the 454 problems of release_v6 dated 2024-08-01 – 2025-05-01 (the window
INTELLECT-3 and the v6 leaderboard report), with LiveCodeBench's prompt, extraction and grading rules;
the solutions run in ``verifiers.sandbox`` through code-env's runner. See README.md.
"""

from __future__ import annotations

from code_env import ScoringLimits

from livecodebench.cases import InvalidTestsError, TestCase, decode_private, decode_public, unpickle_data
from livecodebench.dataset import (
    DATASET,
    DEFAULT_END,
    DEFAULT_RELEASE,
    DEFAULT_START,
    REVISION,
    Problem,
    ProblemSource,
    Window,
    release_files,
    release_rows,
)
from livecodebench.env import LiveCodeBenchEnv
from livecodebench.grading import harness_header, problem_tests, stdout_matches, value_matches
from livecodebench.parsing import extract_code
from livecodebench.prompts import SYSTEM_PROMPT, user_prompt

__all__ = [
    "DATASET",
    "REVISION",
    "SYSTEM_PROMPT",
    "InvalidTestsError",
    "LiveCodeBenchEnv",
    "Problem",
    "ProblemSource",
    "TestCase",
    "Window",
    "decode_private",
    "decode_public",
    "extract_code",
    "harness_header",
    "load_environment",
    "problem_tests",
    "release_files",
    "release_rows",
    "stdout_matches",
    "unpickle_data",
    "user_prompt",
    "value_matches",
]


def load_environment(
    source: str | None = None,
    *,
    release: str = DEFAULT_RELEASE,
    revision: str = REVISION,
    start_date: str | None = DEFAULT_START,
    end_date: str | None = DEFAULT_END,
    timeout_per_test: float = 6.0,
    memory_mb: int = 2048,
    early_exit: bool = True,
    backend: str | None = None,
    pool_size: int = 8,
    sandbox_retries: int = 2,
    system_prompt: str | None = SYSTEM_PROMPT,
) -> LiveCodeBenchEnv:
    """The LiveCodeBench environment.

    Args:
        source: ``None`` for ``livecodebench/code_generation_lite`` (via ``datasets``, at ``revision``),
            ``"sample"`` for three bundled problems written here (offline checks), or the path of a local
            ``.jsonl``, ``.json`` or ``.parquet`` file in that dataset's schema.
        release: Which of the dataset's releases (``release_v1`` … ``release_v6``, ``release_latest``,
            ``vN``, ``vA_vB``); the hub source only.
        revision: The dataset's commit (the default is pinned; row counts are checked only there).
        start_date: First contest date kept (``YYYY-MM-DD``, inclusive), or ``None``.
        end_date: Last contest date kept (``YYYY-MM-DD``, inclusive), or ``None``.
        timeout_per_test: Wall-clock seconds each test may run (LiveCodeBench's runner: 6).
        memory_mb: Address-space limit of each test process.
        early_exit: Stop at the first test that errors or times out, as LiveCodeBench's runner does (the
            reward is the same; ``tests_run`` counts the tests that ran).
        backend: Sandbox backend (``runsc``, ``bwrap``); default: the best available.
        pool_size: Sandboxes kept warm.
        sandbox_retries: Fresh sandboxes tried after a sandbox failure before an infra error is recorded.
        system_prompt: The system message (LiveCodeBench's; ``None`` for none).
    """
    problems = ProblemSource(
        source, release=release, revision=revision, window=Window.parse(start_date, end_date)
    )
    return LiveCodeBenchEnv(
        problems,
        limits=ScoringLimits(timeout=timeout_per_test, memory_mb=memory_mb),
        early_exit=early_exit,
        backend=backend,
        pool_size=pool_size,
        sandbox_retries=sandbox_retries,
        system_prompt=system_prompt,
    )
