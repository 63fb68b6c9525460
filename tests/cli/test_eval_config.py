"""vf-eval and the library resolve settings the same way: --dry-run, suite files, and one run made both
ways compared field by field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import verifiers as vf
from tests.cli._helpers import RULES, Result, assert_one_line_error, run_cli, run_dirs

#: What differs between two runs of the same settings (clock, run directory).
VOLATILE = {"started_at", "finished_at", "duration_s", "run_id"}


def vf_eval(work: Path, *args: str) -> Result:
    return run_cli("vf-eval", *args, cwd=work)


def test_dry_run_prints_each_value_and_its_source_and_starts_nothing(workdir: Path) -> None:
    res = vf_eval(
        workdir,
        "cli-env",
        "-m",
        "m",
        "-b",
        "http://127.0.0.1:9/v1",
        "-r",
        "3",
        "-T",
        "0.9",
        "--dry-run",
        "--json",
    )
    assert res.code == 0, res.stderr
    out = json.loads(res.stdout)
    cfg, sources = out["config"], out["sources"]
    assert (cfg["num_examples"], cfg["rollouts_per_example"]) == (4, 3)
    assert cfg["sampling_args"] == {"temperature": 0.9, "max_tokens": 7}
    assert sources["num_examples"] == "package" and sources["rollouts_per_example"] == "flag"
    assert sources["sampling_args.temperature"] == "flag" and sources["sampling_args.max_tokens"] == "package"
    assert sources["max_concurrent"] == "default"
    assert run_dirs(workdir) == []  # nothing was run or written
    table = vf_eval(workdir, "cli-env", "-b", "http://127.0.0.1:9/v1", "--dry-run")
    assert table.code == 0, table.stderr
    assert "dry run" in table.stdout and "package" in table.stdout


def test_same_settings_make_the_same_run_from_the_cli_and_the_library(
    workdir: Path, start_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    srv = start_server(RULES)
    flags = ["-m", "m", "-b", srv.url, "-n", "3", "-r", "2", "-T", "0.5", "--seed", "4", "--shuffle"]
    res = vf_eval(workdir, "cli-env", *flags, "-o", str(workdir / "cli-run"), "-a", '{"size": 5}')
    assert res.code == 0, res.stderr
    monkeypatch.chdir(workdir)  # the library finds ./environments/cli_env as the CLI did
    env = vf.load_environment("cli-env", size=5)
    run = env.evaluate(
        srv.url,
        "m",
        num_examples=3,
        rollouts_per_example=2,
        sampling_args={"temperature": 0.5},
        seed=4,
        shuffle=True,
        output_dir=workdir / "lib-run",
    )
    cli_meta = json.loads((workdir / "cli-run" / "metadata.json").read_text())
    lib_meta = run.metadata.model_dump(mode="json")
    assert {k: v for k, v in cli_meta.items() if k not in VOLATILE} == {
        k: v for k, v in lib_meta.items() if k not in VOLATILE
    }
    assert cli_meta["sampling_args"] == {
        "temperature": 0.5,
        "max_tokens": 7,
    }  # the package's, under the flag's


def test_a_suite_file_runs_every_eval_in_order(workdir: Path, start_server) -> None:
    srv = start_server(RULES)
    suite = workdir / "suite.toml"
    suite.write_text(
        f'[[eval]]\nenv_id = "cli-env"\nmodel = "one"\nbase_url = "{srv.url}"\nnum_examples = 1\n'
        f'[[eval]]\nenv_id = "cli-env"\nmodel = "two"\nbase_url = "{srv.url}"\nrollouts_per_example = 1\n'
        "[eval.env_args]\nsize = 3\n"
    )
    res = vf_eval(workdir, "@", str(suite), "-T", "0.0")
    assert res.code == 0, res.stderr
    metas = {p.parent.name: json.loads((p / "metadata.json").read_text()) for p in run_dirs(workdir)}
    one, two = metas["cli-env--one"], metas["cli-env--two"]
    assert (one["num_examples"], one["rollouts_per_example"]) == (1, 2)  # the package's r
    assert (two["num_examples"], two["rollouts_per_example"], two["env_args"]) == (3, 1, {"size": 3})
    assert one["sampling_args"]["temperature"] == two["sampling_args"]["temperature"] == 0.0  # the flag's
    dry = vf_eval(workdir, f"@{suite}", "--dry-run")
    assert dry.code == 0 and dry.stdout.count("dry run") == 3  # each entry, then the protocol
    assert "Protocol (dry run: nothing was started)" in dry.stdout
    suite.write_text('[[eval]]\nenv_id = "cli-env"\nnum_exampels = 1\n')
    assert_one_line_error(vf_eval(workdir, "@", str(suite)), 2, "[[eval]] #1", "num_exampels")


def test_local_model_dry_run_says_max_tokens_is_capped(workdir: Path, smollm: None) -> None:
    res = vf_eval(workdir, "cli-env", "-m", "local/smollm2", "-t", "4096", "--dry-run")
    assert res.code == 0, res.stderr
    assert "max_tokens 4096 is capped to 1024" in res.stdout


def test_client_backend_and_responses_api_flags(workdir: Path, start_server) -> None:
    srv = start_server(RULES)
    res = vf_eval(
        workdir,
        "cli-env",
        "-m",
        "m",
        "-b",
        srv.url,
        "-n",
        "2",
        "-r",
        "1",
        "--client",
        "openai",
        "--api",
        "responses",
        "--json",
    )
    assert res.code == 0, res.stderr
    meta = json.loads(res.stdout)["metadata"]
    assert meta["counts"]["scored"] == 2 and meta["avg_reward"] == 1.0  # q0 and q1 answered right
    bad = vf_eval(workdir, "cli-env", "-b", srv.url, "--client", "requests")
    assert_one_line_error(bad, 2, "--client", "requests", "aiohttp", "openai")
