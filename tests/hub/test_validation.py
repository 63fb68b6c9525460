"""Upload validation, without a server: every bad archive is refused with a message that says what to fix."""

from __future__ import annotations

import gzip
import io
import tarfile
import zipfile
from dataclasses import replace

import pytest

from hub_server.validation import Limits, UploadError, inspect_upload
from tests.hub._dists import Dist, tar_device, tar_link, zip_symlink
from verifiers.hub.packaging import content_hash_of_sdist

LIMITS = Limits(max_file_size=256 * 1024, max_unpacked_size=1024 * 1024, max_members=50, max_readme_size=4096)


def check(
    wheel: tuple[str, bytes],
    sdist: tuple[str, bytes],
    *,
    name: str = "demo-env",
    limits: Limits = LIMITS,
    **kw,
):  # type: ignore[no-untyped-def]
    return inspect_upload(
        expected_name=name,
        wheel_filename=wheel[0],
        wheel_data=wheel[1],
        sdist_filename=sdist[0],
        sdist_data=sdist[1],
        limits=limits,
        **kw,
    )


def refused(*args, status: int = 400, match: str, **kw) -> UploadError:  # type: ignore[no-untyped-def]
    with pytest.raises(UploadError, match=match) as info:
        check(*args, **kw)
    assert info.value.status_code == status, info.value.message
    return info.value


def test_good_pair_is_accepted_and_described() -> None:
    d = Dist(keywords=["Demo", "math"])
    wheel, sdist = d.pair()
    info = check(wheel, sdist, name="Demo_Env")  # any spelling of the name normalises to the same
    assert (info.name, info.version, info.module) == ("demo-env", "0.1.0", "demo_env")
    assert info.content_hash == content_hash_of_sdist(sdist[1], "demo_env")
    assert info.requires_python == ">=3.11"
    assert info.dependencies == ["verifiers-sdk"]
    assert info.tags == ["demo", "math"]
    assert info.readme.startswith("# Demo")
    assert {
        "path": "demo_env/__init__.py",
        "size": len(d.module_files()["demo_env/__init__.py"]),
    } in info.sdist_files
    assert info.core_metadata.startswith(b"Metadata-Version")


@pytest.mark.parametrize(
    "source",
    [
        b"from .core import load_environment\n",
        b"from .core import make as load_environment\n",
        b"def _make(**kw): ...\nload_environment = _make\n",
        b"try:\n    from .fast import load_environment\nexcept ImportError:\n    from .slow import load_environment\n",
        b"async def load_environment(**kw): ...\n",
    ],
)
def test_load_environment_found_statically(source: bytes) -> None:
    d = Dist(files={"demo_env/__init__.py": source})
    check(*d.pair())


def test_missing_load_environment() -> None:
    d = Dist(files={"demo_env/__init__.py": b"def load_env(): ...\n"})
    refused(*d.pair(), match="does not define load_environment")


def test_syntax_error_names_the_line() -> None:
    d = Dist(files={"demo_env/__init__.py": b"x = 1\ndef load_environment(:\n"})
    refused(*d.pair(), match=r"demo_env/__init__.py: syntax error at line 2")


def test_missing_module() -> None:
    d = Dist(files={"other/__init__.py": b"def load_environment(): ...\n"})
    refused(*d.pair(), match="has no module 'demo_env'")


def test_src_layout_and_single_file_module() -> None:
    check(*Dist(files={"demo_env.py": b"def load_environment(): ...\n"}).pair())
    # src layout: the sdist keeps the module under src/, the wheel at its root; both hash alike
    source = b"def load_environment(): ...\n"
    wheel = Dist(files={"demo_env/__init__.py": source}).wheel()
    sdist = Dist(files={"src/demo_env/__init__.py": source}).sdist()
    info = check(wheel, sdist)
    assert info.content_hash == content_hash_of_sdist(sdist[1], "demo_env")
    assert {"path": "src/demo_env/__init__.py", "size": len(source)} in info.sdist_files


@pytest.mark.parametrize(
    ("member", "match"),
    [
        ("demo_env-0.1.0/../../evil.py", r"contains '\.\.'"),
        ("/etc/cron.d/evil", "absolute path"),
        ("C:/evil.py", "absolute path"),
        ("demo_env-0.1.0/a\\..\\b.py", "backslash"),
        ("other-top/evil.py", "outside the top-level directory"),
    ],
)
def test_sdist_bad_member_paths(member: str, match: str) -> None:
    d = Dist()
    refused(d.wheel(), d.sdist(extra=[(member, b"x")]), match=match)


@pytest.mark.parametrize(
    ("info", "match"),
    [
        (tar_link("demo_env-0.1.0/demo_env/link.py", "/etc/passwd"), "is a link"),
        (tar_link("demo_env-0.1.0/demo_env/hard.py", "demo_env-0.1.0/PKG-INFO", hard=True), "is a link"),
        (tar_device("demo_env-0.1.0/dev"), "device"),
    ],
)
def test_sdist_links_and_devices(info: tarfile.TarInfo, match: str) -> None:
    d = Dist()
    refused(d.wheel(), d.sdist(extra=[info]), match=match)


@pytest.mark.parametrize(
    ("path", "match"),
    [
        ("../evil.py", r"contains '\.\."),
        ("/abs/evil.py", "absolute path"),
        ("demo_env/../../x.py", r"'\.\.'"),
    ],
)
def test_wheel_bad_member_paths(path: str, match: str) -> None:
    d = Dist()
    refused(d.wheel(extra={path: b"x"}), d.sdist(), match=match)


