"""Bounded work for every upload: hostile archives, hostile source, metadata caps, wheel layout, versions.

Archives are made in memory (``tests/hub/_dists.py``); the hostile ones claim far more than they hold, and
the hub must refuse them with a 4xx while allocating only a bounded amount.
"""

from __future__ import annotations

import gzip
import io
import shutil
import subprocess
import sys
import tarfile
import threading
import tracemalloc
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from hub_server import services
from hub_server.context import Hub
from hub_server.services import publishing
from hub_server.validation import Limits, UploadError, inspect_upload
from tests.hub._dists import Dist, gnu_sparse_member, pax_sparse_member
from tests.hub.conftest import ROOT, Actors, publish
from tests.hub.test_validation import LIMITS, check, refused

MiB = 1024 * 1024
#: The hub's defaults: the bound on memory must not come from a small max_unpacked_size.
DEFAULTS = Limits(
    max_file_size=20 * MiB, max_unpacked_size=100 * MiB, max_members=5000, max_readme_size=512 * 1024
)
CEILING = 64 * MiB


def _sdist_with(members: list[tuple[tarfile.TarInfo, bytes]], d: Dist | None = None) -> tuple[str, bytes]:
    """The demo sdist plus raw members (header, stored bytes), gzip'd at level 9."""
    d = d or Dist()
    _, good = d.sdist()
    raw = io.BytesIO()
    with (
        tarfile.open(fileobj=io.BytesIO(gzip.decompress(good)), mode="r:") as src,
        tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for m in src:
            tar.addfile(m, src.extractfile(m))
        for info, data in members:
            tar.addfile(info, io.BytesIO(data))
    return f"{d.stem}.tar.gz", gzip.compress(raw.getvalue(), compresslevel=9)


def _zip_bomb(size: int) -> tuple[str, bytes]:
    name, data = Dist().wheel()
    buf = io.BytesIO(data)
    with (
        zipfile.ZipFile(buf, "a", zipfile.ZIP_DEFLATED) as zf,
        zf.open(zipfile.ZipInfo("demo_env/zeros.bin"), "w") as f,
    ):
        for _ in range(size // MiB):
            f.write(bytes(MiB))
    return name, buf.getvalue()


def _peak(fn) -> tuple[int, BaseException | None]:  # type: ignore[no-untyped-def]
    tracemalloc.start()
    try:
        fn()
        error = None
    except BaseException as exc:  # the caller asserts on it
        error = exc
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak, error


# --- one bounded reader --------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [pax_sparse_member, gnu_sparse_member], ids=["pax-sparse", "gnu-sparse"])
def test_sparse_members_refused(make) -> None:  # type: ignore[no-untyped-def]
    d = Dist()
    sdist = _sdist_with([make("demo_env-0.1.0/demo_env/huge.py", 64 * MiB)])
    refused(d.wheel(), sdist, match="sparse")


def test_member_shorter_than_its_header() -> None:
    d = Dist()
    info = tarfile.TarInfo("demo_env-0.1.0/demo_env/data.py")
    info.size = 10
    name, data = _sdist_with([(info, b"x" * 10)])
    raw = bytearray(gzip.decompress(data))
    # Claim 4 KiB for the last member without adding the bytes: its data runs into the end of the archive.
    at = raw.rfind(b"demo_env-0.1.0/demo_env/data.py")
    header = bytearray(raw[at : at + 512])
    header[124:136] = b"%011o\0" % 4096
    header[148:156] = b" " * 8
    header[148:156] = b"%06o\0 " % sum(header)
    raw[at : at + 512] = header
    del raw[at + 512 + 512 :]  # one data block, then nothing
    with pytest.raises(UploadError) as info_:
        check(d.wheel(), (name, gzip.compress(bytes(raw))))
    assert info_.value.status_code == 400


def test_huge_pax_header_is_capped() -> None:
    info = tarfile.TarInfo("demo_env-0.1.0/notes.txt")
    info.pax_headers = {"comment": "x" * (2 * MiB)}
    refused(Dist().wheel(), _sdist_with([(info, b"")]), status=413, match="header")


def test_peak_memory_is_bounded_whatever_the_archive_claims() -> None:
    """At the hub's default limits (100 MiB unpacked), hostile archives cost well under 64 MiB."""
    d = Dist()
    bomb = tarfile.TarInfo("demo_env-0.1.0/zeros.bin")
    bomb.size = 200 * MiB
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        tar.addfile(bomb, io.BytesIO(bytes(bomb.size)))
    gzip_bomb = ("demo_env-0.1.0.tar.gz", gzip.compress(raw.getvalue(), compresslevel=9))
    del raw
    cases = {
        "gzip bomb (200 MiB in the tar)": (d.wheel(), gzip_bomb),
        "PAX sparse member claiming 256 MiB": (
            d.wheel(),
            _sdist_with([pax_sparse_member("demo_env-0.1.0/demo_env/huge.py", 256 * MiB)]),
        ),
        "zip member of 90 MiB zeros": (_zip_bomb(90 * MiB), d.sdist()),
    }
    peaks = {}
    for label, (wheel, sdist) in cases.items():
        peak, error = _peak(lambda w=wheel, s=sdist: check(w, s, limits=DEFAULTS))
        assert isinstance(error, UploadError), (label, error)
        assert 400 <= error.status_code < 500
        peaks[label] = peak
    print({k: f"{v / MiB:.1f} MiB" for k, v in peaks.items()})  # the figure docs/hub.md quotes
    assert max(peaks.values()) < CEILING, {k: f"{v / MiB:.1f} MiB" for k, v in peaks.items()}


def test_unpacked_budget_counts_bytes_produced_not_declared() -> None:
    # 300 KB of real data over a 200 KB budget, in the wheel: refused with 413 whatever the headers say.
    d = Dist(
        files={"demo_env/__init__.py": b"def load_environment(): ...\n", "demo_env/big.bin": b"\0" * 300_000}
    )
    refused(
        *d.pair(), limits=replace(LIMITS, max_unpacked_size=200_000), status=413, match="unpacks to more than"
    )


# --- parsing uploaded source -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("source", "status", "match"),
    [
        (b"x = " + b"-" * 200_000 + b"1\n", 400, "could not be parsed|syntax error"),  # MemoryError in 3.11
        (b"x = a" + b".a" * 100_000 + b"\n", 400, "could not be parsed|syntax error"),  # RecursionError
        (b"x = " + b"1" * 10_000 + b"\n", 400, "could not be parsed|syntax error"),  # int digits limit
        (b"x = 1\n" * 50_000, 413, "larger than 262144 bytes"),
    ],
    ids=["unary-nesting", "attribute-chain", "huge-int", "too-large"],
)
def test_hostile_source_is_a_4xx_naming_the_file(source: bytes, status: int, match: str) -> None:
    d = Dist(files={"demo_env/__init__.py": source})
    error = refused(*d.pair(), limits=replace(LIMITS, max_file_size=MiB), status=status, match=match)
    assert "demo_env/__init__.py" in error.message


# --- metadata ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("dist", "match"),
    [
        (Dist(summary="s" * 600), "Summary"),
        (Dist(dependencies=[f"pkg{i}" for i in range(150)]), "Requires-Dist"),
        (Dist(dependencies=["p" * 1100]), "Requires-Dist"),
        (Dist(summary="bell \x07 here"), "control character U\\+0007"),
        (Dist(readme="# Hi\n\x1b[31mred\n"), "control character U\\+001B"),
        (Dist(version="0.1.0+local"), "local version"),
    ],
    ids=["summary", "requires-count", "requires-length", "summary-control", "readme-escape", "local-version"],
)
def test_metadata_caps(dist: Dist, match: str) -> None:
    refused(*dist.pair(), match=match)


