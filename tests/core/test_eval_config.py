"""EvalConfig: one precedence rule (given > resumed run > package > built-in), sources recorded, suite
files, the run-directory policy, and the one sampling-argument merge."""

from __future__ import annotations

from pathlib import Path

import pytest

from verifiers.clients.sampling import cap_max_tokens, merge_sampling_args, request_fields
from verifiers.eval.config import ConfigError, EvalConfig, load_suite, resolve_eval_config
from verifiers.eval.runs import ResumeMismatchError
from verifiers.types import RunCounts, RunMetadata

PACKAGE = {
    "num_examples": 20,
    "rollouts_per_example": 4,
    "sampling_args": {"temperature": 0.6, "max_tokens": 64},
}


def saved_run(**over: object) -> RunMetadata:
    base: dict[str, object] = {
        "env_id": "math-env",
        "env_version": "0.1.0",
        "env_content_hash": "h",
        "sdk_version": "0.1.0",
        "model": "m",
        "base_url": "http://x/v1",
        "num_examples": 7,
        "rollouts_per_example": 3,
        "sampling_args": {"temperature": 0.1, "max_tokens": 64},
        "seed": 5,
        "shuffle": True,
        "env_args": {"k": 1},
        "started_at": "2026-01-01T00:00:00Z",
        "status": "cancelled",
        "counts": RunCounts(planned=21, completed=4),
    }
    base.update(over)
    return RunMetadata.model_validate(base)


def test_built_in_defaults_are_the_librarys_every_example_once() -> None:
    c = EvalConfig.resolve("e")
    assert (c.num_examples, c.rollouts_per_example, c.max_concurrent, c.sampling_args) == (-1, 1, 32, {})
    assert c.sources["num_examples"] == "default"


def test_given_beats_package_key_by_key_for_sampling_args() -> None:
    c = EvalConfig.resolve(
        "e",
        ("flag", {"rollouts_per_example": 2, "sampling_args": {"temperature": 0.0}}),
        package_defaults=PACKAGE,
    )
    assert (c.num_examples, c.rollouts_per_example) == (20, 2)
    assert c.sampling_args == {"temperature": 0.0, "max_tokens": 64}
    assert c.sources["num_examples"] == "package"
    assert c.sources["rollouts_per_example"] == "flag"
    assert c.sources["sampling_args.temperature"] == "flag"
    assert c.sources["sampling_args.max_tokens"] == "package"


def test_resumed_run_beats_package_and_loses_to_given() -> None:
    c = EvalConfig.resolve("math-env", ("flag", {"seed": 9}), saved=saved_run(), package_defaults=PACKAGE)
    assert (c.num_examples, c.rollouts_per_example, c.seed, c.shuffle, c.env_args) == (
        7,
        3,
        9,
        True,
        {"k": 1},
    )
    assert c.sampling_args == {"temperature": 0.1, "max_tokens": 64}
    assert c.sources["num_examples"] == "resumed run" and c.sources["seed"] == "flag"


def test_later_explicit_layers_win() -> None:
    c = EvalConfig.resolve(
        "e", ("config file", {"num_examples": 3, "seed": 1}), ("flag", {"num_examples": 5})
    )
    assert (c.num_examples, c.seed) == (5, 1)
    assert (c.sources["num_examples"], c.sources["seed"]) == ("flag", "config file")


def test_bad_settings_say_which_and_where() -> None:
    with pytest.raises(ConfigError, match=r"unknown setting\(s\) num_exampels"):
        EvalConfig.resolve("e", ("argument", {"num_exampels": 3}))
    with pytest.raises(ConfigError, match=r"rollouts_per_example \(package\) = 0"):
        EvalConfig.resolve("e", package_defaults={"rollouts_per_example": 0})
    with pytest.raises(ConfigError, match="contradict"):
        EvalConfig.resolve("e", ("flag", {"save_results": False, "output_dir": "x"}))
    with pytest.raises(ConfigError, match="extra_body must be a mapping"):
        EvalConfig.resolve("e", ("flag", {"sampling_args": {"extra_body": 3}}))


def test_unknown_package_keys_are_noted_not_applied() -> None:
    c = EvalConfig.resolve("e", package_defaults={"num_examples": 2, "judge_model": "x"})
    assert c.num_examples == 2
    assert any("judge_model" in n for n in c.notes)


