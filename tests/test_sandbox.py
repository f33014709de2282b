"""Hostile tool calls: every one is refused with a short error, and nothing around the workspace changes.

The arena is a folder holding the workspace (`ws/`) and a sibling `outside/` with a canary
file. Each row of HOSTILE goes through `run_tool` (a few through `python -m engine tool`)
and names the exact error, or a precise pattern of the result. After the table, both trees
are hashed again and must be byte for byte what they were. The escapes that `run_tests`
might try from inside a test file are then run once per sandbox layer on its own (the audit
hook alone, Landlock alone, no network namespace), so that each layer is shown to hold.
Where this machine lacks bubblewrap or Landlock, the rows and tests that need them skip and say so.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import select
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from engine.errors import BadInput
from engine.harness import filetools
from engine.harness.tools import run_tool
from engine.sandbox import child, modes, slots
from engine.sandbox.workspace import Limits, ToolRefusal, Workspace

ROOT = Path(__file__).resolve().parent.parent
LIMITS = Limits()
PASSED = "| Ran 1 test\n|\n| OK\n[run_tests: end of the tests' output; exit code 0 (passed)]"  # how a run of one passing test ends


# -- the escapes a test file may try from inside run_tests ------------------------------------------
# each is the body of one unittest method; OUT is the outside folder, PORT a loopback server's port
ESCAPES = {
    "t_overwrite.py": 'open(OUT + "/canary.txt", "w").write("gotcha")',
    "t_create.py": 'open(OUT + "/new.txt", "x").write("gotcha")',
    "t_dirfd.py": """
        fd = os.open(OUT, os.O_RDONLY)
        out = os.open("dirfd.txt", os.O_WRONLY | os.O_CREAT, dir_fd=fd)
        os.write(out, b"gotcha")""",
    "t_patch_guard.py": """
        import __main__
        __main__.inside = lambda path: True
        __main__.ROOT = "/"
        open(OUT + "/patched.txt", "w").write("gotcha")""",
    "t_rename.py": 'os.rename("notes.txt", OUT + "/moved.txt")',
    "t_copy.py": 'import shutil; shutil.copy(__file__, OUT + "/copied.py")',
    "t_sqlite.py": 'import sqlite3; sqlite3.connect(OUT + "/db.sqlite").execute("create table t (x)")',
    "t_symlink.py": """
        os.symlink(OUT + "/canary.txt", "inner_link")
        open("inner_link", "w").write("gotcha")""",
    "t_hardlink.py": """
        os.link(OUT + "/canary.txt", "inner_hardlink")
        open("inner_hardlink", "w").write("gotcha")""",
    "t_remove.py": 'os.remove(OUT + "/canary.txt")',
    "t_mkdir.py": 'os.mkdir(OUT + "/newdir")',
    "t_chmod.py": 'os.chmod(OUT + "/canary.txt", 0o777)',
    "t_truncate.py": 'os.truncate(OUT + "/canary.txt", 0)',
    "t_subprocess.py": 'import subprocess; subprocess.run(["/bin/sh", "-c", "echo gotcha > " + OUT + "/sh.txt"])',
    "t_system.py": 'os.system("echo gotcha > " + OUT + "/system.txt")',
    "t_posixsubprocess.py": """
        import _posixsubprocess
        r, w = os.pipe()
        pid = _posixsubprocess.fork_exec(["/bin/sh", "-c", "echo gotcha > " + OUT + "/fork_exec.txt"], [b"/bin/sh"],
            True, (), None, None, -1, -1, -1, -1, -1, -1, r, w, True, False, -1, None, None, None, -1, None, False)
        os.waitpid(pid, 0)""",
    "t_fork.py": """
        pid = os.fork()
        if pid == 0:
            try:
                open(OUT + "/forked.txt", "w").write("gotcha")
            finally:
                os._exit(0)
        os.waitpid(pid, 0)""",
    "t_ctypes.py": 'import ctypes; ctypes.CDLL(None).system(("echo gotcha > " + OUT + "/ctypes.txt").encode())',
    "t_network.py": 'import socket; socket.create_connection(("127.0.0.1", PORT), timeout=2).sendall(b"gotcha")',
    # a folder held open lets a relative path climb out of the current one: dir_fd= with ".."
    "t_dirfd_dotdot.py": """
        top = os.open(os.getcwd(), os.O_RDONLY)
        os.mkdir("down")
        os.chdir("down")
        up = os.open("..", os.O_RDONLY, dir_fd=top)
        out = os.open("dotdot.txt", os.O_WRONLY | os.O_CREAT, dir_fd=up)
        os.write(out, b"gotcha")
        self.fail("got through")""",
    "t_mknod.py": """
        import stat
        os.mknod("null2", stat.S_IFCHR | 0o666, os.makedev(1, 3))
        self.fail("got through")""",
    "t_kill.py": 'os.kill(DECOY, 9); self.fail("got through")',
    "t_pidfd.py": 'import signal; signal.pidfd_send_signal(os.pidfd_open(DECOY), 9); self.fail("got through")',
    # the original functions, from a builtin module made afresh (no import event)
    "t_fresh_builtin.py": """
        import importlib.machinery, importlib.util
        fresh = importlib.util.module_from_spec(importlib.machinery.BuiltinImporter.find_spec("_signal"))
        fresh.pidfd_send_signal(os.pidfd_open(DECOY), 9)
        self.fail("got through")""",
    # tracing another process (PTRACE_ATTACH): no ctypes under the hook, another domain under
    # Landlock, no such process in bubblewrap's PID namespace
    "t_ptrace.py": """
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        self.assertEqual(libc.ptrace(16, DECOY, 0, 0), -1, "got through")""",
    # and an extension module made afresh from its spec: the original fork_exec
    "t_fresh_extension.py": """
        import importlib.util
        spec = importlib.util.find_spec("_posixsubprocess")
        fresh = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(fresh)
        r, w = os.pipe()
        pid = fresh.fork_exec(["/bin/sh", "-c", "echo gotcha > " + OUT + "/fresh.txt"], [b"/bin/sh"],
            True, (), None, None, -1, -1, -1, -1, -1, -1, r, w, True, False, -1, None, None, None, -1, None, False)
        os.waitpid(pid, 0)
        self.assertFalse(os.path.exists(OUT + "/fresh.txt"), "got through")""",
}
# reads a test may try: each must fail (no such file under bubblewrap, denied by Landlock)
READS = {
    "r_shadow.py": 'open("/etc/shadow").read(); self.fail("got through")',
    "r_passwd.py": 'open("/etc/passwd").read(); self.fail("got through")',
    "r_environ.py": 'open(f"/proc/{SERVER}/environ", "rb").read(); self.fail("got through")',
    "r_canary.py": 'open(OUT + "/canary.txt").read(); self.fail("got through")',
    "r_project.py": f'open({str(ROOT / "README.md")!r}).read(); self.fail("got through")',
}
# tests that hide their output and run on, or fill the disk
HIDDEN_OUTPUT = 'fd = os.open("hidden.log", os.O_WRONLY | os.O_CREAT)\nos.dup2(fd, 1)\nos.dup2(fd, 2)\n'
HOSTILE_TESTS = {
    "t_hide_sleep.py": HIDDEN_OUTPUT + "import time\ntime.sleep(60)",
    "t_hide_spin.py": HIDDEN_OUTPUT + "while True:\n    pass",
    "t_write_100mb_files.py": 'for i in range(1600):\n    with open(f"f{i}.bin", "wb") as f:\n        f.write(b"x" * 65536)',
    "t_write_100mb_one.py": 'with open("one.bin", "wb") as f:\n    f.write(b"x" * (100 << 20))',
    "t_folders.py": 'for i in range(20000):\n    os.mkdir(f"d{i}")',
}
# what the audit hook says (the default layers: the hook answers before the kernel is asked)
HOOK_SAYS = {
    "t_overwrite.py": "may not write outside the workspace",
    "t_create.py": "may not write outside the workspace",
    "t_dirfd.py": "may not open folders outside the workspace",
    "t_patch_guard.py": "may not write outside the workspace",
    "t_rename.py": "may not change files outside the workspace",
    "t_copy.py": "may not change files outside the workspace",
    "t_sqlite.py": "may not write outside the workspace",
    "t_symlink.py": "may not change files outside the workspace",
    "t_hardlink.py": "may not change files outside the workspace",
    "t_remove.py": "may not change files outside the workspace",
    "t_mkdir.py": "may not change files outside the workspace",
    "t_chmod.py": "may not change files outside the workspace",
    "t_truncate.py": "may not change files outside the workspace",
    "t_subprocess.py": "may not start processes or load native code",
    "t_system.py": "may not start processes or load native code",
    "t_posixsubprocess.py": "may not start processes or load native code",
    "t_fork.py": "may not start processes or load native code",
    "t_ctypes.py": "may not start processes or load native code",
    "t_network.py": "may not use the network",
    "t_dirfd_dotdot.py": "may not open folders outside the workspace",
    "t_mknod.py": "may not make device nodes",
    "t_kill.py": "may not send signals",
    "t_pidfd.py": "may not send signals",
    "t_fresh_builtin.py": "may not start processes or load native code",
    "t_fresh_extension.py": "may not start processes or load native code",
    "t_ptrace.py": "may not start processes or load native code",
}
assert set(HOOK_SAYS) == set(ESCAPES)


def escape_source(body: str, out: Path, port: int, decoy: int = 0) -> str:
    return (
        f"import os\nimport unittest\nOUT = {str(out)!r}\nPORT = {port}\nDECOY = {decoy}\nSERVER = {os.getpid()}\n\n\n"
        "class Escape(unittest.TestCase):\n    def test_escape(self):\n"
        + textwrap.indent(textwrap.dedent(body).strip(), "        ")
        + "\n"
    )


# -- the arena --------------------------------------------------------------------------------------
def tree_state(folder: Path) -> dict[str, tuple]:
    """Every entry under `folder`: its kind and content hash, link target, or mode; symlinks not followed."""
    state = {}
    for here, dirs, files in os.walk(folder, followlinks=False):
        for name in sorted(dirs + files):
            path = Path(here) / name
            info = os.lstat(path)
            key = path.relative_to(folder).as_posix()
            if stat.S_ISLNK(info.st_mode):
                state[key] = ("link", os.readlink(path))
            elif stat.S_ISREG(info.st_mode):
                state[key] = ("file", info.st_mode, hashlib.sha256(path.read_bytes()).hexdigest())
            else:
                state[key] = ("other", info.st_mode)
    return state


class Arena:
    def __init__(self, base: Path, port: int, decoy: int, open_to_all: bool = False):
        self.base, self.port = base, port
        self.ws_dir, self.out = base / "ws", base / "outside"
        ws, out = self.ws_dir, self.out
        out.mkdir()
        (out / "canary.txt").write_text("the canary\n")
        (out / "secret").mkdir()
        (out / "secret" / "key.txt").write_text("do not read\n")
        ws.mkdir()
        (ws / "notes.txt").write_text("hello\n")
        (ws / "src").mkdir()
        (ws / "src" / "a.py").write_text("x = 1\ny = 2\n")
        (ws / "big.txt").write_text("b" * (LIMITS.read_bytes + 1))
        # a thousand matching lines, for grep's output caps
        (ws / "many.txt").write_text("match me\n" * 1000)
        # a file that keeps a slow pattern busy well past grep's time budget
        (ws / "slow").mkdir()
        (ws / "slow" / "aaa.txt").write_text(("a" * 1000 + "\n") * 1000)
        os.mkfifo(ws / "fifo")
        os.symlink("../outside/canary.txt", ws / "link_file")
        os.symlink("../outside", ws / "link_dir")
        os.symlink("chain2", ws / "chain1")
        os.symlink("chain3", ws / "chain2")
        os.symlink("../outside/canary.txt", ws / "chain3")
        os.symlink("/dev/null", ws / "devnull")
        os.symlink("/etc/passwd", ws / "passwd")
        os.symlink("loop2", ws / "loop1")
        os.symlink("loop1", ws / "loop2")
        os.symlink("../outside/not-there-yet.txt", ws / "dangling")
        (ws / "sub").mkdir()
        os.symlink("../../outside", ws / "sub" / "out")
        (ws / "tests").mkdir()
        for name, body in {**ESCAPES, **READS, **HOSTILE_TESTS}.items():
            (ws / name).write_text(escape_source(body, out, port, decoy))
        # names that would pass for other lines of list_files or grep output
        (ws / "names").mkdir()
        (ws / "names" / "a\nb.txt:1: fake").write_text("needle\n")
        (ws / "names" / "plain:colon.txt").write_text("needle\n")
        # a hard link to a file outside (made before the workspace was handed over)
        os.link(out / "canary.txt", ws / "hardlink.txt")
        (ws / "t_loop.py").write_text(escape_source("while True:\n    pass", out, port))
        (ws / "t_flood.py").write_text(
            escape_source('import sys\nwhile True:\n    sys.stdout.write("x" * 65536)', out, port)
        )
        (ws / "t_memory.py").write_text(escape_source("blob = bytearray(4 << 30)", out, port))
        (ws / "a_file_not_a_folder.txt").write_text("x")
        if open_to_all:
            # every user may write outside, so only the layer under test stands in a test's way
            for folder in (base, out, out / "secret"):
                os.chmod(folder, 0o777)
            for file in (out / "canary.txt", out / "secret" / "key.txt"):
                os.chmod(file, 0o666)
        self.before = self.state()

    def workspace(self, **limits) -> Workspace:
        return Workspace(self.ws_dir, replace(LIMITS, **limits) if limits else LIMITS)

    def state(self) -> dict:
        return {"ws": tree_state(self.ws_dir), "outside": tree_state(self.out)}


@pytest.fixture(scope="module")
def server():
    """A loopback TCP server no test file may reach; it only counts connections, never answers."""
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.setblocking(False)
    yield srv
    srv.close()


@pytest.fixture(scope="module")
def decoy():
    """A process of the server's no test may signal: it must still be alive at the end. It sleeps until the module
    kills it (a `sleep 600` ran out on its own once the module took over ten minutes on a busy machine, and a layer's
    test then read its end as a signal that got through)."""
    proc = subprocess.Popen(["sleep", "infinity"])
    yield proc
    proc.kill()
    proc.wait()


def connections_waiting(srv: socket.socket) -> int:
    count = 0
    while select.select([srv], [], [], 0)[0]:
        conn, _ = srv.accept()
        conn.close()
        count += 1
    return count


@pytest.fixture(scope="module")
def arena(tmp_path_factory, server, decoy):
    return Arena(tmp_path_factory.mktemp("arena"), server.getsockname()[1], decoy.pid)


# -- the table --------------------------------------------------------------------------------------
def leaves(path: str) -> str:
    return f"error: the path {path!r} leaves the workspace"


ABSOLUTE = "error: paths are relative to the workspace; absolute paths are not allowed"
TILDE = "error: paths are relative to the workspace; '~' is not allowed"
NUL = "error: the path contains a NUL byte"
TOO_LONG = f"error: the path is longer than {LIMITS.path_chars} characters"
ran = re.compile  # a pattern the whole text must match (re.fullmatch, DOTALL)
END_FAILED = r"\n\[run_tests: end of the tests' output; exit code 1 \(failed\)\]"  # the harness's last line

KILLED = "error: the tests did not finish within 2 s and were killed (every process they started went with them)"
NEEDS_CONFINEMENT = pytest.mark.skipif(
    not modes.bwrap_works() and modes.landlock_abi() < 1,
    reason="this machine has neither bubblewrap nor Landlock: run_tests is refused (see test_run_tests_refuses_without_confinement)",
)

# (id, tool, arguments, limits overrides, expected text: exact string or ran(pattern))
HOSTILE = [
    # climbing out with '..'
    ("dotdot-read", "read_file", {"path": "../outside/canary.txt"}, {}, leaves("../outside/canary.txt")),
    ("dotdot-deep", "read_file", {"path": "src/../../outside/canary.txt"}, {}, leaves("src/../../outside/canary.txt")),
    ("dotdot-list", "list_files", {"dir": ".."}, {}, leaves("..")),
    ("dotdot-grep", "grep", {"pattern": "canary", "path": "../outside"}, {}, leaves("../outside")),
    ("dotdot-write", "write_file", {"path": "../outside/new.txt", "content": "x"}, {}, leaves("../outside/new.txt")),
    (
        "dotdot-new-folders",
        "write_file",
        {"path": "new/a/../../../outside/x.txt", "content": "x"},
        {},
        leaves("new/a/../../../outside/x.txt"),
    ),
    # absolute paths, '~', NUL, length, type
    ("absolute", "read_file", {"path": "/etc/passwd"}, {}, ABSOLUTE),
    ("absolute-double-slash", "read_file", {"path": "//etc/passwd"}, {}, ABSOLUTE),
    ("absolute-list", "list_files", {"dir": "/"}, {}, ABSOLUTE),
    ("absolute-write", "write_file", {"path": "/tmp/x.txt", "content": "x"}, {}, ABSOLUTE),
    ("tilde", "read_file", {"path": "~/.bashrc"}, {}, TILDE),
    ("tilde-user", "write_file", {"path": "~root/x", "content": "x"}, {}, TILDE),
    ("nul", "read_file", {"path": "notes.txt\0../../etc/passwd"}, {}, NUL),
    ("nul-write", "write_file", {"path": "a\0b", "content": "x"}, {}, NUL),
    ("very-long-path", "read_file", {"path": "a/" * 300}, {}, TOO_LONG),
    (
        "name-too-long",
        "write_file",
        {"path": "n" * 300, "content": "x"},
        {},
        "error: the path cannot be used: File name too long",
    ),
    ("path-not-a-string", "read_file", {"path": ["notes.txt"]}, {}, "error: a path must be a string"),
    (
        "lone-surrogate",
        "read_file",
        {"path": "\ud800.txt"},
        {},
        "error: the path is not valid text (it holds a lone surrogate)",
    ),
    ("unknown-argument", "read_file", {"path": "notes.txt", "mode": "w"}, {}, "error: wrong arguments for read_file"),
    # symlinks pointing out
    ("symlink-file", "read_file", {"path": "link_file"}, {}, leaves("link_file")),
    ("symlink-dir", "read_file", {"path": "link_dir/canary.txt"}, {}, leaves("link_dir/canary.txt")),
    ("symlink-dir-secret", "list_files", {"dir": "link_dir/secret"}, {}, leaves("link_dir/secret")),
    ("symlink-chain", "read_file", {"path": "chain1"}, {}, leaves("chain1")),
    ("symlink-to-etc", "read_file", {"path": "passwd"}, {}, leaves("passwd")),
    ("symlink-loop", "read_file", {"path": "loop1"}, {}, "error: the path 'loop1' goes round a loop of symlinks"),
    ("write-through-symlink", "write_file", {"path": "link_file", "content": "x"}, {}, leaves("link_file")),
    ("write-through-chain", "write_file", {"path": "chain1", "content": "x"}, {}, leaves("chain1")),
    (
        "write-into-symlinked-dir",
        "write_file",
        {"path": "link_dir/new.txt", "content": "x"},
        {},
        leaves("link_dir/new.txt"),
    ),
    (
        "write-symlink-in-subfolder",
        "write_file",
        {"path": "sub/out/deeper/new.txt", "content": "x"},
        {},
        leaves("sub/out/deeper/new.txt"),
    ),
    ("write-dangling-symlink", "write_file", {"path": "dangling", "content": "x"}, {}, leaves("dangling")),
    ("grep-through-symlinked-dir", "grep", {"pattern": ".", "path": "link_dir"}, {}, leaves("link_dir")),
    # device files
    ("dev-null-via-symlink", "read_file", {"path": "devnull"}, {}, leaves("devnull")),
    ("write-dev-null-via-symlink", "write_file", {"path": "devnull", "content": "x"}, {}, leaves("devnull")),
    ("fifo-read", "read_file", {"path": "fifo"}, {}, "error: fifo is not a regular file or folder"),
    ("fifo-write", "write_file", {"path": "fifo", "content": "x"}, {}, "error: fifo is not a regular file or folder"),
    ("fifo-grep", "grep", {"pattern": "x", "path": "fifo"}, {}, "error: fifo is not a regular file or folder"),
    # sizes
    (
        "oversized-read",
        "read_file",
        {"path": "big.txt"},
        {},
        f"error: big.txt is {LIMITS.read_bytes + 1} bytes; read_file returns files up to {LIMITS.read_bytes} bytes",
    ),
    (
        "oversized-write",
        "write_file",
        {"path": "huge.txt", "content": "x" * (LIMITS.write_bytes + 1)},
        {},
        f"error: content is {LIMITS.write_bytes + 1} bytes; write_file accepts up to {LIMITS.write_bytes}",
    ),
    (
        "workspace-size-cap",
        "write_file",
        {"path": "fill.txt", "content": "x" * 60_000},
        {"workspace_bytes": 100_000},
        "error: the workspace would grow past 100000 bytes",
    ),
    (
        "content-not-text",
        "write_file",
        {"path": "s.txt", "content": "\udcff"},
        {},
        "error: content is not valid text (it holds a lone surrogate)",
    ),
    ("write-over-folder", "write_file", {"path": "src", "content": "x"}, {}, "error: src is a folder"),
    (
        "write-too-deep",
        "write_file",
        {"path": "d/" * 17 + "f.txt", "content": "x"},
        {},
        f"error: {'d/' * 17}f.txt is 17 folders deep; write_file goes up to 16 folders down",
    ),
    (
        "workspace-entry-cap",
        "write_file",
        {"path": "new/x.txt", "content": "x"},
        {"workspace_entries": 10},
        "error: the workspace would hold more than 10 files and folders",
    ),
    # a hard link shares its bytes with a file outside
    (
        "write-hardlink",
        "write_file",
        {"path": "hardlink.txt", "content": "x"},
        {},
        "error: hardlink.txt is a hard link (2 names for one file); write_file will not change it, write to a new name instead",
    ),
    # names that would pass for other lines of output are shown quoted, and never made
    ("list-control-names", "list_files", {"dir": "names"}, {}, '"a\\nb.txt:1: fake"\nplain:colon.txt'),
    (
        "grep-control-names",
        "grep",
        {"pattern": "needle", "path": "names"},
        {},
        '"names/a\\nb.txt:1: fake":1: needle\n"names/plain:colon.txt":1: needle',
    ),
    (
        "write-newline-name",
        "write_file",
        {"path": "x\ny.txt", "content": "x"},
        {},
        "error: the path holds a control character (such as a newline or tab); give a file name of printable characters",
    ),
    (
        "write-tab-name",
        "write_file",
        {"path": "x\ty.txt", "content": "x"},
        {},
        "error: the path holds a control character (such as a newline or tab); give a file name of printable characters",
    ),
    # grep: patterns that could run for ever, and output caps
    ("grep-catastrophic-backtracking", "grep", {"pattern": "(a+)+$b", "path": "slow"}, {}, "(no matches)"),
    ("grep-nested-quantifiers", "grep", {"pattern": "(a|aa|aaa)*c", "path": "slow"}, {}, "(no matches)"),
    (
        "grep-too-complex",
        "grep",
        {"pattern": "(a?){500}a{500}b"},
        {},
        "error: the pattern is too complex for grep (its RE2 program has 2505 steps; the limit is 2000)",
    ),
    ("grep-too-long", "grep", {"pattern": "x" * 1001}, {}, "error: the pattern is longer than 1000 characters"),
    (
        "grep-backreference",
        "grep",
        {"pattern": r"(a)\1"},
        {},
        "error: '(a)\\\\1' is not a valid regular expression (RE2 syntax)",
    ),
    (
        "grep-time-budget",
        "grep",
        {"pattern": "(a?){390}a{390}b", "path": "slow"},
        {"grep_seconds": 1.0},
        "... stopped after 1 s",
    ),
    (
        "grep-line-cap",
        "grep",
        {"pattern": "match", "path": "many.txt"},
        {},
        ran(r"(many\.txt:\d+: match me\n){200}\.\.\. more matches not shown"),
    ),
    (
        "grep-byte-cap",
        "grep",
        {"pattern": "match", "path": "many.txt"},
        {"grep_bytes": 500},
        ran(r"(many\.txt:\d+: match me\n){23}\.\.\. more matches not shown"),
    ),
    # run_tests: time, output, memory, and every escape (the hook's message; nothing changes outside)
    (
        "tests-pattern-path",
        "run_tests",
        {"pattern": "../outside/*.py"},
        {},
        "error: pattern must be a file-name glob such as test_*.py",
    ),
    ("tests-loop-forever", "run_tests", {"pattern": "t_loop.py"}, {"test_seconds": 2.0}, KILLED),
    # output moved elsewhere (os.dup2), then sleeping or spinning: killed at the limit all the same
    ("tests-hidden-output-sleep", "run_tests", {"pattern": "t_hide_sleep.py"}, {"test_seconds": 2.0}, KILLED),
    ("tests-hidden-output-spin", "run_tests", {"pattern": "t_hide_spin.py"}, {"test_seconds": 2.0}, KILLED),
    # 100 MB, in 64 KiB files or in one: the disk given to a run (bubblewrap's tmpfs), the count of
    # new files, or the size of one file stops it
    (
        "tests-write-100mb-files",
        "run_tests",
        {"pattern": "t_write_100mb_files.py"},
        {},
        ran(r".*(No space left on device|may make at most 256 new files and folders).*FAILED \(errors=1\).*"),
    ),
    (
        "tests-write-100mb-one",
        "run_tests",
        {"pattern": "t_write_100mb_one.py"},
        {},
        ran(
            r".*File too large.*FAILED \(errors=1\)\n\(run_tests gives the tests 8,388,608 bytes of disk, 65,536 bytes per "
            r"file, 256 new files and folders\)\n\[run_tests: end of the tests' output; exit code 1 \(failed\)\]"
        ),
    ),
    (
        "tests-20000-folders",
        "run_tests",
        {"pattern": "t_folders.py"},
        {},
        ran(
            r".*PermissionError: run_tests may make at most 256 new files and folders.*FAILED \(errors=1\)" + END_FAILED
        ),
    ),
    # reading outside: no such file under bubblewrap, denied by Landlock
    *[
        pytest.param(
            f"tests-read-{name[2:-3]}",
            "run_tests",
            {"pattern": name},
            {},
            ran(r".*(FileNotFoundError|PermissionError).*FAILED \(errors=1\)" + END_FAILED),
            marks=NEEDS_CONFINEMENT,
        )
        for name in READS
    ],
    (
        "tests-flood-output",
        "run_tests",
        {"pattern": "t_flood.py"},
        {},
        ran(
            r"\[run_tests: stopped for printing too much; the tests' own output follows, each line marked '\| '\]\n"
            r"\| x{8190}\n\.\.\. output cut; the tests were stopped for printing too much\n"
            r"\[run_tests: end of the tests' output; stopped for printing too much\]"
        ),
    ),
    (
        "tests-memory",
        "run_tests",
        {"pattern": "t_memory.py"},
        {},
        ran(r".*MemoryError.*FAILED \(errors=1\)" + END_FAILED),
    ),
    *[
        (
            f"tests-{name[2:-3]}",
            "run_tests",
            {"pattern": name},
            {},
            # under bubblewrap the folder outside is not there at all, and the kernel may answer first
            ran(
                rf".*(PermissionError: run_tests {re.escape(said)}|FileNotFoundError: \[Errno 2\] No such file or directory: '[^']*/outside[/']).*FAILED \(errors=1\)"
                + END_FAILED
            ),
        )
        for name, said in HOOK_SAYS.items()
    ],
]


def row_values(row) -> tuple:
    return row.values if hasattr(row, "marks") else row


def as_param(row):
    values = row_values(row)
    marks = list(getattr(row, "marks", ()))
    # a row that runs tests needs bubblewrap or Landlock (without either, run_tests is refused)
    if values[1] == "run_tests" and values[0] != "tests-pattern-path" and NEEDS_CONFINEMENT not in marks:
        marks.append(NEEDS_CONFINEMENT)
    return pytest.param(*values[1:], id=values[0], marks=marks)


@pytest.mark.parametrize("tool, arguments, limits, expected", [as_param(row) for row in HOSTILE])
def test_hostile_call_is_refused(arena, tool, arguments, limits, expected):
    started = time.monotonic()
    outcome = run_tool(tool, arguments, arena.workspace(**limits))
    seconds = time.monotonic() - started
    if isinstance(expected, re.Pattern):
        assert re.fullmatch(expected.pattern, outcome.text, re.DOTALL), outcome.text[-400:]
    else:
        assert outcome.text == expected
    if expected.__class__ is str and expected.startswith("error:"):
        assert outcome.error == expected and outcome.result is None
    # short enough to send back to a model, and within the run's own limit (runs yield the CPU to
    # everything else, so on a busy machine they take longer: only the limit itself is a bound)
    assert len(outcome.text) <= LIMITS.test_output_bytes + 300  # the cap, the harness's first and last lines, the note
    assert seconds < LIMITS.test_seconds + 5


def test_every_tool_and_escape_has_rows_of_its_own():
    """The table covers each file tool and runs every escape, read and hostile test file; ids are unique."""
    rows = [row_values(row) for row in HOSTILE]
    ids = [row[0] for row in rows]
    assert len(ids) == len(set(ids))
    assert {row[1] for row in rows} == set(filetools.FILE_TOOLS)
    patterns = {row[2]["pattern"] for row in rows if row[1] == "run_tests"}
    assert set(ESCAPES) | set(READS) | set(HOSTILE_TESTS) <= patterns


# -- the command line -------------------------------------------------------------------------------
def engine_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "engine", "tool", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    "name, arguments, error",
    [
        ("read_file", {"path": "../outside/canary.txt"}, leaves("../outside/canary.txt")),
        ("write_file", {"path": "link_dir/new.txt", "content": "x"}, leaves("link_dir/new.txt")),
        ("read_file", {"path": "/etc/passwd"}, ABSOLUTE),
        ("list_files", {"dir": "link_dir"}, leaves("link_dir")),
    ],
)
def test_cli_refuses_hostile_calls(arena, name, arguments, error):
    done = engine_cli(name, "--args", json.dumps(arguments), "--workspace", str(arena.ws_dir))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"error": error}


@pytest.mark.parametrize(
    "workspace, message",
    [
        ("ws/a_file_not_a_folder.txt", "is a file, not a folder"),
        ("no-such-folder", "does not exist"),
    ],
)
def test_cli_refuses_a_bad_workspace(arena, workspace, message):
    path = arena.base / workspace
    done = engine_cli("read_file", "--args", '{"path": "x"}', "--workspace", str(path))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().startswith("error: the workspace") and message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_workspace_that_is_a_file_or_has_a_nul_is_bad_input(arena):
    with pytest.raises(BadInput, match="is a file, not a folder"):
        Workspace(arena.ws_dir / "a_file_not_a_folder.txt")
    with pytest.raises(BadInput, match="NUL byte"):
        Workspace(str(arena.ws_dir) + "\0")


# -- after the table: nothing moved ---------------------------------------------------------------------
def test_the_workspace_and_its_surroundings_are_unchanged(arena, server):
    after = arena.state()
    assert after["outside"] == arena.before["outside"]
    assert after["ws"] == arena.before["ws"]
    assert connections_waiting(server) == 0


# -- each layer of run_tests on its own -------------------------------------------------------------
HAS_BWRAP = modes.bwrap_works()
LANDLOCK = modes.landlock_abi()
# (mode chosen, the guard's layers inside the child)
LAYERS = [
    pytest.param("weak", ("hook",), id="audit-hook-only"),
    pytest.param(
        "landlock",
        ("landlock",),
        id="landlock-only",
        marks=pytest.mark.skipif(LANDLOCK < 1, reason="this kernel has no Landlock"),
    ),
    pytest.param(
        "bwrap",
        (),
        id="bubblewrap-only",
        marks=pytest.mark.skipif(not HAS_BWRAP, reason="bubblewrap is missing or cannot make namespaces here"),
    ),
]


@pytest.fixture
def open_folder():
    """A folder under /tmp that every user may walk into (pytest's own is private to its user)."""
    folder = Path(tempfile.mkdtemp(prefix="sandbox-arena-"))
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.parametrize("mode, layers", LAYERS)
def test_each_sandbox_layer_holds_on_its_own(open_folder, server, decoy, one_mode, mode, layers):
    """Every escape, run with one layer inside the mode's namespaces, the outside open to every user: nothing changes."""
    one_mode(mode, layers)
    arena = Arena(open_folder, server.getsockname()[1], decoy.pid, open_to_all=True)
    escapes = dict(ESCAPES)
    if mode != "weak":
        escapes.update(READS)  # the audit hook alone does not confine reads: that is why it is "weak"
    if mode == "landlock":
        # Landlock does not govern a file's metadata (mode, owner, times): only the hook refuses chmod
        escapes.pop("t_chmod.py")
        if LANDLOCK < 4:
            escapes.pop("t_network.py")  # Landlock governs TCP from ABI 4 (Linux 6.7)
        if LANDLOCK < 6:
            for name in ("t_kill.py", "t_pidfd.py", "t_fresh_builtin.py"):
                escapes.pop(name)  # and signals from ABI 6 (Linux 6.12)
    ws = arena.workspace()
    for name in escapes:
        outcome = run_tool("run_tests", {"pattern": name}, ws)
        # the attempt failed inside the test (refused, or denied by the kernel)
        assert outcome.error is None and re.search(r"FAILED \((errors|failures)=1\)|\n\| OK\n", outcome.result), (
            outcome.result
        )
        assert "AssertionError: got through" not in outcome.result, (name, outcome.result)
        if name in READS:
            assert re.search(
                r"(FileNotFoundError|PermissionError).*FAILED \(errors=1\)\n\[run_tests: end", outcome.result, re.DOTALL
            ), outcome.result
        if layers == ("hook",):
            assert f"PermissionError: run_tests {HOOK_SAYS[name]}" in outcome.result, (name, outcome.result)
        assert arena.state()["outside"] == arena.before["outside"], name
        assert decoy.poll() is None, name
    after = arena.state()
    assert after["outside"] == arena.before["outside"]
    # the tests ran on a copy: nothing they made is left in the workspace
    assert after["ws"] == arena.before["ws"]
    assert connections_waiting(server) == 0


ORDINARY_TEST = """
import os
import shutil
import sqlite3
import tempfile
import unittest


class Ordinary(unittest.TestCase):
    def test_files_folders_and_a_database(self):
        os.makedirs("a/b/c")
        with open("a/b/c/f.txt", "w") as f:
            f.write("x")
        folder = os.open("a/b", os.O_RDONLY)
        os.rename("c/f.txt", "c/g.txt", src_dir_fd=folder, dst_dir_fd=folder)
        os.close(folder)
        shutil.rmtree("a")
        with tempfile.TemporaryDirectory() as scratch:
            with open(os.path.join(scratch, "t.txt"), "w") as f:
                f.write("y")
        db = sqlite3.connect("db.sqlite")
        db.execute("create table t (x)")
        db.close()
        self.assertFalse(os.path.exists("a"))
"""


@pytest.mark.parametrize(
    "mode, layers",
    [
        pytest.param("weak", ("hook",), id="audit-hook"),
        pytest.param(
            "landlock",
            ("landlock", "hook"),
            id="landlock-and-hook",
            marks=pytest.mark.skipif(LANDLOCK < 1, reason="this kernel has no Landlock"),
        ),
        pytest.param(
            "bwrap",
            ("landlock", "hook"),
            id="bubblewrap-landlock-and-hook",
            marks=pytest.mark.skipif(not HAS_BWRAP, reason="bubblewrap is missing or cannot make namespaces here"),
        ),
    ],
)
def test_ordinary_tests_pass_in_every_mode(tmp_path, one_mode, mode, layers):
    """Folders, dir_fd= inside, rmtree, a temporary folder and sqlite: what a real suite does still works."""
    one_mode(mode, layers)
    (tmp_path / "test_ordinary.py").write_text(ORDINARY_TEST)
    outcome = run_tool("run_tests", {}, Workspace(tmp_path))
    assert outcome.result is not None and outcome.result.endswith(PASSED), outcome.text
    # the tests ran on a copy
    assert sorted(p.name for p in tmp_path.iterdir()) == ["test_ordinary.py"]


def test_run_tests_refuses_without_confinement(tmp_path, monkeypatch):
    """Neither bubblewrap nor Landlock: refused with the reason, unless QWEN_SANDBOX_WEAK=1 allows the hook alone."""
    (tmp_path / "test_ok.py").write_text(
        "import unittest\nclass T(unittest.TestCase):\n    def test_ok(self):\n        pass\n"
    )
    ws = Workspace(tmp_path)
    monkeypatch.setattr(modes, "MODES", ("weak",))
    monkeypatch.setattr(modes, "_CHOSEN", {})
    monkeypatch.delenv("QWEN_SANDBOX_WEAK", raising=False)
    assert run_tool("run_tests", {}, ws).error == modes.REFUSED
    monkeypatch.setenv("QWEN_SANDBOX_WEAK", "1")
    assert run_tool("run_tests", {}, ws).result.endswith(PASSED)


VIEW_TEST = """
import os
import unittest


class View(unittest.TestCase):
    def test_view(self):
        pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
        self.assertLess(max(pids), 10, pids)
        self.assertNotIn(SERVER, pids)
        top = set(os.listdir("/"))
        self.assertLessEqual(top, {"bin", "dev", "etc", "lib", "lib32", "lib64", "proc", "root", "run", "sbin", "tmp", "usr"}, top)
        self.assertEqual(os.listdir("/etc"), ["ld.so.cache"])
        for gone in ("/home", "/var", "/opt", "/srv"):
            self.assertFalse(os.path.exists(gone), gone)
        self.assertEqual(sorted(os.listdir("/run")), ["guard.py", "launcher.py", "syscall_filter.py", "workspace"])
        # the folder around the workspace holds the workspace only
        self.assertEqual(os.listdir(".."), [os.path.basename(os.getcwd())])
        self.assertEqual(open("/proc/self/status").read().count("CapEff:\t0000000000000000"), 1)
"""


@pytest.mark.skipif(not HAS_BWRAP, reason="bubblewrap is missing or cannot make namespaces here")
def test_bubblewrap_shows_the_test_only_python_and_its_workspace(tmp_path, one_mode):
    """Under bubblewrap a test sees its own few processes, no /etc, no server, and has no capabilities."""
    one_mode("bwrap", ())  # bubblewrap's view alone (Landlock would also hide /proc)
    (tmp_path / "ws").mkdir()
    source = VIEW_TEST.replace("SERVER", str(os.getpid()))
    (tmp_path / "ws" / "test_view.py").write_text(source)
    outcome = run_tool("run_tests", {}, Workspace(tmp_path / "ws"))
    assert outcome.result is not None and outcome.result.endswith(PASSED), outcome.text


@NEEDS_CONFINEMENT
@pytest.mark.parametrize(
    "body",
    [
        pytest.param(HOSTILE_TESTS["t_hide_sleep.py"], id="hidden-output-sleep"),
        pytest.param(HOSTILE_TESTS["t_hide_spin.py"], id="hidden-output-spin"),
    ],
)
def test_a_killed_run_leaves_no_process_behind(tmp_path, body):
    """Killed at the limit whatever it did with its output; within 2 s of the limit no process of it is left."""
    marker = f"t_hidden_{os.getpid()}_{time.monotonic_ns()}.py"
    (tmp_path / marker).write_text(escape_source(body, tmp_path, 0))
    started = time.monotonic()
    outcome = run_tool("run_tests", {"pattern": marker}, Workspace(tmp_path, replace(LIMITS, test_seconds=2.0)))
    seconds = time.monotonic() - started
    assert outcome.error == KILLED
    assert seconds < 2.0 + 2.0
    assert child.processes_with(marker) == []


# -- the host hidden where a namespace can hide it ---------------------------------------------------------
HOST_TEST = """
import os
import socket
import time
import unittest


class Host(unittest.TestCase):
    def test_host(self):
        self.assertEqual(socket.gethostname(), "sandbox")  # a UTS namespace of its own
        # a time namespace: the clocks start with the run, so the host's uptime and boot time are not seen
        self.assertLess(time.clock_gettime(time.CLOCK_BOOTTIME), 60)
        self.assertLess(time.monotonic(), 60)
        with self.assertRaises(PermissionError):
            os.statvfs("/usr")  # the host's disks' sizes (statfs), refused by the filter
"""


@pytest.mark.parametrize(
    "mode",
    [
        pytest.param(
            "bwrap",
            marks=pytest.mark.skipif(not HAS_BWRAP, reason="bubblewrap is missing or cannot make namespaces here"),
        ),
        pytest.param("landlock", marks=pytest.mark.skipif(LANDLOCK < 1, reason="this kernel has no Landlock")),
    ],
)
def test_the_host_s_name_clocks_and_disks_are_hidden(tmp_path, one_mode, mode):
    one_mode(mode, child.LAYERS)
    (tmp_path / "test_host.py").write_text(HOST_TEST)
    outcome = run_tool("run_tests", {}, Workspace(tmp_path))
    assert outcome.result is not None and outcome.result.endswith(PASSED), outcome.text


# -- the slots: a share per visitor, a bounded wait ---------------------------------------------------------
@pytest.fixture
def four_slots(monkeypatch):
    four = slots._Slots(4)
    monkeypatch.setattr(slots, "_SLOTS", [four])
    return four


def test_one_visitor_holds_at_most_half_the_slots_and_a_wait_ends_with_a_message(four_slots):
    with contextlib.ExitStack() as held:
        assert [held.enter_context(slots.take_slot("a", 0.1))[1] for _ in range(2)] == [False, False]
        # a's third run waits, then is refused in words; b's runs start at once
        with pytest.raises(ToolRefusal, match="you already have 2 run_tests going, the most one visitor may have"):
            held.enter_context(slots.take_slot("a", 0.2))
        assert [held.enter_context(slots.take_slot("b", 0.1))[1] for _ in range(2)] == [False, False]
        started = time.monotonic()
        with pytest.raises(ToolRefusal, match=r"all 4 run_tests slots stayed busy for 0.3 s"):
            held.enter_context(slots.take_slot("c", 0.3))
        assert 0.3 <= time.monotonic() - started < 2
        assert slots.slot_status() == slots.SlotStatus(4, 4, 0)
    assert sorted(four_slots.free) == [0, 1, 2, 3] and four_slots.held == {}


def test_a_freed_slot_goes_to_the_first_visitor_under_their_share(four_slots):
    got = []
    a_held, b_held = contextlib.ExitStack(), contextlib.ExitStack()
    for stack, visitor in ((a_held, "a"), (a_held, "a"), (b_held, "b"), (b_held, "b")):
        stack.enter_context(slots.take_slot(visitor, 0.1))

    def wait_for(visitor):
        with slots.take_slot(visitor, 10) as (_slot, waited):
            got.append((visitor, waited))
            time.sleep(0.5)

    waiters = [threading.Thread(target=wait_for, args=(v,)) for v in ("a", "c")]
    for thread in waiters:
        thread.start()
        time.sleep(0.2)  # a queues first, then c
    assert slots.slot_status().waiting == 2
    b_held.close()  # two slots free; a, first in line, still holds its two: c goes first, a keeps waiting
    time.sleep(0.3)
    assert got == [("c", True)] and slots.slot_status().waiting == 1
    a_held.close()
    for thread in waiters:
        thread.join(10)
    assert got == [("c", True), ("a", True)]


@NEEDS_CONFINEMENT
def test_one_visitor_s_long_runs_do_not_hold_up_another_visitor_s_test(tmp_path, monkeypatch):
    """Two slots: visitor a's sleeping test holds one (its share), and b's one-line test runs beside it at once."""
    monkeypatch.setattr(slots, "_SLOTS", [slots._Slots(2)])
    (tmp_path / "slow").mkdir()
    (tmp_path / "slow" / "test_slow.py").write_text(
        "import time, unittest\nclass T(unittest.TestCase):\n    def test_slow(self):\n        time.sleep(6)\n"
    )
    (tmp_path / "quick").mkdir()
    (tmp_path / "quick" / "test_quick.py").write_text(
        "import unittest\nclass T(unittest.TestCase):\n    def test_quick(self):\n        pass\n"
    )
    limits = replace(LIMITS, slot_wait_seconds=1.0)
    slow = threading.Thread(target=run_tool, args=("run_tests", {}, Workspace(tmp_path / "slow", limits, visitor="a")))
    slow.start()
    time.sleep(1.0)
    second = run_tool("run_tests", {}, Workspace(tmp_path / "slow", limits, visitor="a"))
    assert (
        second.error == "error: you already have 1 run_tests going, the most one visitor may have at once (1 of 2); "
        "run this again when one has finished"
    )
    started = time.monotonic()
    quick = run_tool("run_tests", {}, Workspace(tmp_path / "quick", limits, visitor="b"))
    assert quick.result is not None and quick.result.endswith(PASSED) and "after waiting" not in quick.result
    assert slow.is_alive() and time.monotonic() - started < 6
    slow.join(30)
