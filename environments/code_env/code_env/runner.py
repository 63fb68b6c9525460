"""Test runner executed *inside* the sandbox: ``python3 runner.py <bundle dir>`` (``code_env.scoring`` runs
its code object precompiled when it can, through a short ``python3 -c`` loader).

It is never imported by ``code_env``; its source is uploaded with every problem, so it must stay a
self-contained, standard-library-only script for any Python 3.8+ (the sandbox's own interpreter).

The bundle holds ``solution.py`` and ``tests.json`` (``mode``, ``fn_name``, ``inputs``, limits, and the
optional ``header`` and ``stop_on_failure``) but no expected outputs: those stay outside the sandbox, so a solution cannot read them, and comparing happens
outside too. The runner compiles the solution once and prints one JSON report line:
``{"results": [{"status", "out", "error", "time"}, ...]}``.

Statuses: ``ok`` (ran to completion), ``error`` (exception, non-zero exit, unserialisable result),
``timeout`` (wall clock or CPU limit), ``killed`` (other signal, e.g. output or memory limit), ``skipped``
(not run: ``stop_on_failure`` and an earlier test did not run to completion).

``header`` is Python source the runner executes once, before the tests; the names it defines are predefined
in every test's namespace (both modes), in place of the default names of call tests (see ``_prelude``).

How tests run: process creation is the dominant cost under gVisor's ptrace platform (~15-35 ms a fork),
so the runner forks one *test process* that runs the tests one after another and streams one JSON line
per test back over a pipe. Each test still gets
- a fresh namespace: the compiled solution is executed again in a new module (``__main__`` for stdin
  tests, with fresh stdin/stdout/stderr on fresh files; ``solution`` for call tests, a fresh
  ``Solution()`` per call), with the working directory, ``sys.argv``, the recursion limit, the standard
  streams, ``sys.excepthook`` and the ``builtins`` module restored;
- its own wall-clock timeout: an interval timer in the test process (which then carries on with the next
  test), backed by a deadline in the runner that kills the test process when the timer cannot fire (code
  stuck in C, a stopped process);
- its own CPU budget (checked from the process's CPU times after the test), and processes it started are
  killed after it.
When the test process dies or is killed (timeout, segfault, ``os._exit``, a killed process group), that
test is scored from how it ended, exactly as with one process per test, and a fresh test process runs the
remaining tests. A fresh one also takes over after a test that timed out, ran out of memory or left
threads running, and before a test whose CPU budget the process's CPU limit could no longer cover; a
test that ran out of memory in a process that had already run other tests is run again in a fresh one.
What a solution changes in imported modules (other than the above) is seen by its later tests, as on
judges that run every test in one process.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import select
import signal
import sys
import time
import types

TYPE_CHECKING = False
if TYPE_CHECKING:  # the runner imports nothing it does not use: every import costs time under gVisor
    from typing import Any

#: How the commonest deaths by signal are reported (others as "killed by signal N").
SIGNAL_NAMES: dict[int, str] = {
    signal.SIGXFSZ: "output limit exceeded",
    signal.SIGSEGV: "segmentation fault (deep recursion?)",
    signal.SIGXCPU: "CPU time limit exceeded",
    signal.SIGKILL: "killed (SIGKILL)",
}
#: Seconds the runner waits past a test's timeout before it kills the test process: room for the
#: process's own timer to stop the test and report (the verdict is a timeout either way).
GRACE = 0.5
#: First field of a line that reports a test the test process did not run (a fresh one must).
STOP = "stop"


class TestTimeout(BaseException):
    """Raised inside a test by the interval timer (a BaseException: ``except Exception`` in a solution
    does not swallow it)."""


class TestClock:
    """The test process's per-test wall-clock timer."""

    def __init__(self) -> None:
        self.armed = False
        self.fired = False

    def handler(self, signum: int, frame: object) -> None:
        if self.armed:
            self.fired = True
            raise TestTimeout

    def arm(self, seconds: float) -> None:
        if signal.getsignal(signal.SIGALRM) != self.handler:  # the previous test may have replaced it
            signal.signal(signal.SIGALRM, self.handler)
        self.fired = False
        self.armed = True
        signal.setitimer(signal.ITIMER_REAL, seconds)

    def disarm(self) -> None:
        # The timer itself keeps running (the next test's ``arm`` resets it; stopping it would cost a
        # system call): a late signal is ignored, and interrupted system calls are retried (PEP 475).
        self.armed = False