def test_author_cap() -> None:
    d = Dist()
    meta = d.metadata().replace(b"Summary:", b"Author: " + b"a" * 2000 + b"\nSummary:")
    refused(d.wheel(metadata=meta), d.sdist(pkg_info=meta), match="Author")


def test_member_names_capped_and_control_free() -> None:
    d = Dist()
    refused(d.wheel(), d.sdist(extra=[("demo_env-0.1.0/tests/" + "n" * 600, b"")]), match="longer than 512")
    refused(d.wheel(), d.sdist(extra=[("demo_env-0.1.0/tests/a\x01b", b"")]), match="control")


@pytest.mark.parametrize("field", ["summary", "readme"])
def test_nul_refused_on_every_database(client: TestClient, hub: Hub, actors: Actors, field: str) -> None:
    d = Dist(**{field: "nul \x00 here"})  # type: ignore[arg-type]
    r = publish(client, actors.alice, *d.pair())
    assert r.status_code == 400, r.text
    assert "U+0000" in r.json()["detail"]


# --- wheels hold only the environment ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("evil.pth", r"\.pth"),
        ("sitecustomize.py", "interpreter start"),
        ("usercustomize.py", "interpreter start"),
        ("verifiers/__init__.py", "another top-level module"),
        ("other.py", "another top-level module"),
        ("demo_env-0.1.0.data/scripts/evil", r"\.data"),
    ],
)
def test_wheel_holds_only_the_package_and_dist_info(path: str, why: str) -> None:
    d = Dist()
    error = refused(d.wheel(extra={path: b"import os\n"}), d.sdist(), match=why)
    assert repr(path) in error.message


