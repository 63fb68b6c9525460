"""vf-train validate: a clean render passes; each invariant, broken on purpose, gives its one-line problem."""

from __future__ import annotations

import json
import socket
import threading
import tomllib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
import tomli_w

from verifiers.cli.train import main
from verifiers.training.prime_rl.render import render
from verifiers.training.prime_rl.validate import validate


def _run(
    tmp_path: Path, preset: str = "single-node", sets: list[str] | None = None, envs: list[str] | None = None
) -> Path:
    out = tmp_path / preset
    envs = envs or ["math-env", "code-env:0.3"]
    # Free ports, so that no server another test left on the preset's ports answers the probe.
    ports = [f"vf_train.env.{i}.http_port={_free_port()}" for i in range(len(envs))]
    render(preset, envs, "M", out, [*ports, *(sets or [])])  # type: ignore[arg-type]
    return out


def _rename_env(run: Path, new_id: str, version: str = "") -> None:
    """Make the run's only environment one that exists nowhere (render refuses unknown ids, so a test
    of validate's probe edits a rendered run, as a user editing vf-train.toml would)."""
    spec = tomllib.loads((run / "vf-train.toml").read_text())
    env = spec["vf_train"]["env"][0]
    env["id"], env["version"] = new_id, version
    (run / "vf-train.toml").write_text(tomli_w.dumps(spec))
    rl = tomllib.loads((run / "rl.toml").read_text())
    rl["orchestrator"]["env"][0]["id"] = f"{new_id}-vfbridge"
    rl["orchestrator"]["env"][0]["name"] = new_id
    (run / "rl.toml").write_text(tomli_w.dumps(rl))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _problems(run: Path, check: str, probe: bool = False) -> list[str]:
    report = validate(run, probe_envs=probe)
    return [p.message for p in report.problems if p.check == check]


@pytest.mark.parametrize("preset", ["single-node", "intellect3"])
def test_a_fresh_render_validates_and_records_the_environments(tmp_path: Path, preset: str) -> None:
    run = _run(tmp_path, preset)
    report = validate(run)
    assert report.ok, [str(p) for p in report.problems]
    recorded = json.loads((run / "validation.json").read_text())
    assert recorded["ok"] is True
    envs = {e["id"]: e for e in recorded["environments"]}
    assert set(envs) == {"math-env", "code-env"}
    for e in envs.values():
        assert e["source"] == "import" and e["version"] and len(e["content_hash"]) == 64


def test_unknown_keys_are_refused_even_where_prime_rl_would_drop_them(tmp_path: Path) -> None:
    run = _run(
        tmp_path,
        sets=[
            "trainer.loss.token_mask_low=0.125",  # removed 2026-03-02; a plain BaseModel would drop it
            "trainer.optim.lrr=1e-6",
            "trainer.scheduler.warmup=10",
            "orchestrator.sampling.top_k=5",
            "bogus=1",
        ],
    )
    problems = _problems(run, "keys")
    for key in (
        "trainer.loss.token_mask_low",
        "trainer.optim.lrr",
        "trainer.scheduler.warmup",
        "orchestrator.sampling.top_k",
        "rl.toml: bogus",
    ):
        assert any(key in p for p in problems), (key, problems)
    assert all("\n" not in p for p in problems)


def test_wrong_types_and_bounds_and_discriminators_are_refused(tmp_path: Path) -> None:
    run = _run(
        tmp_path,
        sets=[
            "orchestrator.rollouts_per_example='16'",
            "orchestrator.buffer.easy_fraction=2.0",
            "trainer.optim.type='lion'",
        ],
    )
    problems = _problems(run, "keys")
    assert any("rollouts_per_example" in p and "does not fit" in p for p in problems), problems
    assert any("easy_fraction" in p and "le=1" in p for p in problems), problems
    assert any("trainer.optim" in p and "'lion'" in p for p in problems), problems


