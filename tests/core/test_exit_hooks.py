"""Exit hooks: registered on first use, once per component, never at import."""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from verifiers._exit_hooks import register_exit_hook

ROOT = Path(__file__).resolve().parents[2]

# Records every atexit hook a verifiers module registers, from before verifiers is first imported.
_PROBE = textwrap.dedent(
    """
    import asyncio, atexit, json, sys

    hooks = []
    _register = atexit.register

    def register(fn, *args, **kwargs):
        if getattr(fn, "__module__", "").startswith("verifiers"):
            hooks.append(f"{fn.__module__}.{fn.__qualname__}")
        return _register(fn, *args, **kwargs)

    atexit.register = register

    import verifiers.rubrics.math_pool
    import verifiers.sandbox
    report = {"import": list(hooks)}

    from verifiers.rubrics.math_pool import MathVerifyPool
    from verifiers.sandbox import get_backend

    async def two_sandboxes():
        backend = get_backend("local")
        for _ in range(2):
            sb = await backend.create()
            await sb.destroy()

    asyncio.run(two_sandboxes())
    for _ in range(2):
        pool = MathVerifyPool(1)
        pool.start()
        pool.close()
    report["use"] = hooks[len(report["import"]):]
    print(json.dumps(report))
    """
)


def test_import_registers_nothing_and_first_use_registers_once(tmp_path: Path) -> None:
    state = tmp_path / "sandboxes"
    state.mkdir(mode=0o700)
    env = {**os.environ, "VF_SANDBOX_DIR": str(state), "PYTHONPATH": str(ROOT)}
    env.pop("VF_SANDBOX_BACKEND", None)
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["import"] == []
    assert sorted(report["use"]) == [
        "verifiers.rubrics.math_pool._close_live_pools",
        "verifiers.sandbox._base._cleanup_at_exit",
    ]


def test_register_exit_hook_once_per_key(monkeypatch: pytest.MonkeyPatch) -> None:
    registered: list[Callable[[], None]] = []
    monkeypatch.setattr(atexit, "register", registered.append)

    def first() -> None: ...
    def second() -> None: ...

    key = f"tests.exit_hooks.{os.getpid()}"
    assert register_exit_hook(key, first) is True
    assert register_exit_hook(key, second) is False
    assert register_exit_hook(key + ".other", second) is True
    assert registered == [first, second]