@pytest.mark.parametrize(
    "path", ["verifiers/__init__.py", "sitecustomize.py", "evil.pth", "data/__init__.py", "src/other/x.py"]
)
def test_sdist_outside_the_package_refused(path: str) -> None:
    d = Dist()
    refused(
        d.wheel(), d.sdist(extra=[(f"demo_env-0.1.0/{path}", b"x = 1\n")]), match="outside the import package"
    )


def test_sdist_may_carry_tests_docs_and_project_files() -> None:
    d = Dist()
    extra = [
        (f"demo_env-0.1.0/{p}", b"x\n")
        for p in ("README.md", "LICENSE", ".gitignore", "tests/test_env.py", "docs/index.md", "noxfile.py")
    ]
    check(d.wheel(), d.sdist(extra=extra))


def test_dist_info_must_name_the_distribution() -> None:
    d = Dist()
    name, data = d.wheel()
    buf = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(buf, "w") as dst:
        for info in src.infolist():
            dst.writestr(
                info.filename.replace("demo_env-0.1.0.dist-info", "other-9.dist-info"), src.read(info)
            )
    refused((name, buf.getvalue()), d.sdist(), match="does not match the wheel's name and version")


def test_bundled_environments_pass(tmp_path: Path) -> None:
    """The environments shipped in environments/ build (PEP 517) into archives the hub accepts."""
    envs = sorted(p.parent for p in (ROOT / "environments").glob("*/pyproject.toml"))
    assert envs
    for env in envs:
        out = tmp_path / env.name
        subprocess.run(
            [sys.executable, "-m", "build", "--no-isolation", "-q", "--outdir", str(out), str(env)],
            check=True,
            capture_output=True,
        )
        wheel, sdist = next(out.glob("*.whl")), next(out.glob("*.tar.gz"))
        inspect_upload(
            expected_name=env.name,
            wheel_filename=wheel.name,
            wheel_data=wheel.read_bytes(),
            sdist_filename=sdist.name,
            sdist_data=sdist.read_bytes(),
            limits=DEFAULTS,
        )
        shutil.rmtree(out)


# --- versions equal under PEP 440 are one version ------------------------------------------------------
def test_equal_versions_conflict(client: TestClient, actors: Actors) -> None:
    assert publish(client, actors.alice, *Dist(version="1.0.0").pair()).status_code == 201
    for same in ("1.0", "1.0.0.0", "01.0.0"):
        r = publish(client, actors.alice, *Dist(version=same).pair())
        assert r.status_code == 409, (same, r.text)


def test_equal_versions_racing_conflict(hub: Hub, actors: Actors, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """``1.0`` and ``1.0.0`` are different strings, so the unique constraint alone lets both in."""
    from hub_server.auth import authenticate

    with hub.db.read() as s:
        principal, _ = authenticate(s, actors.alice)
    wheel, sdist = Dist(version="0.1.0").pair()
    services.publish(hub, principal, "alice", "demo-env", services.Upload(*wheel), services.Upload(*sdist))
    barrier = threading.Barrier(2, timeout=300)
    real_insert = publishing._insert_version

    def synchronised_insert(*args, **kwargs):  # type: ignore[no-untyped-def]
        barrier.wait()  # both have passed the early check; the insert must decide
        return real_insert(*args, **kwargs)

    monkeypatch.setattr(publishing, "_insert_version", synchronised_insert)
    results: list[object] = []

    def attempt(version: str) -> None:
        w, s = Dist(version=version).pair()
        try:
            services.publish(hub, principal, "alice", "demo-env", services.Upload(*w), services.Upload(*s))
            results.append("ok")
        except services.HubError as exc:
            results.append(exc.status_code)

    threads = [threading.Thread(target=attempt, args=(v,)) for v in ("1.0", "1.0.0")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert sorted(results, key=str) == [409, "ok"]
