"""The second and third rounds of escapes from inside `run_tests`: each mode must refuse every row, with the server unchanged.

Each row of ATTACKS is the body of one unittest method, run in a test file of a visitor's
workspace. SERVER is this test process's pid (what the server would be), DECOY a process of
the server's that no test may touch, OUT a folder outside that every user may write, with a
service listening on a unix socket in it (so only the sandbox stands in the way). After every
row the server's limits, priority and CPU affinity, the decoy, the service and the outside
folder must be as they were; a row whose attempt got through fails with "got through". Then the same rows run per layer: the seccomp filter alone
(in its own process, on the system calls the rows make), the audit hook alone against the
native-code rows, and a run through a virtualenv reached by a symlink.
"""

from __future__ import annotations

import errno
import json
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
from pathlib import Path

import pytest

from engine.harness.tools import run_tool
from engine.sandbox import modes, syscall_filter
from engine.sandbox.child import LAYERS, build_launch
from engine.sandbox.report import describe_confinement
from engine.sandbox.workspace import Workspace

ROOT = Path(__file__).resolve().parent.parent
EXTENSION = next(Path(sysconfig.get_paths()["platstdlib"], "lib-dynload").glob("_testimportmultiple.*.so"), None)

ATTACKS = {
    # the server's limits and priority (the PID namespace hides it; seccomp refuses other pids)
    "a_prlimit_cpu.py": "resource.prlimit(SERVER, resource.RLIMIT_CPU, (3, 3))",
    "a_prlimit_parent.py": "resource.prlimit(os.getppid() or SERVER, resource.RLIMIT_NOFILE, (8, 8))",
    "a_prlimit_fsize.py": "resource.prlimit(SERVER, resource.RLIMIT_FSIZE, (1, 1))",
    "a_setpriority.py": "os.setpriority(os.PRIO_PROCESS, SERVER, 19)",
    "a_setpriority_group.py": "os.setpriority(os.PRIO_PGRP, SERVER_GROUP, 19)",
    "a_affinity.py": "os.sched_setaffinity(SERVER, {0})",
    "a_sched_idle.py": "os.sched_setscheduler(SERVER, os.SCHED_IDLE, os.sched_param(0))",
    # itself: no way up
    "a_nice_up.py": "os.nice(-20)",
    "a_fifo.py": "os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50))",
    "a_back_to_other.py": "os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))",
    # no capabilities, no root
    "a_setuid.py": "os.setuid(0)",
    "a_chown_own.py": 'open("mine.txt", "w").close(); os.chown("mine.txt", 0, 0)',
    # other processes: none visible, the decoy unreachable
    "a_kill_decoy.py": "os.kill(DECOY, 9)",
    "a_many_processes.py": """
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
        assert len(pids) > 20, pids
        raise PermissionError("few processes")""",
    # outside the copy
    "a_chmod_outside.py": 'os.chmod(OUT + "/canary.txt", 0o600)',
    "a_sqlite_attach.py": """
        import sqlite3
        db = sqlite3.connect("inside.db")
        db.execute("ATTACH DATABASE '" + OUT + "/attached.db' AS other")
        db.execute("CREATE TABLE other.t (x)")""",
    "a_immutable.py": """
        import fcntl, struct
        fd = os.open("mine.txt", os.O_WRONLY | os.O_CREAT)
        fcntl.ioctl(fd, 0x40086602, struct.pack("i", 0x10))""",
    # native code: ctypes never loaded, nothing to find among the classes; no extension module from the copy
    "a_ctypes_leftover.py": """
        found = [c for c in object.__subclasses__() if c.__name__ in ("CDLL", "_CFuncPtr", "PyCFuncPtr")]
        found += [m for m in sys.modules if m == "ctypes" or m.startswith(("ctypes.", "_ctypes"))]
        if found:
            self.fail("got through: " + repr(found))
        raise PermissionError("no ctypes")""",
    "a_import_ctypes.py": "import ctypes",
    "a_extension_import.py": "import _testimportmultiple",
    "a_create_dynamic.py": """
        import _imp, importlib.util
        spec = importlib.util.spec_from_file_location("_testimportmultiple", os.path.abspath(SO_NAME))
        _imp.create_dynamic(spec)""",
    "a_extension_loader.py": """
        import importlib.machinery, importlib.util
        loader = importlib.machinery.ExtensionFileLoader("_testimportmultiple", os.path.abspath(SO_NAME))
        loader.create_module(importlib.util.spec_from_loader("_testimportmultiple", loader))""",
    "a_sqlite_extension.py": """
        import sqlite3
        db = sqlite3.connect(":memory:")
        db.enable_load_extension(True)
        db.load_extension(os.path.abspath(SO_NAME))""",
    # the new-file cap counts what is made through a folder held open
    "a_dirfd_files.py": """
        for name in ("d1", "d2", "d3"):
            os.mkdir(name)
        folders = [os.open(name, os.O_RDONLY) for name in ("d1", "d2", "d3")]
        made = 0
        try:
            for i in range(200):
                os.close(os.open(f"f{i}", os.O_WRONLY | os.O_CREAT))
                made += 1
                for folder in folders:
                    os.close(os.open(f"f{i}", os.O_WRONLY | os.O_CREAT, dir_fd=folder))
                    made += 1
        finally:
            if made > 260:
                self.fail(f"got through: {made} files")""",
    # -- the third round ----------------------------------------------------------------------------
    # code-object surgery: bytecode the compiler never checked (an out-of-range LOAD_CONST reads and writes memory)
    "a_code_replace.py": """
        f = lambda: None
        f.__code__ = f.__code__.replace(co_consts=())""",
    "a_code_new.py": """
        c = (lambda: 0).__code__
        type(c)(c.co_argcount, c.co_posonlyargcount, c.co_kwonlyargcount, c.co_nlocals, c.co_stacksize, c.co_flags,
                c.co_code, c.co_consts, c.co_names, c.co_varnames, c.co_filename, c.co_name, c.co_qualname,
                c.co_firstlineno, c.co_linetable, c.co_exceptiontable)""",
    "a_marshal_code.py": """
        import marshal
        marshal.loads(marshal.dumps((lambda: 0).__code__))""",
    "a_pyc_import.py": """
        import importlib.util, marshal
        with open("planted_module.pyc", "wb") as f:
            f.write(importlib.util.MAGIC_NUMBER + bytes(12) + marshal.dumps(compile("X = 1", "planted", "exec")))
        import planted_module""",
    # executable memory the test made: anonymous, or from a file it wrote (the kernel's noexec, the filter)
    "a_exec_mapping.py": """
        import mmap
        mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)""",
    "a_exec_file_mapping.py": """
        import mmap
        with open("code.bin", "wb") as f:
            f.write(bytes([0xC3]) * 4096)
        with open("code.bin", "rb") as f:
            mmap.mmap(f.fileno(), 4096, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_EXEC)""",
    # a unix socket of the host's (a service listening outside)
    "a_unix_socket.py": """
        import socket
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(OUT + "/service.sock")
        s.sendall(b"gotcha")""",
    # files the hook does not see one by one: sqlite's own journals (and the databases themselves)
    "a_sqlite_files.py": """
        import sqlite3
        os.mkdir("dbs")
        try:
            for i in range(3000):
                db = sqlite3.connect(f"dbs/{i}.db")
                db.execute("pragma journal_mode=persist")
                db.execute("create table t (x)")
                db.commit()
                db.close()
        finally:
            made = len(os.listdir("dbs"))
            if made > 260:
                self.fail(f"got through: {made} files")""",
    # a forged verdict: "OK" printed, then the process ended with exit code 0 before unittest could say otherwise
    "a_forged_exit.py": """
        print("Ran 3 tests\\n\\nOK", flush=True)
        os._exit(0)""",
}
NOT_IN_HOOK_ALONE = {
    "a_exec_mapping.py",
    "a_exec_file_mapping.py",
    "a_many_processes.py",
    "a_setpriority_group.py",
    "a_nice_up.py",
    "a_fifo.py",
    "a_back_to_other.py",
    "a_setuid.py",
    "a_chown_own.py",
    "a_affinity.py",
    "a_prlimit_cpu.py",
    "a_prlimit_parent.py",
    "a_prlimit_fsize.py",
    "a_setpriority.py",
    "a_sched_idle.py",
    "a_immutable.py",
    "a_sqlite_attach.py",
}
# rows the hook alone need not answer: nothing there to refuse, or a Python built without sqlite extensions
OTHER_ANSWER = {
    "a_ctypes_leftover.py": "PermissionError: no ctypes",
    # the hook counts the databases; their journals, the tmpfs's cap on files
    "a_sqlite_files.py": "sqlite3.OperationalError",
    "a_sqlite_extension.py": "no attribute 'enable_load_extension'",
}
SO_NAME = EXTENSION.name if EXTENSION else "missing.so"


