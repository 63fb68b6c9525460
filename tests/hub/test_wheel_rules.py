"""The wheel rules of issue 24 (items 2-5 and 8), without a server: compression methods and length-bounded
decompression, entry points, bytecode, RECORD, and the cost of METADATA and zip headers.

Each class is tested with several inputs, since the reporters try others of the same class."""

from __future__ import annotations

import base64
import hashlib
import io
import struct
import tracemalloc
import zipfile
from collections.abc import Callable

import pytest

from hub_server import validation
from hub_server.validation import Limits, UploadError, inspect_upload
from tests.hub._dists import EPOCH, Dist

MiB = 1024 * 1024
LIMITS = Limits(
    max_file_size=20 * MiB, max_unpacked_size=100 * MiB, max_members=5000, max_readme_size=512 * 1024
)
DIST_INFO = "demo_env-0.1.0.dist-info"


Archive = tuple[str, bytes]


def check(wheel: Archive, sdist: Archive | None = None) -> validation.InspectedUpload:
    """inspect_upload of ``wheel`` and ``sdist`` (default: Dist()'s, which has Dist()'s module files only,
    so the members tests add go under the .dist-info unless the test passes a matching sdist)."""
    sdist = sdist or Dist().sdist()
    return inspect_upload(
        expected_name="demo-env",
        wheel_filename=wheel[0],
        wheel_data=wheel[1],
        sdist_filename=sdist[0],
        sdist_data=sdist[1],
        limits=LIMITS,
    )


def refused(wheel: Archive, sdist: Archive | None = None, *, match: str) -> UploadError:
    with pytest.raises(UploadError, match=match) as info:
        check(wheel, sdist)
    return info.value


def record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def build_wheel(
    members: dict[str, bytes],
    *,
    record: Callable[[list[str]], list[str]] | None = None,
    method: Callable[[str], int] = lambda _: zipfile.ZIP_DEFLATED,
    extra: bytes = b"",
) -> tuple[str, bytes]:
    """Dist()'s wheel members plus ``members``, with a RECORD listing them all (``record`` may rewrite its
    lines), each member compressed by ``method(path)`` and carrying ``extra`` as its zip extra field."""
    d = Dist()
    with zipfile.ZipFile(io.BytesIO(d.wheel()[1])) as zf:
        entries = {i.filename: zf.read(i) for i in zf.infolist() if not i.filename.endswith("/RECORD")}
    entries.update(members)
    lines = [record_line(p, data) for p, data in entries.items()] + [f"{DIST_INFO}/RECORD,,"]
    entries[f"{DIST_INFO}/RECORD"] = ("\n".join(record(lines) if record else lines) + "\n").encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for path, data in entries.items():
            info = zipfile.ZipInfo(path, date_time=EPOCH)
            info.compress_type = method(path)
            info.extra = extra
            zf.writestr(info, data)
    return "demo_env-0.1.0-py3-none-any.whl", buf.getvalue()


def lie_about_size(wheel: bytes, name: str, size: int) -> bytes:
    """The wheel with ``name``'s declared uncompressed size replaced (local header and central directory)."""
    data = bytearray(wheel)
    encoded = name.encode()
    local = data.find(b"PK\x03\x04")
    while local >= 0:  # local headers: size at +22, name at +30
        name_len = struct.unpack_from("<H", data, local + 26)[0]
        if data[local + 30 : local + 30 + name_len] == encoded:
            struct.pack_into("<L", data, local + 22, size)
        local = data.find(b"PK\x03\x04", local + 4)
    central = data.find(b"PK\x01\x02")
    while central >= 0:  # central entries: size at +24, name at +46
        name_len = struct.unpack_from("<H", data, central + 28)[0]
        if data[central + 46 : central + 46 + name_len] == encoded:
            struct.pack_into("<L", data, central + 24, size)
        central = data.find(b"PK\x01\x02", central + 4)
    return bytes(data)


