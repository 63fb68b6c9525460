"""Issue 33 item 6: a run plans at most ``max_rollouts`` rollouts (examples × rollouts per example;
``DEFAULT_MAX_ROLLOUTS``, ``$VF_MAX_ROLLOUTS``, ``max_rollouts=`` / ``--max-rollouts``), refused with one
error that names the bound and how to raise it, before any request, file or plan is made."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

import verifiers as vf
from tests.core.test_engine import make_env
from tests.scripted_server import ScriptedServer
from verifiers.eval.config import DEFAULT_MAX_ROLLOUTS, ConfigError, EvalConfig, load_suite
from verifiers.eval.run import run_eval

MiB = 1024 * 1024


def resolve(**settings: object) -> EvalConfig:
    return EvalConfig.resolve("t", ("argument", settings))


@pytest.mark.parametrize(
    "settings",
    [
        {"rollouts_per_example": 10**8},  # the report: 10^8 in a suite grew to 8.4 GB in 46 s
        {"rollouts_per_example": DEFAULT_MAX_ROLLOUTS + 1},
        {"num_examples": 1000, "rollouts_per_example": 101},
        {"num_examples": 10**9, "rollouts_per_example": 1},
    ],
)
def test_oversized_runs_are_refused_naming_the_bound(settings: dict[str, object]) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(ConfigError) as info:
            resolve(**settings)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(info.value)
    assert f"{DEFAULT_MAX_ROLLOUTS} rollouts one run may plan" in message
    assert "--max-rollouts" in message and "VF_MAX_ROLLOUTS" in message and "max_rollouts=" in message
    assert peak < 4 * MiB  # refused from the numbers, nothing allocated per rollout


def test_the_bound_is_raised_by_the_setting_or_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve(num_examples=1000, rollouts_per_example=100).max_rollouts == DEFAULT_MAX_ROLLOUTS
    raised = resolve(num_examples=1000, rollouts_per_example=200, max_rollouts=200_000)
    assert raised.max_rollouts == 200_000 and raised.sources["max_rollouts"] == "argument"
    monkeypatch.setenv("VF_MAX_ROLLOUTS", "300000")
    from_env = resolve(num_examples=1000, rollouts_per_example=300)
    assert from_env.max_rollouts == 300_000 and from_env.sources["max_rollouts"] == "VF_MAX_ROLLOUTS"
    monkeypatch.setenv("VF_MAX_ROLLOUTS", "10")
    with pytest.raises(ConfigError, match="than the 10 rollouts"):
        resolve(num_examples=5, rollouts_per_example=3)
    monkeypatch.setenv("VF_MAX_ROLLOUTS", "lots")
    with pytest.raises(ConfigError, match="VF_MAX_ROLLOUTS='lots' must be a positive integer"):
        resolve()


def test_a_suite_entry_is_bounded_too(tmp_path: Path) -> None:
    suite = tmp_path / "suite.toml"
    suite.write_text('[[eval]]\nenv_id = "t"\nrollouts_per_example = 100000000\n')
    (entry,) = load_suite(suite)
    with pytest.raises(ConfigError, match="rollouts_per_example = 100000000 is more than"):
        EvalConfig.resolve(entry.env_id, ("config file", entry.settings))


async def test_every_row_counts_once_the_rows_are_known(tmp_path: Path, scripted: ScriptedServer) -> None:
    """``num_examples = -1`` (all rows): the bound is checked on the rows, before the run starts."""
    out = tmp_path / "run"
    with pytest.raises(ConfigError, match="12 examples × 5 rollouts = 60 is more than the 50"):
        await make_env(12).a_evaluate(
            scripted.url, "m", rollouts_per_example=5, max_rollouts=50, output_dir=out
        )
    assert not scripted.requests and not out.exists()
    with pytest.raises(ConfigError, match="more than the 50"):
        await run_eval(make_env(12), vf.Client(scripted.url), "m", rollouts_per_example=5, max_rollouts=50)
    run = await make_env(12).a_evaluate(
        scripted.url, "m", rollouts_per_example=4, max_rollouts=50, output_dir=out
    )
    assert run.metadata.counts.completed == 48
