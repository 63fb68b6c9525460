"""Test-only environment (tests/serve): a ``SandboxEnv`` on the ``local`` backend that appends
``acquired <example_id>`` / ``released <example_id>`` to ``log_path`` around each rollout's sandbox, so a
test can see from outside the server that a cancelled rollout gave its sandbox back."""

from __future__ import annotations

from pathlib import Path

from verifiers import SandboxEnv
from verifiers.types import State


class ProbeEnv(SandboxEnv):
    def __init__(self, log_path: str) -> None:
        rows = [{"question": f"probe {i}", "answer": "ok"} for i in range(4)]
        super().__init__(backend="local", pool_size=2, eval_dataset=rows, max_turns=2)
        self.log_path = Path(log_path)

    def _log(self, line: str) -> None:
        with self.log_path.open("a") as f:
            f.write(line + "\n")

    async def setup_state(self, state: State) -> None:
        await super().setup_state(state)
        self._log(f"acquired {state['example_id']}")

    async def cleanup_state(self, state: State) -> None:
        try:
            await super().cleanup_state(state)
        finally:
            self._log(f"released {state['example_id']}")


def load_environment(log_path: str) -> ProbeEnv:
    return ProbeEnv(log_path)
