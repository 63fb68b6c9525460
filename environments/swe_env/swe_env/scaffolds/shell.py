"""Running the model's shell commands in the sandbox: each in a fresh shell in the repository.

A command line that bash would run as one plain program (no expansion, redirection, pipe, glob, builtin
or assignment) is exec'd directly from its words: the same program, arguments and environment as
``bash -c`` would give it, without the extra ``execve`` of bash itself (each ``execve`` is a round trip
through gVisor's sentry under runsc). A plain ``python3 -c``/``python3 x.py`` then even takes the
sandbox's Python fast path. Everything else runs under ``bash -c``.
"""

from __future__ import annotations

import shlex
import string
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from verifiers.sandbox import ExecResult, Sandbox

_PLAIN = frozenset(string.ascii_letters + string.digits + "_-./=:,+@%^ \t")
#: bash builtins and keywords: they must run in bash (or behave differently as programs).
_BUILTINS = frozenset(
    """alias bg bind break builtin caller case cd command compgen complete compopt continue coproc declare
    dirs disown do done echo elif else enable esac eval exec exit export false fc fg fi for function getopts
    hash help history if in jobs kill let local logout mapfile popd printf pushd pwd read readarray readonly
    return select set shift shopt source suspend test then time times trap true type typeset ulimit umask
    unalias unset until wait while . : [ [[ ]] { } !""".split()  # noqa: SIM905 - a word list reads better
)


def direct_argv(command: str) -> list[str] | None:
    """The argv bash would exec for ``command`` if it is one plain program call, else ``None``."""
    quote: str | None = None
    for ch in command:
        if quote == "'":  # everything is literal inside single quotes
            if ch == "'":
                quote = None
            continue
        if ch in "$`\\!\n":  # expansions (also inside double quotes), escapes, several lines
            return None
        if quote == '"':
            if ch == '"':
                quote = None
            continue
        if ch in "'\"":
            quote = ch
        elif ch not in _PLAIN:
            return None  # | & ; < > ( ) * ? [ ] { } ~ # …
    if quote is not None:
        return None
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    if not argv or argv[0] in _BUILTINS or "=" in argv[0]:
        return None
    return argv


async def run_command(
    sandbox: Sandbox,
    command: str,
    *,
    cwd: str,
    timeout: float,  # noqa: ASYNC109 - the command's budget, enforced in the sandbox
    env: Mapping[str, str] | None = None,
    stderr_to_stdout: bool = False,
) -> ExecResult:
    """Run ``command`` as ``bash -c`` would, in a fresh process tree, from ``cwd``."""
    argv = direct_argv(command) or ["bash", "-c", command]
    return await sandbox.exec(argv, cwd=cwd, timeout=timeout, env=env, stderr_to_stdout=stderr_to_stdout)
