"""Sandbox environments: every rollout owns a sandbox, and the model gets ``bash`` and ``python`` tools.

::

    env = vf.SandboxEnv(dataset=rows, rubric=rubric, backend="bwrap", pool_size=4)

The sandbox is leased from a warm ``SandboxPool`` when the rollout starts and given back when it ends —
also when it errors, times out or is cancelled (the pool resets or replaces it in the background). A
sandbox that dies mid-rollout ends the rollout with a ``SandboxError`` (category ``infra``). The backend
that ran each rollout is recorded in its result as ``sandbox_backend``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from verifiers.envs.stateful_tool_env import StatefulToolEnv
from verifiers.types import Messages, State

if TYPE_CHECKING:
    from verifiers.sandbox import ExecResult, Sandbox, SandboxLimits, SandboxPool

__all__ = ["SandboxEnv", "format_exec_result"]

#: State key of the rollout's sandbox (hidden tool argument ``sandbox`` is filled from it).
SANDBOX = "sandbox"


def format_exec_result(result: ExecResult, timeout: float) -> str:
    """What the model reads after a command: its output, then how it ended if not cleanly."""
    parts = [result.stdout]
    if result.stderr:
        parts.append(result.stderr if not result.stdout else f"\n[stderr]\n{result.stderr}")
    if result.timed_out:
        parts.append(f"\n[timed out after {timeout:g}s; the command was killed]")
    elif result.exit_code not in (0, None):
        parts.append(f"\n[exit code {result.exit_code}]")
    if result.truncated:
        parts.append("\n[output truncated]")
    text = "".join(parts).strip("\n")
    return text or "(no output)"


class SandboxEnv(StatefulToolEnv):
    """A ``StatefulToolEnv`` with a sandbox per rollout and two tools, ``bash`` and ``python``.

    Args:
        backend: Sandbox backend name (``runsc``, ``bwrap``, ``local``); default: ``$VF_SANDBOX_BACKEND``,
            else the best secure backend available.
        pool_size: Sandboxes kept warm (rollouts beyond that wait for one).
        limits: Resource limits of every sandbox (``verifiers.sandbox.SandboxLimits``).
        command_timeout: Wall-clock seconds one tool call may run.
        max_tool_output_chars: Cap on each tool message (default 8,000 characters).
        tools: Extra tools; give them a hidden ``sandbox`` argument (``add_tool(f, hidden_args=["sandbox"])``)
            to run in the rollout's sandbox.

    Subclasses that override ``setup_state``/``cleanup_state`` must call ``super()``.
    """

    def __init__(
        self,
        *,
        backend: str | None = None,
        pool_size: int = 4,
        limits: SandboxLimits | None = None,
        command_timeout: float = 30.0,
        max_tool_output_chars: int | None = 8000,
        **kwargs: Any,
    ) -> None:
        from verifiers.sandbox import LazySandboxPool

        if command_timeout <= 0:
            raise ValueError("command_timeout must be positive")
        self._sandboxes = LazySandboxPool(backend, size=pool_size, limits=limits)
        super().__init__(max_tool_output_chars=max_tool_output_chars, **kwargs)
        self.command_timeout = command_timeout
        self.add_tool(self.bash, hidden_args=[SANDBOX])
        self.add_tool(self.python, hidden_args=[SANDBOX])

    # --- tools -------------------------------------------------------------------------------------
    async def bash(self, command: str, sandbox: Sandbox) -> str:
        """Run a bash command in your sandbox and return its output.

        Args:
            command: The command line, e.g. "ls -la" or "pip list".
        """
        result = await sandbox.exec(["bash", "-c", command], timeout=self.command_timeout)
        return format_exec_result(result, self.command_timeout)

    async def python(self, code: str, sandbox: Sandbox) -> str:
        """Run a Python program in your sandbox and return what it prints.

        Args:
            code: The program's source code.
        """
        result = await sandbox.exec(["python3", "-"], stdin=code, timeout=self.command_timeout)
        return format_exec_result(result, self.command_timeout)

    def update_tool_args(
        self, tool_name: str, tool_args: dict[str, Any], messages: Messages, state: State
    ) -> dict[str, Any]:
        if SANDBOX in self.tools[tool_name].hidden_args:
            return {**tool_args, SANDBOX: state[SANDBOX]}
        return tool_args

    # --- pool and per-rollout lifecycle ------------------------------------------------------------
    async def setup(self) -> None:
        await super().setup()
        await self.sandbox_pool()

    async def teardown(self) -> None:
        try:
            await self._sandboxes.close()
        finally:
            await super().teardown()

    async def sandbox_pool(self) -> SandboxPool:
        """The warm pool, started on first use (``setup()`` starts it before a run)."""
        return await self._sandboxes.get()

    async def setup_state(self, state: State) -> None:
        await super().setup_state(state)
        pool = await self.sandbox_pool()
        sandbox = await pool.acquire()
        state[SANDBOX] = sandbox
        state["sandbox_backend"] = sandbox.backend
        state["_sandbox_pool"] = pool

    async def cleanup_state(self, state: State) -> None:
        try:
            await super().cleanup_state(state)
        finally:
            sandbox, pool = state.pop(SANDBOX, None), state.pop("_sandbox_pool", None)
            if sandbox is not None and pool is not None:
                pool.release(sandbox)  # reset (or replaced, if it died) in the background

    def result_record(self, state: State) -> dict[str, Any]:
        record = super().result_record(state)
        record["sandbox_backend"] = state.get("sandbox_backend")
        return record
