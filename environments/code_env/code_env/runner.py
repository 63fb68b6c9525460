"""Test runner executed *inside* the sandbox: ``python3 -I runner.py <bundle dir>``.

It is never imported by ``code_env``; its source is uploaded with every problem, so it must stay a
self-contained, standard-library-only script for any Python 3.8+ (the sandbox's own interpreter).

The bundle holds ``solution.py`` and ``tests.json`` (``mode``, ``fn_name``, ``inputs``, limits) but no
expected outputs: those stay outside the sandbox, so a solution cannot read them, and comparing happens
outside too. The runner compiles the solution once, then runs every test in its own forked process
(fresh interpreter state, its own process group, CPU/memory/file-size limits and a wall-clock timeout)
and prints one JSON report line: ``{"results": [{"status", "out", "error", "time"}, ...]}``.

Statuses: ``ok`` (ran to completion), ``error`` (exception, non-zero exit, unserialisable result),
``timeout`` (wall clock or CPU limit), ``killed`` (other signal, e.g. output or memory limit).
"""

import gc
import json
import os
import resource
import select
import signal
import sys
import time
import types

#: How the commonest deaths by signal are reported (others as "killed by signal N").
SIGNAL_NAMES = {
    signal.SIGXFSZ: "output limit exceeded",
    signal.SIGSEGV: "segmentation fault (deep recursion?)",
    signal.SIGKILL: "killed (SIGKILL)",
}


def _prelude():
    """Names function-call solutions commonly use without importing (LeetCode style); imported once
    here so that every forked test gets them for free."""
    import bisect
    import collections
    import functools
    import heapq
    import itertools
    import math
    import re
    import string
    import typing

    names = {n: getattr(typing, n) for n in typing.__all__ if hasattr(typing, n)}
    for mod in (bisect, collections, functools, heapq, itertools, math, re, string, typing):
        names[mod.__name__] = mod
    return names


def _lower_limit(kind, soft, hard=None):
    """Lower a resource limit, the hard one too so the solution cannot raise it back (never above
    the hard limit the sandbox already imposes)."""
    _, current = resource.getrlimit(kind)
    hard = soft if hard is None else hard
    if current != resource.RLIM_INFINITY:
        soft, hard = min(soft, current), min(hard, current)
    resource.setrlimit(kind, (soft, hard))


def _limits(spec):
    mem = int(spec.get("memory_mb") or 0) * 1024 * 1024
    if mem:
        _lower_limit(resource.RLIMIT_AS, mem)
    out = int(spec.get("max_output_bytes") or 0)
    if out:
        _lower_limit(resource.RLIMIT_FSIZE, out)
    cpu = int(float(spec["timeout"])) + 1
    _lower_limit(resource.RLIMIT_CPU, cpu, cpu + 1)  # SIGXCPU first, SIGKILL a second later


def _child(code, spec, index, paths, prelude):
    """Runs in the forked process; never returns."""
    status = 1
    try:
        os.setpgid(0, 0)
        _limits(spec)
        stdin_fd = os.open(paths["in"], os.O_RDONLY)
        out_fd = os.open(paths["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        err_fd = os.open(paths["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        for fd, target in ((stdin_fd, 0), (out_fd, 1), (err_fd, 2)):
            os.dup2(fd, target)
            os.close(fd)
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 - lives as long as the process
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False, buffering=1)  # noqa: SIM115
        sys.argv = ["solution.py"]
        call_mode = spec["mode"] == "call"
        module = types.ModuleType("solution" if call_mode else "__main__")
        module.__file__ = "solution.py"
        sys.modules[module.__name__] = module  # dataclasses, pickle and friends look modules up
        if call_mode:
            module.__dict__.update(prelude)
        exec(code, module.__dict__)
        if call_mode:
            value = _call(module.__dict__, spec["fn_name"], spec["inputs"][index])
            try:
                data = json.dumps(value)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"the return value is not JSON-serialisable: {exc}") from None
            with open(paths["result"], "w") as f:
                f.write(data)
        status = 0
    except SystemExit as exc:
        code_ = exc.code
        status = code_ if isinstance(code_, int) else (0 if code_ is None else 1)
        if not isinstance(code_, int) and code_ is not None:
            print(code_, file=sys.stderr)
    except BaseException:
        sys.excepthook(*sys.exc_info())  # the C implementation: no traceback module to import
        status = 1
    finally:
        try:
            sys.stdout.flush()
        except BaseException:
            status = status or 1
        os._exit(status)


def _call(namespace, fn_name, args):
    cls = namespace.get("Solution")
    fn = getattr(cls(), fn_name, None) if isinstance(cls, type) else namespace.get(fn_name)
    if not callable(fn):
        raise NameError(f"no function {fn_name!r} found (define it, or a Solution class with it)")
    if isinstance(args, dict):
        return fn(**args)
    return fn(*args)


