"""The five harness tools of seed 000, each confined to a `Workspace` and bounded in size and time.

`grep` uses RE2 (linear time, so no pattern can run for ever); `run_tests` runs the
workspace's unittest suite in a child process with a time limit, capped output, no network
(a network namespace where the system allows it, and an audit hook in any case), no child
processes, and no writes outside the workspace.
"""

from __future__ import annotations

import fnmatch
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import re2

from .workspace import ToolRefusal, Workspace


def read_file(ws: Workspace, path: str) -> str:
    target = ws.resolve(path)
    if target.is_dir():
        raise ToolRefusal(f"error: {path} is a folder; use list_files")
    size = target.stat().st_size
    if size > ws.limits.read_bytes:
        raise ToolRefusal(f"error: {path} is {size} bytes; read_file returns files up to {ws.limits.read_bytes} bytes")
    data = target.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolRefusal(f"error: {path} is not a UTF-8 text file") from None


def list_files(ws: Workspace, dir: str = ".") -> str:
    target = ws.resolve(dir)
    if not target.is_dir():
        raise ToolRefusal(f"error: {dir} is a file, not a folder")
    entries = []
    for child in sorted(target.iterdir(), key=lambda p: p.name):
        if child.name == "__pycache__":
            continue
        entries.append(child.name + ("/" if child.is_dir() and not child.is_symlink() else ""))
    if not entries:
        return "(empty folder)"
    shown = entries[: ws.limits.list_entries]
    more = len(entries) - len(shown)
    return "\n".join(shown) + (f"\n... and {more} more" if more else "")


def write_file(ws: Workspace, path: str, content: str) -> str:
    if not isinstance(content, str):
        raise ToolRefusal("error: content must be a string")
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolRefusal("error: content is not valid text (it holds a lone surrogate)") from None
    if len(data) > ws.limits.write_bytes:
        raise ToolRefusal(f"error: content is {len(data)} bytes; write_file accepts up to {ws.limits.write_bytes}")
    target = ws.resolve(path, must_exist=False)
    if target.is_dir():
        raise ToolRefusal(f"error: {path} is a folder")
    old = target.stat().st_size if target.exists() else 0
    if ws.size() - old + len(data) > ws.limits.workspace_bytes:
        raise ToolRefusal(f"error: the workspace would grow past {ws.limits.workspace_bytes} bytes")
    # create missing folders one by one, checking each stays inside (resolve() caught symlinks already)
    target.parent.mkdir(parents=True, exist_ok=True)
    # never write through a symlink, even one pointing inside
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(target, flags, 0o644)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    return f"wrote {len(data)} bytes to {ws.relative(target)}"


def grep(ws: Workspace, pattern: str, path: str = ".") -> str:
    limits = ws.limits
    if isinstance(pattern, str) and len(pattern) > limits.grep_pattern_chars:
        raise ToolRefusal(f"error: the pattern is longer than {limits.grep_pattern_chars} characters")
    options = re2.Options()
    options.log_errors = False
    try:
        regex = re2.compile(pattern, options)
    except re2.error:
        raise ToolRefusal(f"error: {pattern!r} is not a valid regular expression (RE2 syntax)") from None
    except Exception:
        raise ToolRefusal("error: the pattern could not be compiled") from None
    # RE2 is linear in the text, but each byte costs up to the program's size: bound both
    if regex.programsize > limits.grep_program_size:
        raise ToolRefusal(f"error: the pattern is too complex for grep (its RE2 program has {regex.programsize} steps; the limit is {limits.grep_program_size})")
    start = ws.resolve(path)
    files = [start] if start.is_file() else sorted(_walk_files(start))
    lines: list[str] = []
    size = 0
    deadline = time.monotonic() + limits.grep_seconds
    for file in files:
        if time.monotonic() > deadline:
            lines.append(f"... stopped after {limits.grep_seconds:g} s")
            break
        try:
            if file.stat().st_size > limits.grep_file_bytes:
                continue
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if time.monotonic() > deadline:
                lines.append(f"... stopped after {limits.grep_seconds:g} s")
                return "\n".join(lines)
            if regex.search(line[: limits.grep_line_chars]):
                entry = f"{ws.relative(file)}:{number}: {line[:300]}"
                size += len(entry) + 1
                if len(lines) >= limits.grep_lines or size > limits.grep_bytes:
                    lines.append("... more matches not shown")
                    return "\n".join(lines)
                lines.append(entry)
    return "\n".join(lines) if lines else "(no matches)"