def attack_source(body: str, out: Path, decoy: int) -> str:
    return (
        f"import os\nimport resource\nimport sys\nimport unittest\nOUT = {str(out)!r}\nDECOY = {decoy}\n"
        f"SERVER = {os.getpid()}\nSERVER_GROUP = {os.getpgrp()}\nSO_NAME = {SO_NAME!r}\n\n\n"
        "class Attack(unittest.TestCase):\n    def test_attack(self):\n"
        + textwrap.indent(textwrap.dedent(body).strip(), "        ")
        + "\n"
        + '        self.fail("got through")\n'
    )


def server_state() -> dict:
    me = os.getpid()
    return {
        "limits": {
            name: resource.prlimit(me, getattr(resource, name))
            for name in ("RLIMIT_CPU", "RLIMIT_NOFILE", "RLIMIT_FSIZE", "RLIMIT_AS", "RLIMIT_NPROC")
        },
        "nice": os.getpriority(os.PRIO_PROCESS, me),
        "group_nice": os.getpriority(os.PRIO_PGRP, 0),
        "affinity": os.sched_getaffinity(me),
        "policy": os.sched_getscheduler(me),
    }


def outside_state(out: Path) -> dict:
    return {p.name: (p.stat().st_mode, p.read_bytes() if p.is_file() else None) for p in sorted(out.iterdir())}


