"""Issue 33 items 1, 2 and 4, without a server: what a wheel's bytes can hide from a reader of the
central directory (each zip written field by field, ``tests.hub._zips``), native code beside the checked
sources, and sdists whose build would run code.

Each class is tried with several inputs of its kind, since the reporters try others of the same class.
What installers make of such archives is ``test_archive_installs.py``."""

from __future__ import annotations

import io
import struct
import tarfile
import zipfile
import zlib
from pathlib import Path

import pytest

from hub_server.build_rules import check_build_config
from hub_server.validation import Limits, UploadError, inspect_upload
from tests.hub._dists import Dist
from tests.hub._zips import (
    UNICODE_COMMENT,
    UNICODE_PATH,
    WHEEL_NAME,
    Member,
    Unseekable,
    build_zip,
    extra_field,
    find,
    unicode_field,
    wheel_members,
)
from verifiers.cli._init_templates import PYPROJECT

ROOT = Path(__file__).resolve().parents[2]
MiB = 1024 * 1024
LIMITS = Limits(
    max_file_size=20 * MiB, max_unpacked_size=100 * MiB, max_members=5000, max_readme_size=512 * 1024
)
HELPER = "demo_env/helper.py"
HELPER_SOURCE = b"VALUE = 1\n"
WITH_HELPER = Dist(files={**Dist().module_files(), HELPER: HELPER_SOURCE})


def check(wheel: bytes, sdist: tuple[str, bytes] | None = None, *, filename: str = WHEEL_NAME) -> None:
    sdist = sdist or WITH_HELPER.sdist()
    inspect_upload(
        expected_name="demo-env",
        wheel_filename=filename,
        wheel_data=wheel,
        sdist_filename=sdist[0],
        sdist_data=sdist[1],
        limits=LIMITS,
    )


def refused(wheel: bytes, match: str, sdist: tuple[str, bytes] | None = None) -> str:
    with pytest.raises(UploadError, match=match) as info:
        check(wheel, sdist)
    assert info.value.status_code == 400, info.value.message
    return info.value.message


def members() -> list[Member]:
    return wheel_members({HELPER: HELPER_SOURCE})


# --- item 1: the container as any installer reads it -------------------------------------------------------
def test_a_wheel_written_field_by_field_is_accepted() -> None:
    """The builder itself makes valid wheels, so every refusal below is the one lie the test adds."""
    check(build_zip(members()))


def zz_pth_attack(target: str = "zz.pth", *, local: bool = True, central: bool = True) -> bytes:
    """The reported attack: ``demo_env/helper.py`` (listed in RECORD, hashed, the same in the sdist) whose
    Info-ZIP Unicode Path field names ``target``; uv extracts it as ``target``."""
    ms = members()
    helper = find(ms, HELPER)
    field = unicode_field(UNICODE_PATH, HELPER.encode(), target.encode())
    helper.local_extra = field if local else b""
    helper.central_extra = field if central else b""
    return build_zip(ms)


@pytest.mark.parametrize(
    "target", ["zz.pth", "sitecustomize.py", "verifiers/__init__.py", "demo_env/__init__.py"]
)
@pytest.mark.parametrize(
    ("local", "central"), [(True, True), (True, False), (False, True)], ids=["both", "local", "central"]
)
def test_a_unicode_path_field_naming_another_file_is_refused(target: str, local: bool, central: bool) -> None:
    message = refused(zz_pth_attack(target, local=local, central=central), match="Unicode path extra field")
    assert HELPER in message and target in message


def test_a_unicode_path_field_repeating_the_name_is_accepted() -> None:
    ms = members()
    helper = find(ms, HELPER)
    helper.local_extra = helper.central_extra = unicode_field(UNICODE_PATH, HELPER.encode(), HELPER.encode())
    check(build_zip(ms))


def test_a_unicode_comment_field_differing_from_the_comment_is_refused() -> None:
    ms = members()
    helper = find(ms, HELPER)
    helper.comment = b"plain"
    helper.central_extra = unicode_field(UNICODE_COMMENT, b"plain", b"something else")
    refused(build_zip(ms), match="Unicode comment extra field")


