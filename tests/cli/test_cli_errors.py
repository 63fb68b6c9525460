"""A new user's errors (issue 22, "Friction → Errors"): one line for click's usage errors in every vf-*
command, "did you mean" for a typo'd environment, no run directory before the first rollout, and a path
that does not exist called so by vf-install."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from tests.cli._helpers import (
    assert_one_line_error,
    clean_env,
    run_cli,
    script,
)
from tests.scripted_server import ScriptedServer
from verifiers.clients.local_model import free_port

#: Every console script of verifiers/cli (pyproject's [project.scripts]), and an argument list that gets
#: past its own required arguments so that the unknown option is what click complains about.
COMMANDS = {
    "vf-eval": ["cli-env"],
    "vf-init": ["x-env"],
    "vf-install": ["x-env"],
    "vf-push": ["."],
    "vf-serve": ["cli-env"],
    "vf-smoke": ["x.whl"],
    "vf-train": [],
    "vf-hub": [],
    "vf-view": ["RUN_DIR"],
    "vf-model-stub": ["rules.toml"],
}
#: Commands whose parsing is the hub's (hub_server, reached by a hand-over): the same one line there.
HANDED_OVER = {"vf-hub serve": ["serve"], "vf-hub token create": ["token", "create", "alice"]}


def test_every_command_in_verifiers_cli_is_listed() -> None:
    import tomllib

    from tests.cli._helpers import ROOT

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    ours = {name for name, target in scripts.items() if target.startswith("verifiers.cli.")}
    assert ours == set(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_usage_errors_are_one_line(name: str, tmp_path: Path) -> None:
    res = run_cli(name, *COMMANDS[name], "--no-such-flag", cwd=tmp_path)
    line = assert_one_line_error(res, 2, f"{name}: error: ", "no such option: --no-such-flag", "--help")
    assert line.startswith(f"{name}: error: ")
    assert not res.stdout.strip() and len(res.err_lines) == 1, res.stderr  # no usage block, no "Try …"


@pytest.mark.parametrize("name", sorted(HANDED_OVER))
def test_usage_errors_of_the_hub_commands_are_one_line(name: str, tmp_path: Path) -> None:
    res = run_cli("vf-hub", *HANDED_OVER[name], "--no-such-flag", cwd=tmp_path)
    assert_one_line_error(res, 2, "vf-hub: error: no such option: --no-such-flag")
    assert not res.stdout.strip() and len(res.err_lines) == 1, res.stderr


def test_a_bad_option_value_is_one_line(tmp_path: Path) -> None:
    res = run_cli("vf-eval", "x", "-n", "many", cwd=tmp_path)
    assert_one_line_error(res, 2, "vf-eval: error: ", "invalid value for '-n'")
    assert len(res.err_lines) == 1


def test_an_environment_typo_gets_did_you_mean_and_no_install_advice(workdir: Path) -> None:
    res = run_cli("vf-eval", "cli-evn", "-b", "http://127.0.0.1:9/v1", cwd=workdir)
    line = assert_one_line_error(res, 2, "no environment 'cli-evn'", "Did you mean 'cli-env'?")
    assert "vf-install cli-evn" not in line
    # A name like nothing known: where to get one, never `vf-install <the name>` as if it existed.
    res = run_cli("vf-eval", "quantum-chess", "-b", "http://127.0.0.1:9/v1", cwd=workdir)
    line = assert_one_line_error(res, 2, "no environment 'quantum-chess'", "vf-install OWNER/quantum-chess")
    assert "Did you mean" not in line and "vf-install quantum-chess" not in line
    assert not (workdir / "outputs").exists()


def test_did_you_mean_in_the_library() -> None:
    from verifiers.envs.loading import load_environment
    from verifiers.errors import EnvNotFoundError

    with pytest.raises(EnvNotFoundError, match="Did you mean 'math-env'"):
        load_environment("math-evn")


def test_a_failed_start_up_leaves_no_run_directory(workdir: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there: the endpoint check fails
    res = run_cli("vf-eval", "cli-env", "-m", "m", "-b", url, cwd=workdir)
    assert_one_line_error(res, 1, "cannot reach", url)
    assert not (workdir / "outputs").exists()
    # An explicit output directory is not made either; an existing run there is left as it was.
    out = workdir / "mine" / "run"
    res = run_cli("vf-eval", "cli-env", "-m", "m", "-b", url, "-o", str(out), cwd=workdir)
    assert res.code == 1 and not (workdir / "mine").exists()


def test_an_existing_run_is_untouched_by_a_failed_resume(workdir: Path) -> None:
    out = workdir / "run"
    with ScriptedServer(rules=[], default="a0") as srv:
        res = run_cli(
            "vf-eval", "cli-env", "-m", "m", "-b", srv.url, "-n", "2", "-r", "1", "-o", str(out), cwd=workdir
        )
        assert res.code == 0, res.stderr
    before = (out / "metadata.json").read_bytes()
    url = f"http://127.0.0.1:{free_port()}/v1"
    res = run_cli("vf-eval", "cli-env", "-m", "m", "-b", url, "--resume", str(out), cwd=workdir)
    assert res.code == 1
    assert (out / "metadata.json").read_bytes() == before  # not rewritten as a failed run


def test_a_run_stopped_during_start_up_leaves_nothing_and_says_so(workdir: Path) -> None:
    with ScriptedServer(rules=[], default="a0", hold_models=True) as srv:  # the endpoint check hangs
        proc = subprocess.Popen(
            [script("vf-eval"), "cli-env", "-m", "m", "-b", srv.url, "-n", "2", "-r", "1"],
            cwd=workdir,
            env=clean_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            srv.wait_for_requests(1, models=True)  # the run is in its endpoint check now
        finally:
            proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        srv.release()
    assert proc.returncode == 130, err
    assert "interrupted before the first rollout; nothing was written" in err
    assert "--resume" not in err
    assert not (workdir / "outputs").exists()


def test_resume_of_a_directory_that_does_not_exist_says_why(workdir: Path) -> None:
    res = run_cli(
        "vf-eval",
        "cli-env",
        "-b",
        "http://127.0.0.1:9/v1",
        "--resume",
        str(workdir / "gone/run"),
        cwd=workdir,
    )
    assert_one_line_error(res, 2, "nothing to resume", "no such directory", "without --resume")


def test_vf_install_of_a_missing_directory_says_no_such_directory(tmp_path: Path) -> None:
    for target in ("./no/such/dir", "no/such/dir", "../nowhere", "/no/such/dir", "~/no-such-dir-vf/"):
        res = run_cli("vf-install", target, cwd=tmp_path)
        line = assert_one_line_error(res, 2, "no such directory")
        assert "not an environment spec" not in line and "hub" not in line, line
    (tmp_path / "file.txt").write_text("x")
    res = run_cli("vf-install", "./file.txt", cwd=tmp_path)
    assert_one_line_error(res, 2, "is a file, not a package directory")


def test_vf_install_typo_of_a_local_environment_gets_did_you_mean(workdir: Path) -> None:
    hub = f"http://127.0.0.1:{free_port()}"  # nothing listens: the hub cannot have it either
    res = run_cli("vf-install", "cli-evn", "--hub-url", hub, cwd=workdir)
    assert res.code == 1 and "Traceback" not in res.stderr
    assert "Did you mean 'cli-env'?" in res.stderr


def test_a_run_directory_is_made_at_the_first_rollout_and_holds_the_run(workdir: Path) -> None:
    with ScriptedServer(rules=[], default="a0") as srv:
        res = run_cli(
            "vf-eval", "cli-env", "-m", "m", "-b", srv.url, "-n", "2", "-r", "1", "--json", cwd=workdir
        )
    assert res.code == 0, res.stderr
    out = workdir / json.loads(res.stdout)["output_dir"]
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["status"] == "completed" and meta["counts"]["completed"] == 2 and meta["base_url"] == srv.url
