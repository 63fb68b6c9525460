"""vf-train validate: a clean render passes; each invariant, broken on purpose, gives its one-line problem."""

from __future__ import annotations

import json
import socket
import threading
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
    run = _run(tmp_path, envs=["no-such-env"])
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
    run = _run(tmp_path, envs=["no-such-env@9.9.8"], sets=[f"vf_train.env.0.http_port={info_server}"])
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
        envs=["no-such-env"],
        sets=[f"vf_train.env.0.http_port={info_server}", "vf_train.env.0.args={seed=1}"],
    )
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
    lines = [line for line in out.out.splitlines() if line.startswith("[")]
    assert len(lines) == 2 and lines[0].startswith("[keys]") and lines[1].startswith("[batch]")
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
