"""The seccomp filter the launcher installs before it execs the guard: the system calls a test may not make.

Plain data and a BPF program built from it (https://docs.kernel.org/userspace-api/seccomp_filter.html):
the calls refused by name, each architecture's numbers for them, the calls refused by an argument
(on another process, a namespace flag, an executable mapping, a unix socket, a terminal's ioctl), and
the one exec let through, the launcher's own (EXEC_FD). Read by path beside launcher.py, which runs
with -I and imports nothing of the engine; the tests import it to check the program it builds.
"""

import os
import struct
from dataclasses import dataclass

# The calls refused, by name; each architecture numbers them its own way (below).
DENIED_NAMES = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "pidfd_getfd",
    "keyctl",
    "add_key",
    "request_key",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "open_tree",
    "mount_setattr",
    "unshare",
    "setns",
    "personality",
    "shmget",
    "shmat",
    "shmctl",
    "semget",
    "semop",
    "semctl",
    "semtimedop",
    "msgget",
    "msgsnd",
    "msgrcv",
    "msgctl",
    "sched_setscheduler",
    "sched_setparam",
    "sched_setattr",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "iopl",
    "ioperm",
    "swapon",
    "swapoff",
    "reboot",
    "syslog",
    "acct",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "quotactl",
    "quotactl_fd",
    "open_by_handle_at",
    "name_to_handle_at",
    "fanotify_init",
    "lookup_dcookie",
    "vhangup",
    "memfd_create",
    "memfd_secret",
    "process_madvise",
    # a fresh interpreter (it would have no audit hook): the launcher's own exec goes through execveat (below)
    "execve",
    # the host: its memory, load and uptime, its disks' sizes
    "sysinfo",
    "statfs",
    "fstatfs",
    "ustat",
)
# numbers above 423 are shared by every architecture (include/uapi/asm-generic/unistd.h)
SHARED_NUMBERS = {
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "clone3": 435,
    "pidfd_getfd": 438,
    "process_madvise": 440,
    "mount_setattr": 442,
    "quotactl_fd": 443,
    "memfd_secret": 447,
}


@dataclass(frozen=True)
class SyscallTable:
    """One architecture's numbers for the filter: its audit value, and each call's number (None: it has no such call)."""

    audit_arch: int
    numbers: dict
    x32_bit: bool  # x86_64 also accepts x32 calls (numbers with bit 30 set): those are refused whole


