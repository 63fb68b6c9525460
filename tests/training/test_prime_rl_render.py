"""vf-train render: golden files per preset (reviewed by hand once; VF_UPDATE_GOLDEN=1 rewrites them) and
property checks of the invariants the presets must keep."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

from verifiers.training.prime_rl.release import check_keys
from verifiers.training.prime_rl.render import RenderError, render
from verifiers.training.prime_rl.spec import LOSS_IMPORT_PATH, LOSS_KWARGS, RunSpec, parse_env_arg

GOLDEN = Path(__file__).parent / "golden"
ENVS = ["math-env", "code-env:0.3"]
MODEL = "PrimeIntellect/INTELLECT-3"
GOLDEN_FILES = {
    "single-node": ["rl.toml", "vf-train.toml"],
    "intellect3": [
        "rl.toml",
        "vf-train.toml",
        "trainer.toml",
        "orchestrator.toml",
        "inference.toml",
        "launch_node.sh",
        "intellect3.sbatch",
    ],
}


def _toml(path: Path) -> dict:
    return tomllib.loads(path.read_text())


@pytest.mark.parametrize("preset", ["single-node", "intellect3"])
def test_rendered_files_match_the_golden_files(tmp_path: Path, preset: str) -> None:
    render(preset, ENVS, MODEL, tmp_path)  # type: ignore[arg-type]
    for name in GOLDEN_FILES[preset]:
        golden = GOLDEN / f"{preset}.{name}"
        text = (tmp_path / name).read_text()
        if os.environ.get("VF_UPDATE_GOLDEN") == "1":
            golden.write_text(text)
        assert golden.exists(), f"no golden file {golden.name}; run with VF_UPDATE_GOLDEN=1 and review it"
        assert text == golden.read_text(), f"{name} differs from {golden.name}"


@pytest.mark.parametrize("preset", ["single-node", "intellect3"])
def test_every_rendered_key_is_a_field_of_the_release(tmp_path: Path, preset: str) -> None:
    render(preset, ENVS, MODEL, tmp_path)  # type: ignore[arg-type]
    assert check_keys(_toml(tmp_path / "rl.toml")) == []
    if preset == "intellect3":
        assert check_keys(_toml(tmp_path / "trainer.toml"), "trainer:TrainerConfig") == []
        assert check_keys(_toml(tmp_path / "orchestrator.toml"), "orchestrator:OrchestratorConfig") == []
        assert check_keys(_toml(tmp_path / "inference.toml"), "inference:InferenceConfig") == []


@pytest.mark.parametrize("preset", ["single-node", "intellect3"])
def test_preset_properties(tmp_path: Path, preset: str) -> None:
    render(preset, ENVS, MODEL, tmp_path)  # type: ignore[arg-type]
    rl = _toml(tmp_path / "rl.toml")
    spec = RunSpec.read(tmp_path)
    orch, dep = rl["orchestrator"], rl["deployment"]
    assert orch["batch_size"] % orch["rollouts_per_example"] == 0
    assert spec.prompt_budget + orch["sampling"]["max_tokens"] <= rl["seq_len"]
    assert rl["seq_len"] <= rl["inference"]["model"]["max_model_len"]
    assert rl["trainer"]["loss"] == {"type": "custom", "import_path": LOSS_IMPORT_PATH, "kwargs": LOSS_KWARGS}
    envs = orch["env"]
    assert [e["name"] for e in envs] == ["math-env", "code-env"]
    assert [e["id"] for e in envs] == ["math-env-vfbridge", "code-env-vfbridge"]
    assert [e["address"] for e in envs] == [e.zmq_address for e in spec.env]
    assert len({e.zmq_port for e in spec.env} | {e.http_port for e in spec.env}) == 2 * len(spec.env)
    assert orch["buffer"]["env_ratios"] == [1.0, 0.3]
    assert orch["max_off_policy_steps"] == 8
    if preset == "single-node":
        assert dep == {"type": "single_node", "gpus_per_node": 8, "num_train_gpus": 2, "num_infer_gpus": 6}
        tp, dp = rl["inference"]["parallel"]["tp"], rl["inference"]["parallel"]["dp"]
        assert tp * dp == dep["num_infer_gpus"]
    else:
        assert (dep["num_train_nodes"], dep["num_infer_nodes"], dep["gpus_per_node"]) == (16, 44, 8)
        assert (orch["batch_size"], orch["rollouts_per_example"]) == (4096, 16)
        assert orch["batch_size"] // orch["rollouts_per_example"] == 256
        assert rl["seq_len"] == 65536
        assert rl["trainer"]["optim"] == {"type": "muon", "lr": 1e-6}
        buf = orch["buffer"]
        assert buf["online_difficulty_filtering"] is True
        assert buf["easy_threshold"] > buf["hard_threshold"]
        urls = orch["client"]["base_url"]
        assert len(urls) == dep["num_infer_nodes"] == len(set(urls))
        split = _toml(tmp_path / "orchestrator.toml")
        assert split["client"]["base_url"] == urls
        assert split["num_train_workers"] == 16 * 8
        assert _toml(tmp_path / "trainer.toml")["model"]["seq_len"] == 65536
        sbatch = (tmp_path / "intellect3.sbatch").read_text()
        assert "#SBATCH --nodes=60" in sbatch
        assert all(f"{u}" in sbatch for u in urls)
        script = (tmp_path / "launch_node.sh").read_text()
        assert script.count("    vf-serve ") == len(spec.env)


def test_set_overrides_any_value_and_the_spec(tmp_path: Path) -> None:
    render(
        "single-node",
        ["math-env"],
        "M",
        tmp_path,
        [
            "orchestrator.batch_size=512",
            "trainer.optim.lr=2e-6",
            "orchestrator.env.0.name=math",
            "wandb.project='x'",
            "vf_train.prompt_budget=1024",
        ],
    )
    rl = _toml(tmp_path / "rl.toml")
    assert rl["orchestrator"]["batch_size"] == 512
    assert rl["trainer"]["optim"]["lr"] == 2e-6
    assert rl["orchestrator"]["env"][0]["name"] == "math"
    assert rl["wandb"]["project"] == "x"
    assert RunSpec.read(tmp_path).prompt_budget == 1024
    # the spec override feeds the preset: max_tokens = seq_len - prompt budget
    assert rl["orchestrator"]["sampling"]["max_tokens"] == 8192 - 1024


@pytest.mark.parametrize(
    "bad",
    [
        ["--nothing"],
        ["orchestrator.batch_size.x=1"],
        ["orchestrator.env.5.name=x"],
        ["vf_train.prompt_budget=-1"],
    ],
)
def test_bad_set_is_refused(tmp_path: Path, bad: list[str]) -> None:
    with pytest.raises(RenderError):
        render("single-node", ["math-env"], "M", tmp_path, bad)


def test_env_argument_forms() -> None:
    assert parse_env_arg("math-env") == ("math-env", "", None)
    assert parse_env_arg("code-env:0.3") == ("code-env", "", 0.3)
    assert parse_env_arg("math-env@0.2.0:2") == ("math-env", "0.2.0", 2.0)
    for bad in ("code-env:0", "code-env:x", ":1"):
        with pytest.raises(ValueError):
            parse_env_arg(bad)
    with pytest.raises(RenderError, match="once"):
        render("single-node", ["math-env", "math-env"], "M", Path("/nonexistent"))


def test_an_unknown_environment_is_refused_with_a_suggestion(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from verifiers.cli.train import main

    with pytest.raises(RenderError, match="did you mean 'math-env'"):
        render("single-node", ["maths-env"], "M", tmp_path / "run")
    assert not (tmp_path / "run").exists()
    with pytest.raises(SystemExit) as exc:
        main(["render", "--env", "maths-env", "--model", "M", "--out", str(tmp_path / "cli")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such environment" in err and "'math-env'" in err