def service_was_reached(service: socket.socket) -> bool:
    try:
        service.accept()[0].close()
        return True
    except BlockingIOError:
        return False


@pytest.fixture
def world(tmp_path):
    """A workspace holding every attack, an outside folder under /tmp that every user may write, and a service
    listening on a unix socket there."""
    base = Path(tempfile.mkdtemp(prefix="sandbox-attack-"))
    os.chmod(base, 0o755)
    out = base / "outside"
    out.mkdir()
    os.chmod(out, 0o777)
    (out / "canary.txt").write_text("the canary\n")
    os.chmod(out / "canary.txt", 0o666)
    decoy = subprocess.Popen(["sleep", "600"])
    # a host service on a unix socket that every user may connect to
    service = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    service.bind(str(out / "service.sock"))
    os.chmod(out / "service.sock", 0o777)
    service.listen(8)
    service.setblocking(False)
    ws = tmp_path / "ws"
    ws.mkdir()
    for name, body in ATTACKS.items():
        (ws / name).write_text(attack_source(body, out, decoy.pid))
    if EXTENSION:
        shutil.copy(EXTENSION, ws / SO_NAME)
    yield Workspace(ws), out, decoy, service
    assert not service_was_reached(service)
    service.close()
    decoy.kill()
    decoy.wait()
    shutil.rmtree(base, ignore_errors=True)


