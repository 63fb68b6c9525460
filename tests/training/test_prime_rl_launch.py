"""vf-train launch: ``--dry-run`` prints the env servers and prime-rl's commands; on this machine (no GPU)
a real launch starts one ``vf-serve`` per environment on the configured ports, waits for health, says so
and stops them."""

from __future__ import annotations

import socket
from pathlib import Path

import httpx
import pytest

from verifiers.cli.train import main
from verifiers.training.prime_rl.launch import gpu_count
from verifiers.training.prime_rl.render import render


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_dry_run_prints_the_env_servers_and_prime_rl_commands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    render("single-node", ["math-env", "code-env:0.3"], "M", run)
    with pytest.raises(SystemExit) as exc:
        main(["launch", str(run), "--dry-run", "--prime-rl-dir", "/opt/prime-rl"])
    assert exc.value.code == 0
    out = capsys.readouterr().out.splitlines()
    assert (
        "vf-serve math-env --host 127.0.0.1 --port 8100 --zmq-port 5100 --max-concurrent 512 --workers 2 "
        "--max-seq-len 8192 --score-rollouts &" in out
    )
    assert (
        "vf-serve code-env --host 127.0.0.1 --port 8101 --zmq-port 5101 --max-concurrent 512 --workers 2 "
        "--max-seq-len 8192 --score-rollouts &" in out
    )
    install = next(line for line in out if line.startswith("uv pip install"))
    assert "--python /opt/prime-rl/.venv/bin/python" in install
    for pkg in ("vf-icepop-loss", "math-env-vfbridge", "code-env-vfbridge"):
        assert str((run / "packages" / pkg).resolve()) in install
    assert f"uv run --project /opt/prime-rl rl @ {(run / 'rl.toml').resolve()}" in out
    assert (run / "packages" / "vf-icepop-loss" / "vf_icepop_loss.py").is_file()


def test_dry_run_of_the_multi_node_preset_submits_the_batch_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    render("intellect3", ["math-env"], "M", run)
    with pytest.raises(SystemExit) as exc:
        main(["launch", str(run), "--dry-run"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert f"sbatch --chdir {run.resolve()} {(run / 'intellect3.sbatch').resolve()}" in out


def test_env_servers_get_the_runs_seq_len_and_scoring(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """prime-rl hands max_seq_len and score_rollouts only to env servers it spawns, never to one at an
    address: launch starts vf-serve with the run's values."""
    run = tmp_path / "run"
    render(
        "single-node",
        ["math-env"],
        "M",
        run,
        ["seq_len=4096", "orchestrator.sampling.max_tokens=1024", "orchestrator.verification.enabled=false"],
    )
    with pytest.raises(SystemExit):
        main(["launch", str(run), "--dry-run"])
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("vf-serve ")]
    assert line.endswith("--max-seq-len 4096 --no-score-rollouts &")


def test_orchestrator_only_runs_the_resolution_then_the_orchestrator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    render("single-node", ["math-env"], "M", run, ['output_dir="out"'])
    with pytest.raises(SystemExit) as exc:
        main(
            ["launch", str(run), "--dry-run", "--orchestrator-only", "--prime-rl-python", "/venv/bin/python"]
        )
    assert exc.value.code == 0
    out = capsys.readouterr().out.splitlines()
    r = run.resolve()
    assert f"cd {r}" in out
    assert f"/venv/bin/python -m prime_rl.entrypoints.rl @ {r / 'rl.toml'} --dry-run" in out
    assert (
        f"/venv/bin/python -m prime_rl.orchestrator.orchestrator @ {r / 'out' / 'configs' / 'orchestrator.toml'}"
        in out
    )
    assert any(line.startswith("uv pip install --python /venv/bin/python ") for line in out)


def test_launch_refuses_a_run_that_does_not_validate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    render("single-node", ["math-env"], "M", run, ["orchestrator.batch_size=250"])
    with pytest.raises(SystemExit) as exc:
        main(["launch", str(run), "--dry-run"])
    assert exc.value.code == 1
    assert "[batch]" in capsys.readouterr().out


@pytest.mark.skipif(gpu_count() > 0, reason="this test is about a machine without GPUs")
def test_without_a_gpu_launch_stops_once_the_env_servers_are_healthy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    http, zmq = _free_port(), _free_port()
    render(
        "single-node",
        ["logic-env"],
        "M",
        run,
        [
            f"vf_train.env.0.http_port={http}",
            f"vf_train.env.0.zmq_port={zmq}",
            'vf_train.env.0.args={tasks=["boolean_expressions"], num_examples=4, seed=3}',
        ],
    )
    with pytest.raises(SystemExit) as exc:
        main(["launch", str(run), "--timeout", "120"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert f"env server logic-env: healthy at http://127.0.0.1:{http} (ZMQ tcp://127.0.0.1:{zmq})" in out
    assert "no GPU on this machine" in out
    assert 'uv run --project "$PRIME_RL_DIR" rl @' in out
    log = (run / "logs" / "vf-serve-0.log").read_text()
    assert "vf-serve listening" in log
    with pytest.raises(httpx.HTTPError):  # stopped on the way out
        httpx.get(f"http://127.0.0.1:{http}/health", timeout=2)


def test_bridge_command_rewrites_the_packages(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    render("single-node", ["math-env", "code-env"], "M", run)
    for pkg in (run / "packages").iterdir():
        for f in pkg.iterdir():
            f.unlink()
    with pytest.raises(SystemExit) as exc:
        main(["bridge", str(run)])
    assert exc.value.code == 0
    names = {p.name for p in (run / "packages").iterdir()}
    assert names == {"vf-icepop-loss", "math-env-vfbridge", "code-env-vfbridge"}
    assert (run / "packages" / "code-env-vfbridge" / "code_env_vfbridge.py").is_file()
    assert (run / "packages" / "vf-icepop-loss" / "pyproject.toml").is_file()
    assert capsys.readouterr().out.count("wrote ") == 3
