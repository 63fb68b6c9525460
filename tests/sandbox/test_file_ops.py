"""Agent-served file operations (``list_dir``, ``search``) and ``exec(stderr_to_stdout=True)``, on every
backend: no process is started for the first two, and they see what commands see."""

from __future__ import annotations

import pytest

from verifiers.sandbox import DirEntry, Sandbox

pytestmark = pytest.mark.sandbox


async def _tree(sandbox: Sandbox) -> None:
    await sandbox.write_file("pkg/a.py", "x = 1\ny = x + 1\n# x again\n")
    await sandbox.write_file("pkg/sub/b.py", "print('x')\n")
    await sandbox.write_file("pkg/sub/deep/c.py", "x\n")
    await sandbox.write_file("pkg/notes.txt", "x marks\n")
    await sandbox.write_file("pkg/.hidden/h.py", "x\n")
    await sandbox.write_file("pkg/.dot.py", "x\n")
    await sandbox.write_file("pkg/blob.bin", b"x\0\1\2")


async def test_list_dir_depth_hidden_and_order(sandbox: Sandbox) -> None:
    await _tree(sandbox)
    one = await sandbox.list_dir("pkg")
    assert one == [
        DirEntry("pkg/a.py", "file"),
        DirEntry("pkg/blob.bin", "file"),
        DirEntry("pkg/notes.txt", "file"),
        DirEntry("pkg/sub", "dir"),
    ]
    two = [e.path for e in await sandbox.list_dir("pkg", max_depth=2)]
    assert two == ["pkg/a.py", "pkg/blob.bin", "pkg/notes.txt", "pkg/sub", "pkg/sub/b.py", "pkg/sub/deep"]
    hidden = {e.path for e in await sandbox.list_dir("pkg", include_hidden=True)}
    assert {"pkg/.hidden", "pkg/.dot.py"} <= hidden
    assert len(await sandbox.list_dir("pkg", max_depth=3, max_entries=2)) == 2
    with pytest.raises(NotADirectoryError):
        await sandbox.list_dir("pkg/a.py")
    with pytest.raises(FileNotFoundError):
        await sandbox.list_dir("missing")
    with pytest.raises(ValueError):
        await sandbox.list_dir("../etc")


async def test_search_directory_file_suffixes_and_caps(sandbox: Sandbox) -> None:
    await _tree(sandbox)
    found = await sandbox.search("x", "pkg", suffixes=(".py",))
    by_path = {f.path: f for f in found.files}
    assert list(by_path) == ["pkg/a.py", "pkg/sub/b.py", "pkg/sub/deep/c.py"]  # no hidden, no .txt
    assert by_path["pkg/a.py"].count == 3
    assert by_path["pkg/a.py"].lines == ((1, "x = 1"), (2, "y = x + 1"), (3, "# x again"))
    assert found.files_matched == 3 and not found.truncated
    every = await sandbox.search("x", "pkg", include_hidden=True)
    paths = [f.path for f in every.files]
    assert "pkg/notes.txt" in paths and "pkg/.dot.py" in paths and "pkg/blob.bin" not in paths  # binary
    capped = await sandbox.search("x", "pkg", max_files=1, max_lines=1)
    assert len(capped.files) == 1 and capped.files_matched == 4 and capped.truncated
    assert capped.files[0].count == 3 and len(capped.files[0].lines) == 1
    single = await sandbox.search("again", "pkg/a.py")
    assert [(f.path, f.lines) for f in single.files] == [("pkg/a.py", ((3, "# x again"),))]
    assert (await sandbox.search("nothing-like-this", "pkg")).files == ()
    with pytest.raises(FileNotFoundError):
        await sandbox.search("x", "nope")
    with pytest.raises(ValueError):
        await sandbox.search("", "pkg")


async def test_search_does_not_follow_symlinks_out(sandbox: Sandbox) -> None:
    await sandbox.write_file("d/in.py", "needle\n")
    r = await sandbox.exec(["ln", "-s", "/etc", "d/etc"])
    assert r.exit_code == 0, r.stderr
    found = await sandbox.search("root", "d")
    assert found.files == ()
    assert DirEntry("d/etc", "link") in await sandbox.list_dir("d")


async def test_stderr_to_stdout_keeps_the_order(sandbox: Sandbox) -> None:
    code = "import sys\nprint('a', flush=True)\nprint('b', file=sys.stderr, flush=True)\nprint('c')\n"
    await sandbox.write_file("p.py", code)
    merged = await sandbox.exec(["python3", "p.py"], stderr_to_stdout=True)
    assert (merged.stdout, merged.stderr) == ("a\nb\nc\n", "")
    split = await sandbox.exec(["python3", "p.py"])
    assert (split.stdout, split.stderr) == ("a\nc\n", "b\n")
    shell = await sandbox.exec("echo out; echo err >&2", stderr_to_stdout=True)
    assert shell.stdout == "out\nerr\n"


async def test_upload_files_writes_every_file_in_one_bundle(sandbox: Sandbox) -> None:
    files = {"a.txt": b"alpha\n", "sub/b.bin": bytes(range(256)), "sub/deep/c.py": b"print(3)\n"}
    assert await sandbox.upload_files(files, dest="up") >= len(files)
    for name, data in files.items():
        assert await sandbox.read_file(f"up/{name}") == data
    r = await sandbox.exec(["python3", "up/sub/deep/c.py"], timeout=30)
    assert r.exit_code == 0 and r.stdout == "3\n"
    with pytest.raises(PermissionError, match="outside the destination"):
        await sandbox.upload_files({"../escape.txt": b"x"})