def test_local_model_caps_max_tokens_to_its_context_and_says_so() -> None:
    c = EvalConfig.resolve("e", ("flag", {"model": "local/smollm2"}), package_defaults=PACKAGE)
    assert c.max_tokens_limit == 1024  # half of SmolLM2's 2048-token context
    assert c.sources["max_tokens_limit"] == "local/smollm2 context"
    assert not c.notes  # 64 fits
    c = EvalConfig.resolve("e", ("flag", {"model": "local/smollm2", "sampling_args": {"max_tokens": 4096}}))
    assert any("max_tokens 4096 is capped to 1024" in n for n in c.notes)
    assert EvalConfig.resolve("e", ("flag", {"model": "gpt-x"})).max_tokens_limit is None


def test_explain_lists_every_setting_with_its_source() -> None:
    c = EvalConfig.resolve("e", ("flag", {"num_examples": 3}), package_defaults=PACKAGE)
    rows = {name: (value, source) for name, value, source in c.explain()}
    assert rows["num_examples"] == (3, "flag")
    assert rows["sampling_args.max_tokens"] == (64, "package")
    assert "sources" not in rows and "notes" not in rows


def test_run_directory_policy(tmp_path: Path) -> None:
    c = resolve_eval_config("My_Env", ("argument", {"model": "org/m"}), runs_root=tmp_path)
    assert c.env_id == "my-env"
    assert c.output_dir is not None and c.output_dir.parent == tmp_path / "my-env--org--m"
    assert (
        resolve_eval_config("e", ("argument", {"save_results": False}), runs_root=tmp_path).output_dir is None
    )


def test_resume_finds_the_newest_incomplete_matching_run(tmp_path: Path) -> None:
    from verifiers.eval.results import RunDirectory

    root = tmp_path / "math-env--m"
    for name, meta in {
        "a": saved_run(started_at="2026-01-01T00:00:00Z"),
        "b": saved_run(started_at="2026-01-02T00:00:00Z"),
        "c": saved_run(
            started_at="2026-01-03T00:00:00Z", status="completed", counts=RunCounts(planned=2, completed=2)
        ),
        "d": saved_run(started_at="2026-01-04T00:00:00Z", rollouts_per_example=9),
    }.items():
        (root / name).mkdir(parents=True)
        RunDirectory(root / name).write_metadata(meta)
    c = resolve_eval_config(
        "math-env", ("flag", {"model": "m", "resume": True, "rollouts_per_example": 3}), runs_root=tmp_path
    )
    assert c.output_dir == root / "b" and c.resume is True
    assert c.sources["output_dir"] == "resumed run" and c.sources["num_examples"] == "resumed run"
    # Nothing to resume: a new run, and a note saying so.
    c = resolve_eval_config("math-env", ("flag", {"model": "other", "resume": True}), runs_root=tmp_path)
    assert c.output_dir is not None and not c.output_dir.exists()
    assert any("no incomplete run" in n for n in c.notes)
    with pytest.raises(ConfigError, match="nothing to resume"):
        resolve_eval_config("math-env", ("flag", {"resume": tmp_path / "nope"}), runs_root=tmp_path)
    with pytest.raises(ResumeMismatchError, match="it is a run of math-env with model m"):
        resolve_eval_config("math-env", ("flag", {"model": "x", "resume": root / "a"}), runs_root=tmp_path)


def test_suite_file(tmp_path: Path) -> None:
    suite = tmp_path / "suite.toml"
    suite.write_text(
        '[[eval]]\nenv_id = "math-env"\nnum_examples = 2\nsampling_args = { temperature = 0.0 }\n'
        '[[eval]]\nenv_id = "logic-env"\nmodel = "m"\n[eval.env_args]\ntasks = ["sudoku"]\n'
    )
    entries = load_suite(suite)
    assert [e.env_id for e in entries] == ["math-env", "logic-env"]
    assert entries[1].settings == {"model": "m", "env_args": {"tasks": ["sudoku"]}}
    c = EvalConfig.resolve(entries[0].env_id, ("config file", entries[0].settings), ("flag", {"model": "z"}))
    assert (c.num_examples, c.model, c.sources["num_examples"]) == (2, "z", "config file")
    for text, message in [
        ("", "one or more \\[\\[eval\\]\\] tables"),
        ("[[eval]]\nnum_examples = 1\n", "needs env_id"),
        ('[[eval]]\nenv_id = "e"\nbogus = 1\n', "#1: unknown setting\\(s\\) bogus"),
        ("[[eval]\n", "not valid TOML"),
    ]:
        suite.write_text(text)
        with pytest.raises(ConfigError, match=message):
            load_suite(suite)
    with pytest.raises(ConfigError, match="does not exist"):
        load_suite(tmp_path / "missing.toml")