SYSCALL_TABLES = {
    # arch/x86/entry/syscalls/syscall_64.tbl
    "x86_64": SyscallTable(
        0xC000003E,
        {
            "ptrace": 101,
            "process_vm_readv": 310,
            "process_vm_writev": 311,
            "kcmp": 312,
            "keyctl": 250,
            "add_key": 248,
            "request_key": 249,
            "mount": 165,
            "umount2": 166,
            "pivot_root": 155,
            "chroot": 161,
            "unshare": 272,
            "setns": 308,
            "personality": 135,
            "shmget": 29,
            "shmat": 30,
            "shmctl": 31,
            "semget": 64,
            "semop": 65,
            "semctl": 66,
            "semtimedop": 220,
            "msgget": 68,
            "msgsnd": 69,
            "msgrcv": 70,
            "msgctl": 71,
            "sched_setscheduler": 144,
            "sched_setparam": 142,
            "sched_setattr": 314,
            "bpf": 321,
            "perf_event_open": 298,
            "userfaultfd": 323,
            "kexec_load": 246,
            "kexec_file_load": 320,
            "init_module": 175,
            "finit_module": 313,
            "delete_module": 176,
            "iopl": 172,
            "ioperm": 173,
            "swapon": 167,
            "swapoff": 168,
            "reboot": 169,
            "syslog": 103,
            "acct": 163,
            "settimeofday": 164,
            "clock_settime": 227,
            "clock_adjtime": 305,
            "adjtimex": 159,
            "quotactl": 179,
            "open_by_handle_at": 304,
            "name_to_handle_at": 303,
            "fanotify_init": 300,
            "lookup_dcookie": 212,
            "vhangup": 153,
            "memfd_create": 319,
            "prlimit64": 302,
            "setpriority": 141,
            "sched_setaffinity": 203,
            "ioctl": 16,
            "clone": 56,
            "execve": 59,
            "execveat": 322,
            "mmap": 9,
            "mprotect": 10,
            "pkey_mprotect": 329,
            "socket": 41,
            "sysinfo": 99,
            "statfs": 137,
            "fstatfs": 138,
            "ustat": 136,
            **SHARED_NUMBERS,
        },
        x32_bit=True,
    ),
    # include/uapi/asm-generic/unistd.h, 64-bit (arm64 has no iopl or ioperm)
    "aarch64": SyscallTable(
        0xC00000B7,
        {
            "ptrace": 117,
            "process_vm_readv": 270,
            "process_vm_writev": 271,
            "kcmp": 272,
            "keyctl": 219,
            "add_key": 217,
            "request_key": 218,
            "mount": 40,
            "umount2": 39,
            "pivot_root": 41,
            "chroot": 51,
            "unshare": 97,
            "setns": 268,
            "personality": 92,
            "shmget": 194,
            "shmat": 196,
            "shmctl": 195,
            "semget": 190,
            "semop": 193,
            "semctl": 191,
            "semtimedop": 192,
            "msgget": 186,
            "msgsnd": 189,
            "msgrcv": 188,
            "msgctl": 187,
            "sched_setscheduler": 119,
            "sched_setparam": 118,
            "sched_setattr": 274,
            "bpf": 280,
            "perf_event_open": 241,
            "userfaultfd": 282,
            "kexec_load": 104,
            "kexec_file_load": 294,
            "init_module": 105,
            "finit_module": 273,
            "delete_module": 106,
            "iopl": None,
            "ioperm": None,
            "swapon": 224,
            "swapoff": 225,
            "reboot": 142,
            "syslog": 116,
            "acct": 89,
            "settimeofday": 170,
            "clock_settime": 112,
            "clock_adjtime": 266,
            "adjtimex": 171,
            "quotactl": 60,
            "open_by_handle_at": 265,
            "name_to_handle_at": 264,
            "fanotify_init": 262,
            "lookup_dcookie": 18,
            "vhangup": 58,
            "memfd_create": 279,
            "prlimit64": 261,
            "setpriority": 140,
            "sched_setaffinity": 122,
            "ioctl": 29,
            "clone": 220,
            "execve": 221,
            "execveat": 281,
            "mmap": 222,
            "mprotect": 226,
            "pkey_mprotect": 288,
            "socket": 198,
            "sysinfo": 179,
            "statfs": 43,
            "fstatfs": 44,
            "ustat": None,
            **SHARED_NUMBERS,
        },
        x32_bit=False,
    ),
}
# calls allowed on the process itself only: refused when this argument (a pid, or who=) is not 0
SELF_ONLY = {"prlimit64": 0, "setpriority": 1, "sched_setaffinity": 0}
# the one exec the filter lets through: the launcher's own, of the interpreter it opened at this descriptor
# number. It is above the tests' RLIMIT_NOFILE (256, which they cannot raise), and closed on exec, so no
# descriptor a test holds can ever have it
EXEC_FD = 300
# calls refused when one argument has any of these bits: (argument, bits)
PROT_EXEC, PROT_WRITE, MAP_SHARED, MAP_ANONYMOUS = 0x4, 0x2, 0x1, 0x20
REFUSED_BITS = {
    "clone": (0, 0x10000000 | 0x00020000 | 0x20000000 | 0x40000000 | 0x08000000 | 0x04000000 | 0x02000000),
    # no page made executable after the fact (the loader maps code from files, executable from the start)
    "mprotect": (2, PROT_EXEC),
    "pkey_mprotect": (2, PROT_EXEC),
}
# calls refused when one argument is this value: (argument, value). AF_UNIX: Landlock has no rule for
# unix sockets, and a host's socket file may be in reach
REFUSED_VALUES = {"socket": (0, 1)}
# ioctl requests refused: TIOCSTI (type into a terminal), TIOCLINUX, FS_IOC_SETFLAGS (immutable files)
DENIED_IOCTLS = (0x5412, 0x541C, 0x40086602, 0x40046602)
# clone's flags that make namespaces are in REFUSED_BITS; clone3 is answered ENOSYS, so the C library
# falls back to clone
X32_BIT = 0x40000000

RET_ALLOW = 0x7FFF0000
RET_KILL_PROCESS = 0x80000000
RET_EPERM = 0x00050000 | 1
RET_ENOSYS = 0x00050000 | 38
LD_ABS, JEQ, JGE, JSET, JA, RET = 0x20, 0x15, 0x35, 0x45, 0x05, 0x06
NR, ARCH = 0, 4


