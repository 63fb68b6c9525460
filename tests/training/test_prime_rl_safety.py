"""vf-train against hostile input, one class per test: paths that leave the run directory, code injected
into the generated bridge module, shell injected into the node script / batch file, and ``launch
--dry-run`` output that runs something when pasted. Each is refused at render, reported by validate,
or made inert by quoting."""

from __future__ import annotations

import ast
import os
import stat
import subprocess
import tomllib
from pathlib import Path

import pytest
import tomli_w

from verifiers.cli.train import main
from verifiers.training.prime_rl.bridge import bridge_files
from verifiers.training.prime_rl.render import RenderError, render
from verifiers.training.prime_rl.spec import EnvEntry
from verifiers.training.prime_rl.validate import validate


def _files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


# --- paths: render writes only under the run directory -------------------------------------------------
@pytest.mark.parametrize(
    "bad",
    [
        'vf_train.env.0.id="../../escaped"',
        'vf_train.env.0.id="{tmp}/escaped"',
        'vf_train.loss_distribution="../../escaped"',
        'vf_train.loss_distribution="{tmp}/escaped"',
        'vf_train.loss_distribution=".."',
    ],
)
def test_render_never_writes_outside_the_run_directory(tmp_path: Path, bad: str) -> None:
    run = tmp_path / "a" / "b" / "run"
    with pytest.raises(RenderError) as exc:
        render("single-node", ["math-env"], "M", run, [bad.replace("{tmp}", str(tmp_path))])
    assert "\n" not in str(exc.value)
    assert not (tmp_path / "escaped").exists()
    assert not run.exists() or _files_under(run) == set()


def test_validate_refuses_a_hand_edited_spec_that_points_outside(tmp_path: Path) -> None:
    run = tmp_path / "run"
    render("single-node", ["math-env"], "M", run)
    spec = tomllib.loads((run / "vf-train.toml").read_text())
    spec["vf_train"]["loss_distribution"] = "../../../etc"
    (run / "vf-train.toml").write_text(tomli_w.dumps(spec))
    report = validate(run, probe_envs=False)
    assert not report.ok
    assert any(p.check == "files" and "loss_distribution" in p.message for p in report.problems)


# --- generated code: values are literals, never code ---------------------------------------------------
def test_a_version_pin_cannot_inject_code(tmp_path: Path) -> None:
    evil = 'math-env@1"+__import__("os").system("touch PWNED")+"'
    with pytest.raises(RenderError):
        render("single-node", [evil], "M", tmp_path / "run")


def test_the_bridge_module_holds_its_values_as_literals() -> None:
    """Even values the spec's patterns would refuse (built here bypassing validation) stay data."""
    hostile = 'x"; import os; os.system("touch PWNED"); "'
    entry = EnvEntry.model_construct(
        id="math-env", version=hostile, host="127.0.0.1", http_port=8100, zmq_port=5100, args={}
    )
    files = bridge_files(entry)
    tree = ast.parse(files["math_env_vfbridge.py"])
    assigned = {
        t.id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Name)
    }
    assert isinstance(assigned["ENV_VERSION"], ast.Constant) and assigned["ENV_VERSION"].value == hostile
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "system"]
    assert calls == []
    assert tomllib.loads(files["pyproject.toml"])["project"]["name"] == "math-env-vfbridge"


# --- shell: hosts, node names and the job name are names; scripts quote them ----------------------------
@pytest.mark.parametrize(
    "bad",
    [
        'vf_train.nodes.inference=["infer-000", "x$(touch PWNED)"]',
        'vf_train.nodes.trainer=["train-000", "a;b"]',
        'vf_train.nodes.trainer=["train-000\\n#SBATCH --uid=0"]',
        'vf_train.env.0.host="127.0.0.1$(touch PWNED)"',
        'slurm.job_name="x\\n#SBATCH --uid=0"',
        'slurm.job_name="$(touch PWNED)"',
    ],
)
def test_hostile_hosts_nodes_and_job_names_are_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(RenderError):
        render("intellect3", ["math-env"], "M", tmp_path / "run", [bad])


@pytest.mark.parametrize(
    ("where", "value"),
    [
        ("nodes.inference", ["infer-000", "x$(touch PWNED)"]),
        ("nodes.trainer", ["a\nb"]),
        ("env.0.host", "`touch PWNED`"),
    ],
)
def test_validate_reports_hostile_names_in_a_hand_edited_spec(
    tmp_path: Path, where: str, value: object
) -> None:
    run = tmp_path / "run"
    render("intellect3", ["math-env"], "M", run)
    spec = tomllib.loads((run / "vf-train.toml").read_text())
    node: dict = spec["vf_train"]
    *head, last = where.split(".")
    for key in head:
        node = node[int(key)] if isinstance(node, list) else node[key]  # type: ignore[index]
    node[last] = value  # type: ignore[index]
    (run / "vf-train.toml").write_text(tomli_w.dumps(spec))
    report = validate(run, probe_envs=False)
    assert not report.ok and any(p.check == "files" for p in report.problems), report.lines()


def test_validate_reports_a_hostile_job_name_in_rl_toml(tmp_path: Path) -> None:
    run = tmp_path / "run"
    render("intellect3", ["math-env"], "M", run)
    rl = tomllib.loads((run / "rl.toml").read_text())
    rl["slurm"]["job_name"] = "x\n#SBATCH --uid=0"
    (run / "rl.toml").write_text(tomli_w.dumps(rl))
    report = validate(run, probe_envs=False)
    assert any(p.check == "names" and "slurm.job_name" in p.message for p in report.problems)


def test_the_node_script_parses_and_quotes_every_host(tmp_path: Path) -> None:
    run = tmp_path / "run"
    render("intellect3", ["math-env"], "M", run, ['vf_train.nodes.inference=["gpu-a.cluster", "10.0.0.7"]'])
    script = run / "launch_node.sh"
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
    assert "INFER_HOSTS=(gpu-a.cluster 10.0.0.7)" in script.read_text()


# --- launch --dry-run: pasting the output runs only what it says ---------------------------------------
def test_dry_run_output_is_safe_to_paste(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    render("single-node", ["math-env"], "M", run)
    marker = tmp_path / "PWNED"
    with pytest.raises(SystemExit) as exc:
        main(["launch", str(run), "--dry-run", "--prime-rl-dir", f"$(touch {marker})"])
    assert exc.value.code == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line and not line.startswith("#")]
    # Paste every line into bash, with stand-ins for the programs named (they only record their args).
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("uv", "vf-serve"):
        stub = bin_dir / tool
        stub.write_text('#!/bin/sh\nprintf "%s\\n" "$@" >> "$0.args"\n')
        stub.chmod(stub.stat().st_mode | stat.S_IEXEC)
    script = "\n".join(line.removesuffix(" &") for line in lines)
    proc = subprocess.run(
        ["bash", "-c", script], env={**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"}, capture_output=True
    )
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists()
    assert f"$(touch {marker})/.venv/bin/python" in (bin_dir / "uv.args").read_text()


def test_the_placeholder_stays_a_variable_when_pasted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    render("single-node", ["math-env"], "M", run)
    with pytest.raises(SystemExit):
        main(["launch", str(run), "--dry-run"])
    out = capsys.readouterr().out
    assert '--python "$PRIME_RL_DIR/.venv/bin/python"' in out
    assert 'uv run --project "$PRIME_RL_DIR" rl @' in out
