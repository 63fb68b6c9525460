"""Put one distribution of a Python environment back as it was before an install that failed.

``take_snapshot`` copies the files the installed distribution (if any) owns, as its RECORD lists them;
``Snapshot.restore`` deletes what the failed install wrote for that distribution (by the RECORD the
installer wrote) and copies the saved files back. Restoring runs no interpreter of the target
environment, so nothing the failed install put there is executed.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import canonicalize_name

_LOCATE = r"""
import importlib.metadata as md, json, site, sys, sysconfig
name = sys.argv[1]
paths = sysconfig.get_paths()
dirs = [paths["purelib"], paths["platlib"]]
try:
    dirs.append(site.getusersitepackages())
except Exception:
    pass
try:
    dist = md.distribution(name)
except md.PackageNotFoundError:
    dist = None
files = [str(dist.locate_file(f)) for f in (dist.files or [])] if dist is not None else []
print(json.dumps({"dirs": dirs, "files": files, "version": dist.version if dist is not None else None}))
"""


@dataclass
class Snapshot:
    """What ``name`` looked like in a Python environment before an install."""

    name: str
    #: The environment's site directories (where an install of ``name`` can write).
    site_dirs: list[Path]
    #: The version installed before (None: none was).
    version: str | None
    #: (original path, saved copy) of every file the previous install owned.
    saved: list[tuple[Path, Path]] = field(default_factory=list)

    def restore(self) -> str:
        """Undo the install: its files removed, the previous ones back. Says what is there now."""
        for dist_info in self._dist_infos():
            site = dist_info.parent
            for path in _record_paths(dist_info / "RECORD", site):
                path.unlink(missing_ok=True)
                _prune(path.parent, site)
            shutil.rmtree(dist_info, ignore_errors=True)
        for original, copy in self.saved:
            original.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(copy, original)
        if self.version is None:
            return f"rolled back: {self.name} is not installed, as before"
        return f"rolled back: {self.name} {self.version} is installed again, as before"

    def _dist_infos(self) -> list[Path]:
        found = []
        for site in self.site_dirs:
            for d in site.glob("*.dist-info") if site.is_dir() else []:
                if canonicalize_name(d.name[: -len(".dist-info")].partition("-")[0]) == self.name:
                    found.append(d)
        return found


def take_snapshot(python: str, name: str, backup: Path) -> Snapshot:
    """The state of ``name`` in ``python``'s environment, its files copied under ``backup``."""
    proc = subprocess.run([python, "-c", _LOCATE, name], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"cannot inspect {python}: {proc.stderr.strip()[-500:]}")
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    snapshot = Snapshot(str(canonicalize_name(name)), [Path(d) for d in found["dirs"]], found["version"])
    for i, original in enumerate(map(Path, found["files"])):
        if original.is_file() and not original.is_symlink():
            copy = backup / str(i)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(original, copy)
            snapshot.saved.append((original, copy))
    return snapshot


def _record_paths(record: Path, site: Path) -> list[Path]:
    """The files a RECORD lists, those inside ``site`` only (a RECORD is the installed package's word)."""
    try:
        rows = list(csv.reader(io.StringIO(record.read_text(encoding="utf-8"))))
    except (OSError, UnicodeDecodeError, csv.Error):
        return []
    out = []
    root = site.resolve()
    for row in rows:
        if not row or not row[0]:
            continue
        path = (site / row[0]).resolve()
        if path.is_relative_to(root) and path != root:
            out.append(site / row[0])
    return out


def _prune(directory: Path, site: Path) -> None:
    """Remove directories the install left empty, up to (never including) ``site``."""
    while directory != site and site in directory.parents:
        pycache = directory / "__pycache__"
        if pycache.is_dir() and not any(p.suffix != ".pyc" for p in pycache.iterdir()):
            shutil.rmtree(pycache, ignore_errors=True)
        try:
            directory.rmdir()
        except OSError:
            return
        directory = directory.parent