HAS_BWRAP = modes.bwrap_works()
LANDLOCK = modes.landlock_abi()
MODES = [
    pytest.param(
        "bwrap",
        LAYERS,
        id="bubblewrap",
        marks=pytest.mark.skipif(not HAS_BWRAP, reason="bubblewrap is missing or cannot make namespaces here"),
    ),
    pytest.param(
        "landlock",
        LAYERS,
        id="landlock",
        marks=pytest.mark.skipif(LANDLOCK < 1, reason="this kernel has no Landlock"),
    ),
    pytest.param("weak", ("seccomp", "hook"), id="weak"),
    pytest.param("weak", ("hook",), id="audit-hook-only"),
]


@pytest.mark.slow
@pytest.mark.parametrize("mode, layers", MODES)
def test_every_mode_refuses_every_attack(world, one_mode, mode, layers):
    """Each row fails inside the test (refused, or denied by the kernel); the server and the outside are unchanged."""
    one_mode(mode, layers)
    ws, out, decoy, service = world
    before, outside = server_state(), outside_state(out)
    names = [n for n in ATTACKS if layers != ("hook",) or n not in NOT_IN_HOOK_ALONE]
    if not EXTENSION:
        names = [n for n in names if "extension" not in n and "dynamic" not in n]
    for name in names:
        outcome = run_tool("run_tests", {"pattern": name}, ws)
        text = outcome.text
        assert "got through" not in text, (name, text)
        assert re.search(r"FAILED \((errors|failures)=1\)", text), (name, text)
        assert server_state() == before, name
        assert outside_state(out) == outside, name
        assert decoy.poll() is None, name
        assert not service_was_reached(service), name
        if layers == ("hook",):
            assert "PermissionError: run_tests may not" in text or OTHER_ANSWER.get(name, "-") in text, (name, text)
    assert sorted(p.name for p in ws.root.iterdir()) == sorted([*ATTACKS, *([SO_NAME] if EXTENSION else [])])


def seccomp_child(code: str) -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter after the launcher's filter is installed (nothing else confines it)."""
    prelude = (
        f"import ctypes, errno, os, sys\nsys.path.insert(0, {str(ROOT / 'engine' / 'sandbox')!r})\n"
        "import syscall_filter\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.syscall.restype = ctypes.c_long\n"
        "assert syscall_filter.install_seccomp(libc, ctypes)\n"
        "def call(*args):\n    r = libc.syscall(*args)\n    return r if r >= 0 else -ctypes.get_errno()\n"
    )
    return subprocess.run([sys.executable, "-I", "-c", prelude + code], capture_output=True, text=True, timeout=60)