def test_batch_must_divide_by_rollouts_per_example(tmp_path: Path) -> None:
    run = _run(tmp_path, sets=["orchestrator.batch_size=250"])
    (msg,) = _problems(run, "batch")
    assert "250" in msg and "16" in msg


def test_prompt_budget_plus_max_tokens_must_fit_seq_len(tmp_path: Path) -> None:
    run = _run(tmp_path, sets=["orchestrator.sampling.max_tokens=7000"])
    (msg,) = _problems(run, "lengths")
    assert "2048" in msg and "7000" in msg and "8192" in msg


def test_orchestrator_seq_len_must_fit_the_trainer_and_the_inference_context(tmp_path: Path) -> None:
    run = _run(tmp_path, sets=["orchestrator.seq_len=16384", "orchestrator.sampling.max_tokens=1024"])
    problems = _problems(run, "lengths")
    assert any("trainer.model.seq_len 8192" in p for p in problems), problems
    assert any("max_model_len 8192" in p for p in problems), problems


def test_gpu_counts_must_fit_the_node(tmp_path: Path) -> None:
    run = _run(tmp_path, sets=["deployment.num_train_gpus=3"])
    assert any("exceed gpus_per_node 8" in p for p in _problems(run, "gpus"))
    run = _run(tmp_path, sets=["inference.parallel.tp=4"])
    assert any("not divisible by inference.parallel.tp 4" in p for p in _problems(run, "gpus"))
    run = _run(tmp_path, "intellect3", sets=["inference.parallel.dp=2"])
    assert any("exceeds gpus_per_node 8" in p for p in _problems(run, "gpus"))


def test_trainer_ranks_must_match_the_orchestrator(tmp_path: Path) -> None:
    run = _run(tmp_path, "intellect3")
    orch = run / "orchestrator.toml"
    import tomllib

    doc = tomllib.loads(orch.read_text())
    doc["num_train_workers"] = 64
    orch.write_text(tomli_w.dumps(doc))
    (msg,) = _problems(run, "ranks")
    assert "64" in msg and "128" in msg


def test_node_counts_must_match_the_urls(tmp_path: Path) -> None:
    run = _run(tmp_path, "intellect3", sets=["deployment.num_infer_nodes=40"])
    problems = _problems(run, "nodes")
    assert any("num_infer_nodes = 40" in p and "44 URLs" in p for p in problems), problems
    assert any("intellect3.sbatch asks for 60 nodes" in p for p in problems), problems


def test_environments_must_be_wired_to_their_servers(tmp_path: Path) -> None:
    run = _run(
        tmp_path,
        sets=["orchestrator.env.1.address='tcp://127.0.0.1:9'", "orchestrator.buffer.env_ratios=[1.0]"],
    )
    problems = _problems(run, "envs")
    assert any("code-env-vfbridge" in p and "tcp://127.0.0.1:9" in p for p in problems), problems
    assert any("env_ratios has 1 entries for 2" in p for p in problems), problems


def test_an_environment_neither_served_nor_importable_is_a_problem(tmp_path: Path) -> None:
    run = _run(tmp_path, envs=["math-env"])
    _rename_env(run, "no-such-env")
    (msg,) = _problems(run, "envs", probe=True)
    assert "no-such-env" in msg and "not importable" in msg


