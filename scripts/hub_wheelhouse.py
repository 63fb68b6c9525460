"""Download, once, the wheels of verifiers-sdk's runtime dependencies into a wheelhouse for the hub tests.

``tests/hub/test_fresh_venv_install.py`` installs an environment into a fresh venv with plain pip and uv
from the hub alone; the SDK's own dependencies (aiohttp, pydantic, ...) come through the hub's upstream
fall-through from a loopback pypiserver over this directory, standing in for PyPI. Tests may not use the
network, so scripts/setup.sh fills it here. Versions are pinned to what this venv has installed.

Usage: python scripts/hub_wheelhouse.py [DIR]   (default: $VF_TEST_WHEELHOUSE or the user cache dir)
"""

from __future__ import annotations

import importlib.metadata as md
import os
import subprocess
import sys
from pathlib import Path

import platformdirs
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


def default_dir() -> Path:
    env = os.environ.get("VF_TEST_WHEELHOUSE")
    return Path(env) if env else Path(platformdirs.user_cache_dir("verifiers-sdk")) / "hub-test-wheelhouse"


def pinned_closure(root: str = "verifiers-sdk") -> list[str]:
    """``name==version`` for every installed distribution ``root`` needs at run time (no extras of root)."""
    seen: dict[str, str] = {}
    todo: list[tuple[str, frozenset[str]]] = [(root, frozenset())]
    while todo:
        name, extras = todo.pop()
        dist = md.distribution(name)
        key = canonicalize_name(dist.metadata["Name"])
        if key != canonicalize_name(root):
            seen[key] = dist.version
        for text in dist.requires or []:
            req = Requirement(text)
            envs = [{**default_environment(), "extra": e} for e in (extras or {""})]
            if req.marker is not None and not any(req.marker.evaluate(e) for e in envs):
                continue
            dep = canonicalize_name(req.name)
            if dep in seen and not req.extras:
                continue
            todo.append((dep, frozenset(req.extras)))
    return sorted(f"{n}=={v}" for n, v in seen.items())


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else default_dir()
    out.mkdir(parents=True, exist_ok=True)
    reqs = pinned_closure()
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "--no-deps", "-d", str(out)]
    subprocess.run([*cmd, *reqs], check=True)
    print(f"{len(reqs)} wheels in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
