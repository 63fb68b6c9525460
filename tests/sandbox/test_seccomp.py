"""The bwrap seccomp filter, run through a small classic-BPF interpreter: every denied call is refused,
namespace flags are refused only where they are set, and everything else (threads, fork) passes."""

from __future__ import annotations

import errno
import re
import struct
from pathlib import Path

import pytest

from verifiers.sandbox import _seccomp as sc

UNISTD = Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h")


def run(nr: int, args: tuple[int, ...] = (), arch: int = sc.AUDIT_ARCH_X86_64) -> int:
    """Evaluate the program on one struct seccomp_data; returns the action."""
    a6 = (list(args) + [0] * 6)[:6]
    data = struct.pack("=IIQ6Q", nr, arch, 0, *a6)
    prog = sc.program()
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = prog[pc]
        if code == 0x20:
            acc = struct.unpack_from("=I", data, k)[0]
        elif code == 0x06:
            return k
        elif code in (0x15, 0x35, 0x45):
            hit = acc == k if code == 0x15 else (acc >= k if code == 0x35 else bool(acc & k))
            pc += jt if hit else jf
        else:
            raise AssertionError(f"unknown opcode {code:#x}")
        pc += 1


EPERM = sc.RET_ERRNO | errno.EPERM


def test_program_is_well_formed() -> None:
    prog = sc.program()
    assert len(prog) < 4096
    for i, (code, jt, jf, _k) in enumerate(prog):
        if code in (0x15, 0x35, 0x45):
            assert i + 1 + max(jt, jf) < len(prog)
    assert prog[-1] == (0x06, 0, 0, sc.RET_ALLOW)
    assert len(sc.compiled()) == 8 * len(prog)


@pytest.mark.skipif(not UNISTD.exists(), reason="no kernel headers to check syscall numbers against")
def test_syscall_numbers_match_the_kernel_headers() -> None:
    table = {m[0]: int(m[1]) for m in re.findall(r"#define __NR_(\w+) (\d+)", UNISTD.read_text())}
    named = {**sc.DENIED, "clone": sc.NR_CLONE, "unshare": sc.NR_UNSHARE, "clone3": sc.NR_CLONE3,
             "keyctl": sc.NR_KEYCTL}  # fmt: skip
    assert {n: table.get(n) for n in named} == named


def test_decisions() -> None:
    for name, nr in sc.DENIED.items():
        assert run(nr) == EPERM, name
    assert run(sc.NR_CLONE3) == sc.RET_ERRNO | errno.ENOSYS
    # clone: threads and fork pass, a new user (or any) namespace does not.
    thread_flags = 0x3D0F00
    assert run(sc.NR_CLONE, (thread_flags,)) == sc.RET_ALLOW
    assert run(sc.NR_CLONE, (0x01200011,)) == sc.RET_ALLOW  # glibc fork
    assert run(sc.NR_CLONE, (0x10000000 | 17,)) == EPERM
    assert run(sc.NR_UNSHARE, (0x00000400,)) == sc.RET_ALLOW  # CLONE_FILES
    for flag in (0x10000000, 0x00020000, 0x40000000, 0x08000000, 0x00000080):
        assert run(sc.NR_UNSHARE, (flag,)) == EPERM
    assert run(sc.NR_KEYCTL, (sc.KEYCTL_JOIN_SESSION_KEYRING, 0)) == sc.RET_ALLOW
    assert run(sc.NR_KEYCTL, (sc.KEYCTL_JOIN_SESSION_KEYRING, 0x1000)) == EPERM  # a named keyring
    assert run(sc.NR_KEYCTL, (sc.KEYCTL_JOIN_SESSION_KEYRING, 1 << 40)) == EPERM
    assert run(sc.NR_KEYCTL, (11, 5)) == EPERM
    for nr in (0, 1, 2, 9, 57, 59, 61, 231):  # read write open mmap fork execve wait4 exit_group
        assert run(nr) == sc.RET_ALLOW
    assert run(1 | sc.X32_SYSCALL_BIT) == EPERM
    assert run(1, arch=0x40000003) == sc.RET_KILL_PROCESS  # i386