#: Modules function-call solutions commonly use without importing (LeetCode style).
PRELUDE_MODULES = (
    "bisect",
    "collections",
    "functools",
    "heapq",
    "itertools",
    "math",
    "re",
    "string",
    "typing",
)


def _prelude(source: str) -> dict[str, Any]:
    """The predefined names of function-call tests (``typing``'s names and ``PRELUDE_MODULES``),
    imported here once so that every test gets them for free. Only the modules the source mentions
    (any mention: a name, an attribute, a string for ``eval``) are imported: an import costs
    milliseconds under gVisor, and a module the source never names cannot be looked up by it."""
    import typing  # the sandbox agent has it loaded already

    names: dict[str, Any] = {n: getattr(typing, n) for n in typing.__all__ if hasattr(typing, n)}
    for name in PRELUDE_MODULES:
        if name in source:
            names[name] = __import__(name)
    return names


def _header_prelude(header: str) -> dict[str, Any]:
    """The names ``header`` defines (dunder names aside), from one execution in the runner: imports and
    settings it makes (``sys.setrecursionlimit``) are in place before the test processes are forked."""
    names: dict[str, Any] = {"__name__": "__header__"}
    exec(compile(header, "header.py", "exec", dont_inherit=True), names)
    return {k: v for k, v in names.items() if not (k.startswith("__") and k.endswith("__"))}


def _lower_limit(kind: int, soft: int, hard: int | None = None) -> None:
    """Lower a resource limit, the hard one too so the solution cannot raise it back (never above
    the hard limit the sandbox already imposes)."""
    _, current = resource.getrlimit(kind)
    hard = soft if hard is None else hard
    if current != resource.RLIM_INFINITY:
        soft, hard = min(soft, current), min(hard, current)
    resource.setrlimit(kind, (soft, hard))


def _cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


class Job:
    """What every test process needs: the solution, the tests and where their files go."""

    def __init__(self, code: types.CodeType, spec: dict[str, Any], workdir: str, prelude: dict[str, Any]):
        self.code = code
        self.spec = spec
        self.workdir = workdir
        self.prelude = prelude
        self.cwd = os.getcwd()
        self.call_mode = spec["mode"] == "call"
        self.n = len(spec["inputs"])
        self.timeout = float(spec["timeout"])
        #: CPU seconds a test may use (the per-process limit of one process per test, as before).
        self.cpu_budget = int(self.timeout) + 1
        self.output_limit = int(spec.get("max_output_bytes") or 1 << 24)
        self.stop_on_failure = bool(spec.get("stop_on_failure"))
        #: Prelude names bound to the runner's standard streams (``from sys import *`` in a header): each
        #: test gets its own streams under those names.
        runner_streams = (sys.stdin, sys.stdout, sys.stderr)
        self.stream_names = {
            name: i
            for name, value in prelude.items()
            for i, stream in enumerate(runner_streams)
            if value is stream
        }

    def path(self, kind: str, index: int) -> str:
        return os.path.join(self.workdir, f"{kind}_{index}")