SECCOMP_REFUSES = {
    "ptrace attach": "call(101, 16, PARENT, 0, 0)",
    "process_vm_readv": "call(310, PARENT, 0, 0, 0, 0, 0)",
    "keyctl": "call(250, 0, 0, 0, 0, 0)",
    "add_key": "call(248, 0, 0, 0, 0, 0)",
    "mount": "call(165, 0, 0, 0, 0, 0)",
    "unshare a user namespace": "call(272, 0x10000000)",
    "setns": "call(308, 0, 0)",
    "personality": "call(135, 0x0040000)",
    "shmget": "call(29, 0, 400 << 20, 0o1000 | 0o600)",
    "semget": "call(64, 0, 1, 0o1000 | 0o600)",
    "msgget": "call(68, 0, 0o1000 | 0o600)",
    "prlimit on another process": "call(302, PARENT, 0, 0, 0)",
    "setpriority on another process": "call(141, 0, PARENT, 19)",
    "sched_setaffinity on another process": "call(203, PARENT, 0, 0)",
    "sched_setscheduler": "call(144, 0, 1, 0)",
    "bpf": "call(321, 0, 0, 0)",
    "perf_event_open": "call(298, 0, 0, 0, 0, 0)",
    "io_uring_setup": "call(425, 1, 0)",
    "userfaultfd": "call(323, 0)",
    "memfd_create": "call(319, b'x', 0)",
    "clone with a new namespace": "call(56, 0x20000000 | 17, 0, 0, 0, 0)",
    "TIOCSTI": "call(16, 0, 0x5412, 0)",
    "FS_IOC_SETFLAGS": "call(16, 0, 0x40086602, 0)",
    # the third round: no fresh interpreter, no executable memory made here, no unix socket, no host figures
    "execve of the interpreter": "call(59, sys.executable.encode(), 0, 0)",
    "execveat of the interpreter": "call(322, -100, sys.executable.encode(), 0, 0, 0)",
    "execveat through another descriptor": "call(322, os.open(sys.executable, os.O_RDONLY), b'', 0, 0, 0x1000)",
    "mmap, executable and writable": "call(9, 0, 4096, 7, 0x22, -1, 0)",
    "mmap, executable and anonymous": "call(9, 0, 4096, 5, 0x22, -1, 0)",
    "mmap, executable and shared": "call(9, 0, 4096, 5, 0x01, os.open(sys.executable, os.O_RDONLY), 0)",
    "mprotect to executable": "call(10, call(9, 0, 4096, 3, 0x22, -1, 0), 4096, 5)",
    "pkey_mprotect to executable": "call(329, call(9, 0, 4096, 3, 0x22, -1, 0), 4096, 5, -1)",
    "socket AF_UNIX": "call(41, 1, 1, 0)",
    "sysinfo": "call(99, ctypes.create_string_buffer(256))",
    "statfs": "call(137, b'/', ctypes.create_string_buffer(256))",
    "fstatfs": "call(138, 0, ctypes.create_string_buffer(256))",
}


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the filter is written for x86_64")
def test_the_seccomp_filter_alone_refuses_what_namespaces_do_not_cover():
    """Each call answers EPERM under the filter alone; the same process still forks, runs threads, maps files
    as the loader does, and execs through the launcher's descriptor only: that interpreter starts and loads
    extension modules."""
    checks = "".join(f"print({name!r}, {expr})\n" for name, expr in SECCOMP_REFUSES.items())
    exec_fd = syscall_filter.EXEC_FD
    code = (
        f"PARENT = {os.getpid()}\n"
        + checks
        + "import threading\nt = threading.Thread(target=lambda: None); t.start(); t.join()\n"
        "pid = os.fork()\nif pid == 0:\n    os._exit(7)\nprint('fork', os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n"
        "print('own prlimit', call(302, 0, 0, 0, 0))\n"
        "print('file mapping, executable', call(9, 0, 4096, 5, 0x02, os.open(sys.executable, os.O_RDONLY), 0) > 0)\n"
        "try:\n    os.execv(sys.executable, [sys.executable, '-c', 'print(1)'])\nexcept PermissionError:\n"
        "    print('plain exec refused')\n"
        f"os.dup2(os.open(sys.executable, os.O_RDONLY), {exec_fd}, inheritable=False)\n"
        "sys.stdout.flush()\n"
        f"os.execve({exec_fd}, [sys.executable, '-c', 'import sqlite3, _decimal; print(\"exec ok\")'], dict(os.environ))\n"
    )
    child = seccomp_child(code)
    assert child.returncode == 0, child.stderr
    lines = child.stdout.splitlines()
    for name in SECCOMP_REFUSES:
        assert f"{name} {-errno.EPERM}" in lines, (name, child.stdout)
    assert lines[-5:] == ["fork 7", "own prlimit 0", "file mapping, executable True", "plain exec refused", "exec ok"]