def test_wheel_symlink_member() -> None:
    d = Dist()
    name, data = d.wheel()
    buf = io.BytesIO(data)
    with zipfile.ZipFile(buf, "a") as zf:
        zip_symlink(zf, "demo_env/link.py", "/etc/passwd")
    refused((name, buf.getvalue()), d.sdist(), match="symlink")


def test_wheel_duplicate_member() -> None:
    d = Dist()
    name, data = d.wheel()
    buf = io.BytesIO(data)
    with zipfile.ZipFile(buf, "a") as zf, pytest.warns(UserWarning):
        zf.writestr("demo_env/__init__.py", b"def load_environment(): return 'evil'\n")
    refused((name, buf.getvalue()), d.sdist(), match="appears twice")


def test_names_must_agree() -> None:
    d, other = Dist(), Dist(name="other-env")
    refused(d.wheel(), other.sdist(), match="distribution names do not agree")
    refused(d.wheel(), d.sdist(), name="other-env", match="distribution names do not agree")
    # a wheel whose METADATA disagrees with its own filename
    refused(d.wheel(metadata=d.metadata(name="evil-env")), d.sdist(), match="the wheel METADATA: evil-env")


def test_versions_must_agree() -> None:
    d, newer = Dist(), Dist(version="0.2.0")
    refused(d.wheel(), newer.sdist(), match="versions do not agree")
    refused(d.wheel(), d.sdist(pkg_info=d.metadata(version="9.9")), match="the sdist PKG-INFO: 9.9")


def test_wheel_and_sdist_sources_must_match() -> None:
    a = Dist()
    b = Dist(files={"demo_env/__init__.py": b"def load_environment(**kw):\n    return 'different'\n"})
    refused(a.wheel(), b.sdist(), match="hold different sources")


def test_declared_content_hash_must_match() -> None:
    d = Dist()
    refused(*d.pair(), declared_content_hash="0" * 64, match="differs from the one the hub computed")


def test_direct_url_dependency_refused() -> None:
    d = Dist(dependencies=["evil @ https://example.invalid/evil.whl"])
    refused(*d.pair(), match="direct URL")


def test_size_limits() -> None:
    d = Dist(
        files={"demo_env/__init__.py": b"def load_environment(): ...\n", "demo_env/big.bin": b"\0" * 300_000}
    )
    # the wheel compresses zeros well, so it passes max_file_size but not max_unpacked_size
    small = replace(LIMITS, max_unpacked_size=200_000)
    refused(*d.pair(), limits=small, status=413, match="unpacks to more than")
    tiny = replace(LIMITS, max_file_size=1000)
    refused(*Dist(readme="x" * 5000).pair(), limits=tiny, status=413, match="the hub accepts at most 1000")


def test_gzip_bomb_is_bounded() -> None:
    d = Dist()
    # 50 MB of zeros inside the tar compresses to ~50 KB; the hub stops reading at max_unpacked_size.
    big = tarfile.TarInfo("demo_env-0.1.0/zeros.bin")
    big.size = 50 * 1024 * 1024
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        tar.addfile(big, io.BytesIO(bytes(big.size)))
    bomb = gzip.compress(raw.getvalue(), compresslevel=9)
    assert len(bomb) < LIMITS.max_file_size
    refused(d.wheel(), ("demo_env-0.1.0.tar.gz", bomb), status=413, match="unpacks to more than")


def test_too_many_members() -> None:
    d = Dist()
    extra = [(f"demo_env-0.1.0/f{i}.txt", b"") for i in range(60)]
    refused(d.wheel(), d.sdist(extra=extra), status=413, match="more than 50 members")


def test_readme_limit() -> None:
    refused(*Dist(readme="x" * 5000).pair(), status=413, match="README is")


@pytest.mark.parametrize(
    ("wheel_name", "sdist_name", "match"),
    [
        ("demo_env-0.1.0.zip", "demo_env-0.1.0.tar.gz", "must hold a .whl"),
        ("demo_env-0.1.0-py3-none-any.whl", "demo_env-0.1.0.zip", "must be a .tar.gz"),
        ("demo env-0.1.0-py3-none-any.whl", "demo_env-0.1.0.tar.gz", "characters other than"),
        ("demo_env-notaversion-py3-none-any.whl", "demo_env-0.1.0.tar.gz", "invalid wheel filename"),
    ],
)
def test_bad_filenames(wheel_name: str, sdist_name: str, match: str) -> None:
    (_, w), (_, s) = Dist().pair()
    refused((wheel_name, w), (sdist_name, s), match=match)


def test_garbage_archives() -> None:
    d = Dist()
    refused(("demo_env-0.1.0-py3-none-any.whl", b"not a zip"), d.sdist(), match="not a valid zip")
    refused(d.wheel(), ("demo_env-0.1.0.tar.gz", b"not gzip at all"), match="not a valid gzip")
    refused(
        d.wheel(), ("demo_env-0.1.0.tar.gz", gzip.compress(b"not a tar")), match="not a valid tar|PKG-INFO"
    )
    refused(d.wheel(), ("demo_env-0.1.0.tar.gz", b""), match="is empty")


def test_invalid_tag_refused() -> None:
    refused(*Dist(keywords=["ok", "not ok!"]).pair(), status=422, match="invalid tag")
