"""Small, real wheel + sdist archives made in memory, including deliberately broken ones.

Building with ``python -m build`` takes about a second per package; the end-to-end tests do that (via
vf-init + vf-push), the many validation and API tests use these instead.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from verifiers.hub.packaging import module_name

EPOCH = (2024, 1, 1, 0, 0, 0)
MTIME = 1_704_067_200

MODULE_SOURCE = b"""import verifiers as vf


def load_environment(**kwargs):
    return vf.SingleTurnEnv(dataset=[{"question": "1+1", "answer": "2"}], **kwargs)
"""


@dataclass
class Dist:
    name: str = "demo-env"
    version: str = "0.1.0"
    summary: str = "A tiny demo environment"
    readme: str = "# Demo\n\nSome **markdown**.\n"
    requires_python: str | None = ">=3.11"
    dependencies: list[str] = field(default_factory=lambda: ["verifiers-sdk"])
    keywords: list[str] = field(default_factory=lambda: ["demo"])
    #: module-relative path -> bytes; default: the demo module.
    files: dict[str, bytes] | None = None

    @property
    def module(self) -> str:
        return module_name(self.name)

    @property
    def stem(self) -> str:
        return f"{self.module}-{self.version}"

    def module_files(self) -> dict[str, bytes]:
        return self.files if self.files is not None else {f"{self.module}/__init__.py": MODULE_SOURCE}

    def metadata(self, *, name: str | None = None, version: str | None = None) -> bytes:
        lines = [
            "Metadata-Version: 2.1",
            f"Name: {name or self.name}",
            f"Version: {version or self.version}",
            f"Summary: {self.summary}",
        ]
        if self.requires_python:
            lines.append(f"Requires-Python: {self.requires_python}")
        lines += [f"Requires-Dist: {d}" for d in self.dependencies]
        if self.keywords:
            lines.append(f"Keywords: {','.join(self.keywords)}")
        lines.append("Description-Content-Type: text/markdown")
        return ("\n".join(lines) + "\n\n" + self.readme).encode()

    def wheel(
        self, *, extra: dict[str, bytes] | None = None, metadata: bytes | None = None
    ) -> tuple[str, bytes]:
        dist_info = f"{self.stem}.dist-info"
        entries = {**self.module_files(), **(extra or {})}
        entries[f"{dist_info}/METADATA"] = metadata if metadata is not None else self.metadata()
        entries[f"{dist_info}/WHEEL"] = (
            b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        record = []
        for path, data in entries.items():
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{path},sha256={digest},{len(data)}")
        record.append(f"{dist_info}/RECORD,,")
        entries[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
            for path, data in entries.items():
                zf.writestr(
                    zipfile.ZipInfo(path, date_time=EPOCH), data, zipfile.ZIP_DEFLATED
                )  # reproducible
        return f"{self.stem}-py3-none-any.whl", buf.getvalue()

    def pyproject(self) -> bytes:
        """A pyproject.toml the hub's build rules accept (hatchling alone, static metadata)."""
        return (
            '[build-system]\nrequires = ["hatchling>=1.24"]\nbuild-backend = "hatchling.build"\n\n'
            f'[project]\nname = "{self.name}"\nversion = "{self.version}"\n\n'
            f'[project.entry-points."verifiers.environments"]\n{self.name} = "{self.module}:load_environment"\n'
        ).encode()

    def sdist(
        self,
        *,
        extra: list[tarfile.TarInfo | tuple[str, bytes]] | None = None,
        pkg_info: bytes | None = None,
        top: str | None = None,
    ) -> tuple[str, bytes]:
        top = top or self.stem
        buf = io.BytesIO()
        with (
            gzip.GzipFile(fileobj=buf, mode="wb", mtime=MTIME) as gz,
            tarfile.open(fileobj=gz, mode="w") as tar,
        ):
            members: list[tuple[str, bytes]] = [
                (f"{top}/PKG-INFO", pkg_info if pkg_info is not None else self.metadata()),
                (f"{top}/pyproject.toml", self.pyproject()),
                *((f"{top}/{p}", d) for p, d in self.module_files().items()),
            ]
            for item in extra or []:
                if isinstance(item, tarfile.TarInfo):
                    tar.addfile(item, io.BytesIO(b"x" * item.size) if item.isfile() else None)
                else:
                    members.append(item)
            for path, data in members:
                info = tarfile.TarInfo(path)
                info.size, info.mtime, info.mode = len(data), MTIME, 0o644
                tar.addfile(info, io.BytesIO(data))
        return f"{self.stem}.tar.gz", buf.getvalue()

    def pair(self) -> tuple[tuple[str, bytes], tuple[str, bytes]]:
        return self.wheel(), self.sdist()

    def write(self, directory: Path) -> tuple[Path, Path]:
        """The wheel and the sdist as files in ``directory`` (what ``HubClient.publish`` takes)."""
        directory.mkdir(parents=True, exist_ok=True)
        paths = []
        for filename, data in self.pair():
            paths.append(directory / filename)
            paths[-1].write_bytes(data)
        return paths[0], paths[1]


def tar_link(path: str, target: str, *, hard: bool = False) -> tarfile.TarInfo:
    info = tarfile.TarInfo(path)
    info.type = tarfile.LNKTYPE if hard else tarfile.SYMTYPE
    info.linkname = target
    return info


def tar_device(path: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(path)
    info.type = tarfile.CHRTYPE
    info.devmajor, info.devminor = 1, 3
    return info


def zip_symlink(zf: zipfile.ZipFile, path: str, target: str) -> None:
    info = zipfile.ZipInfo(path)
    info.external_attr = (0o120777 << 16) | 0
    zf.writestr(info, target)


def pax_sparse_member(path: str, claimed: int) -> tuple[tarfile.TarInfo, bytes]:
    """A PAX (GNU 0.1) sparse member storing 10 bytes that expands to ``claimed`` bytes of zeros."""
    info = tarfile.TarInfo(path)
    info.size = 10
    info.pax_headers = {"GNU.sparse.map": "0,10", "GNU.sparse.size": str(claimed)}
    return info, b"x" * 10


class _GnuSparse(tarfile.TarInfo):
    """An old-GNU sparse ('S') header: one 10-byte data region, real size ``claimed``."""

    claimed = 0

    def tobuf(
        self, format: int | None = None, encoding: str | None = "utf-8", errors: str = "strict"
    ) -> bytes:
        buf = bytearray(super().tobuf(tarfile.GNU_FORMAT, encoding or "utf-8", errors))
        buf[386:398] = b"%011o\0" % 0
        buf[398:410] = b"%011o\0" % 10
        buf[483:495] = b"%011o\0" % self.claimed
        buf[148:156] = b" " * 8
        buf[148:156] = b"%06o\0 " % sum(buf[:512])
        return bytes(buf)


def gnu_sparse_member(path: str, claimed: int) -> tuple[tarfile.TarInfo, bytes]:
    info = _GnuSparse(path)
    info.type, info.size, info.claimed = tarfile.GNUTYPE_SPARSE, 10, claimed
    return info, b"x" * 10