# --- the test process ------------------------------------------------------------------------------
class TestProcess:
    """Runs tests ``start``, ``start + 1``, ... in the forked test process, one report line each."""

    def __init__(self, job: Job, start: int, report_fd: int) -> None:
        self.job = job
        self.start = start
        self.report_fd = report_fd
        self.pid = os.getpid()
        self.runner_group = os.getpgid(os.getppid())
        self.clock = TestClock()
        import builtins

        self.builtins = builtins.__dict__
        self.saved_builtins = dict(builtins.__dict__)
        self.recursion_limit = sys.getrecursionlimit()
        getter = getattr(sys, "get_int_max_str_digits", None)
        self.int_digits = getter() if getter else None
        self.cpu_cap = 0
        self.cpu_seconds = 0.0  # CPU time of this process so far (as of the end of the last test)
        self.streams: tuple[Any, Any, Any] = (sys.stdin, sys.stdout, sys.stderr)

    def main(self) -> None:
        """Never returns."""
        status = 1
        try:
            os.setpgid(0, 0)
            self._limits()
            for index in range(self.start, self.job.n):
                if index > self.start and self.cpu_seconds + self.job.cpu_budget > self.cpu_cap:
                    self._send({"i": index, STOP: "cpu"})  # the CPU limit could cut this test short
                    break
                status = 1
                report, keep_going = self._run(index)
                # Should the report pipe be gone (the solution closed it), the runner scores the test
                # from the exit status instead, as it would a process that exited.
                status = 0 if report.get("status") == "ok" else 1
                self._send(report)
                if STOP in report:
                    break
                if not keep_going:
                    if index + 1 < self.job.n:
                        self._send({"i": index + 1, STOP: "fresh"})
                    break
            status = 0
        except BaseException:
            pass
        finally:
            os._exit(status)

    def _limits(self) -> None:
        spec = self.job.spec
        mem = int(spec.get("memory_mb") or 0) * 1024 * 1024
        if mem:
            _lower_limit(resource.RLIMIT_AS, mem)
        out = int(spec.get("max_output_bytes") or 0)
        if out:
            _lower_limit(resource.RLIMIT_FSIZE, out)
        # One CPU limit for the whole process (a process cannot raise it again between tests): the
        # sandbox's own limit, or every remaining test's budget. ``main`` hands over to a fresh process
        # before a test whose budget no longer fits, so no test is cut short by an earlier one's usage.
        soft, _ = resource.getrlimit(resource.RLIMIT_CPU)
        cap = self.job.cpu_budget * (self.job.n - self.start)
        if soft != resource.RLIM_INFINITY:
            cap = min(cap, soft)
        self.cpu_cap = max(cap, 1)
        _lower_limit(resource.RLIMIT_CPU, self.cpu_cap, self.cpu_cap + 1)  # SIGXCPU, then SIGKILL

    def _send(self, report: dict[str, Any]) -> None:
        data = (json.dumps(report) + "\n").encode()
        while data:
            data = data[os.write(self.report_fd, data) :]

    def _streams(self, index: int) -> bool:
        """Fresh stdin/stdout/stderr on fds 0-2 for this test; False when its input file is gone."""
        job = self.job
        try:
            os.chdir(job.cwd)
        except OSError:
            pass
        write = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        # A call test reads nothing, and its printing is not looked at.
        files = [
            (os.devnull, os.O_RDONLY) if job.call_mode else (job.path("in", index), os.O_RDONLY),
            (os.devnull, os.O_WRONLY) if job.call_mode else (job.path("out", index), write),
            (job.path("err", index), write),
        ]
        for target, (path, flags) in enumerate(files):
            # Closed first, the descriptor is the lowest free one: the target itself (one system call
            # less than open + dup2 + close, and each costs ~0.1 ms under gVisor).
            try:
                os.close(target)
            except OSError:
                pass  # the previous test closed it
            try:
                fd = os.open(path, flags, 0o600)
            except FileNotFoundError:
                if target == 0:  # a previous test deleted the input: the runner writes it again
                    return False
                os.makedirs(job.workdir, exist_ok=True)
                fd = os.open(path, flags, 0o600)
            if fd != target:
                os.dup2(fd, target)
                os.close(fd)
        # An explicit buffer size spares the isatty() probe.
        sys.stdin = open(0, encoding="utf-8", closefd=False, buffering=1 << 16)  # noqa: SIM115 - the test's
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False, buffering=1 << 13)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False, buffering=1)  # noqa: SIM115
        sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr  # type: ignore[misc]
        self.streams = (sys.stdin, sys.stdout, sys.stderr)
        return True

    def _run(self, index: int) -> tuple[dict[str, Any], bool]:
        """(report line, whether this process may run the next test)."""
        job = self.job
        if not self._streams(index):
            return {"i": index, STOP: "input"}, False
        sys.argv = ["solution.py"]
        sys.excepthook = sys.__excepthook__
        sys.setrecursionlimit(self.recursion_limit)
        if self.int_digits is not None:
            sys.set_int_max_str_digits(self.int_digits)
        module = types.ModuleType("solution" if job.call_mode else "__main__")
        module.__file__ = "solution.py"
        sys.modules[module.__name__] = module  # dataclasses, pickle and friends look modules up
        module.__dict__.update(job.prelude)
        for name, stream in job.stream_names.items():
            module.__dict__[name] = self.streams[stream]
        report: dict[str, Any] = {"i": index, "status": "ok"}
        keep_going = True
        exit_code = 0
        cpu0 = self.cpu_seconds
        start = time.monotonic()
        try:
            try:
                self.clock.arm(job.timeout)
                try:
                    exec(job.code, module.__dict__)
                    if job.call_mode:
                        report["out"] = self._call(module.__dict__, index)
                except SystemExit as exc:
                    exit_code = _exit_code(exc)
                    if exit_code == 0 and job.call_mode:
                        exit_code = 1
                        report["error"] = "the function returned no result (did the process exit early?)"
                # What the interpreter does at exit, still within the test's time.
                _join_threads()
                _flush(self.streams[1])
            finally:
                self.clock.disarm()
                if os.getpid() != self.pid:  # a process the solution forked: never report
                    os._exit(exit_code)
        except TestTimeout:
            report["status"] = "timeout"
        except MemoryError as exc:
            if index > self.start:  # the memory earlier tests left behind may be to blame: run it again
                self._cleanup(module)
                return {"i": index, STOP: "memory"}, False
            _print_exception(exc)
            exit_code, keep_going = 1, False
        except BaseException as exc:
            _print_exception(exc)
            exit_code = 1
            keep_going = isinstance(exc, Exception)
        elapsed = time.monotonic() - start
        self.cpu_seconds = _cpu_seconds()  # also the start of the next test: one system call a test
        cpu = self.cpu_seconds - cpu0
        report["time"] = round(elapsed, 4)
        if report["status"] == "timeout" or self.clock.fired or elapsed > job.timeout or cpu > job.cpu_budget:
            # Stopped anywhere, perhaps half-way through a library's bookkeeping: not reused.
            report["status"], keep_going = "timeout", False
            report.pop("out", None)
        elif exit_code:
            report["status"] = "error"
            report["exit"] = exit_code
            report.pop("out", None)
        if not self._cleanup(module):
            keep_going = False
        return report, keep_going

    def _call(self, namespace: dict[str, Any], index: int) -> Any:
        args = self.job.spec["inputs"][index]
        cls = namespace.get("Solution")
        fn_name = self.job.spec["fn_name"]
        fn = getattr(cls(), fn_name, None) if isinstance(cls, type) else namespace.get(fn_name)
        if not callable(fn):
            raise NameError(f"no function {fn_name!r} found (define it, or a Solution class with it)")
        value = fn(**args) if isinstance(args, dict) else fn(*args)
        try:
            data = json.dumps(value)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"the return value is not JSON-serialisable: {exc}") from None
        if len(data) > self.job.output_limit:
            raise ValueError(f"the return value is too large ({len(data)} bytes as JSON)")
        return value

    def _cleanup(self, module: types.ModuleType) -> bool:
        """Undo what the test left behind; False when this process should not run another test."""
        reusable = True
        if "threading" in sys.modules:  # threads still running (daemons, or ones the timeout cut off)
            threading = sys.modules["threading"]
            reusable = all(t is threading.main_thread() for t in threading.enumerate())
        # Our own streams back before the solution's objects go: a wrapper it opened on fd 1 flushes and
        # closes as it is collected, which must happen while fd 1 is still this test's file.
        sys.stdin, sys.stdout, sys.stderr = self.streams
        sys.__stdin__, sys.__stdout__, sys.__stderr__ = self.streams  # type: ignore[misc]
        # Compared by identity: ``==`` could call the solution's code.
        if len(self.builtins) != len(self.saved_builtins) or any(
            self.builtins.get(k, self) is not v for k, v in self.saved_builtins.items()
        ):
            self.builtins.clear()
            self.builtins.update(self.saved_builtins)
        module.__dict__.clear()  # breaks the functions <-> globals cycles, so the memory comes back now
        gc.collect()
        return self._kill_leftovers() and reusable

    def _kill_leftovers(self) -> bool:
        """Kill the processes the test started (they are in this process's group): step out of the
        group into the runner's, kill the group, reap, and make a fresh group again. False when that
        failed (the solution moved this process to a session of its own, say)."""
        try:
            os.setpgid(0, self.runner_group)
        except OSError:
            return False
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass  # nothing left: the common case
        else:
            while True:
                try:
                    os.waitpid(-self.pid, 0)
                except ChildProcessError:
                    break
        try:
            os.setpgid(0, 0)
        except OSError:
            return False
        return True


