"""Publish-time smoke checks as records: queue one per published version, run it in a bounded worker pool
(``VF_HUB_SMOKE_WORKERS`` threads), store the outcome.

The check itself is the SDK's (``vf-smoke WHEEL --json``: sandboxes are the SDK's concept, and the hub
shares only ``verifiers.hub`` with it): each worker runs that command as a process of this interpreter
and stores its ``verifiers.hub.wire.SmokeReport``.

A check never blocks nor changes the publish: ``SmokeChecks.queue`` only inserts a ``queued`` row and hands
the work to the pool; whatever happens later (a broken environment, no sandbox, a crash of the check
itself) ends as a ``failed`` or ``skipped`` row, logged, never as an error of the publish.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import Future, ThreadPoolExecutor, wait
from datetime import datetime
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel
from sqlalchemy import select

from hub_server.blobs import BlobStore
from hub_server.db import Database
from hub_server.models import File, SmokeCheck, utcnow
from hub_server.settings import HubSettings
from verifiers.hub.wire import SmokeOutcome, SmokeReport

log = logging.getLogger("hub_server.smoke")

SmokeStatus = Literal["queued", "running", SmokeOutcome]  # a check ends with its report's outcome
#: Beyond the check's own timeout: the process's start-up and its report.
_PROCESS_GRACE_S = 60.0


class SmokeCheckOut(BaseModel):
    """A version's smoke check in the API (``log`` only on the check's own endpoint)."""

    status: SmokeStatus
    reason: str = ""
    backend: str | None = None
    duration_s: float | None = None
    created_at: datetime
    finished_at: datetime | None = None
    log: str | None = None

    @classmethod
    def of(cls, row: SmokeCheck, *, with_log: bool = False) -> SmokeCheckOut:
        return cls(
            status=row.status,  # type: ignore[arg-type]  # only SmokeStatus values are ever written
            reason=row.reason,
            backend=row.backend,
            duration_s=row.duration_s,
            created_at=row.created_at,
            finished_at=row.finished_at,
            log=row.log if with_log else None,
        )


class SmokeChecks:
    """The hub's worker pool of smoke checks (``Hub.smoke_checks()`` makes it on first publish), over the
    parts of the hub it reads and writes."""

    def __init__(self, settings: HubSettings, db: Database, blobs: BlobStore) -> None:
        self.settings, self.db, self.blobs = settings, db, blobs
        self._pool = ThreadPoolExecutor(max_workers=settings.smoke_workers, thread_name_prefix="vf-smoke")
        self._pending: set[Future[None]] = set()
        self._running: set[subprocess.Popen[str]] = set()  # the vf-smoke processes of running checks
        self._lock = threading.Lock()

    def queue(self, version_id: int) -> None:
        """Queue the check of a just-published version. Never raises: a check must not fail a publish."""
        try:
            self._queue(version_id)
        except Exception:
            log.exception("could not queue the smoke check of version %s", version_id)

    def _queue(self, version_id: int) -> None:
        if not self.settings.smoke_checks:
            self._store(
                version_id, "skipped", reason="smoke checks are off on this hub (VF_HUB_SMOKE_CHECKS)"
            )
            return
        self._store(version_id, "queued")
        future = self._pool.submit(self._run, version_id)
        with self._lock:
            self._pending.add(future)
        future.add_done_callback(self._done)

    def _done(self, future: Future[None]) -> None:
        with self._lock:
            self._pending.discard(future)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait for every queued check (tests, ``vf-hub serve --demo``); False on timeout."""
        with self._lock:
            pending = set(self._pending)
        return not wait(pending, timeout=timeout).not_done

    def shutdown(self, *, stop_running: bool = False) -> None:
        """Drop the queued checks; with ``stop_running``, also stop the running ones and wait for their
        threads (``vf-hub serve --demo`` on SIGTERM, before it removes its data dir)."""
        if not stop_running:
            self._pool.shutdown(wait=False, cancel_futures=True)
            return
        self._pool.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            running = list(self._running)
        for proc in running:
            proc.terminate()
        self._pool.shutdown(wait=True)

    def _run(self, version_id: int) -> None:
        settings = self.settings
        try:
            with self.db.read() as session:
                wheel = session.scalar(
                    select(File).where(File.version_id == version_id, File.kind == "bdist_wheel")
                )
                filename, key = (wheel.filename, wheel.blob_key) if wheel is not None else ("", "")
            if not key:
                self._store(version_id, "failed", reason="the version has no wheel")
                return
            with self.blobs.open(key) as f:
                data = f.read()
            self._store(version_id, "running")
            result = _run_vf_smoke(
                filename,
                data,
                backend=settings.smoke_backend,
                timeout_s=settings.smoke_timeout_seconds,
                index_url=settings.resolved_smoke_index_url,
                max_dependency_mb=settings.smoke_max_dependency_mb,
                running=(self._running, self._lock),
            )
        except Exception as exc:  # the check itself broke: record it, the publish stands
            log.exception("smoke check of version %s crashed", version_id)
            self._store(version_id, "failed", reason=f"the smoke check itself failed: {exc}"[:500])
            return
        self._store_result(version_id, result)

    def _store_result(self, version_id: int, r: SmokeReport) -> None:
        self._store(
            version_id, r.status, reason=r.reason, log=r.log, backend=r.backend, duration_s=r.duration_s
        )
        log.info("smoke check of version %s: %s %s", version_id, r.status, r.reason)

    def _store(
        self,
        version_id: int,
        status: SmokeStatus,
        *,
        reason: str = "",
        log: str = "",
        backend: str | None = None,
        duration_s: float | None = None,
    ) -> None:
        finished = status in get_args(SmokeOutcome)
        with self.db.write() as session:
            row = session.scalar(select(SmokeCheck).where(SmokeCheck.version_id == version_id))
            if row is None:
                row = SmokeCheck(version_id=version_id, created_at=utcnow())
                session.add(row)
            row.status, row.reason, row.log, row.backend, row.duration_s = (
                status,
                reason,
                log,
                backend,
                duration_s,
            )
            row.finished_at = utcnow() if finished else None