def arg_offset(index):
    """Where the low 32 bits of argument `index` sit in struct seccomp_data (little-endian)."""
    return 16 + 8 * index


def build_seccomp_program(machine="x86_64"):
    """The filter as BPF instructions (code, jt, jf, k): each rule a short block that reloads the call number."""
    table = SYSCALL_TABLES[machine]
    numbers = table.numbers
    # a call made for another architecture (x86_64 can run 32-bit calls) is killed: its numbers mean other calls
    program = [(LD_ABS, 0, 0, ARCH), (JEQ, 1, 0, table.audit_arch), (RET, 0, 0, RET_KILL_PROCESS)]
    if table.x32_bit:
        program += [(LD_ABS, 0, 0, NR), (JGE, 0, 1, X32_BIT), (RET, 0, 0, RET_EPERM)]
    for number in sorted(numbers[name] for name in DENIED_NAMES if numbers[name] is not None):
        program += [(LD_ABS, 0, 0, NR), (JEQ, 0, 1, number), (RET, 0, 0, RET_EPERM)]
    program += [(LD_ABS, 0, 0, NR), (JEQ, 0, 1, numbers["clone3"]), (RET, 0, 0, RET_ENOSYS)]
    for name, index in SELF_ONLY.items():
        program += [
            (LD_ABS, 0, 0, NR),
            (JEQ, 0, 3, numbers[name]),
            (LD_ABS, 0, 0, arg_offset(index)),
            (JEQ, 1, 0, 0),
            (RET, 0, 0, RET_EPERM),
        ]
    program += [
        (LD_ABS, 0, 0, NR),
        (JEQ, 0, 3, numbers["execveat"]),
        (LD_ABS, 0, 0, arg_offset(0)),
        (JEQ, 1, 0, EXEC_FD),
        (RET, 0, 0, RET_EPERM),
    ]
    for name, (index, bits) in REFUSED_BITS.items():
        program += [
            (LD_ABS, 0, 0, NR),
            (JEQ, 0, 3, numbers[name]),
            (LD_ABS, 0, 0, arg_offset(index)),
            (JSET, 0, 1, bits),
            (RET, 0, 0, RET_EPERM),
        ]
    for name, (index, value) in REFUSED_VALUES.items():
        program += [
            (LD_ABS, 0, 0, NR),
            (JEQ, 0, 3, numbers[name]),
            (LD_ABS, 0, 0, arg_offset(index)),
            (JEQ, 0, 1, value),
            (RET, 0, 0, RET_EPERM),
        ]
    # mmap: executable and writable, or executable and anonymous or shared, is refused (code could be
    # written into it); the loader's mappings of library files, executable and read-only, go through
    program += [
        (LD_ABS, 0, 0, NR),
        (JEQ, 0, 6, numbers["mmap"]),
        (LD_ABS, 0, 0, arg_offset(2)),
        (JSET, 0, 4, PROT_EXEC),
        (JSET, 2, 0, PROT_WRITE),
        (LD_ABS, 0, 0, arg_offset(3)),
        (JSET, 0, 1, MAP_ANONYMOUS | MAP_SHARED),
        (RET, 0, 0, RET_EPERM),
    ]
    # ioctl: one comparison per request, each jumping to the shared refusal at the block's end
    block = [(LD_ABS, 0, 0, NR), (JEQ, 0, len(DENIED_IOCTLS) + 3, numbers["ioctl"]), (LD_ABS, 0, 0, arg_offset(1))]
    for position, request in enumerate(DENIED_IOCTLS):
        block.append((JEQ, len(DENIED_IOCTLS) - position, 0, request))
    block += [(JA, 0, 0, 1), (RET, 0, 0, RET_EPERM)]
    program += block
    program.append((RET, 0, 0, RET_ALLOW))
    return program


def pack_seccomp_program(program):
    return b"".join(struct.pack("<HBBI", *instruction) for instruction in program)


def install_seccomp(libc, ctypes):
    """Install the filter on this process and all it starts; False on a machine it was not written for."""
    if os.uname().machine not in SYSCALL_TABLES:
        return False
    code = pack_seccomp_program(build_seccomp_program(os.uname().machine))
    buffer = ctypes.create_string_buffer(code, len(code))

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    program = Program(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        return False
    return libc.prctl(22, 2, ctypes.byref(program), 0, 0) == 0  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