def _walk_files(folder: Path):
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in files:
            path = Path(root) / name
            if path.is_file() and not path.is_symlink():
                yield path


# the child's confinement, in two layers:
# 1. Landlock (Linux 5.13+), set up before anything else runs: the kernel refuses every write,
#    file creation, deletion and rename outside the workspace, every exec, and (ABI 4+) every
#    TCP bind or connect, (ABI 6+) abstract unix sockets and signals to other processes. It
#    holds whatever Python code the tests run. On kernels without it this layer is skipped.
# 2. An audit hook (PEP 578) refusing the network, child processes, native code, and writes
#    outside. Audit hooks are not a sandbox on their own (code that patches the standard
#    library can get past them), so its state lives in a closure, not in globals a test can
#    reassign, and it also refuses the known ways round it: a directory fd opened outside
#    (for dir_fd= writes), sqlite3 files outside, _posixsubprocess, and reaching the hook
#    through the garbage collector.
_GUARD = r"""
import os, sys

def _landlock(root):
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(444, None, 0, 1)  # landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
    if abi < 1:
        return 0
    write = sum(1 << b for b in (1, 4, 5, 6, 7, 8, 9, 10, 11, 12))  # write, remove, make any kind of file
    if abi >= 2:
        write |= 1 << 13  # refer: link or rename across folders
    if abi >= 3:
        write |= 1 << 14  # truncate
    fs = write | 1  # and execute, which no rule grants
    net = 0b11 if abi >= 4 else 0  # bind and connect TCP, which no rule grants
    scoped = 0b11 if abi >= 6 else 0  # abstract unix sockets and signals outside this process
    attr = (ctypes.c_uint64 * 3)(fs, net, scoped)
    size = 24 if abi >= 6 else (16 if abi >= 4 else 8)
    ruleset = libc.syscall(444, ctypes.byref(attr), size, 0)
    if ruleset < 0:
        return 0
    class PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]
    folder = os.open(root, os.O_PATH | os.O_DIRECTORY)
    rule = PathBeneath(write, folder)
    ok = libc.syscall(445, ruleset, 1, ctypes.byref(rule), 0) == 0  # landlock_add_rule, path beneath
    ok = ok and libc.prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
    ok = ok and libc.syscall(446, ruleset, 0) == 0  # landlock_restrict_self
    os.close(folder)
    os.close(ruleset)
    return abi if ok else 0

def _install_guard(root):
    realpath, isdir, fsdecode, sep = os.path.realpath, os.path.isdir, os.fsdecode, os.sep
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
    processes = frozenset(("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
        "os.forkpty", "pty.spawn", "ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata", "os.kill", "os.killpg",
        "os.startfile", "gc.get_objects", "gc.get_referrers", "gc.get_referents"))
    changes = frozenset(("os.remove", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.truncate", "os.utime",
        "shutil.rmtree", "os.symlink", "os.link", "os.rename", "shutil.copyfile", "shutil.move", "os.chflags",
        "os.lchflags", "os.setxattr", "os.removexattr", "shutil.copytree", "shutil.chown", "shutil.make_archive",
        "shutil.unpack_archive", "os.mkfifo", "os.mknod"))
    def inside(p):
        try:
            real = realpath(fsdecode(p))
        except Exception:
            return False
        return real == root or real.startswith(root + sep)
    def guard(event, args):
        if event == "open":
            path, mode, flags = args
            if path is None or isinstance(path, int):
                return
            writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (flags or 0) & write_flags
            if writes and not inside(path):
                raise PermissionError("run_tests may not write outside the workspace")
            # a folder outside opened as a file descriptor would let dir_fd= write there
            if not inside(path) and isdir(path):
                raise PermissionError("run_tests may not open folders outside the workspace")
        elif event.startswith("socket.") and event not in ("socket.__new__", "socket.gethostname"):
            raise PermissionError("run_tests may not use the network")
        elif event in processes:
            raise PermissionError("run_tests may not start processes or load native code")
        elif event == "import" and args[0] in ("_posixsubprocess", "_ctypes", "_winapi"):
            raise PermissionError("run_tests may not start processes or load native code")
        elif event == "sqlite3.connect":
            target = fsdecode(args[0]) if args and args[0] is not None else ""
            if target not in ("", ":memory:") and not inside(target):
                raise PermissionError("run_tests may not write outside the workspace")
        elif event in changes:
            paths = [a for a in args if isinstance(a, (str, bytes, os.PathLike))]
            if any(not inside(p) for p in paths):
                raise PermissionError("run_tests may not change files outside the workspace")
    import _posixsubprocess  # loaded now, so that the hook refuses any later (fresh) import of it

    def no_processes(*args, **kwargs):
        raise PermissionError("run_tests may not start processes or load native code")
    _posixsubprocess.fork_exec = no_processes
    sys.addaudithook(guard)

ROOT = os.path.realpath(os.getcwd())
sys.dont_write_bytecode = True  # -I ignores PYTHONDONTWRITEBYTECODE; leave no __pycache__ behind
LAYERS = sys.argv[2].split(",")
if "landlock" in LAYERS:
    try:
        _landlock(ROOT)
    except Exception:
        pass
for name in [m for m in sys.modules if m == "ctypes" or m.startswith(("ctypes.", "_ctypes"))]:
    del sys.modules[name]
if "hook" in LAYERS:
    _install_guard(ROOT)
del _landlock, _install_guard
import unittest
sys.path.insert(0, ROOT)
unittest.main(module=None, argv=["run_tests", "discover", "-s", ".", "-t", ".", "-p", sys.argv[1]], verbosity=1)
"""