def peak_of(fn: Callable[[], object]) -> tuple[int, BaseException | None]:
    tracemalloc.start()
    try:
        fn()
        error: BaseException | None = None
    except BaseException as exc:
        error = exc
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak, error


# --- item 2: only stored and deflate members, decompressed with a length bound ---------------------------
@pytest.mark.parametrize("method", [zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA], ids=["bzip2", "lzma"])
def test_bzip2_and_lzma_bombs_are_refused_before_any_decompression(method: int) -> None:
    """A small member of 64 MiB of zeros that declares 1,000 bytes: zipfile decompresses bzip2 and LZMA
    blocks whole, whatever length is asked, so the hub must never start on them."""
    zeros = bytes(64 * MiB)
    name, wheel = build_wheel(
        {f"{DIST_INFO}/zeros.bin": zeros}, method=lambda p: method if p.endswith("zeros.bin") else 8
    )
    wheel = lie_about_size(wheel, f"{DIST_INFO}/zeros.bin", 1000)
    assert len(wheel) < 1 * MiB
    peak, error = peak_of(lambda: check((name, wheel)))
    assert isinstance(error, UploadError), error
    assert "compression method" in error.message and f"{DIST_INFO}/zeros.bin" in error.message
    assert peak < 4 * MiB, f"peak {peak / MiB:.1f} MiB: the member was decompressed"


def test_every_method_but_stored_and_deflate_is_refused() -> None:
    # Methods zipfile cannot even read (deflate64 = 9, PPMd = 98, ...) are refused by name, not as errors.
    name, wheel = build_wheel({f"{DIST_INFO}/data.txt": b"x"})
    data = bytearray(wheel)
    central = data.find(b"PK\x01\x02")
    for method in (9, 14, 93, 98, 99):
        struct.pack_into("<H", data, central + 10, method)
        with pytest.raises(UploadError, match=f"compression method {method}"):
            check((name, bytes(data)))


def test_stored_and_deflate_members_are_accepted() -> None:
    check(build_wheel({f"{DIST_INFO}/data.txt": b"stored"}, method=lambda _: zipfile.ZIP_STORED))
    check(build_wheel({f"{DIST_INFO}/data.txt": b"deflated"}))


def test_encrypted_members_are_refused() -> None:
    name, wheel = build_wheel({f"{DIST_INFO}/data.txt": b"x"})
    data = bytearray(wheel)
    central = data.find(b"PK\x01\x02")
    struct.pack_into("<H", data, central + 8, 0x1)
    refused((name, bytes(data)), match="encrypted")


# --- item 3: entry points ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("[console_scripts]\npip = demo_env:hijack\n", "console_scripts"),
        ("[gui_scripts]\npython = demo_env:hijack\n", "gui_scripts"),
        ("[pytest11]\nplugin = demo_env.plugin\n", "pytest11"),
        (
            "[verifiers.environments]\ndemo-env = demo_env:load_environment\n[console_scripts]\npip = demo_env:x\n",
            "console_scripts",
        ),
        # an indented header is a continuation to configparser but a section to other readers
        ("[verifiers.environments]\ndemo-env = demo_env:load_environment\n  [console_scripts]\n", "indented"),
        ("pip = demo_env:hijack\n", "not `name = module:function`"),
        ("[verifiers.environments]\nmath-env = demo_env:load_environment\n", "declares only itself"),
        ("[verifiers.environments]\ndemo-env = os:system\n", "declares only itself"),
        ("[verifiers.environments]\ndemo-env = demo_env:load_environment [extra]\n", "not `name"),
        ("[verifiers.environments]\x0c[console_scripts]\npip = demo_env:x\n", "control character"),
    ],
)
def test_entry_points_other_than_the_environment_are_refused(text: str, match: str) -> None:
    refused(build_wheel({f"{DIST_INFO}/entry_points.txt": text.encode()}), match=match)


