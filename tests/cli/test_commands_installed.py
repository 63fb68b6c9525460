"""Every ``vf-*`` command works after the README's set-up: README names each console script, the demo
installs every extra a command needs, and each command answers ``--help`` with a description per sub-command."""

from __future__ import annotations

import re
import subprocess
import tomllib

import pytest

from tests.cli._helpers import BIN, ROOT

SCRIPTS = sorted(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"])
README = (ROOT / "README.md").read_text()


def demo_extras() -> set[str]:
    match = re.search(r'pip install [^\n]*-e "\.\[([\w,-]+)\]"', (ROOT / "scripts" / "demo.sh").read_text())
    assert match, "scripts/demo.sh installs the SDK with its extras"
    return set(match.group(1).split(","))


def test_readme_names_every_command_and_the_demo_installs_what_they_need() -> None:
    listed = re.search(r"The `vf-\*` commands \(([^)]*)\)", README.replace("\n", " "))
    assert listed, "README lists the vf-* commands the set-up installs"
    assert sorted(re.findall(r"`(vf-[\w-]+)`", listed.group(1))) == SCRIPTS
    needed = set()  # the extras the commands check for before they run
    for module in (ROOT / "verifiers" / "cli").glob("*.py"):
        text = module.read_text()
        needed |= set(re.findall(r'require_extra\("(\w+)"', text)) | set(re.findall(r'extra="(\w+)"', text))
    assert needed and needed <= demo_extras(), f"scripts/demo.sh leaves out {sorted(needed - demo_extras())}"


@pytest.mark.parametrize("script", SCRIPTS)
def test_each_command_answers_help_with_described_sub_commands(script: str) -> None:
    res = subprocess.run([str(BIN / script), "--help"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    commands = res.stdout.split("Commands:", 1)[1] if "Commands:" in res.stdout else ""
    for line in commands.splitlines():
        if re.match(r"^  [a-z][\w-]*\s*$", line):  # a sub-command without a description
            pytest.fail(f"{script} --help: sub-command {line.strip()!r} has no description")