# the layers run_tests uses: Landlock where the kernel has it, and the audit hook (tests use one at a time)
SANDBOX_LAYERS = ("landlock", "hook")


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 when it has none (or refuses it)."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        return max(0, int(libc.syscall(444, None, 0, 1)))
    except (OSError, AttributeError):
        return 0


def _network_isolation() -> list[str]:
    """A command prefix that gives the child no network, when this system allows it."""
    for prefix in (["unshare", "--net"], ["unshare", "--net", "--map-root-user"]):
        try:
            probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if probe.returncode == 0:
            return prefix
    return []


_ISOLATION: list[str] | None = None


def _read_capped(proc: subprocess.Popen, seconds: float, cap: int) -> tuple[bytes, str | None]:
    """The child's output, up to `cap` bytes; stops the child when it runs past `seconds` or floods more.

    Reading as it comes, never everything at once: a test that prints for ever must not fill
    the server's memory.
    """
    fd = proc.stdout.fileno()
    deadline = time.monotonic() + seconds
    chunks: list[bytes] = []
    size = 0
    stopped = None
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            stopped = "time"
            break
        ready, _, _ = select.select([fd], [], [], min(left, 0.5))
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if size > cap:
            stopped = "output"
            break
    if stopped is not None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.stdout.close()
    proc.wait()
    return b"".join(chunks), stopped


def run_tests(ws: Workspace, pattern: str = "test_*.py") -> str:
    global _ISOLATION
    limits = ws.limits
    if not isinstance(pattern, str) or "/" in pattern or "\0" in pattern or len(pattern) > 100:
        raise ToolRefusal("error: pattern must be a file-name glob such as test_*.py")
    if not any(fnmatch.fnmatch(p.name, pattern) for p in ws.root.iterdir() if p.is_file()):
        return f"no test files match {pattern}"
    if _ISOLATION is None:
        _ISOLATION = _network_isolation()

    def limit_child():  # runs in the child before exec
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.write_bytes, limits.write_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    env = {"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8", "LANG": "C.UTF-8"}
    command = [*_ISOLATION, sys.executable, "-I", "-c", _GUARD, pattern, ",".join(SANDBOX_LAYERS)]
    proc = subprocess.Popen(
        command, cwd=ws.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=limit_child,
    )
    # read at most a little past the cap: the rest is never kept
    output, stopped = _read_capped(proc, limits.test_seconds, 4 * limits.test_output_bytes)
    if stopped == "time":
        raise ToolRefusal(f"error: the tests did not finish within {limits.test_seconds:g} s and were stopped")
    text = output.decode("utf-8", errors="replace")
    # keep the output the same on every machine and run: no folder names, no timings
    text = text.replace(str(ws.root) + os.sep, "").replace(sys.prefix, "<python>")
    text = re2.sub(r"Ran (\d+) tests? in [0-9.]+s", r"Ran \1 tests", text)
    if stopped == "output" or len(text) > limits.test_output_bytes:
        text = text[: limits.test_output_bytes] + "\n... output cut"
        if stopped == "output":
            text += "; the tests were stopped for printing too much"
    return text.strip() or f"exit code {proc.returncode}"


FILE_TOOLS = {
    "read_file": read_file,
    "list_files": list_files,
    "grep": grep,
    "write_file": write_file,
    "run_tests": run_tests,
}
