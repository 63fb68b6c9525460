"""``verifiers.jobs`` as a Python user calls it, with no CLI in between: a suite planned, run with the
user's own ``run_one`` (one failing entry recorded while the others run), its ``--push`` pre-flight refusing
before anything ran, and a saved run re-scored with its own environment (another's refused)."""

from __future__ import annotations

from pathlib import Path

import pytest

import verifiers as vf
from tests.cli._helpers import RULES
from verifiers.eval.config import ConfigError
from verifiers.eval.rescore import RescoreError
from verifiers.hub.client import HubClient
from verifiers.jobs.rescore import rescore_saved_run
from verifiers.jobs.suite import SuiteItem, SuitePushError, check_suite_push, plan_suite, run_suite


def write_suite(work: Path, url: str) -> Path:
    suite = work / "suite.toml"
    suite.write_text(
        f'[[eval]]\nenv_id = "cli-env"\nmodel = "one"\nbase_url = "{url}"\nnum_examples = 2\n'
        f'[[eval]]\nenv_id = "cli-env"\nmodel = "two"\nbase_url = "{url}"\nrollouts_per_example = 1\n'
        "[eval.env_args]\nsize = 3\n"
    )
    return suite


def test_a_suite_planned_and_run_from_python(
    workdir: Path, start_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    srv = start_server(RULES)
    monkeypatch.chdir(workdir)  # ./environments/cli_env, as vf-eval finds it
    items = plan_suite(write_suite(workdir, srv.url), {"sampling_args": {"temperature": 0.0}})
    assert [(i.index, i.config.model, i.config.num_examples) for i in items] == [(1, "one", 2), (2, "two", 4)]
    assert items[1].config.env_args == {"size": 3}
    assert all(i.config.sampling_args["temperature"] == 0.0 for i in items)  # the suite-wide setting

    def run_one(item: SuiteItem, local_models):  # type: ignore[no-untyped-def]
        if item.config.model == "two":
            raise RuntimeError("the second entry's endpoint is down")
        env = vf.load_environment(item.config.env_id, **item.config.env_args)
        return env.evaluate(
            item.config.base_url,
            item.config.model,
            num_examples=item.config.num_examples,
            rollouts_per_example=item.config.rollouts_per_example,
            output_dir=item.config.output_dir,
        )

    first, second = run_suite(items, run_one)
    assert first.failure is None and first.metadata is not None and first.path is not None
    assert first.metadata.status == "completed" and (first.path / "results.jsonl").is_file()
    assert second.metadata is None and second.failure == "the second entry's endpoint is down"
    assert not first.pushed and not second.pushed


def test_a_suite_entry_that_cannot_resolve_is_named(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(workdir)
    suite = workdir / "bad.toml"
    suite.write_text('[[eval]]\nenv_id = "cli-env"\n[[eval]]\nenv_id = "no-such-env"\n')
    with pytest.raises(ConfigError, match=r"\[\[eval\]\] #2.*no-such-env"):
        plan_suite(suite)


def test_push_preflight_names_every_entry_before_anything_runs(
    workdir: Path, start_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    srv = start_server(RULES)
    monkeypatch.chdir(workdir)
    items = plan_suite(write_suite(workdir, srv.url), {"save_results": False})
    with (
        HubClient(url="http://127.0.0.1:9", token="vfh_unused") as client,
        pytest.raises(SuitePushError) as refused,
    ):
        check_suite_push(items, client)
    assert len(refused.value.problems) == 2
    assert "2 of 2 evaluations cannot be pushed, so none was run" in str(refused.value)
    assert "#1" in refused.value.problems[0] and "save_results is off" in refused.value.problems[0]


def test_a_saved_run_rescored_with_its_own_environment(
    workdir: Path, start_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    srv = start_server(RULES)
    monkeypatch.chdir(workdir)
    env = vf.load_environment("cli-env")
    run = env.evaluate(srv.url, "m", num_examples=2, rollouts_per_example=1, output_dir=workdir / "run")
    result = rescore_saved_run(workdir / "run", save=False)
    assert result.rescored == 2 and result.metadata.avg_reward == run.metadata.avg_reward
    with pytest.raises(RescoreError, match="is a run of cli-env, not math-env"):
        rescore_saved_run(workdir / "run", env_id="math-env", save=False)