@pytest.mark.parametrize(
    ("override", "match"),
    [
        ({"name": b"zz.pth"}, "local header of 'demo_env/helper.py' names 'zz.pth'"),
        ({"method": zipfile.ZIP_BZIP2}, "says method 12"),  # a local bzip2 behind a central deflate
        ({"method": zipfile.ZIP_STORED}, "says method 0"),
        ({"flags": 0x800}, "flags"),
        ({"crc": 0x12345678}, "CRC/sizes"),
        ({"usize": 1}, "CRC/sizes"),
        ({"csize": 3}, "CRC/sizes"),
    ],
    ids=["name", "bzip2", "stored", "flags", "crc", "usize", "csize"],
)
def test_local_and_central_headers_must_agree(override: dict[str, object], match: str) -> None:
    ms = members()
    find(ms, HELPER).local = override
    refused(build_zip(ms), match=match)


def test_a_central_entry_must_agree_with_its_local_header_too() -> None:
    ms = members()
    find(ms, HELPER).central = {"method": zipfile.ZIP_STORED}
    refused(build_zip(ms), match="says method 8")


def test_a_local_entry_missing_from_the_central_directory_is_refused() -> None:
    """A streaming reader (local headers one after another) sees a member a reader of the central
    directory never does: between two listed members, or after the last one."""
    hidden = Member("zz.pth", b"import os; os.system('id')\n", in_central=False)
    ms = members()
    refused(build_zip([*ms[:2], hidden, *ms[2:]]), match="between two members")
    refused(build_zip([*ms, hidden]), match="after the last member")
    refused(build_zip([hidden, *ms]), match="before the first member")


@pytest.mark.parametrize("absolute", [True, False], ids=["offsets-count-the-prefix", "offsets-relative"])
def test_data_before_the_first_local_header_is_refused(absolute: bool) -> None:
    """A polyglot: a shell script (or another archive) in front, which zipfile reads past either way."""
    prefix = b"#!/bin/sh\necho polyglot\nexit 0\n"
    refused(
        build_zip(members(), prefix=prefix, absolute_offsets=absolute), match="before the first|does not end"
    )


def test_data_between_members_or_before_the_central_directory_is_refused() -> None:
    refused(build_zip(members(), gaps={1: b"\0" * 64}), match="between two members")
    refused(build_zip(members(), before_central=b"PK\x03\x04junk"), match="after the last member")


def test_a_deflate_stream_that_ends_before_its_member_is_refused() -> None:
    """What follows the deflate stream inside the member is where a streaming reader looks for the next
    local header."""
    ms = members()
    helper = find(ms, HELPER)
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    hidden = build_zip([Member("zz.pth", b"import os\n")])
    helper.compressed = c.compress(HELPER_SOURCE) + c.flush() + hidden
    refused(build_zip(ms), match="deflate stream ends before the member does")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"eocd_count": 3}, "end record counts 3 entries"),
        ({"zip64_count": 2}, "end record counts 2 entries"),
        ({"zip64_count": 99}, "end record counts 99 entries"),
        ({"trailer": b"trailing"}, "does not end with its end-of-central-directory record"),
        ({"comment": b"an archive comment"}, "does not end with its end-of-central-directory record"),
    ],
)
def test_end_records_must_describe_the_entries(kwargs: dict[str, object], match: str) -> None:
    refused(build_zip(members(), **kwargs), match=match)  # type: ignore[arg-type]


def test_zip64_end_records_that_agree_are_accepted() -> None:
    ms = members()
    check(build_zip(ms, zip64_count=len(ms)))


