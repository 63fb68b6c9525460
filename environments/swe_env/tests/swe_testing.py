"""Helpers of the swe-env tests: a tiny task, gold edits from a patch, and scripted agents that fix a task
with its gold edit (through the scripted OpenAI-compatible server)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swe_env.files import RepoFile
from swe_env.task import SweTask

from tests.scripted_server import Reply, tool_call

TINY_CORE = '''"""Tiny arithmetic."""


def add(a, b):
    """The sum of a and b."""
    return a - b


def double(x):
    return x + x


def triple(x):
    return x + x + x
'''

TINY = SweTask(
    task_id="tiny-add",
    problem_statement="`calc.add(2, 3)` returns -1 instead of 5.",
    repo_files={
        "calc/__init__.py": "from calc.core import add, double, triple\n",
        "calc/core.py": TINY_CORE,
        "tests/test_double.py": "from calc import double\n\n\ndef test_double():\n    assert double(4) == 8\n",
        "README.md": "calc: tiny arithmetic\n",
    },
    hidden_tests={
        "tests/test_add.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
    },
    expected={"tests/test_add.py::test_add": "PASSED", "tests/test_double.py::test_double": "PASSED"},
    fail_to_pass=("tests/test_add.py::test_add",),
    pass_to_pass=("tests/test_double.py::test_double",),
    test_cmd="python -m pytest -rA -p no:cacheprovider tests",
    gold_patch=(
        "diff --git a/calc/core.py b/calc/core.py\n--- a/calc/core.py\n+++ b/calc/core.py\n"
        '@@ -4,7 +4,7 @@\n \n def add(a, b):\n     """The sum of a and b."""\n-    return a - b\n'
        "+    return a + b\n \n \n def double(x):\n"
    ),
)


#: A table that is not text (every byte value, NULs included).
BLOB = bytes(range(256)) * 4 + b"\x00\xff\x00"
BLOB_SHA256 = hashlib.sha256(BLOB).hexdigest()

#: A repository that plain text cannot describe: a binary data file, a symlink (README -> the real file),
#: an executable script, and hidden tests that bring a binary fixture and a symlink of their own.
FILES_TASK = SweTask(
    task_id="blobtool-header-length",
    problem_statement=(
        "# `blobtool.header()` is one byte short\n\n"
        "The table format has a four-byte magic header, but `blobtool.header()` returns only three bytes, "
        "so `bin/blobtool` prints `000102` instead of `00010203`.\n"
    ),
    repo_files={
        "blobtool/__init__.py": (
            '"""Reads the packaged table."""\n\nfrom pathlib import Path\n\n'
            'TABLE = Path(__file__).parent / "data" / "table.bin"\n\n\n'
            "def table():\n    return TABLE.read_bytes()\n\n\n"
            "def header():\n"
            '    """The magic header: the first four bytes of the table."""\n'
            "    return table()[:3]\n"
        ),
        "blobtool/data/table.bin": RepoFile(BLOB),
        "bin/blobtool": RepoFile(
            b'#!/bin/sh\ncd "$(dirname "$0")/.." && exec python3 -c "import blobtool; print(blobtool.header().hex())"\n',
            0o755,
        ),
        "README.md": "blobtool: reads a binary table\n",
        "README": RepoFile(symlink="README.md"),
        "tests/test_files.py": (
            "import hashlib, os, subprocess\n\nimport blobtool\n\n\n"
            "def test_table_is_intact():\n"
            f"    assert hashlib.sha256(blobtool.table()).hexdigest() == {BLOB_SHA256!r}\n\n\n"
            "def test_readme_is_a_symlink():\n"
            '    assert os.path.islink("README") and os.readlink("README") == "README.md"\n'
            '    assert open("README").read().startswith("blobtool")\n\n\n'
            "def test_script_is_executable():\n"
            '    assert os.access("bin/blobtool", os.X_OK)\n'
            '    r = subprocess.run(["bin/blobtool"], capture_output=True, text=True)\n'
            "    assert r.returncode == 0, r.stderr\n"
        ),
    },
    hidden_tests={
        "tests/test_header.py": (
            "import pathlib, subprocess\n\nimport blobtool\n\n"
            'FIXTURES = pathlib.Path(__file__).parent / "fixtures"\n\n\n'
            "def test_header_is_four_bytes():\n"
            '    assert blobtool.header() == (FIXTURES / "magic.bin").read_bytes()\n'
            '    assert (FIXTURES / "magic").is_symlink()\n'
            '    assert blobtool.header() == (FIXTURES / "magic").read_bytes()\n\n\n'
            "def test_script_prints_the_header():\n"
            '    r = subprocess.run(["bin/blobtool"], capture_output=True, text=True)\n'
            '    assert r.stdout.strip() == "00010203"\n'
        ),
        "tests/fixtures/magic.bin": RepoFile(b"\x00\x01\x02\x03"),
        "tests/fixtures/magic": RepoFile(symlink="magic.bin"),
    },
    expected={
        "tests/test_header.py::test_header_is_four_bytes": "PASSED",
        "tests/test_header.py::test_script_prints_the_header": "PASSED",
        "tests/test_files.py::test_table_is_intact": "PASSED",
        "tests/test_files.py::test_readme_is_a_symlink": "PASSED",
        "tests/test_files.py::test_script_is_executable": "PASSED",
    },
    fail_to_pass=(
        "tests/test_header.py::test_header_is_four_bytes",
        "tests/test_header.py::test_script_prints_the_header",
    ),
    pass_to_pass=(
        "tests/test_files.py::test_readme_is_a_symlink",
        "tests/test_files.py::test_script_is_executable",
        "tests/test_files.py::test_table_is_intact",
    ),
    test_cmd="python -m pytest -rA -p no:cacheprovider tests",
    gold_patch=(
        "diff --git a/blobtool/__init__.py b/blobtool/__init__.py\n--- a/blobtool/__init__.py\n"
        "+++ b/blobtool/__init__.py\n@@ -12,4 +12,4 @@ def table():\n \n def header():\n"
        '     """The magic header: the first four bytes of the table."""\n'
        "-    return table()[:3]\n+    return table()[:4]\n"
    ),
    meta={"library": "blobtool"},
)


@dataclass(frozen=True)
class Edit:
    path: str
    old: str
    new: str


def gold_edits(patch: str) -> list[Edit]:
    """Each hunk of a unified diff as an (old block, new block) replacement in its file."""
    edits: list[Edit] = []
    path = ""
    old: list[str] | None = None
    new: list[str] = []

    def flush() -> None:
        if old is not None:
            edits.append(Edit(path, "\n".join(old), "\n".join(new)))

    for line in patch.splitlines():
        if line.startswith("+++ "):
            flush()
            old = None
            path = line[4:].strip().removeprefix("b/")
        elif line.startswith("--- ") or line.startswith("diff ") or line.startswith("index "):
            continue
        elif line.startswith("@@"):
            flush()
            old, new = [], []
        elif old is not None and not line.startswith("\\"):
            tag, body = (line[0], line[1:]) if line else (" ", "")
            if tag in " -":
                old.append(body)
            if tag in " +":
                new.append(body)
    flush()
    return edits


def _task_of(body: dict[str, Any], tasks: list[SweTask]) -> SweTask:
    first_user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return next(t for t in tasks if t.problem_statement.strip() in first_user)


def _step(body: dict[str, Any]) -> int:
    return sum(1 for m in body["messages"] if m["role"] == "assistant")


def r2e_gold_agent(tasks: list[SweTask], root: str = "/workspace/repo") -> Callable[[dict[str, Any]], Reply]:
    """A scripted R2E agent: views the file of the first gold hunk, applies every hunk with
    ``str_replace``, runs the tests with ``execute_bash``, then calls ``finish``."""

    def handler(body: dict[str, Any]) -> Reply:
        task = _task_of(body, tasks)
        assert task.gold_patch is not None
        edits = gold_edits(task.gold_patch)
        plan: list[tuple[str, dict[str, Any]]] = [
            ("file_editor", {"command": "view", "path": f"{root}/{edits[0].path}"}),
            ("search", {"search_term": edits[0].old.strip().splitlines()[0].strip()}),
        ]
        plan += [
            (
                "file_editor",
                {"command": "str_replace", "path": f"{root}/{e.path}", "old_str": e.old, "new_str": e.new},
            )
            for e in edits
        ]
        plan += [("execute_bash", {"cmd": "git diff"}), ("finish", {"command": "submit", "result": "done"})]
        step = _step(body)
        name, args = plan[min(step, len(plan) - 1)]
        return Reply(content=f"Step {step}.", tool_calls=[tool_call(name, args, call_id=f"call_{step}")])

    return handler


def mini_gold_agent(tasks: list[SweTask]) -> Callable[[dict[str, Any]], Reply]:
    """A scripted mini-swe-agent: reads the file, makes a format error, applies the gold patch with
    ``git apply`` from a heredoc, then submits with ``git diff``."""

    def handler(body: dict[str, Any]) -> Reply:
        task = _task_of(body, tasks)
        assert task.gold_patch is not None
        first = gold_edits(task.gold_patch)[0].path
        replies = [
            f"THOUGHT: look first.\n\n```bash\nnl -ba {first} | head -40\n```",
            "THOUGHT: two at once.\n\n```bash\nls\n```\n\n```bash\npwd\n```",
            # the patch as it is: a trailing blank context line (" ") must survive
            f"THOUGHT: apply the fix.\n\n```bash\ngit apply <<'EOF'\n{task.gold_patch.rstrip(chr(10))}\nEOF\n```",
            "THOUGHT: done.\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached\n```",
        ]
        return Reply(content=replies[min(_step(body), len(replies) - 1)])

    return handler


def results_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (path / "results.jsonl").read_text().splitlines()]
