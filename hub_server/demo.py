"""``vf-hub serve --demo``: a fresh hub with real content on the first visit.

Publishes the bundled environments (``BUNDLED``: the packages under ``environments/`` of the source
tree that ship with the SDK — never whatever else lies there, such as a scratch ``vf-init`` project —
built with ``python -m build`` as ``vf-push`` builds them) under the namespace ``verifiers`` (``BUNDLED_NAMESPACE`` of
``verifiers.hub.resolve``: ``vf-install math-env`` resolves there), then the sample eval runs checked in
under ``hub_server/demo/`` — real runs of ``vf-eval`` against the bundled local model, kept in the
upload's wire form (``hub_server/demo/README.md`` says how they were made) — through the same services an
upload uses. Publishes go through the normal path, so each version is smoke-checked too.
"""

from __future__ import annotations

import importlib.util
import logging
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hub_server.context import Hub
from hub_server.services import HubError, create_token, create_user
from hub_server.services.names import allow_name
from hub_server.services.publishing import Upload, publish
from hub_server.services.runs import add_rollouts, create_run, finalize_run
from verifiers.hub import wire

log = logging.getLogger("hub_server.demo")

#: Kept equal to ``verifiers.hub.resolve.BUNDLED_NAMESPACE`` (the hub may not import that module).
NAMESPACE = "verifiers"
HERE = Path(__file__).parent
#: Sample eval runs (each a run directory: metadata.json + results.jsonl).
RUNS_DIR = HERE / "demo"
#: The environments that ship with the SDK, by project directory under ``environments/`` (a test keeps
#: this equal to the tracked ones).
BUNDLED = (
    "aime2024",
    "aime2025",
    "code_env",
    "deep_research_env",
    "gpqa",
    "hle",
    "livecodebench",
    "logic_env",
    "math_env",
    "mmlu_pro",
    "science_env",
    "swe_env",
)


def source_environments() -> Path | None:
    """``environments/`` of the source tree the hub runs from, if there is one."""
    candidate = HERE.parent / "environments"
    return candidate if candidate.is_dir() else None


@dataclass
class DemoReport:
    published: list[str] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "what: why"


def _build(project: Path, outdir: Path) -> tuple[Path, Path]:
    # Without isolation when the build backend is installed (no index needed), else an isolated build.
    isolation = ["--no-isolation"] if importlib.util.find_spec("hatchling") else []
    subprocess.run(
        [sys.executable, "-m", "build", *isolation, "--outdir", str(outdir), str(project)],
        check=True,
        capture_output=True,
        text=True,
    )
    wheel = next(outdir.glob("*.whl"))
    sdist = next(outdir.glob("*.tar.gz"))
    return wheel, sdist


def _push_run(hub: Hub, token: str, run_dir: Path) -> str:
    """One sample run: ``run.json`` (the upload's first request) and ``rollouts.jsonl`` (its records),
    through the services an upload goes through."""
    principal = hub.principal(token)
    body = wire.EvalRunCreate.model_validate_json((run_dir / "run.json").read_text())
    env_id = run_dir.name.split("--")[0]
    info, _ = create_run(hub, principal, NAMESPACE, env_id, body)
    lines = (run_dir / "rollouts.jsonl").read_text().splitlines()
    records = [wire.RolloutRecord.model_validate_json(line) for line in lines if line.strip()]
    for start in range(0, len(records), wire.CHUNK_LIMIT):
        chunk = wire.RolloutChunk(rollouts=records[start : start + wire.CHUNK_LIMIT])
        add_rollouts(hub, principal, info.id, chunk)
    final = finalize_run(hub, principal, info.id)
    return f"{NAMESPACE}/{env_id} · {body.model} ({final.rollout_count} rollouts)"


def bundled_projects(environments: Path | None = None) -> list[Path]:
    """The bundled environment projects found under ``environments`` (default: the source tree's)."""
    root = environments or source_environments()
    if root is None:
        return []
    return [root / name for name in BUNDLED if (root / name / "pyproject.toml").is_file()]


def seed_demo(
    hub: Hub,
    environments: Path | None = None,
    runs: Path = RUNS_DIR,
    *,
    progress: Callable[[str], None] = lambda line: None,
) -> DemoReport:
    """Publish the bundled environments and the sample runs into ``hub`` (a fresh one: existing
    versions are skipped, never replaced), saying what it does through ``progress`` (one line a step)."""
    report = DemoReport()
    try:
        create_user(hub, NAMESPACE)
    except HubError as exc:
        if exc.status_code != 409:
            raise
    token = create_token(hub, NAMESPACE, scopes=["publish"])[0]
    principal = hub.principal(token)
    projects = bundled_projects(environments)
    if not projects:
        report.skipped.append("environments: no bundled environments in a source tree next to hub_server")
    for i, project in enumerate(projects, start=1):
        started = time.monotonic()
        progress(f"building {project.name} ({i}/{len(projects)}) …")
        with tempfile.TemporaryDirectory(prefix="vf-demo-build-") as tmp:
            try:
                wheel, sdist = _build(project, Path(tmp))
            except subprocess.CalledProcessError as exc:
                report.skipped.append(f"{project.name}: build failed: {(exc.stderr or '').strip()[-300:]}")
                continue
            name = wheel.name.split("-")[0].replace("_", "-")
            try:
                allow_name(hub, name, NAMESPACE)  # the project's own environments, whatever the upstream has
                ver = publish(
                    hub, principal, NAMESPACE, name,
                    Upload(wheel.name, wheel.read_bytes()), Upload(sdist.name, sdist.read_bytes()),
                    visibility="public",
                )[1]  # fmt: skip
            except HubError as exc:
                report.skipped.append(f"{name}: {exc.detail}")
                continue
            report.published.append(f"{NAMESPACE}/{name}")
            progress(f"published {NAMESPACE}/{name} {ver.version} ({time.monotonic() - started:.0f} s)")
    for run_dir in sorted(p for p in runs.iterdir() if (p / "run.json").is_file()) if runs.is_dir() else []:
        try:
            report.runs.append(_push_run(hub, token, run_dir))
        except (HubError, ValueError, OSError) as exc:
            detail = exc.detail if isinstance(exc, HubError) else str(exc)
            report.skipped.append(f"sample run {run_dir.name}: {detail}")
    return report
