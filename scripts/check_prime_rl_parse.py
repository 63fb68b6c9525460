#!/usr/bin/env python3
"""Parse rendered run directories with prime-rl's *own* config classes (a developer check, not CI).

Needs a prime-rl source tree (``src/prime_rl``) and ``pydantic_config`` on the path, plus pydantic, tyro and
loguru installed in the interpreter running this script. ``prime_rl.utils.utils`` (torch, wandb) is
replaced by the two helpers the config modules use, so no GPU stack is needed.

    python scripts/check_prime_rl_parse.py --src /path/to/prime-rl/src --src /path/to/pydantic_config/src RUN_DIR...
"""

from __future__ import annotations

import argparse
import functools
import sys
import tomllib
import types
from pathlib import Path
from typing import Any


def _stub_utils() -> None:
    stub = types.ModuleType("prime_rl.utils.utils")

    def rgetattr(obj: Any, path: str) -> Any:
        return functools.reduce(getattr, path.split("."), obj)

    def rsetattr(obj: Any, path: str, value: Any) -> None:
        *head, last = path.split(".")
        setattr(functools.reduce(getattr, head, obj), last, value)

    stub.rgetattr, stub.rsetattr = rgetattr, rsetattr  # type: ignore[attr-defined]
    sys.modules["prime_rl.utils.utils"] = stub


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", action="append", default=[], help="a directory to put on sys.path (repeatable)")
    ap.add_argument("runs", nargs="+", type=Path)
    args = ap.parse_args()
    sys.path[:0] = args.src
    _stub_utils()
    from prime_rl.configs.inference import InferenceConfig
    from prime_rl.configs.orchestrator import OrchestratorConfig
    from prime_rl.configs.rl import RLConfig
    from prime_rl.configs.trainer import TrainerConfig

    failed = 0
    for run in args.runs:
        files = {"rl.toml": RLConfig, "trainer.toml": TrainerConfig, "orchestrator.toml": OrchestratorConfig}
        files["inference.toml"] = InferenceConfig
        for name, cls in files.items():
            if not (run / name).exists():
                continue
            try:
                cls.model_validate(tomllib.loads((run / name).read_text()))
                print(f"{run / name}: {cls.__name__} OK")
            except Exception as exc:  # pydantic's ValidationError, or a validator's assertion
                failed += 1
                print(f"{run / name}: {cls.__name__} FAILED: {exc}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