def test_merge_is_key_by_key_deep_for_extra_body_and_idempotent() -> None:
    env = {"max_tokens": 64, "extra_body": {"top_k": 20, "min_p": 0.1}}
    run = {"temperature": 0.5, "extra_body": {"top_k": 5}}
    merged = merge_sampling_args(env, None, run)
    assert merged == {"max_tokens": 64, "temperature": 0.5, "extra_body": {"top_k": 5, "min_p": 0.1}}
    assert merge_sampling_args(env, merged) == merged
    assert request_fields(merged) == {"max_tokens": 64, "temperature": 0.5, "top_k": 5, "min_p": 0.1}
    assert cap_max_tokens(merged, 32)["max_tokens"] == 32
    assert cap_max_tokens({}, 32) == {"max_tokens": 32}
    assert cap_max_tokens(merged, None) is merged


async def test_env_group_records_what_each_family_sent(scripted, tmp_path: Path) -> None:
    import verifiers as vf

    def env(tag: str, **sampling: object) -> vf.Environment:
        data = [{"question": f"{tag} {i}", "answer": "ok"} for i in range(2)]
        return vf.SingleTurnEnv(
            dataset=data, sampling_args=sampling, rubric=vf.Rubric([lambda completion: 1.0])
        )

    group = vf.EnvGroup(
        {"a": env("a", max_tokens=11, extra_body={"top_k": 3}), "b": env("b", max_tokens=22)},
        sampling_args={"temperature": 0.3},
    )
    run = await group.a_evaluate(
        scripted.url, "m", sampling_args={"extra_body": {"min_p": 0.5}}, output_dir=tmp_path / "run"
    )
    sent = {body["messages"][-1]["content"].split()[0]: body for body in scripted.requests}
    by_env = run.metadata.sampling_args_by_env
    assert by_env == {
        "a": {"max_tokens": 11, "temperature": 0.3, "extra_body": {"top_k": 3, "min_p": 0.5}},
        "b": {"max_tokens": 22, "temperature": 0.3, "extra_body": {"min_p": 0.5}},
    }
    for name, args in by_env.items():  # extra_body is flattened into the request body, as recorded
        body = sent[name]
        assert {k: body[k] for k in ("max_tokens", "temperature")} == {
            k: args[k] for k in ("max_tokens", "temperature")
        }
        assert all(body[k] == v for k, v in args["extra_body"].items())
        assert "extra_body" not in body
    assert run.metadata.sampling_args == {"temperature": 0.3, "extra_body": {"min_p": 0.5}}


async def test_single_env_records_its_merged_args_and_resume_accepts_them(scripted, tmp_path: Path) -> None:
    import verifiers as vf

    env = vf.SingleTurnEnv(
        dataset=[{"question": "q", "answer": "ok"}],
        sampling_args={"max_tokens": 5},
        rubric=vf.Rubric([lambda: 1.0]),
    )
    run = await env.a_evaluate(
        scripted.url, "m", sampling_args={"temperature": 0.0}, output_dir=tmp_path / "r"
    )
    assert run.metadata.sampling_args == {"max_tokens": 5, "temperature": 0.0}
    assert run.metadata.sampling_args_by_env == {}
    again = await env.a_evaluate(
        scripted.url, "m", sampling_args={"temperature": 0.0}, output_dir=tmp_path / "r", resume=True
    )
    assert again.metadata.counts.completed == 1


async def test_evaluate_and_generate_take_an_async_openai_client(scripted, tmp_path: Path) -> None:
    import openai

    import verifiers as vf

    env = vf.SingleTurnEnv(dataset=[{"question": "q", "answer": "ok"}], rubric=vf.Rubric([lambda: 1.0]))
    sdk = openai.AsyncOpenAI(base_url=scripted.url, api_key="sk-test", default_headers={"X-Probe": "1"})
    run = await env.a_evaluate(sdk, "m", output_dir=tmp_path / "r")
    assert run.metadata.base_url == scripted.url and run.metadata.counts.scored == 1
    states = await env.a_generate(env.select_rows(), sdk, "m")
    assert states[0]["reward"] == 1.0
    await sdk.close()  # still the caller's: evaluate did not close it