def test_the_environment_entry_point_is_accepted() -> None:
    text = "# comment\n[verifiers.environments]\nDemo_Env = demo_env:load_environment\n"
    check(build_wheel({f"{DIST_INFO}/entry_points.txt": text.encode()}))


# --- item 4: bytecode -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "path",
    [
        "demo_env/helper.pyc",
        "demo_env/__pycache__/__init__.cpython-311.pyc",
        "demo_env/__pycache__/__init__.cpython-311.opt-1.pyc",
        "demo_env/legacy.pyo",
        "demo_env/HELPER.PYC",  # imported by a case-insensitive file system
        "demo_env/__PyCache__/notes.txt",
    ],
)
def test_bytecode_in_the_wheel_is_refused(path: str) -> None:
    # The sdist holds the same file, so the content hash comparison alone cannot tell.
    base = Dist().module_files()
    sdist = Dist(files={**base, path: b"\x00bytecode"}).sdist()
    refused(build_wheel({path: b"\x00bytecode"}), sdist, match="compiled bytecode")


def test_bytecode_in_the_sdists_package_is_refused() -> None:
    sdist = Dist(files={**Dist().module_files(), "demo_env/__pycache__/x.cpython-311.pyc": b"\x00"}).sdist()
    refused(Dist().wheel(), sdist, match="compiled bytecode")


# --- item 5: RECORD lists exactly the wheel's files with their sha256 and size ------------------------------
def _foreign(lines: list[str]) -> list[str]:
    return [*lines, "../../../bin/pip,,"]


@pytest.mark.parametrize(
    ("record", "match"),
    [
        (_foreign, r"lists '../../../bin/pip', which is not a file"),
        (lambda lines: [*lines, record_line("/usr/bin/python3", b"x")], "not a file of the wheel"),
        (lambda lines: [*lines, record_line("demo_env/../../evil.py", b"x")], "not a file of the wheel"),
        (lambda lines: [ln for ln in lines if not ln.startswith("demo_env/__init__")], "does not list"),
        (lambda lines: [*lines, lines[0]], "twice"),
        (
            lambda lines: [
                ln.replace(",sha256=", ",sha256=AAAA") if ln.startswith("demo_env/") else ln for ln in lines
            ],
            "sha256 or size",
        ),
        (
            lambda lines: [ln.rsplit(",", 1)[0] + ",1" if ln.startswith("demo_env/") else ln for ln in lines],
            "sha256 or size",
        ),
        (
            lambda lines: [
                ln.replace("sha256=", "md5=") if ln.startswith("demo_env/") else ln for ln in lines
            ],
            "sha256 or size",
        ),
        (
            lambda lines: [ln.replace("sha256=", "") if ln.startswith("demo_env/") else ln for ln in lines],
            "sha256 or size",
        ),
        (lambda lines: [*lines[:-1], f"{DIST_INFO}/RECORD,sha256=x,1"], "own line"),
        (lambda lines: [*lines, "a,b"], "path,hash,size"),
    ],
)
def test_record_must_list_exactly_the_wheels_files(
    record: Callable[[list[str]], list[str]], match: str
) -> None:
    refused(build_wheel({}, record=record), match=match)


def test_a_built_record_is_accepted() -> None:
    check(build_wheel({f"{DIST_INFO}/licenses/LICENSE": b"MIT\n"}))