@pytest.mark.parametrize("machine", sorted(syscall_filter.SYSCALL_TABLES))
def test_the_filter_is_a_valid_program_with_every_jump_inside_it(machine):
    program = syscall_filter.build_seccomp_program(machine)
    assert program[1] == (0x15, 1, 0, syscall_filter.SYSCALL_TABLES[machine].audit_arch)
    for index, (code, jt, jf, _k) in enumerate(program):
        if code & 0x07 == 0x05 and code != 0x05:  # a conditional jump
            assert index + 1 + max(jt, jf) < len(program)
    assert program[-1] == (0x06, 0, 0, syscall_filter.RET_ALLOW)
    assert len(syscall_filter.pack_seccomp_program(program)) == 8 * len(program)


@pytest.mark.skipif(not HAS_BWRAP, reason="bubblewrap is missing or cannot make namespaces here")
def test_every_architecture_numbers_every_refused_call_once_and_no_call_a_test_needs():
    assert modes.SECCOMP_MACHINES == tuple(syscall_filter.SYSCALL_TABLES)
    # calls every interpreter makes (asm-generic numbers on arm64, syscall_64.tbl on x86_64)
    # (execve is refused whole now: the launcher's one exec is an execveat, through its own descriptor)
    needed = {
        "x86_64": {"read": 0, "write": 1, "openat": 257, "mmap": 9, "execveat": 322, "exit_group": 231, "wait4": 61},
        "aarch64": {
            "read": 63,
            "write": 64,
            "openat": 56,
            "mmap": 222,
            "execveat": 281,
            "exit_group": 94,
            "wait4": 260,
        },
    }
    for machine, table in syscall_filter.SYSCALL_TABLES.items():
        refused = [table.numbers[name] for name in syscall_filter.DENIED_NAMES if table.numbers[name] is not None]
        assert len(refused) == len(set(refused)), machine  # no two names on one number
        special = [
            table.numbers[name]
            for name in (
                "clone3",
                "ioctl",
                "execveat",
                "mmap",
                *syscall_filter.SELF_ONLY,
                *syscall_filter.REFUSED_BITS,
                *syscall_filter.REFUSED_VALUES,
            )
        ]
        assert not set(special) & set(refused), machine
        assert not set(needed[machine].values()) & set(refused), machine
    assert syscall_filter.SYSCALL_TABLES["aarch64"].numbers["iopl"] is None  # arm64 has no port I/O calls


def test_a_machine_without_a_filter_is_named_and_refused_unless_weak(monkeypatch, tmp_path):
    real = os.uname()
    monkeypatch.setattr(
        os, "uname", lambda: os.uname_result((real.sysname, real.nodename, real.release, real.version, "riscv64"))
    )
    assert syscall_filter.install_seccomp(None, None) is False  # nothing is installed for another machine's numbers
    assert not modes.has_seccomp_filter()
    monkeypatch.setattr(modes, "_CHOSEN", {})
    report = describe_confinement()
    line = next(why for why in report.why_not if why.startswith("no seccomp filter"))
    assert "written for x86_64 and aarch64, and this machine is riscv64" in line
    if report.mode != "weak":
        assert "every run is refused (QWEN_SANDBOX_WEAK=1 runs them without it" in line
    assert "no seccomp filter" in report.limits
    ws = Workspace(tmp_path)
    for mode, required in (("landlock", True), ("weak", False)):
        scratch = tmp_path / f"scratch-{mode}"
        scratch.mkdir()
        _argv, _work = build_launch(ws, modes.Confinement(mode), LAYERS, "t_*.py", str(scratch), None)
        inner = next(json.loads(arg) for arg in _argv if arg.startswith("{") and "seccomp_required" in arg)
        assert inner["seccomp_required"] is required, mode


