"""``vf-init NAME``: scaffold an environment package (layout of docs/environment-packages.md)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from verifiers.cli import _init_templates as tpl
from verifiers.cli._common import fail, make_app, run_command

PROG = "vf-init"
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")

app = make_app(
    "Create environments/<name_underscored>/ as a pip package: pyproject.toml (entry point, vf-eval "
    "defaults), README.md, a working single-turn load_environment with inline rows, and its tests. "
    "--tools makes a tool environment (vf.ToolEnv) instead, with scripted_model.toml, the rules of a "
    "scripted model that uses its tools (vf-eval ENV -m scripted:…/scripted_model.toml scores 1.0 "
    "offline), and a test that runs it. Existing files are never overwritten without --force."
)
#: The scripted model's rules of a ``--tools`` package, next to its pyproject.toml.
RULES_FILE = "scripted_model.toml"


def package_files(name: str, tools: bool = False) -> tuple[str, str, dict[str, str]]:
    """(environment id, module name, relative path → content) for the package ``name``: a single-turn
    environment, or with ``tools`` a tool environment and its scripted model's rules."""
    from verifiers.hub.packaging import module_name, normalize_name

    if not _NAME.match(name):
        fail(f"invalid environment name {name!r}: use letters, digits, '-' and '_', starting with a letter")
    env_id = normalize_name(name)
    module = module_name(env_id)
    title = " ".join(w.capitalize() for w in env_id.split("-"))
    description, eval_defaults = tpl.TOOLS_PROJECT if tools else tpl.SINGLE_TURN_PROJECT
    values = {
        "__DESCRIPTION__": description,
        "__EVAL_DEFAULTS__": eval_defaults,
        "__ENV_ID__": env_id,
        "__MODULE__": module,
        "__TITLE__": title,
        "__SDK_REQ__": "verifiers-sdk>=0.1",
    }

    def render(text: str) -> str:
        for key, value in values.items():
            text = text.replace(key, value)
        return text

    if tools:
        files = {
            "pyproject.toml": render(tpl.PYPROJECT),
            "README.md": render(tpl.TOOLS_README),
            RULES_FILE: render(tpl.TOOLS_RULES),
            f"{module}/__init__.py": render(tpl.TOOLS_MODULE),
            f"tests/test_{module}.py": render(tpl.TOOLS_TEST),
        }
    else:
        files = {
            "pyproject.toml": render(tpl.PYPROJECT),
            "README.md": render(tpl.README),
            f"{module}/__init__.py": render(tpl.MODULE),
            f"tests/test_{module}.py": render(tpl.TEST),
        }
    return env_id, module, files


@app.command()
def init_command(
    name: Annotated[
        str, typer.Argument(help="Environment name, e.g. my-env (module my_env).", show_default=False)
    ],
    path: Annotated[Path, typer.Option("--path", "-p", help="Parent directory of the package.")] = Path(
        "environments"
    ),
    force: Annotated[
        bool, typer.Option("--force", "-f", help="Overwrite files that exist and differ.")
    ] = False,
    tools: Annotated[
        bool,
        typer.Option(
            "--tools",
            help="A tool environment (vf.ToolEnv) with a scripted model's rules and a test using them.",
        ),
    ] = False,
) -> None:
    out = Console()
    env_id, module, files = package_files(name, tools)
    root = path / module
    conflicts = [
        rel for rel, text in files.items() if (root / rel).exists() and (root / rel).read_text() != text
    ]
    if conflicts and not force:
        fail(
            f"{root} already has {', '.join(conflicts)} (different from the template); pass --force to overwrite"
        )
    written: list[str] = []
    for rel, text in files.items():
        target = root / rel
        if target.exists() and target.read_text() == text:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        written.append(rel)
    if written:
        out.print(f"created [bold]{env_id}[/] in {root}/: {', '.join(written)}")
    else:
        out.print(f"{root}/ is already up to date")
    install_arg = env_id if path.resolve() == Path("environments").resolve() else str(root)
    out.print("next:")
    out.print(f"  vf-install {install_arg}")
    if tools:  # the local model calls no tools: the scripted one shows the environment working
        out.print(f"  vf-eval {env_id} -m scripted:{root / RULES_FILE}")
    else:
        out.print(f"  vf-eval {env_id} -m local/smollm2 -n 3")
    out.print(f"  {test_command(root / 'tests')}")


def test_command(tests: Path) -> str:
    """How to run the package's tests with this interpreter: pytest is a dev extra, so the venv the README
    sets up (``scripts/demo.sh``) may not have it, and then the hint installs it first."""
    import importlib.util
    import shutil

    python = "python" if _same_file(shutil.which("python"), sys.executable) else sys.executable
    run = f"{python} -m pytest {tests}"
    if importlib.util.find_spec("pytest") is None:
        return f"{python} -m pip install pytest && {run}"
    return run


def _same_file(a: str | None, b: str) -> bool:
    try:
        return a is not None and os.path.samefile(a, b)
    except OSError:
        return False


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    run_command(PROG, app, argv)


if __name__ == "__main__":
    main()