class _Info(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps(
            {"env_id": "no-such-env", "env_version": "9.9.9", "env_content_hash": "ab" * 32, "env_args": {}}
        ).encode()
        self.send_response(200 if self.path == "/info" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def info_server() -> Iterator[int]:
    server = HTTPServer(("127.0.0.1", 0), _Info)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_a_reachable_env_server_is_recorded_with_its_version_and_hash(
    tmp_path: Path, info_server: int
) -> None:
    run = _run(tmp_path, envs=["math-env"], sets=[f"vf_train.env.0.http_port={info_server}"])
    _rename_env(run, "no-such-env", "9.9.8")
    report = validate(run)
    (env,) = report.environments
    assert env["version"] == "9.9.9" and env["content_hash"] == "ab" * 32
    assert env["source"] == f"http://127.0.0.1:{info_server}"
    assert [p.message for p in report.problems] == [
        "no-such-env: vf-train.toml pins 9.9.8 but " + env["source"] + " has 9.9.9"
    ]


def test_env_args_must_match_what_the_server_runs(tmp_path: Path, info_server: int) -> None:
    run = _run(
        tmp_path,
        envs=["math-env"],
        sets=[f"vf_train.env.0.http_port={info_server}", "vf_train.env.0.args={seed=1}"],
    )
    _rename_env(run, "no-such-env")
    (msg,) = _problems(run, "envs", probe=True)
    assert "runs env args {}" in msg and "{'seed': 1}" in msg


def test_custom_loss_kwargs_are_checked(tmp_path: Path) -> None:
    run = _run(tmp_path, sets=["trainer.loss.kwargs.alfa=0.5"])
    (msg,) = _problems(run, "loss")
    assert "alfa" in msg


def test_cli_prints_one_line_per_problem_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run(tmp_path, sets=["orchestrator.batch_size=250", "trainer.loss.token_mask_low=0.1"])
    with pytest.raises(SystemExit) as exc:
        main(["validate", str(run), "--no-probe"])
    assert exc.value.code == 1
    out = capsys.readouterr()
    problems = [line for line in out.out.splitlines() if line.startswith("[") and "] ok: " not in line]
    assert len(problems) == 2 and problems[0].startswith("[keys]") and problems[1].startswith("[batch]")
    assert "2 problem(s)" in out.err


def test_done_when_render_then_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as exc:
        main(["render", "--preset", "single-node", "--env", "math-env", "--model", "M", "--out", str(out)])
    assert exc.value.code == 0
    with pytest.raises(SystemExit) as exc:
        main(["validate", str(out)])
    assert exc.value.code == 0, capsys.readouterr()
    assert "OK for prime-rl v0.5.0" in capsys.readouterr().out


def test_validate_prints_every_invariant_one_line_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's promise: not a bare OK, but each check and what it verified."""
    run = _run(tmp_path, "intellect3")
    with pytest.raises(SystemExit) as exc:
        main(["validate", str(run)])
    assert exc.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    checks = [line.split("]", 1)[0].lstrip("[") for line in lines if line.startswith("[")]
    assert checks == [
        "files",
        "keys",
        "names",
        "models",
        "batch",
        "lengths",
        "gpus",
        "ranks",
        "nodes",
        "loss",
        "envs",
    ]
    for line in lines:
        if line.startswith("["):
            assert "] ok: " in line and len(line.split("] ok: ", 1)[1]) > 10, line
    assert any("4096 = 256 prompts x rollouts_per_example 16" in line for line in lines)
    assert json.loads((run / "validation.json").read_text())["checks"] == [
        line for line in lines if line.startswith("[")
    ]


# --- defect 5: the trainer's tokenizer is the run's model, and validate checks every name ---------------
def test_render_names_the_tokenizer_and_validate_checks_every_model_name(tmp_path: Path) -> None:
    out = tmp_path / "run"
    llama = "meta-llama/Llama-3.1-8B-Instruct"
    render("single-node", ["math-env"], llama, out)
    rl = tomllib.loads((out / "rl.toml").read_text())
    assert rl["trainer"]["tokenizer"]["name"] == llama
    assert validate(out, probe_envs=False).ok
    # what v0.5.0 makes of a run without it: the trainer's tokenizer resolves to its default
    del rl["trainer"]["tokenizer"]
    (out / "rl.toml").write_text(tomli_w.dumps(rl))
    problems = _problems(out, "models")
    assert problems == [
        f"rl.toml resolves trainer.tokenizer.name to 'Qwen/Qwen3-0.6B', not the run's model '{llama}': "
        f"set trainer.tokenizer.name = '{llama}'"
    ]
    rl["trainer"]["tokenizer"] = {"name": llama}
    rl["inference"]["model"]["name"] = "other/model"
    (out / "rl.toml").write_text(tomli_w.dumps(rl))
    problems = _problems(out, "models")
    assert any("inference.model.name to 'other/model'" in p for p in problems), problems
    assert any("orchestrator.model.name to 'other/model'" in p for p in problems), problems


def test_the_split_files_name_the_model_and_tokenizer(tmp_path: Path) -> None:
    out = tmp_path / "run"
    render("intellect3", ["math-env"], "org/M", out)
    trainer = tomllib.loads((out / "trainer.toml").read_text())
    assert trainer["model"]["name"] == trainer["tokenizer"]["name"] == "org/M"
    trainer["tokenizer"]["name"] = "Qwen/Qwen3-0.6B"
    (out / "trainer.toml").write_text(tomli_w.dumps(trainer))
    assert _problems(out, "models") == [
        "trainer.toml: tokenizer.name is 'Qwen/Qwen3-0.6B', not the run's model 'org/M'"
    ]


# --- defect 6: wrong types never crash validate ---------------------------------------------------------
WRONG_TYPES = [
    'orchestrator.batch_size="lots"',
    'orchestrator.rollouts_per_example="many"',
    'seq_len="long"',
    'orchestrator.seq_len="long"',
    'orchestrator.sampling.max_tokens="plenty"',
    'deployment.num_infer_gpus="six"',
    "deployment.num_train_gpus=2.5",
    "deployment.gpus_per_node=true",
    'inference.model.max_model_len="big"',
    "inference.parallel.dp=[6]",
    'inference.parallel.tp="1"',
    'trainer.loss="icepop"',
    "trainer.loss.kwargs=[1, 2]",
    'orchestrator.buffer.env_ratios="1,2"',
    'orchestrator.client.base_url="http://x/v1"',
    "deployment=3",
]


@pytest.mark.parametrize("bad", WRONG_TYPES)
def test_a_wrong_typed_value_is_a_problem_line_never_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: str
) -> None:
    run = _run(tmp_path, sets=[bad])
    report = validate(run, probe_envs=False)
    assert not report.ok
    key = bad.split("=", 1)[0]
    assert any(p.check == "keys" and key in p.message for p in report.problems), report.lines()
    assert not any("could not be checked" in p.message for p in report.problems), report.lines()
    assert all("\n" not in line for line in report.lines())
    recorded = json.loads((run / "validation.json").read_text())
    assert recorded["ok"] is False and recorded["problems"]
    with pytest.raises(SystemExit) as exc:
        main(["validate", str(run), "--no-probe"])
    assert exc.value.code == 1
    out = capsys.readouterr()
    assert "unexpected" not in out.err and "problem(s)" in out.err
    assert "[keys]" in out.out


#: Every setting a check reads, each given values of every other type: no check may trip over one.
READ_KEYS = [
    "seq_len",
    "model",
    "model.name",
    "deployment",
    "deployment.type",
    "deployment.gpus_per_node",
    "deployment.num_train_nodes",
    "deployment.num_infer_nodes",
    "slurm",
    "slurm.job_name",
    "trainer",
    "trainer.model",
    "trainer.model.seq_len",
    "trainer.model.cp",
    "trainer.tokenizer",
    "trainer.loss",
    "trainer.loss.type",
    "trainer.loss.import_path",
    "orchestrator",
    "orchestrator.env",
    "orchestrator.token_batch_size",
    "orchestrator.num_train_workers",
    "orchestrator.client",
    "orchestrator.client.base_url",
    "orchestrator.buffer",
    "orchestrator.sampling",
    "orchestrator.verification",
    "inference",
    "inference.model",
    "inference.parallel",
]


@pytest.mark.parametrize("preset", ["single-node", "intellect3"])
def test_no_check_trips_over_any_wrong_type(tmp_path: Path, preset: str) -> None:
    run = _run(tmp_path, preset)
    clean = tomllib.loads((run / "rl.toml").read_text())
    for key in READ_KEYS:
        for value in ("x", 3, 2.5, True, [1, "a"], {"a": 1}):
            doc = json.loads(json.dumps(clean))
            node = doc
            *head, last = key.split(".")
            for part in head:
                node = node.setdefault(part, {})
            node[last] = value
            (run / "rl.toml").write_text(tomli_w.dumps(doc))
            report = validate(run, probe_envs=False)
            crashed = [p for p in report.problems if "could not be checked" in p.message]
            assert not crashed, (key, value, crashed)
            assert (run / "validation.json").exists()


def test_the_traceback_hint_names_an_option_the_command_has() -> None:
    from verifiers.cli import train
    from verifiers.cli._common import _traceback_hint, make_app

    assert _traceback_hint(train.app, ["validate", "run"]) == "-v"
    assert _traceback_hint(train.app, ["launch", "run", "--dry-run"]) == "-v"
    bare = make_app("no -v here")

    @bare.command()
    def only() -> None:
        pass

    assert _traceback_hint(bare, []) == "VF_TRACEBACK=1"
    for command in ("render", "validate", "launch", "bridge"):
        with pytest.raises(SystemExit) as exc:
            main([command, "--help"])
        assert exc.value.code == 0


# --- defect 7: loss kwargs are checked by the loss's own validation --------------------------------------
@pytest.mark.parametrize(
    ("kwarg", "problem"),
    [
        ("alpha=-1", "alpha must be in (0, 1]"),
        ("alpha=0.0", "alpha must be in (0, 1]"),
        ('alpha="half"', "alpha must be a number"),
        ("alpha=true", "alpha must be a number"),
        ("alpha=1.5", "alpha must be in (0, 1]"),
        ("beta=0.1", "beta must be >= 1 and > alpha"),
        ("beta=inf", "beta must be finite"),
        ("ratio_floor=nan", "ratio_floor must be finite"),
        ("ratio_floor=0.0", "ratio_floor must be in (0, 1)"),
        ("ratio_floor=1.0", "ratio_floor must be in (0, 1)"),
    ],
)
def test_loss_kwargs_the_loss_would_refuse_are_problems(tmp_path: Path, kwarg: str, problem: str) -> None:
    run = _run(tmp_path, sets=[f"trainer.loss.kwargs.{kwarg}"])
    problems = _problems(run, "loss")
    assert len(problems) == 1 and problem in problems[0], problems


def test_the_validation_is_the_loss_packages_own() -> None:
    """validate calls the shipped module's check; the loss itself raises the same at a step."""
    from verifiers.training.prime_rl.validate import _loss_module

    module = _loss_module()
    assert module.check_kwargs(0.5, 5.0, 1e-5) == (0.5, 5.0, 1e-5)
    with pytest.raises(ValueError, match="beta"):
        module.check_kwargs(alpha=0.5, beta=0.1)
    with pytest.raises(TypeError):
        module.check_kwargs(alfa=0.5)


def test_a_bad_vf_train_toml_is_one_line_per_problem_with_values_as_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run(tmp_path)
    spec = tomllib.loads((run / "vf-train.toml").read_text())
    spec["vf_train"]["env"][0]["workers"] = True  # lax pydantic took this as 1
    spec["vf_train"]["env"][1]["http_port"] = "8000"
    spec["vf_train"]["prompt_budget"] = -5
    (run / "vf-train.toml").write_text(tomli_w.dumps(spec))
    problems = _problems(run, "files")
    assert len(problems) == 3, problems  # one problem per line, none joined with ';'
    assert any("env.0.workers = True" in p for p in problems), problems
    assert any("env.1.http_port = '8000'" in p for p in problems), problems
    assert any("prompt_budget = -5" in p for p in problems), problems
    with pytest.raises(SystemExit):
        main(["validate", str(run), "--no-probe"])
    shown = capsys.readouterr()
    listed = [line for line in shown.out.splitlines() if line.startswith("[") and " ok: " not in line]
    assert f"{len(listed)} problem(s)" in shown.err, (shown.out, shown.err)
    assert "prompt budget 0" not in shown.out  # unknown, not shown as 0