def test_zip64_members_and_data_descriptors_written_by_zipfile_are_accepted() -> None:
    """Real writers: zipfile's forced zip64 entries, and the data descriptors it writes to a pipe."""
    for seekable in (True, False):
        buf = io.BytesIO()
        sink = buf if seekable else Unseekable(buf)
        with zipfile.ZipFile(sink, "w", zipfile.ZIP_DEFLATED) as zf:  # type: ignore[arg-type]
            for m in members():
                with zf.open(
                    zipfile.ZipInfo(m.name, date_time=(2024, 1, 1, 0, 0, 0)), "w", force_zip64=seekable
                ) as f:
                    f.write(m.data)
        check(buf.getvalue())


def test_a_data_descriptor_that_disagrees_is_refused() -> None:
    ms = members()
    helper = find(ms, HELPER)
    helper.descriptor = True
    check(build_zip(ms))
    helper.central = {"crc": 1}
    helper.local = {"crc": 0}
    refused(build_zip(ms), match="data descriptor|disagrees")


@pytest.mark.parametrize(
    ("name", "match"),
    [
        ("demo_env/./helper2.py", "canonical"),
        ("demo_env//helper2.py", "canonical"),
    ],
)
def test_member_names_must_be_canonical(name: str, match: str) -> None:
    refused(build_zip(wheel_members({HELPER: HELPER_SOURCE, name: b"x = 1\n"})), match=match)


def test_names_equal_after_unicode_normalisation_are_refused() -> None:
    extra = {"demo_env/caf\u00e9.txt": b"a", "demo_env/cafe\u0301.txt": b"b"}
    refused(build_zip(wheel_members({HELPER: HELPER_SOURCE, **extra})), match="Unicode normalisation")


def test_a_non_ascii_name_must_be_flagged_utf8() -> None:
    name = "demo_env/caf\u00e9.txt"
    ms = wheel_members({HELPER: HELPER_SOURCE, name: b"a"})
    m = find(ms, name)
    m.local = m.central = {"flags": 0}
    refused(build_zip(ms), match="not flagged as UTF-8")


def test_unknown_extra_fields_are_refused() -> None:
    ms = members()
    # PKWARE's Unix field carries a link target: a reader that honours it makes a symlink.
    find(ms, HELPER).central_extra = extra_field(0x000D, struct.pack("<2L2H", 0, 0, 0, 0) + b"/etc/passwd")
    refused(build_zip(ms), match="extra field 0x000d")


def test_a_repeated_extra_field_is_refused() -> None:
    ms = members()
    field = unicode_field(UNICODE_PATH, HELPER.encode(), HELPER.encode())
    find(ms, HELPER).central_extra = field + field
    refused(build_zip(ms), match="repeats the extra field")


# --- item 2: native code -----------------------------------------------------------------------------------
NATIVE = [
    "demo_env/__init__.cpython-311-x86_64-linux-gnu.so",
    "demo_env/helper.abi3.so",
    "demo_env/helper.so",
    "demo_env/helper.cp311-win_amd64.pyd",
    "demo_env/helper.pyd",
    "demo_env/helper.dll",
    "demo_env/helper.dylib",
    "demo_env/libhelper.so.1.2",
    "demo_env/HELPER.SO",  # imported by a case-insensitive file system
    "demo_env/sub/_speedups.cpython-311-darwin.so",
]


@pytest.mark.parametrize("path", NATIVE)
def test_native_code_in_the_wheel_is_refused(path: str) -> None:
    """``import demo_env`` runs ``__init__.<tag>.so`` instead of the checked ``__init__.py``; the sdist
    holds the same file, so the content hash comparison alone cannot tell."""
    elf = b"\x7fELF" + bytes(60)
    sdist = Dist(files={**Dist().module_files(), path: elf}).sdist()
    message = refused(build_zip(wheel_members({path: elf})), match="native code", sdist=sdist)
    assert repr(path) in message


@pytest.mark.parametrize("path", NATIVE[:4])
def test_native_code_in_the_sdists_package_is_refused(path: str) -> None:
    sdist = Dist(files={**Dist().module_files(), path: b"\x7fELF"}).sdist()
    with pytest.raises(UploadError, match="native code"):
        check(Dist().wheel()[1], sdist)


