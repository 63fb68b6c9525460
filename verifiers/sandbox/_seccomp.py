"""The seccomp filter of bubblewrap sandboxes: a deny-list of kernel interfaces modelled on Docker's default
profile, compiled to a classic-BPF program that bwrap installs (``--seccomp FD``) before it runs the agent.

Why a hand-written assembler: libseccomp's Python bindings exist only for Debian's system interpreter
(``python3-seccomp``), not for the interpreters a venv may use, and PyPI has no maintained wheel of them.
The program is small and straight-line (one compare per denied call, no long jumps), so emitting it here
is simpler to audit than a dependency. x86_64 only: on another architecture bwrap runs without a filter
and :func:`supported` says so.

Layout of the program (each block either returns or falls through to the next):
    arch != x86_64                     -> kill the process (no i386/x32 syscall tables reach the kernel)
    nr >= 0x40000000 (x32 ABI)         -> EPERM
    clone3                             -> ENOSYS (libc falls back to clone, whose flags we can inspect)
    clone(flags & new-namespace bits)  -> EPERM, other clones (threads, fork) allowed
    unshare(flags & new-namespace bits)-> EPERM, other unshares allowed
    keyctl(JOIN_SESSION_KEYRING, NULL) -> allowed (a fresh anonymous session keyring; nothing else)
    each call of DENIED                -> EPERM
    anything else                      -> allowed
"""

from __future__ import annotations

import errno
import platform
import struct

# --- classic BPF / seccomp constants (linux/filter.h, linux/seccomp.h, linux/audit.h) -----------------
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
RET_ALLOW = 0x7FFF0000
AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
# Offsets in struct seccomp_data: nr, arch, instruction pointer, then six 64-bit args (little-endian: the
# low half of an argument comes first).
_OFF_NR, _OFF_ARCH = 0, 4


def _arg_lo(i: int) -> int:
    return 16 + 8 * i


def _arg_hi(i: int) -> int:
    return 16 + 8 * i + 4


#: CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET. (CLONE_NEWTIME, 0x80, shares its bit
#: with clone's exit-signal byte, so it is checked for unshare only.)
CLONE_NEW_NAMESPACES = (
    0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
)
CLONE_NEWTIME = 0x00000080
KEYCTL_JOIN_SESSION_KEYRING = 1

#: x86_64 numbers of the calls handled specially.
NR_CLONE, NR_UNSHARE, NR_CLONE3, NR_KEYCTL = 56, 272, 435, 250

#: Denied outright (EPERM), with x86_64 numbers. Docker's default profile denies these to a container
#: without extra capabilities; the io_uring calls and the new mount API are added (both reach large,
#: often-vulnerable kernel code and bypass other filters).
DENIED: dict[str, int] = {
    # namespaces and mounts: no new views of the system, no joining other namespaces
    "mount": 165, "umount2": 166, "pivot_root": 155, "setns": 308, "chroot": 161,
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "mount_setattr": 442,
    # kernel keyrings (keyctl is denied except joining a fresh session keyring, see above)
    "add_key": 248, "request_key": 249,
    # large in-kernel engines reachable without privileges
    "bpf": 321, "perf_event_open": 298, "userfaultfd": 323,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    # other processes' memory and kernel state
    "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312,
    "kexec_load": 246, "kexec_file_load": 320,
    "init_module": 175, "finit_module": 313, "delete_module": 176,
    "create_module": 174, "get_kernel_syms": 177, "query_module": 178,
    # the machine: swap, reboot, clocks, accounting, quotas, raw I/O ports
    "swapon": 167, "swapoff": 168, "reboot": 169, "acct": 163, "quotactl": 179, "quotactl_fd": 443,
    "settimeofday": 164, "clock_settime": 227, "clock_adjtime": 305, "adjtimex": 159,
    "iopl": 172, "ioperm": 173, "syslog": 103, "vhangup": 153,
    # file handles bypass path-based checks (the "shocker" escape)
    "open_by_handle_at": 304, "name_to_handle_at": 303,
    # obsolete interfaces nobody needs
    "uselib": 134, "ustat": 136, "sysfs": 139, "_sysctl": 156, "nfsservctl": 180,
    "lookup_dcookie": 212, "fanotify_init": 300,
}  # fmt: skip


def supported() -> bool:
    """Whether the filter can be built for this machine (x86_64 only)."""
    return platform.machine() in ("x86_64", "AMD64")


def _stmt(code: int, k: int) -> tuple[int, int, int, int]:
    return (code, 0, 0, k)


def _jump(code: int, k: int, jt: int, jf: int) -> tuple[int, int, int, int]:
    return (code, jt, jf, k)


def program() -> list[tuple[int, int, int, int]]:
    """The filter as (code, jt, jf, k) instructions."""
    eperm = _stmt(_RET_K, RET_ERRNO | errno.EPERM)
    allow = _stmt(_RET_K, RET_ALLOW)
    prog = [
        _stmt(_LD_W_ABS, _OFF_ARCH),
        _jump(_JEQ_K, AUDIT_ARCH_X86_64, 1, 0),
        _stmt(_RET_K, RET_KILL_PROCESS),
        _stmt(_LD_W_ABS, _OFF_NR),
        _jump(_JGE_K, X32_SYSCALL_BIT, 0, 1),
        eperm,
        _jump(_JEQ_K, NR_CLONE3, 0, 1),
        _stmt(_RET_K, RET_ERRNO | errno.ENOSYS),
    ]
    # clone(flags, ...) and unshare(flags): the flags are the low half of arg 0.
    for nr, mask in ((NR_CLONE, CLONE_NEW_NAMESPACES), (NR_UNSHARE, CLONE_NEW_NAMESPACES | CLONE_NEWTIME)):
        prog += [
            _jump(_JEQ_K, nr, 0, 4),
            _stmt(_LD_W_ABS, _arg_lo(0)),
            _jump(_JSET_K, mask, 0, 1),
            eperm,
            allow,
        ]
    # keyctl: only KEYCTL_JOIN_SESSION_KEYRING with a NULL name (arg 1 == 0, both halves).
    prog += [
        _jump(_JEQ_K, NR_KEYCTL, 0, 8),
        _stmt(_LD_W_ABS, _arg_lo(0)),
        _jump(_JEQ_K, KEYCTL_JOIN_SESSION_KEYRING, 0, 5),
        _stmt(_LD_W_ABS, _arg_lo(1)),
        _jump(_JEQ_K, 0, 0, 3),
        _stmt(_LD_W_ABS, _arg_hi(1)),
        _jump(_JEQ_K, 0, 0, 1),
        allow,
        eperm,
    ]
    for nr in sorted(set(DENIED.values())):
        prog += [_jump(_JEQ_K, nr, 0, 1), eperm]
    prog.append(allow)
    return prog


_COMPILED: bytes | None = None


def compiled() -> bytes:
    """The filter as the array of ``struct sock_filter`` that ``bwrap --seccomp`` reads."""
    global _COMPILED
    if _COMPILED is None:
        _COMPILED = b"".join(struct.pack("=HBBI", *ins) for ins in program())
    return _COMPILED