def smoke_check_of(db: Database, version_id: int, *, with_log: bool = False) -> SmokeCheckOut | None:
    with db.read() as session:
        row = session.scalar(select(SmokeCheck).where(SmokeCheck.version_id == version_id))
        return SmokeCheckOut.of(row, with_log=with_log) if row is not None else None


def _run_vf_smoke(
    filename: str,
    data: bytes,
    *,
    backend: str | None,
    timeout_s: float,
    index_url: str | None,
    max_dependency_mb: int,
    running: tuple[set[subprocess.Popen[str]], threading.Lock] | None = None,
) -> SmokeReport:
    """``python -m verifiers.cli.smoke WHEEL --json`` with this interpreter; its report, parsed."""
    with tempfile.TemporaryDirectory(prefix="vf-hub-smoke-") as tmp:
        wheel = Path(tmp) / filename
        wheel.write_bytes(data)
        cmd = [sys.executable, "-m", "verifiers.cli.smoke", str(wheel), "--json", "--timeout", str(timeout_s),
               "--max-dependency-mb", str(max_dependency_mb)]  # fmt: skip
        if backend:
            cmd += ["--backend", backend]
        if index_url:
            cmd += ["--index-url", index_url]
        with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
            if running is not None:  # so that shutdown(stop_running=True) can stop it
                with running[1]:
                    running[0].add(proc)
            try:
                stdout, stderr = proc.communicate(timeout=timeout_s + _PROCESS_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise
            finally:
                if running is not None:
                    with running[1]:
                        running[0].discard(proc)
    report = next((ln for ln in reversed(stdout.splitlines()) if ln.startswith("{")), None)
    if report is None:  # the command itself broke: its stderr is the reason
        raise RuntimeError(f"vf-smoke exited with {proc.returncode}: {stderr.strip()[-400:]}")
    return SmokeReport.model_validate_json(report)
