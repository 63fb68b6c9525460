"""The ``--smoke`` flag every benchmark takes: a tiny size that only proves the script still runs.

CI runs each script under ``benchmarks/`` with ``--smoke`` (tests/benchmarks/test_smoke.py) so none can rot
unseen; the figures a smoke run prints mean nothing and are never a pass/fail criterion, while a crash or a
failed correctness check (a wrong score, an error the benchmark counts) still exits non-zero.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any


def parse_args(
    ap: argparse.ArgumentParser, argv: Sequence[str] | None = None, **tiny: Any
) -> argparse.Namespace:
    """``ap.parse_args(argv)`` with a ``--smoke`` flag that replaces the named options by ``tiny``'s values."""
    ap.add_argument(
        "--smoke", action="store_true", help="a tiny size that only checks the benchmark still runs (CI)"
    )
    args = ap.parse_args(argv)
    if args.smoke:
        for name, value in tiny.items():
            if not hasattr(args, name):
                raise AssertionError(f"--smoke sets {name!r}, which is not an option of this benchmark")
            setattr(args, name, value)
    return args
