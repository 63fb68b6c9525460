"""A plain `python3 -c …` / `python3 script.py …` runs inside the agent's pre-forked interpreter instead of
exec'ing a new one. It must behave like the real interpreter; anything it cannot mirror takes the exec path.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from verifiers.sandbox import Sandbox
from verifiers.sandbox._agent import inline_python_plan

pytestmark = pytest.mark.sandbox

PY = "python3"


async def run(sandbox: Sandbox, code: str, *args: str, stdin: bytes | None = None, env=None):
    return await sandbox.exec([PY, "-c", code, *args], stdin=stdin, env=env)


async def test_the_fast_path_is_taken(sandbox: Sandbox) -> None:
    """Else the comparisons below would compare the exec path with itself. sys.flags is what shows it: the
    agent's interpreter runs with -I -S -B."""
    probe = "import sys; print(sys.flags.isolated)"
    assert (await run(sandbox, probe)).stdout == "1\n"
    assert (await run(sandbox, probe, env={"PYTHONHASHSEED": "0"})).stdout == "0\n"


async def test_argv_main_path_and_exit_codes(sandbox: Sandbox) -> None:
    r = await run(sandbox, "import sys; print(sys.argv, __name__, sys.path[0] == ''); exit(3)", "a", "b")
    assert (r.exit_code, r.stdout) == (3, "['-c', 'a', 'b'] __main__ True\n")
    r = await run(sandbox, "import sys; sys.exit('bye')")
    assert (r.exit_code, r.stderr) == (1, "bye\n")
    r = await run(sandbox, "raise ValueError('boom')")
    assert r.exit_code == 1 and r.stderr.rstrip().endswith("ValueError: boom")


async def test_stdio_environment_and_unicode(sandbox: Sandbox) -> None:
    r = await run(sandbox, "import sys; print(sys.stdin.read().upper(), end='')", stdin=b"hello\n")
    assert r.stdout == "HELLO\n"
    r = await run(sandbox, "import os; print(os.environ['FOO'], os.getcwd() != '')", env={"FOO": "bar"})
    assert r.stdout == "bar True\n"
    r = await run(sandbox, "print('é✓')")
    assert r.stdout == "é✓\n"


async def test_threads_are_joined_and_atexit_runs(sandbox: Sandbox) -> None:
    code = (
        "import atexit, threading, time\n"
        "atexit.register(lambda: print('atexit', flush=True))\n"
        "def f():\n    time.sleep(0.2); print('thread', flush=True)\n"
        "threading.Thread(target=f).start()\n"
    )
    r = await run(sandbox, code)
    assert (r.exit_code, r.stdout) == (0, "thread\natexit\n")


async def test_scripts_get_their_own_argv_and_path(sandbox: Sandbox) -> None:
    await sandbox.write_file("pkg/helper.py", "VALUE = 41\n")
    await sandbox.write_file(
        "pkg/main.py", "import sys, helper\nprint(sys.argv, helper.VALUE + 1, __name__)\n"
    )
    r = await sandbox.exec([PY, "pkg/main.py", "x"])
    assert (r.exit_code, r.stdout) == (0, "['pkg/main.py', 'x'] 42 __main__\n")


TWO_LINES = b"1\n2\n"