def _print_exception(exc: BaseException) -> None:
    """The traceback ``python3 solution.py`` would print: without the runner's frames above the
    solution's (an error the runner raised itself, e.g. a missing function, is its message alone)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != "solution.py":
        tb = tb.tb_next
    # The C hook (no traceback module to import) prints the traceback the exception carries: cut it too.
    sys.__excepthook__(type(exc), exc.with_traceback(tb), tb)


def _exit_code(exc: SystemExit) -> int:
    """The exit status ``sys.exit(code)`` gives a program (a message goes to stderr, status 1)."""
    code = exc.code
    if code is None or isinstance(code, int):
        return (code or 0) & 0xFF
    print(code, file=sys.stderr)
    return 1


def _join_threads() -> None:
    """Wait for the threads the test started, as the interpreter does at exit."""
    threading = sys.modules.get("threading")
    if threading is None:
        return
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()


def _flush(stdout: Any) -> None:
    """Flush the solution's ``sys.stdout`` (it may have replaced it) and ours; a stream it closed was
    flushed when it closed."""
    for stream in (sys.stdout, stdout) if sys.stdout is not stdout else (stdout,):
        if not getattr(stream, "closed", False):
            flush = getattr(stream, "flush", None)
            if callable(flush):
                flush()


# --- the runner ------------------------------------------------------------------------------------
def _kill(pid: int) -> None:
    """Kill a test process and its group (it may be between groups: ``_kill_leftovers``)."""
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _wait(pid: int, timeout: float) -> tuple[int, bool]:
    """(wait status, timed out): waits at most ``timeout`` seconds, then kills the process group."""
    deadline = time.monotonic() + timeout
    pause = 0.0005
    while True:
        reaped, wait_status = os.waitpid(pid, os.WNOHANG)
        if reaped:
            _kill(pid)  # leftovers it started
            return wait_status, False
        if time.monotonic() >= deadline:
            break
        time.sleep(pause)
        pause = min(pause * 2, 0.02)
    _kill(pid)
    _, wait_status = os.waitpid(pid, 0)
    return wait_status, True


def _read(path: str, limit: int) -> str:
    """Up to ``limit`` bytes of a file, decoded ("" when it is gone). Plain ``os`` calls: ``open()``
    would add three system calls."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return ""
    try:
        chunks: list[bytes] = []
        size = 0
        while size < limit:
            chunk = os.read(fd, min(limit - size, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if len(chunk) < 1 << 16:  # a short read of a regular file: its end
                break
    except OSError:  # not a file any more (a test may have replaced it)
        pass
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8", "replace")


class ReportLines:
    """Lines from the test process's report pipe."""

    def __init__(self, fd: int, max_line: int) -> None:
        self.fd = fd
        self.max_line = max_line
        self.buf = b""
        self.poller = select.poll()
        self.poller.register(fd, select.POLLIN)

    def next(self, deadline: float) -> bytes | None:
        """The next line, or ``None`` at the deadline; ``EOFError`` once the test process closed the pipe.
        An endless line counts as garbage."""
        while True:
            newline = self.buf.find(b"\n")
            if newline >= 0:
                line, self.buf = self.buf[:newline], self.buf[newline + 1 :]
                return line
            if len(self.buf) > self.max_line:
                self.buf = b""
                return b"?"
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            if self.poller.poll(remaining * 1000):
                chunk = os.read(self.fd, 1 << 16)
                if not chunk:
                    raise EOFError
                self.buf += chunk


def _parse(line: bytes, index: int) -> dict[str, Any] | None:
    """The report on test ``index`` in ``line``, or None when it is not one."""
    try:
        report = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return report if isinstance(report, dict) and report.get("i") == index else None


def _failed(error: str) -> dict[str, Any]:
    return {"status": "error", "out": None, "error": error, "time": 0.0}


def _skipped() -> dict[str, Any]:
    return {"status": "skipped", "out": None, "error": None, "time": 0.0}


class Runner:
    """Runs every test of a job through as few test processes as it can."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self.results: list[dict[str, Any] | None] = [None] * job.n
        self.next = 0  # the first test without a result
        #: A test did not run to completion and the job stops at the first such test.
        self.stopped = False

    def run(self) -> list[dict[str, Any]]:
        while self.next < self.job.n and not self.stopped:
            try:
                self._write_inputs(self.next)
                self._drive()
            except Exception as exc:  # e.g. the solution replaced the work directory with a file
                self._finish(self.next, _failed(f"runner: {type(exc).__name__}: {exc}"))
        missing = _skipped() if self.stopped else _failed("runner: the test did not run")
        return [r or dict(missing) for r in self.results]

    def _write_inputs(self, start: int) -> None:
        """The stdin files of tests ``start``...: written by the runner, which has no output limit; a
        test may have deleted them."""
        job = self.job
        if job.call_mode:
            return
        os.makedirs(job.workdir, exist_ok=True)
        for index in range(start, job.n):
            try:
                fd = os.open(job.path("in", index), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                continue
            try:
                data = job.spec["inputs"][index].encode()
                while data:
                    data = data[os.write(fd, data) :]
            finally:
                os.close(fd)

    def _drive(self) -> None:
        """Fork a test process for tests ``self.next``... and collect its reports, until it ends or
        hands over (a fresh process then runs the next test without a result)."""
        job = self.job
        read_fd, write_fd = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            TestProcess(job, self.next, write_fd).main()
        os.close(write_fd)
        # No setpgid(pid, pid) from here: it could land late, while the test process is out of its group
        # killing leftovers, and put it back into the group it kills. ``_kill`` signals the pid as well.
        try:
            wait_status = self._collect(pid, read_fd)
        except BaseException:
            _kill(pid)
            os.waitpid(pid, 0)
            raise
        finally:
            os.close(read_fd)
        if wait_status is None:  # it reported every test it ran, or handed over
            _kill(pid)  # it exits on its own; this also takes leftovers
            os.waitpid(pid, 0)

    def _collect(self, pid: int, read_fd: int) -> tuple[int, bool] | None:
        """Scores the test process's tests as it reports them. Returns when it stops: with its wait
        status and whether it was killed at a deadline, when it ended (and was reaped) during a test,
        otherwise ``None`` (not reaped yet)."""
        job = self.job
        lines = ReportLines(read_fd, 2 * job.output_limit + (1 << 20))
        start = self.next
        began = time.monotonic()
        while self.next < job.n:
            index = self.next
            deadline = began + job.timeout + GRACE
            try:
                line = lines.next(deadline)
            except EOFError:  # the test process ended during this test: score how it ended
                ended = _wait(pid, max(0.0, deadline - time.monotonic()))
            else:
                if line is None:  # past the deadline: its own timer could not stop it
                    _kill(pid)
                    ended = os.waitpid(pid, 0)[1], True
                else:
                    report = _parse(line, index)
                    if report is None:  # a solution wrote to the report pipe
                        self._finish(index, _failed("runner: garbled test report"))
                        return None
                    if STOP in report:
                        # A process hands over only after a test of its own, so every process makes
                        # progress (else a solution could forge hand-overs forever); only a vanished
                        # input stops a process before its first test, and then a fresh one lacks it too.
                        if index == start:
                            self._finish(index, _failed(f"runner: the test could not start ({report[STOP]})"))
                        return None
                    self._finish(index, self._from_report(index, report))
                    if self.stopped:
                        return None  # the caller kills the test process
                    began = time.monotonic()
                    continue
            self._finish(index, self._from_exit(index, *ended, time.monotonic() - began))
            return ended
        return None

    def _finish(self, index: int, result: dict[str, Any]) -> None:
        self.results[index] = result
        self.next = index + 1
        if self.job.stop_on_failure and result.get("status") != "ok":
            self.stopped = True
        for kind in ("err",) if self.job.call_mode else ("in", "out", "err"):
            try:
                os.unlink(self.job.path(kind, index))
            except OSError:
                pass

    def _from_report(self, index: int, report: dict[str, Any]) -> dict[str, Any]:
        job = self.job
        status = report.get("status")
        elapsed = report.get("time")
        result: dict[str, Any] = {
            "status": status,
            "out": None,
            "error": None,
            "time": elapsed if isinstance(elapsed, (int, float)) else 0.0,  # a solution may forge reports
        }
        if status == "ok":
            result["out"] = (
                report.get("out") if job.call_mode else _read(job.path("out", index), job.output_limit)
            )
        elif status == "error":
            stderr = _read(job.path("err", index), job.output_limit)[-2000:]
            result["error"] = stderr or report.get("error") or f"exit status {report.get('exit')}"
        elif status != "timeout":
            result = _failed(f"runner: unknown test status {status!r}")
        return result

    def _from_exit(self, index: int, wait_status: int, timed_out: bool, elapsed: float) -> dict[str, Any]:
        """A test whose process ended (or was killed) before reporting it: scored from how it ended,
        as when every test had a process of its own."""
        job = self.job
        result: dict[str, Any] = {"status": "ok", "out": None, "error": None, "time": round(elapsed, 4)}
        if timed_out:
            result["status"] = "timeout"
        elif os.WIFSIGNALED(wait_status):
            sig = os.WTERMSIG(wait_status)
            result["status"] = "timeout" if sig == signal.SIGXCPU else "killed"
            result["error"] = SIGNAL_NAMES.get(sig, f"killed by signal {sig}")
        elif os.WEXITSTATUS(wait_status) != 0:
            result["status"] = "error"
            stderr = _read(job.path("err", index), job.output_limit)[-2000:]
            result["error"] = stderr or f"exit status {os.WEXITSTATUS(wait_status)}"
        elif job.call_mode:
            result["status"] = "error"
            stderr = _read(job.path("err", index), job.output_limit)[-2000:]
            result["error"] = stderr or "the function returned no result (did the process exit early?)"
        else:
            result["out"] = _read(job.path("out", index), job.output_limit)
        return result


def _remove_tree(path: str) -> None:
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


def main() -> None:
    # `python3 -c` puts the working directory first on sys.path (`python3 runner.py`, the bundle
    # directory), where a solution could drop a module named like one a later test imports.
    here = os.path.dirname(os.path.realpath(__file__))
    sys.path[:] = [p for p in sys.path if p and os.path.realpath(p) != here]
    workdir = os.path.abspath(sys.argv[1])  # absolute: a test may change the working directory
    # Tells the caller the runner itself started: a missing report after this is the solution's doing.
    sys.stdout.write("VF-CODE-RUNNER-STARTED\n")
    sys.stdout.flush()
    with open(os.path.join(workdir, "tests.json")) as f:
        spec = json.load(f)
    with open(os.path.join(workdir, "solution.py"), "rb") as f:
        source = f.read()
    try:
        # dont_inherit: the solution runs as `python3 solution.py` would, not under this file's
        # `from __future__ import annotations`.
        code = compile(source, "solution.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        import traceback  # only for this rare case: imports cost time in gVisor

        error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        results = [{"status": "error", "out": None, "error": error, "time": 0.0} for _ in spec["inputs"]]
    else:
        header = spec.get("header")
        try:
            if header:
                prelude = _header_prelude(header)
            else:
                prelude = _prelude(source.decode("utf-8", "replace")) if spec["mode"] == "call" else {}
        except Exception as exc:  # the header is the caller's, not the solution's: say so on every test
            results = [
                _failed(f"runner: the header failed: {type(exc).__name__}: {exc}") for _ in spec["inputs"]
            ]
        else:
            gc.freeze()  # the test process's collector then leaves the runner's objects (and their pages) alone
            results = Runner(Job(code, spec, workdir, prelude)).run()
    _remove_tree(workdir)  # a reused sandbox starts the next problem clean
    sys.stdout.write(json.dumps({"results": results}) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