def _wait(pid, timeout):
    """(wait status, timed out): waits at most ``timeout`` seconds, then kills the process group."""
    deadline = time.monotonic() + timeout
    pidfd = None
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # old kernel or a sandbox without pidfd: poll instead
        pidfd = None
    timed_out = False
    try:
        if pidfd is not None:
            poller = select.poll()
            poller.register(pidfd, select.POLLIN)
            timed_out = not poller.poll(max(0.0, timeout) * 1000)
        else:
            pause = 0.0005
            while True:
                reaped, wait_status = os.waitpid(pid, os.WNOHANG)
                if reaped:
                    _kill_group(pid)
                    return wait_status, False
                if time.monotonic() >= deadline:
                    timed_out = True
                    break
                time.sleep(pause)
                pause = min(pause * 2, 0.02)
    finally:
        if pidfd is not None:
            os.close(pidfd)
    _kill_group(pid)  # leftovers the solution spawned, or the solution itself on timeout
    _, wait_status = os.waitpid(pid, 0)
    return wait_status, timed_out


def _kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _read(path, limit):
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode("utf-8", "replace")
    except FileNotFoundError:
        return ""


def _run_one(code, spec, index, workdir, prelude):
    paths = {k: os.path.join(workdir, f"{k}_{index}") for k in ("in", "out", "err", "result")}
    with open(paths["in"], "w") as f:
        f.write(spec["inputs"][index] if spec["mode"] == "stdin" else "")
    sys.stdout.flush()
    sys.stderr.flush()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(code, spec, index, paths, prelude)
    try:  # also here, so a timeout kill cannot race the child's own setpgid
        os.setpgid(pid, pid)
    except OSError:
        pass
    wait_status, timed_out = _wait(pid, float(spec["timeout"]))
    elapsed = time.monotonic() - start
    limit = int(spec.get("max_output_bytes") or 1 << 24)
    result = {"status": "ok", "out": None, "error": None, "time": round(elapsed, 4)}
    stderr = _read(paths["err"], limit)[-2000:]
    if timed_out:
        result["status"] = "timeout"
    elif os.WIFSIGNALED(wait_status):
        sig = os.WTERMSIG(wait_status)
        result["status"] = "timeout" if sig == signal.SIGXCPU else "killed"
        result["error"] = SIGNAL_NAMES.get(sig, f"killed by signal {sig}")
    elif os.WEXITSTATUS(wait_status) != 0:
        result["status"] = "error"
        result["error"] = stderr or f"exit status {os.WEXITSTATUS(wait_status)}"
    elif spec["mode"] == "call":
        raw = _read(paths["result"], limit)
        try:
            result["out"] = json.loads(raw)
        except ValueError:
            result["status"] = "error"
            result["error"] = stderr or "the function returned no result (did the process exit early?)"
    else:
        result["out"] = _read(paths["out"], limit)
    for path in paths.values():
        try:
            os.unlink(path)
        except OSError:
            pass
    return result


def _run_guarded(code, spec, index, workdir, prelude):
    """One test; whatever a previous test's solution did to the work directory (it runs as the same
    user and may delete it) only fails the tests it spoilt."""
    try:
        os.makedirs(workdir, exist_ok=True)
        return _run_one(code, spec, index, workdir, prelude)
    except Exception as exc:
        return {"status": "error", "out": None, "error": f"runner: {type(exc).__name__}: {exc}", "time": 0.0}


def _remove_tree(path):
    """``shutil.rmtree(path, ignore_errors=True)`` without importing shutil."""
    try:
        entries = list(os.scandir(path))
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                _remove_tree(entry.path)
            else:
                os.unlink(entry.path)
        except OSError:
            pass
    try:
        os.rmdir(path)
    except OSError:
        pass


def main():
    workdir = sys.argv[1]
    # Tells the caller the runner itself started: a missing report after this is the solution's doing.
    sys.stdout.write("VF-CODE-RUNNER-STARTED\n")
    sys.stdout.flush()
    with open(os.path.join(workdir, "tests.json")) as f:
        spec = json.load(f)
    with open(os.path.join(workdir, "solution.py"), "rb") as f:
        source = f.read()
    try:
        code = compile(source, "solution.py", "exec")
    except (SyntaxError, ValueError) as exc:
        import traceback  # only for this rare case: imports cost time in gVisor

        error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        results = [{"status": "error", "out": None, "error": error, "time": 0.0} for _ in spec["inputs"]]
    else:
        prelude = _prelude() if spec["mode"] == "call" else {}
        gc.freeze()  # the children's collector then leaves the runner's objects (and their pages) alone
        results = [_run_guarded(code, spec, i, workdir, prelude) for i in range(len(spec["inputs"]))]
    _remove_tree(workdir)  # a reused sandbox starts the next problem clean
    sys.stdout.write(json.dumps({"results": results}) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
