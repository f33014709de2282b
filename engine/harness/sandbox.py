"""Where `run_tests` runs a workspace's tests: a confined child process, killed at its time limit.

The strongest confinement this machine offers is chosen once and kept:
- `bwrap` (bubblewrap, https://github.com/containers/bubblewrap): new mount, PID, network, IPC
  and UTS namespaces; the filesystem holds Python's own folders read-only and a tmpfs of a
  fixed size holding a copy of the workspace; no capabilities (so no device nodes), no /proc
  of the host, no other process to see, signal or trace.
- `landlock`: a fresh temporary copy of the workspace, a network namespace where `unshare`
  allows it, and Landlock rules set by the child that allow reads of Python's files and the
  copy only, and writes to the copy only.
- `weak`: the audit hook alone, on a fresh copy. It is refused unless the settings allow it
  (`QWEN_SANDBOX_WEAK=1`, for a single-user machine), since a test could then read any file
  the server can.
Every mode adds the guard's audit hook (engine/harness/sandbox_guard.py) and resource limits, runs the
child in its own process group, and kills the whole group at the time limit, whatever the
test did with its output. What the tests write stays in the copy, which is dropped.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..settings import load_settings
from .workspace import ToolRefusal, Workspace

GUARD = Path(__file__).resolve().with_name("sandbox_guard.py")
# the modes tried, strongest first (tests narrow this to check one mode on its own)
MODES = ("bwrap", "landlock", "weak")
# the guard's layers inside the child (tests narrow this to check one layer on its own)
LAYERS = ("landlock", "hook")
GUARD_INSIDE = "/run/sandbox_guard.py"  # where bubblewrap shows the guard
SOURCE_INSIDE = "/run/workspace"  # where bubblewrap shows the workspace, read-only, to be copied
MEMORY_BYTES = 1 << 30  # the test process's address space


@dataclass(frozen=True)
class Confinement:
    mode: str  # "bwrap", "landlock" or "weak"
    network_prefix: tuple[str, ...] = ()  # a command prefix that removes the network (landlock and weak modes)


@dataclass(frozen=True)
class ChildRun:
    """What one confined run gave back."""

    output: bytes  # at most a little more than the cap
    returncode: int | None
    stopped: str | None  # None, "time" (killed at the limit) or "output" (killed for printing too much)
    seconds: float  # from start to the moment the whole group was gone
    mode: str


def python_folders() -> list[str]:
    """The folders the interpreter needs: its prefix (stdlib, site-packages, libpython) and the system's libraries."""
    folders = {os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix)}
    folders.add(os.path.dirname(os.path.realpath(sys.executable)))
    return sorted(folders)