def test_a_virtualenv_reached_through_a_symlink_still_gets_bubblewrap(tmp_path):
    """The site's interpreter is a venv's python behind a symlinked folder: bubblewrap is chosen and holds."""
    import site

    base = Path(tempfile.mkdtemp(prefix="sandbox-venv-"))
    # the site's packages are the ones this interpreter runs with: its own venv's, or the base's without one
    # (a venv built with --system-site-packages sees the base interpreter's, which a venv's packages are not in)
    packages = [p for p in (*site.getsitepackages(), site.getusersitepackages()) if p in sys.path]
    try:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(base / "real")], check=True, timeout=120)
        (base / "link").symlink_to(base / "real")
        ws = tmp_path / "ws"
        ws.mkdir()
        for name in ("a_prlimit_cpu.py", "a_setpriority.py", "a_setuid.py", "a_ctypes_leftover.py"):
            (ws / name).write_text(attack_source(ATTACKS[name], tmp_path, 0))
        script = textwrap.dedent(f"""
            import json, os, site, sys
            for folder in {packages!r}:
                site.addsitedir(folder)
            sys.path.insert(0, {str(ROOT)!r})
            from engine.sandbox.report import describe_confinement
            from engine.harness.tools import run_tool
            from engine.sandbox.workspace import Workspace
            report = describe_confinement()
            results = [run_tool("run_tests", {{"pattern": "a_*.py"}}, Workspace({str(ws)!r})).text]
            print(json.dumps({{"mode": report.mode, "why_not": report.why_not, "results": results,
                               "executable": sys.executable}}))
        """)
        child = subprocess.run(
            [str(base / "link" / "bin" / "python"), "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT
        )
        assert child.returncode == 0, child.stderr
        import json

        found = json.loads(child.stdout)
        assert found["executable"].startswith(str(base / "link"))
        assert found["mode"] == "bwrap", found
        text = found["results"][0]
        assert "got through" not in text and "FAILED (errors=4)" in text, text
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root to start a server as another user"
)
def test_a_server_that_is_not_root_refuses_every_attack_too(world):
    """The server as uid 1000 (a user namespace maps it): runs get a nested user namespace, not a slot uid."""
    ws, out, decoy, service = world
    names = [n for n in ATTACKS if EXTENSION or ("extension" not in n and "dynamic" not in n)]
    script = textwrap.dedent(f"""
        import json, os, sys
        sys.path.insert(0, {str(ROOT)!r})
        from engine.sandbox.report import describe_confinement
        from engine.harness.tools import run_tool
        from engine.sandbox.workspace import Workspace
        report = describe_confinement()
        ws = Workspace({str(ws.root)!r})
        texts = [run_tool("run_tests", {{"pattern": name}}, ws).text for name in {names!r}]
        print(json.dumps({{"euid": os.geteuid(), "mode": report.mode, "limits": report.limits, "texts": texts}}))
    """)
    before, outside = server_state(), outside_state(out)
    child = subprocess.run(
        ["unshare", "--user", "--map-user=1000", "--map-group=1000", sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert child.returncode == 0, child.stderr
    found = json.loads(child.stdout.strip().splitlines()[-1])
    assert found["euid"] == 1000 and "an unprivileged user in a user namespace" in found["limits"]
    assert found["mode"] == ("bwrap" if HAS_BWRAP else "landlock" if LANDLOCK >= 1 else found["mode"])
    for name, text in zip(names, found["texts"], strict=True):
        assert "got through" not in text, (name, text)
        assert re.search(r"FAILED \((errors|failures)=1\)", text), (name, text)
    assert server_state() == before and outside_state(out) == outside and decoy.poll() is None
    assert not service_was_reached(service)


def test_the_report_names_the_mode_and_why_not_a_stronger_one(monkeypatch):
    monkeypatch.setattr(modes, "_CHOSEN", {})
    monkeypatch.setattr(modes, "probe_bwrap", lambda: "bubblewrap failed here: execvp python: No such file")
    report = describe_confinement()
    if LANDLOCK >= 1:
        assert report.mode == "landlock"
        assert report.why_not[0] == "not bubblewrap: bubblewrap failed here: execvp python: No such file"
    assert report.limits.startswith("Each run:")