@pytest.mark.parametrize(
    ("code", "stdin", "env"),
    [
        ("import sys; print(sys.argv[1:], end='')", TWO_LINES, {}),
        ("import sys; sys.stdout.write('x' * 70000); sys.stderr.write('e')", TWO_LINES, {}),
        ("print(input()); print(input())", TWO_LINES, {}),
        (
            "import sys; print(sys.getdefaultencoding(), sys.stdout.encoding, type(exit).__name__)",
            TWO_LINES,
            {},
        ),
        ("raise SystemExit(7)", TWO_LINES, {}),
        ("import os; os._exit(5)", TWO_LINES, {}),
        # stdin as the interpreter reads it: no newline translation, undecodable bytes kept as surrogates
        ("import sys; print(repr(sys.stdin.read()))", b"a\r\nb\rc\xff\n", {}),
        ("import sys; print(repr(sys.stdin.read()))", b"\xff\n", {"PYTHONIOENCODING": "utf-8"}),
        ("print('\\udcff')", None, {}),
        (
            "import sys; print(sys.stdin, sys.stdout, sys.stderr.line_buffering, sys.__stdout__ is sys.stdout)",
            None,
            {},
        ),
        (
            "import sys; print(sys.stdout.write_through, sys.stderr.line_buffering)",
            None,
            {"PYTHONUNBUFFERED": "1"},
        ),
        # uncaught exceptions: the program's traceback only, through sys.excepthook
        ("def f():\n    raise ValueError('boom')\nf()", None, {}),
        ("def broken(:", None, {}),
        (
            "import sys; sys.excepthook = lambda t, v, tb: print('hook', t.__name__, file=sys.stderr); 1/0",
            None,
            {},
        ),
        ("raise KeyboardInterrupt", None, {}),
        # the program is compiled as the interpreter compiles it, in the same kind of __main__
        ("def f(x: int): pass\nprint(f.__annotations__)", None, {}),
        ("print(sorted(globals()), __loader__, __spec__)", None, {}),
        ("import sys, site; print(sys.orig_argv, site.ENABLE_USER_SITE)", None, {}),
    ],
)
async def test_inline_runs_match_the_real_interpreter(
    sandbox: Sandbox, code: str, stdin: bytes | None, env: dict[str, str]
) -> None:
    # A PYTHONHASHSEED forces the ordinary exec path: the two must agree.
    inline = await run(sandbox, code, "a", stdin=stdin, env=env)
    real = await run(sandbox, code, "a", stdin=stdin, env={**env, "PYTHONHASHSEED": "0"})
    assert (inline.exit_code, inline.stdout, inline.stderr) == (real.exit_code, real.stdout, real.stderr)


async def test_inline_scripts_match_the_real_interpreter(sandbox: Sandbox) -> None:
    await sandbox.write_file(
        "pkg/boom.py", "import sys\nprint(__file__, sorted(globals()), sys.path[0])\nraise ValueError(1)\n"
    )
    for argv in ([PY, "pkg/boom.py"], [PY, "./pkg/../pkg/boom.py"]):
        inline = await sandbox.exec(argv)
        real = await sandbox.exec(argv, env={"PYTHONHASHSEED": "0"})
        assert (inline.exit_code, inline.stdout, inline.stderr) == (real.exit_code, real.stdout, real.stderr)
        assert inline.stderr.startswith(f'Traceback (most recent call last):\n  File "{sandbox.workdir}/')
    # What it cannot run itself, the interpreter runs (and reports).
    r = await sandbox.exec([PY, "missing.py"])
    assert r.exit_code == 2 and "can't open file" in r.stderr


async def test_a_broken_pipe_ends_the_writer(sandbox: Sandbox) -> None:
    r = await sandbox.exec(["sh", "-c", f"{PY} -c 'for i in range(10**6): print(i)' | head -n 2"])
    assert (r.exit_code, r.stdout) == (0, "0\n1\n")


def test_what_takes_the_exec_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.py").write_text("pass\n")
    (tmp_path / "pkg").mkdir()
    env = {"PATH": "/nonexistent", "LC_ALL": "C.UTF-8"}
    assert inline_python_plan([sys.executable, "-c", "pass"], env) == ("<string>", "pass")
    assert inline_python_plan([sys.executable, "s.py", "a"], env) == (str(tmp_path / "s.py"), b"pass\n")
    assert inline_python_plan([sys.executable, "missing.py"], env) is None  # the interpreter reports it
    assert inline_python_plan([sys.executable, "pkg"], env) is None  # a directory (or zip, .pyc)
    assert inline_python_plan([sys.executable, "-S", "-c", "pass"], env) is None  # other flags
    assert inline_python_plan([sys.executable, "-c", "pass"], {**env, "PYTHONPATH": "x"}) is None
    assert inline_python_plan([sys.executable, "-c", "pass"], {**env, "LC_ALL": "C"}) is None  # locale
    assert inline_python_plan(["/bin/sh", "-c", "true"], env) is None  # another executable
    assert inline_python_plan(["python3", "-c", "pass"], env) is None  # not found on PATH