# --- item 8: METADATA and zip headers cost at most linear time --------------------------------------------
def test_unknown_metadata_fields_are_refused_before_the_email_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    """The email parser's time is quadratic in distinct field names (8,000: 7 s of CPU; the METADATA cap
    allows ~115,000): unknown names are refused in one pass before it runs at all."""
    parsed: list[int] = []
    real = validation.Metadata.from_email

    def counting(*args: object, **kwargs: object) -> object:
        parsed.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(validation.Metadata, "from_email", counting)
    d = Dist()
    head, _, body = d.metadata().decode().partition("\n\n")
    for fields in (
        "".join(f"X-Field-{i}: v\n" for i in range(20_000)),
        ":empty name\n" + "".join(f"X-{i}: v\n" for i in range(1000)),  # a field the parser reads on past
        "From nowhere\n" + "".join(f"X-{i}: v\n" for i in range(1000)),
    ):
        metadata = f"{head}\n{fields}\n{body}".encode()
        with pytest.raises(UploadError, match="unknown field"):
            check(d.wheel(metadata=metadata), d.sdist(pkg_info=metadata))
    assert parsed == []


def test_too_many_metadata_fields_are_refused() -> None:
    d = Dist()
    head, _, body = d.metadata().decode().partition("\n\n")
    fields = "".join(f"Classifier: Topic :: T{i}\n" for i in range(validation.MAX_METADATA_FIELDS + 1))
    metadata = f"{head}\n{fields}\n{body}".encode()
    with pytest.raises(UploadError, match="more than 1024 fields") as info:
        check(d.wheel(metadata=metadata), d.sdist(pkg_info=metadata))
    assert info.value.status_code == 413


def test_large_zip_extra_fields_are_refused_before_they_are_parsed() -> None:
    """zipfile decodes each entry's extra field in time quadratic in its length (300 × 64 KiB extras cost
    16× the CPU of a plain upload of that size); the hub reads the archive with its own walk
    (``verifiers.hub.wheel_rules``), which refuses such a field by its length before looking inside it."""
    padding = b"\xfe\xca\x00\x00" * 16_000  # 64,000 bytes of empty extra records, a valid extra field
    members = {f"{DIST_INFO}/f{i}.txt": b"x" for i in range(20)}
    wheel = build_wheel(members, extra=padding)
    with pytest.raises(UploadError, match="extra field") as info:
        check(wheel)
    assert info.value.status_code == 413


def test_member_comments_and_entry_counts_are_capped_from_the_central_directory() -> None:
    name, wheel = build_wheel({})
    buf = io.BytesIO(wheel)
    with zipfile.ZipFile(buf, "a") as zf:
        info = zipfile.ZipInfo(f"{DIST_INFO}/noted.txt", date_time=EPOCH)
        info.comment = b"c" * 4000
        zf.writestr(info, b"x")
    refused((name, buf.getvalue()), match="comment")
    small = Limits(LIMITS.max_file_size, LIMITS.max_unpacked_size, 3, LIMITS.max_readme_size)
    with pytest.raises(UploadError, match="more than 3 members"):
        inspect_upload(
            expected_name="demo-env",
            wheel_filename=name,
            wheel_data=wheel,
            sdist_filename=Dist().sdist()[0],
            sdist_data=Dist().sdist()[1],
            limits=small,
        )


def test_members_differing_only_in_case_are_refused() -> None:
    base = Dist().module_files()
    sdist = Dist(files={**base, "demo_env/Data.txt": b"a", "demo_env/data.txt": b"b"}).sdist()
    refused(build_wheel({"demo_env/Data.txt": b"a", "demo_env/data.txt": b"b"}), sdist, match="only in case")


def test_a_truncated_or_garbled_central_directory_is_refused() -> None:
    name, wheel = build_wheel({})
    for data in (
        wheel[:-30],
        wheel.replace(b"PK\x01\x02", b"PK\x01\x03", 1),
        b"PK\x05\x06" + bytes(8) + struct.pack("<LLH", 999, 0, 0),
    ):
        with pytest.raises(UploadError, match="not a valid zip archive"):
            check((name, data))


def test_bytecode_outside_the_sdists_package_is_left_alone() -> None:
    # A build never installs an sdist's tests/, so what it keeps there is not the wheel rules' business.
    check(
        Dist().wheel(), Dist().sdist(extra=[("demo_env-0.1.0/tests/__pycache__/t.cpython-311.pyc", b"\x00")])
    )
