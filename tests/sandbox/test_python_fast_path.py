"""A plain `python3 -c …` / `python3 script.py …` runs inside the agent's pre-forked interpreter instead of
exec'ing a new one. It must behave like the real interpreter; anything it cannot mirror takes the exec path.
"""

from __future__ import annotations

import pytest

from verifiers.sandbox import Sandbox
from verifiers.sandbox._agent import inline_python_plan

pytestmark = pytest.mark.sandbox

PY = "python3"


async def run(sandbox: Sandbox, code: str, *args: str, stdin: bytes | None = None, env=None):
    return await sandbox.exec([PY, "-c", code, *args], stdin=stdin, env=env)


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


@pytest.mark.parametrize(
    "code",
    [
        "import sys; print(sys.argv[1:], end='')",
        "import sys; sys.stdout.write('x' * 70000); sys.stderr.write('e')",
        "print(input()); print(input())",
        "import sys; print(sys.getdefaultencoding(), sys.stdout.encoding, type(exit).__name__)",
        "raise SystemExit(7)",
        "import os; os._exit(5)",
    ],
)
async def test_inline_runs_match_the_real_interpreter(sandbox: Sandbox, code: str) -> None:
    # A PYTHONHASHSEED forces the ordinary exec path: the two must agree.
    inline = await run(sandbox, code, "a", stdin=b"1\n2\n")
    real = await run(sandbox, code, "a", stdin=b"1\n2\n", env={"PYTHONHASHSEED": "0"})
    assert (inline.exit_code, inline.stdout, inline.stderr) == (real.exit_code, real.stdout, real.stderr)


async def test_a_broken_pipe_ends_the_writer(sandbox: Sandbox) -> None:
    r = await sandbox.exec(["sh", "-c", f"{PY} -c 'for i in range(10**6): print(i)' | head -n 2"])
    assert (r.exit_code, r.stdout) == (0, "0\n1\n")


def test_what_takes_the_exec_path() -> None:
    import sys

    env = {"PATH": "/nonexistent"}
    assert inline_python_plan([sys.executable, "-c", "pass"], env) == ("-c", "pass")
    assert inline_python_plan([sys.executable, "s.py", "a"], env) == ("script", "s.py")
    assert inline_python_plan([sys.executable, "-S", "-c", "pass"], env) is None  # other flags
    assert inline_python_plan([sys.executable, "-c", "pass"], {"PYTHONPATH": "x"}) is None
    assert inline_python_plan(["/bin/sh", "-c", "true"], env) is None  # another executable
    assert inline_python_plan(["python3", "-c", "pass"], env) is None  # not found on PATH
