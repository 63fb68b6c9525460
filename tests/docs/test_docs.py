"""The docs as tests: every code block of README.md, docs/*.md and environments/*/README.md is classified
(tests/docs/classified.py, which says what each kind means), and every runnable one runs as printed.

The classification tests are instant and always run; ``test_document_runs`` runs one document's
commands in order in a workspace of its own (tests/docs/workspace.py) and is marked ``docs``. A document
with a browser half (tests/docs/browser.py: docs/publish.md) then has its pages checked in chromium against
the servers its commands started (marked ``browser`` too). ``-rP`` shows the wall time of every step.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import tomllib
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.conftest import smollm_missing
from tests.docs.blocks import (
    ROOT,
    SHELL_LANGUAGES,
    Block,
    Command,
    blocks,
    commands,
    doc_files,
    glued_redirects,
)
from tests.docs.browser import WALKS, browser_missing
from tests.docs.classified import CLASSIFIED, Check, Entry, Need, Run, Skip
from tests.docs.workspace import Shell, make_venv, make_workspace, normalized
from tests.tiers import component_missing
from verifiers.clients.local_model import free_port

DOCS = doc_files()
Item = Block | Command


def items(doc: str) -> Iterator[Item]:
    """What is classified in ``doc``, in document order: shell commands, and other blocks whole."""
    for block in blocks(doc):
        if block.language in SHELL_LANGUAGES:
            yield from commands(block)
        else:
            yield block


def classified(doc: str) -> list[tuple[Item, Entry]]:
    known = CLASSIFIED.get(doc, {})
    return [(item, known[item.key]) for item in items(doc) if item.key in known]


def test_every_block_is_classified() -> None:
    problems = []
    for doc in DOCS:
        known = CLASSIFIED.get(doc, {})
        seen = set()
        for item in items(doc):
            seen.add(item.key)
            if item.key not in known:
                problems.append(f"{item.where}: not classified: {item.key!r}")
        problems += [f"{doc}: stale entry (matches no block): {key!r}" for key in sorted(known.keys() - seen)]
    problems += [f"{doc}: not a covered document" for doc in sorted(CLASSIFIED.keys() - set(DOCS))]
    assert not problems, (
        "docs and tests/docs/classified.py disagree; classify each new or edited block there "
        "(Run it, or Skip it with the reason):\n" + "\n".join(problems)
    )


def test_entries_say_why() -> None:
    for doc, entries in CLASSIFIED.items():
        for key, entry in entries.items():
            if isinstance(entry, Skip):
                assert entry.reason.strip(), f"{doc}: {key!r} is skipped without a reason"
            if isinstance(entry, Run) and entry.subs:
                assert entry.why.strip(), f"{doc}: {key!r} changes the printed text without saying why"


def test_no_command_redirects_by_accident() -> None:
    """An unquoted ``>``/``<`` inside a word (``my-env@>=0.1``) is a shell redirect: bash installs
    ``my-env@`` and writes a file named ``=0.1``. Such a spec must be quoted."""
    problems = []
    for doc in DOCS:
        for item in items(doc):
            if isinstance(item, Command) and (found := glued_redirects(item)):
                problems.append(f"{item.where}: {item.key!r} redirects at {found} (quote the argument)")
    assert not problems, "\n".join(problems)


# --- running the documents ---------------------------------------------------------------------------
def _needs(entries: list[tuple[Item, Entry]]) -> set[Need]:
    return {n for _, e in entries if isinstance(e, Run | Check) for n in e.needs}


RUNNABLE = [
    pytest.param(doc, marks=[pytest.mark.browser] if doc in WALKS else [])
    for doc in DOCS
    if any(isinstance(e, Run | Check) for _, e in classified(doc))
]


def _require(doc: str, needs: set[Need]) -> None:
    if doc in WALKS and (reason := browser_missing()) is not None:
        component_missing("VF_REQUIRE_BROWSER", reason)
    if "smollm" in needs and (reason := smollm_missing()) is not None:
        component_missing("VF_REQUIRE_SMOLLM", reason)
    if "sandbox" in needs:
        from verifiers.sandbox import available_backends

        if not {"runsc", "bwrap"} & set(available_backends()):
            component_missing("VF_REQUIRE_SANDBOX", "no secure sandbox backend (runsc, bwrap) is available")
    if "hub" in needs:
        pytest.importorskip("fastapi", reason="the hub extra is not installed: pip install -e '.[hub]'")


def _substituted(item: Item, text: str, entry: Run, values: dict[str, str]) -> str:
    for printed, replacement in entry.subs:
        assert printed in text, f"{item.where}: {printed!r} is no longer in the printed text: re-classify"
        text = text.replace(printed, replacement.format(**values))
    return text


def _git_status() -> str:
    return subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT, capture_output=True, text=True
    ).stdout


def _test_venv() -> list[str]:
    """What the test venv has installed (its site-packages' entries): a document must not change it."""
    import site

    return sorted(e.name for p in site.getsitepackages() if Path(p).is_dir() for e in Path(p).iterdir())


def _failure(item: Item, ran: str, code: int, tail: str) -> str:
    shown = f"\n  run as: {ran}" if ran != item.text.strip() else ""
    return f"{item.where}: exited {code}: {item.text.strip()}{shown}\n{tail}"


def _check(item: Item, entry: Check, shell: Shell) -> None:
    assert isinstance(item, Block)
    text = item.text
    if entry.reader == "toml":
        tomllib.loads(text)
    elif entry.reader == "json-lines":
        for line in filter(None, map(str.strip, text.splitlines())):
            json.loads(line)
    elif entry.reader == "suite":
        from verifiers.eval.config import load_suite

        path = shell.cwd / f"suite-{item.line}.toml"
        path.write_text(text)
        assert load_suite(path), f"{item.where}: the suite reader found no evaluations"
    elif entry.reader == "endpoints":
        from verifiers.clients.registry import EndpointRegistry

        path = shell.cwd / f"endpoints-{item.line}.toml"
        path.write_text(text)
        EndpointRegistry.load(path)
    elif entry.reader == "scripted-rules":
        from verifiers.clients.scripted import load_script

        path = shell.cwd / f"rules-{item.line}.toml"
        path.write_text(text)
        assert load_script(path).rules, f"{item.where}: the rules reader found no rules"
    elif entry.reader == "transcript":
        first, *shown = text.splitlines()
        assert first.startswith("$ "), f"{item.where}: a transcript starts with `$ command`"
        res = shell.run(first[2:])
        assert res.code == 0, _failure(item, first[2:], res.code, res.tail())
        output = normalized(res.stdout + "\n" + res.stderr)
        missing = [line for line in shown if normalized(line) not in output]
        assert not missing, f"{item.where}: not in the output of `{first[2:]}`: {missing}\n{res.tail(60)}"


@pytest.mark.docs
@pytest.mark.parametrize("doc", RUNNABLE)
def test_document_runs(doc: str, tmp_path: Path) -> None:
    """Every runnable command and block of ``doc``, in order, as a reader would run them."""
    entries = classified(doc)
    needs = _needs(entries)
    _require(doc, needs)
    before, installed = _git_status(), _test_venv()
    venv = tmp_path / "venv"
    bindir = make_venv(venv)
    work = make_workspace(tmp_path / "work", venv)
    home = tmp_path / "home"
    home.mkdir()
    hub_port = free_port()
    values = {
        "hub_port": str(hub_port),
        "hub_url": f"http://127.0.0.1:{hub_port}",
        "port_a": str(free_port()),
        "port_b": str(free_port()),
        "model_url": "",
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VF_HUB_", "OPENAI_"))}
    env.update(
        HOME=str(home),
        PATH=f"{bindir}:{env.get('PATH', '/usr/bin:/bin')}",
        VIRTUAL_ENV=str(venv),
        VF_HUB_SMOKE_CHECKS="false",
    )
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "PYTHONPATH"):
        env.pop(var, None)
    shell = Shell(work, env, tmp_path / "shell")
    took: list[tuple[str, float, str]] = []  # wall time per command, shown with -rP (a newcomer's path)
    with ExitStack() as stack:
        stack.callback(shell.close)
        if "model_server" in needs:
            from tests.scripted_server import ScriptedServer

            values["model_url"] = stack.enter_context(ScriptedServer()).url
        for item, entry in entries:
            if isinstance(entry, Skip):
                continue
            if isinstance(entry, Check):
                _check(item, entry, shell)
                continue
            if isinstance(item, Block):  # a Python example: a file of its own, run with the venv's python
                script = work / f"doc_example_{item.line}.py"
                script.write_text(_substituted(item, item.text, entry, values))
                ran = f"python {script.name}"
            else:
                ran = _substituted(item, item.text, entry, values)
            started = time.monotonic()
            if entry.background is not None:
                res = shell.start(
                    ran, entry.background.format(**values), tmp_path / f"server-{item.line}.log"
                )
            else:
                res = shell.run(ran)
            assert res.code == 0, _failure(item, ran, res.code, res.tail())
            took.append((item.where, time.monotonic() - started, item.key))
            if entry.expect is not None:
                assert re.search(entry.expect, res.stdout + res.stderr), (
                    f"{item.where}: the output does not show {entry.expect!r}:\n{res.tail()}"
                )
            if entry.capture is not None:
                var, pattern = entry.capture
                found = re.search(pattern, res.stdout + res.stderr)
                assert found, f"{item.where}: printed nothing matching {pattern}:\n{res.tail()}"
                shell.export(var, found.group(0))
                values[var] = found.group(0)
        if (walk := WALKS.get(doc)) is not None:  # the servers the commands started are still up
            took += [(f"{doc} (browser)", seconds, step) for step, seconds in walk(values, work)]
    print(f"wall time per step of {doc} (a newcomer's path):")
    for where, seconds, key in took:
        print(f"{seconds:7.1f} s  {where}  {key[:100]}")
    print(f"{sum(s for _, s, _ in took):7.1f} s  total")
    assert _git_status() == before, f"running {doc}'s commands changed the checkout:\n{_git_status()}"
    assert _test_venv() == installed, f"running {doc}'s commands changed the test venv"