@pytest.mark.parametrize(
    "path", ["evil.so", "evil.cpython-311-x86_64-linux-gnu.so", "evil.pyd", "src/evil.so"]
)
def test_native_code_beside_the_sdists_package_is_refused(path: str) -> None:
    sdist = Dist().sdist(extra=[(f"demo_env-0.1.0/{path}", b"\x7fELF")])
    with pytest.raises(UploadError, match="outside the import package"):
        check(Dist().wheel()[1], sdist)


def test_native_code_outside_what_a_build_installs_is_left_alone() -> None:
    check(Dist().wheel()[1], Dist().sdist(extra=[("demo_env-0.1.0/tests/fixtures/lib.so", b"\x7fELF")]))


# --- item 4: sdists whose build runs code ------------------------------------------------------------------
GOOD_BUILD = '[build-system]\nrequires = ["hatchling>=1.24"]\nbuild-backend = "hatchling.build"\n'
GOOD_PROJECT = (
    '[project]\nname = "demo-env"\nversion = "0.1.0"\n\n'
    '[project.entry-points."verifiers.environments"]\ndemo-env = "demo_env:load_environment"\n'
)
WHEEL_TARGET = '[tool.hatch.build.targets.wheel]\npackages = ["demo_env"]\n'


def sdist_with(pyproject: str | None, *extra: tuple[str, bytes]) -> tuple[str, bytes]:
    """Dist()'s sdist with ``pyproject`` as its pyproject.toml (None: none at all) and ``extra`` files."""
    name, data = Dist().sdist(extra=[(f"demo_env-0.1.0/{p}", d) for p, d in extra])
    out = io.BytesIO()
    with (
        tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as src,
        tarfile.open(fileobj=out, mode="w:gz") as dst,
    ):
        for m in src.getmembers():
            if m.name.endswith("/pyproject.toml"):
                if pyproject is None:
                    continue
                body = pyproject.encode()
                m.size = len(body)
                dst.addfile(m, io.BytesIO(body))
            else:
                dst.addfile(m, src.extractfile(m))
    return name, out.getvalue()


def build_refused(sdist: tuple[str, bytes], match: str) -> None:
    with pytest.raises(UploadError, match=match) as info:
        check(Dist().wheel()[1], sdist)
    assert info.value.status_code == 400


def test_a_static_hatchling_project_is_accepted() -> None:
    check(Dist().wheel()[1], sdist_with(f"{GOOD_BUILD}\n{GOOD_PROJECT}\n{WHEEL_TARGET}"))


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("setup.py", b"import os; os.system('id')\n"),
        ("setup.cfg", b"[options]\nsetup_requires = evil\n"),
        ("hatch.toml", b"[build.hooks.custom]\n"),
        ("hatch_build.py", b"from hatchling.builders.hooks.plugin.interface import BuildHookInterface\n"),
    ],
)
def test_build_scripts_are_refused(path: str, body: bytes) -> None:
    build_refused(sdist_with(f"{GOOD_BUILD}\n{GOOD_PROJECT}", (path, body)), match=f"{path}' is refused")


@pytest.mark.parametrize(
    ("build_system", "match"),
    [
        (
            '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n',
            "build-backend is",
        ),
        (
            '[build-system]\nrequires = ["hatchling", "evil-backend"]\nbuild-backend = "hatchling.build"\n',
            "exactly one",
        ),
        ('[build-system]\nrequires = ["evil-backend"]\nbuild-backend = "hatchling.build"\n', "exactly one"),
        (
            '[build-system]\nrequires = ["hatchling @ https://example.invalid/h.whl"]\nbuild-backend = "hatchling.build"\n',
            "exactly one",
        ),
        (
            '[build-system]\nrequires = ["hatchling[evil]"]\nbuild-backend = "hatchling.build"\n',
            "exactly one",
        ),
        (
            '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "backend"\nbackend-path = ["."]\n',
            "backend-path",
        ),
        ('[build-system]\nrequires = ["hatchling"]\n', "build-backend is None"),
        ("", "no \\[build-system\\]"),
    ],
)
def test_build_backends_other_than_hatchling_alone_are_refused(build_system: str, match: str) -> None:
    build_refused(sdist_with(f"{build_system}\n{GOOD_PROJECT}"), match=match)