def build_bwrap_argv(ws_root: str, tmpfs_bytes: int) -> list[str]:
    """The bubblewrap prefix: a tmpfs of `tmpfs_bytes` at the workspace's own path, Python read-only, nothing else."""
    command = ["bwrap", "--unshare-all", "--die-with-parent", "--cap-drop", "ALL",
               "--ro-bind", "/usr", "/usr", "--proc", "/proc", "--dev", "/dev",
               # the dynamic linker's list of library folders (sqlite3 and others live in multiarch folders)
               "--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    # Debian's merged /usr: the top-level names are symlinks into it
    for name in ("bin", "lib", "lib64", "lib32", "sbin"):
        top = Path("/") / name
        if top.is_symlink():
            command += ["--symlink", os.readlink(top), f"/{name}"]
        elif top.is_dir():
            command += ["--ro-bind", str(top), f"/{name}"]
    for folder in python_folders():
        if not folder.startswith("/usr/"):
            command += ["--ro-bind", folder, folder]
    command += ["--ro-bind", str(GUARD), GUARD_INSIDE, "--ro-bind", ws_root, SOURCE_INSIDE,
                "--size", str(tmpfs_bytes), "--tmpfs", ws_root,
                # the root bubblewrap builds is a tmpfs of its own, with no size: make it read-only
                "--remount-ro", "/", "--chdir", ws_root]
    return command


def _network_isolation() -> tuple[str, ...]:
    """A command prefix that gives the child no network, when this system allows it."""
    for prefix in (("unshare", "--net"), ("unshare", "--net", "--map-root-user")):
        try:
            probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if probe.returncode == 0:
            return prefix
    return ()


def bwrap_works() -> bool:
    """Whether bubblewrap is installed and can make its namespaces here (user namespaces, or root)."""
    if shutil.which("bwrap") is None:
        return False
    with tempfile.TemporaryDirectory(prefix="bwrap-probe-") as folder:
        command = [*build_bwrap_argv(folder, 1 << 20), sys.executable, "-I", "-c", "print('ok')"]
        try:
            probe = subprocess.run(command, capture_output=True, timeout=20, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            return False
    return probe.returncode == 0 and probe.stdout.strip() == b"ok"


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 when it has none (or refuses it)."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        return max(0, int(libc.syscall(444, None, 0, 1)))
    except (OSError, AttributeError):
        return 0


_CHOSEN: dict[tuple[str, ...], Confinement | None] = {}

REFUSED = (
    "error: run_tests is switched off on this server: it has neither bubblewrap (install the "
    "'bubblewrap' package) nor Landlock (Linux 5.13 or later), so a test could read every file the "
    "server can. On a single-user machine, set QWEN_SANDBOX_WEAK=1 to run tests behind the audit hook alone."
)


def choose_confinement(modes: tuple[str, ...] | None = None, allow_weak: bool | None = None) -> Confinement:
    """The strongest mode of `modes` this machine can give, or a ToolRefusal saying why none can."""
    modes = MODES if modes is None else modes
    if modes not in _CHOSEN:
        found = None
        if "bwrap" in modes and bwrap_works():
            found = Confinement("bwrap")
        elif "landlock" in modes and landlock_abi() >= 1:
            found = Confinement("landlock", _network_isolation())
        _CHOSEN[modes] = found
    chosen = _CHOSEN[modes]
    if chosen is not None:
        return chosen
    allow_weak = load_settings().sandbox_weak if allow_weak is None else allow_weak
    if "weak" in modes and allow_weak:
        return Confinement("weak", _network_isolation())
    raise ToolRefusal(REFUSED)


def processes_with(marker: str) -> list[int]:
    """Process ids whose command line holds `marker` (what `ps` would list): to check that no test outlived its run."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
            except OSError:
                continue
    return found


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def watch_child(proc: subprocess.Popen, seconds: float, cap: int) -> tuple[bytes, str | None]:
    """The child's output, up to `cap` bytes; the whole group is killed at `seconds`, or when it prints more.

    End of output does not end the watch: a test may move its output elsewhere (os.dup2)
    and keep running, so the deadline holds until the process itself has exited."""
    fd = proc.stdout.fileno()
    deadline = time.monotonic() + seconds
    chunks: list[bytes] = []
    size = 0
    stopped = None
    open_pipe = True
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            stopped = "time"
            break
        if not open_pipe:
            try:
                proc.wait(timeout=min(left, 0.5))
                break
            except subprocess.TimeoutExpired:
                continue
        ready, _, _ = select.select([fd], [], [], min(left, 0.5))
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            open_pipe = False
            continue
        chunks.append(chunk)
        size += len(chunk)
        if size > cap:
            stopped = "output"
            break
    # the group goes in every case: a child the test left behind must not outlive the run
    kill_group(proc.pid)
    proc.stdout.close()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:  # a process stuck in the kernel; it is already killed
        pass
    return b"".join(chunks), stopped


def run_confined(ws: Workspace, pattern: str, layers: tuple[str, ...] | None = None,
                 confinement: Confinement | None = None) -> ChildRun:
    """Run the workspace's tests matching `pattern` in a confined copy of it."""
    limits = ws.limits
    confinement = confinement or choose_confinement()
    layers = LAYERS if layers is None else layers
    # the copy may hold the workspace as it is (up to its cap) and what the tests write
    budget = {"bytes": limits.workspace_bytes, "entries": limits.workspace_entries}
    settings = {"pattern": pattern, "layers": list(layers), "max_new_entries": limits.test_new_entries,
                "copy_budget": budget, "file_bytes": limits.write_bytes, "memory_bytes": MEMORY_BYTES}
    env = {"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8", "LANG": "C.UTF-8"}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="run-tests-") as scratch:
        if confinement.mode == "bwrap":
            tmpfs = limits.workspace_bytes + limits.test_write_bytes
            settings["source"] = SOURCE_INSIDE
            command = [*build_bwrap_argv(str(ws.root), tmpfs), sys.executable, "-I", GUARD_INSIDE]
        else:
            # the copy is made in `scratch`, the child's working folder
            settings["source"] = str(ws.root)
            settings["landlock_required"] = confinement.mode == "landlock"
            command = [*confinement.network_prefix, sys.executable, "-I", str(GUARD)]
        command.append(json.dumps(settings))
        # its own session and process group, killed as one; the guard sets its own resource limits
        # (no preexec_fn: it is unsafe in a server with threads)
        proc = subprocess.Popen(
            command, cwd=scratch, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True, close_fds=True,
        )
        try:
            output, stopped = watch_child(proc, limits.test_seconds, 4 * limits.test_output_bytes)
        finally:
            kill_group(proc.pid)
        output = output.replace(os.fsencode(scratch) + b"/", b"")
    return ChildRun(output, proc.returncode, stopped, time.monotonic() - started, confinement.mode)
