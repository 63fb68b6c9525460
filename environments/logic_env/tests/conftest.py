"""Shared helpers: the repository's scripted OpenAI-compatible server lives in the root ``tests``
package, which is importable once the repository root is on ``sys.path``."""

from __future__ import annotations

import sys
from pathlib import Path

REPO_ROOT = next(
    p for p in Path(__file__).resolve().parents if (p / "tests" / "scripted_server.py").is_file()
)
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

FIXTURES = Path(__file__).parent / "fixtures"
