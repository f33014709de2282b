"""The five harness tools of seed 000, each confined to a `Workspace` and bounded in size and time.

`grep` uses RE2 (linear time, so no pattern can run for ever); `run_tests` runs the
workspace's unittest suite in a child process with a time limit, capped output, no network
(a network namespace where the system allows it, and an audit hook in any case), no child
processes, and no writes outside the workspace.
"""

from __future__ import annotations

import fnmatch
import os
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
    data = content.encode("utf-8")
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
    try:
        regex = re2.compile(pattern)
    except re2.error:
        raise ToolRefusal(f"error: {pattern!r} is not a valid regular expression (RE2 syntax)") from None
    except Exception:
        raise ToolRefusal("error: the pattern could not be compiled") from None
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
            if regex.search(line):
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


# the child's guard: an audit hook that refuses the network, child processes and writes outside
_GUARD = r"""
import os, sys
ROOT = os.path.realpath(os.getcwd())
def inside(p):
    try:
        real = os.path.realpath(os.fsdecode(p))
    except Exception:
        return False
    return real == ROOT or real.startswith(ROOT + os.sep)
WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
def guard(event, args):
    if event == "open":
        path, mode, flags = args
        if path is None or isinstance(path, int):
            return
        writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (flags or 0) & WRITE
        if writes and not inside(path):
            raise PermissionError("run_tests may not write outside the workspace")
    elif event.startswith("socket.") and event not in ("socket.__new__", "socket.gethostname"):
        raise PermissionError("run_tests may not use the network")
    elif event in ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
                   "os.forkpty", "pty.spawn", "ctypes.dlopen", "ctypes.cdata", "os.kill", "os.killpg"):
        raise PermissionError("run_tests may not start processes or load native code")
    elif event in ("os.remove", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.truncate", "os.utime",
                   "shutil.rmtree", "os.symlink", "os.link", "os.rename", "shutil.copyfile", "shutil.move"):
        paths = [a for a in args if isinstance(a, (str, bytes, os.PathLike))]
        if any(not inside(p) for p in paths):
            raise PermissionError("run_tests may not change files outside the workspace")
sys.addaudithook(guard)
import unittest
sys.path.insert(0, ROOT)
unittest.main(module=None, argv=["run_tests", "discover", "-s", ".", "-t", ".", "-p", sys.argv[1]], verbosity=1)
"""


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
    command = [*_ISOLATION, sys.executable, "-I", "-c", _GUARD, pattern]
    proc = subprocess.Popen(
        command, cwd=ws.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=limit_child,
    )
    try:
        output, _ = proc.communicate(timeout=limits.test_seconds)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise ToolRefusal(f"error: the tests did not finish within {limits.test_seconds:g} s and were stopped") from None
    text = output.decode("utf-8", errors="replace")
    # keep the output the same on every machine and run: no folder names, no timings
    text = text.replace(str(ws.root) + os.sep, "").replace(sys.prefix, "<python>")
    text = re2.sub(r"Ran (\d+) tests? in [0-9.]+s", r"Ran \1 tests", text)
    if len(text) > limits.test_output_bytes:
        text = text[: limits.test_output_bytes] + "\n... output cut"
    return text.strip() or f"exit code {proc.returncode}"


FILE_TOOLS = {
    "read_file": read_file,
    "list_files": list_files,
    "grep": grep,
    "write_file": write_file,
    "run_tests": run_tests,
}
