"""Issue 33 items 5 and 6 at the command line: ``vf-eval`` refuses an output directory that is not a run
directory, and a run or suite entry over ``--max-rollouts``, with one line that says what to do and
before it starts anything."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.cli._helpers import Server, clean_env, run_cli, run_dirs


def test_an_output_directory_holding_other_files_is_refused(
    workdir: Path, start_server: Callable[..., Server]
) -> None:
    srv = start_server()
    home = workdir / "home"
    home.mkdir()
    (home / ".bashrc").write_text("export PATH=$PATH\n")
    res = run_cli("vf-eval", "cli-env", "-b", srv.url, "-m", "m", "-n", "1", "-o", str(home), cwd=workdir)
    assert res.code == 2, res.stderr
    assert len(res.err_lines) == 1 and "is not a run directory: it holds .bashrc" in res.stderr
    assert "--output-dir" in res.stderr and "Traceback" not in res.stderr
    assert sorted(p.name for p in home.iterdir()) == [".bashrc"]


def test_runs_and_suite_entries_over_the_bound_are_refused_before_they_start(
    workdir: Path, start_server: Callable[..., Server]
) -> None:
    srv = start_server()
    res = run_cli("vf-eval", "cli-env", "-b", srv.url, "-m", "m", "-r", "100000000", cwd=workdir)
    assert res.code == 2, res.stderr
    assert "more than the 100000 rollouts one run may plan" in res.stderr and "--max-rollouts" in res.stderr
    suite = workdir / "suite.toml"
    suite.write_text(
        f'[[eval]]\nenv_id = "cli-env"\nmodel = "m"\nbase_url = "{srv.url}"\nnum_examples = 1\n'
        f'[[eval]]\nenv_id = "cli-env"\nmodel = "m"\nbase_url = "{srv.url}"\nrollouts_per_example = 100000000\n'
    )
    res = run_cli("vf-eval", "@", str(suite), cwd=workdir)
    assert res.code == 2, res.stderr
    assert "[[eval]] #2" in res.stderr and "more than the 100000 rollouts" in res.stderr
    assert run_dirs(workdir) == []  # not even the first entry ran
    raised = run_cli(
        "vf-eval", "cli-env", "-b", srv.url, "-m", "m", "-n", "2", "-r", "3", cwd=workdir,
        env=clean_env(VF_MAX_ROLLOUTS="5"),
    )  # fmt: skip
    assert raised.code == 2 and "more than the 5 rollouts" in raised.stderr
    ok = run_cli(
        "vf-eval",
        "cli-env",
        "-b",
        srv.url,
        "-m",
        "m",
        "-n",
        "2",
        "-r",
        "3",
        "--max-rollouts",
        "6",
        cwd=workdir,
    )
    assert ok.code == 0, ok.stderr


def test_zero_examples_is_refused_before_any_work(workdir: Path, start_server: Callable[..., Server]) -> None:
    srv = start_server()
    res = run_cli("vf-eval", "cli-env", "-b", srv.url, "-m", "m", "-n", "0", cwd=workdir)
    assert res.code == 2, res.stderr
    assert "-n/--num-examples=0 evaluates nothing" in res.stderr and "-1 for all" in res.stderr
    assert run_dirs(workdir) == []  # nothing written