@pytest.mark.parametrize(
    ("project", "match"),
    [
        (GOOD_PROJECT + '\n[project.scripts]\npip = "demo_env:hijack"\n', r"project\.scripts"),
        (GOOD_PROJECT + '\n[project.gui-scripts]\npython = "demo_env:hijack"\n', r"project\.gui-scripts"),
        (GOOD_PROJECT + '\n[project.entry-points.pytest11]\nplugin = "demo_env.plugin"\n', "pytest11"),
        (GOOD_PROJECT.replace('"demo_env:load_environment"', '"os:system"'), "not the environment's own"),
        (GOOD_PROJECT.replace("demo-env = ", "math-env = "), "not the environment's own"),
        (GOOD_PROJECT.replace('version = "0.1.0"', 'dynamic = ["version"]'), "dynamic"),
        (GOOD_PROJECT.replace('name = "demo-env"', 'name = "other-env"'), "not the environment's name"),
    ],
)
def test_projects_that_install_commands_or_compute_metadata_are_refused(project: str, match: str) -> None:
    build_refused(sdist_with(f"{GOOD_BUILD}\n{project}"), match=match)


@pytest.mark.parametrize(
    ("tool", "match"),
    [
        ("[tool.hatch.build.hooks.custom]\n", "tool.hatch.build"),
        ('[tool.hatch.build.targets.wheel.hooks.custom]\npath = "x.py"\n', "hooks"),
        ('[tool.hatch.build.targets.wheel.force-include]\n"docs/x" = "zz.pth"\n', "force-include"),
        ('[tool.hatch.build.targets.wheel.shared-scripts]\n"docs/x" = "pip"\n', "shared-scripts"),
        ('[tool.hatch.build.targets.wheel.shared-data]\n"docs/x" = "x"\n', "shared-data"),
        ('[tool.hatch.build.targets.wheel.sources]\n"demo_env" = "verifiers"\n', "sources"),
        ('[tool.hatch.build.targets.wheel]\npackages = ["demo_env", "docs"]\n', "packages"),
        ('[tool.hatch.build.targets.custom]\npath = "b.py"\n', "custom"),
        ('[tool.hatch.version]\nsource = "code"\npath = "v.py"\n', r"tool\.hatch\]"),
        ("[tool.hatch.metadata.hooks.custom]\n", r"tool\.hatch\]"),
        (
            '[tool.hatch.build.targets.wheel.extra-metadata]\n"pyproject.toml" = "../../zz.pth"\n',
            "plain relative",
        ),
    ],
)
def test_hatch_configuration_beyond_the_package_is_refused(tool: str, match: str) -> None:
    build_refused(sdist_with(f"{GOOD_BUILD}\n{GOOD_PROJECT}\n{tool}"), match=match)


def test_an_sdist_without_pyproject_is_refused() -> None:
    build_refused(sdist_with(None), match="has no demo_env-0.1.0/pyproject.toml")


@pytest.mark.parametrize(
    "pyproject",
    sorted(ROOT.glob("environments/*/pyproject.toml")) + sorted(ROOT.glob("examples/*/pyproject.toml")),
)
def test_the_bundled_environments_follow_the_build_rules(pyproject: Path) -> None:
    import tomllib

    name = tomllib.loads(pyproject.read_text())["project"]["name"]
    check_build_config(str(pyproject), pyproject.read_bytes(), name, name.replace("-", "_"))


def test_vf_init_scaffolds_follow_the_build_rules() -> None:
    text = PYPROJECT.replace("__ENV_ID__", "demo-env").replace("__MODULE__", "demo_env")
    text = text.replace("__TITLE__", "Demo").replace("__SDK_REQ__", "verifiers-sdk")
    check_build_config("pyproject.toml", text.encode(), "demo-env", "demo_env")
