"""One confined run of a workspace's tests: the launcher's command built, started in a slot and a cgroup,
watched to its time limit, and everything it started killed at the end.

The launcher (launcher.py) confines itself in the chosen mode (modes.py) and execs the guard (guard.py);
the run's output is read here up to a cap, and its time limit holds whatever the test did with its
output. What the tests wrote stays in their copy of the workspace, which is dropped.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .bwrap import build_bwrap_argv
from .cgroup import RUN_MEMORY_BYTES, RUN_PROCESSES, cgroup_status, open_run_cgroup
from .modes import Confinement, choose_confinement, has_seccomp_filter
from .programs import (
    GUARD,
    GUARD_INSIDE,
    LAUNCHER,
    LAUNCHER_INSIDE,
    SOURCE_INSIDE,
    python_folders,
    resolved_python,
    running_as_root,
)
from .slots import take_slot
from .workspace import Workspace

# the layers inside the child (tests narrow this to check one layer on its own)
LAYERS = ("landlock", "seccomp", "hook")
MEMORY_BYTES = 1 << 30  # each test process's address space
SLOT_UID_BASE = 1_990_000_000  # a server run as root runs its slots' tests from this uid up (no account has these)
SLOT_UIDS_PER_SERVER = 16  # each server process (a test worker too) has its own block of uids, by its pid


@dataclass(frozen=True)
class ChildRun:
    """What one confined run gave back."""

    output: bytes  # at most a little more than the cap
    returncode: int | None
    stopped: str | None  # None, "time" (killed at the limit) or "output" (killed for printing too much)
    seconds: float  # from start to the moment the whole group was gone
    mode: str
    waited: bool = False  # whether it waited for a free slot


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


def slot_uid(slot: int) -> int:
    """The uid slot `slot` of this server process runs its tests as (two servers on one machine never share one)."""
    return SLOT_UID_BASE + (os.getpid() % 100_000) * SLOT_UIDS_PER_SERVER + slot


def kill_user(uid: int) -> None:
    """Kill every process of `uid` (a slot's own uid: nothing else runs as it)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("Uid:"):
                if int(line.split()[1]) == uid:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(int(entry), signal.SIGKILL)
                break


def build_launch(
    ws: Workspace, confinement: Confinement, layers: tuple[str, ...], pattern: str, scratch: str, uid: int | None
) -> tuple[list[str], str]:
    """The command the launcher's outer stage execs, and the folder the tests run in."""
    limits = ws.limits
    python = resolved_python()
    guard_settings = {"pattern": pattern, "layers": list(layers), "max_new_entries": limits.test_new_entries}
    env = {"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8", "LANG": "C.UTF-8"}
    inner = {
        "layers": list(layers),
        "python": python,
        "python_folders": python_folders(),
        "env": env,
        "copy_budget": {"bytes": limits.workspace_bytes, "entries": limits.workspace_entries},
        "memory_bytes": MEMORY_BYTES,
        "file_bytes": limits.write_bytes,
        "uid": uid,
        # the processes cap counts per user: the slot's own uid, or the run's user namespace
        "processes": RUN_PROCESSES
        if uid is not None or confinement.mode == "bwrap" or confinement.network_prefix
        else 0,
        "landlock_required": confinement.mode == "landlock",
        "seccomp_required": "seccomp" in layers and (confinement.mode != "weak" or has_seccomp_filter()),
        "guard_settings": guard_settings,
    }
    # the copy's tmpfs: its bytes, and as many files as a full workspace and the new ones (cut to the copy's
    # own count plus the new ones once it is made)
    inner.update(
        tmpfs_bytes=limits.workspace_bytes + limits.test_write_bytes,
        tmpfs_inodes=limits.workspace_entries + limits.test_new_entries + 16,
    )
    if confinement.mode == "bwrap":
        work = str(ws.root)
        inner.update(
            work=work,
            source=SOURCE_INSIDE,
            guard=GUARD_INSIDE,
            remount=True,
            expose_python=False,
            nested_user=uid is None,
        )
        argv = [*build_bwrap_argv(work), python, "-I", LAUNCHER_INSIDE, "inner", json.dumps(inner)]
    else:
        work = os.path.join(scratch, "work")
        os.mkdir(work)
        namespaced = bool(confinement.network_prefix)
        inner.update(
            work=work, source=str(ws.root), guard=str(GUARD), remount=namespaced, nested_user=namespaced and uid is None
        )
        argv = [*confinement.network_prefix, python, "-I", str(LAUNCHER), "inner", json.dumps(inner)]
        if argv[0] == "unshare":
            argv[0] = shutil.which("unshare") or "/usr/bin/unshare"
    if argv[0] == "bwrap":
        argv[0] = shutil.which("bwrap") or "/usr/bin/bwrap"
    return argv, work


def run_confined(
    ws: Workspace, pattern: str, layers: tuple[str, ...] | None = None, confinement: Confinement | None = None
) -> ChildRun:
    """Run the workspace's tests matching `pattern` in a confined copy of it, once a slot is free."""
    confinement = confinement or choose_confinement()
    layers = LAYERS if layers is None else layers
    with take_slot(ws.visitor, ws.limits.slot_wait_seconds) as (slot, waited):
        started = time.monotonic()
        output, returncode, stopped = _run_in_slot(ws, pattern, layers, confinement, slot)
        return ChildRun(output, returncode, stopped, time.monotonic() - started, confinement.mode, waited)


def _run_in_slot(
    ws: Workspace, pattern: str, layers: tuple[str, ...], confinement: Confinement, slot: int
) -> tuple[bytes, int | None, str | None]:
    limits = ws.limits
    uid = slot_uid(slot) if running_as_root() else None
    scratch = tempfile.mkdtemp(prefix="run-tests-")
    group = None
    proc = None
    try:
        # the slot's user walks through the scratch folder to its copy, and reads nothing else there
        os.chmod(scratch, 0o711)
        argv, work = build_launch(ws, confinement, layers, pattern, scratch, uid)
        if cgroup_status().startswith("cgroup"):
            group, _reason = open_run_cgroup(
                f"run-tests-{os.getpid()}-{slot}-{time.monotonic_ns()}", RUN_MEMORY_BYTES, RUN_PROCESSES
            )
        # its own session and process group, killed as one; the launcher waits for its settings on
        # stdin, so that it is in the run's cgroup before it starts anything (no preexec_fn: it is
        # unsafe in a server with threads)
        proc = subprocess.Popen(
            [resolved_python(), "-I", str(LAUNCHER), "outer"],
            cwd=scratch,
            env={"PATH": "/usr/bin:/bin"},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
        )
        try:
            if group is not None:
                group.add(proc.pid)
            proc.stdin.write(json.dumps({"argv": argv}).encode())
            proc.stdin.close()
        except OSError:
            pass
        try:
            output, stopped = watch_child(proc, limits.test_seconds, 4 * limits.test_output_bytes)
        finally:
            kill_group(proc.pid)
        output = output.replace(os.fsencode(work) + b"/", b"")
        return output, proc.returncode, stopped
    finally:
        if proc is not None:
            kill_group(proc.pid)
        if group is not None:
            group.close()
        if uid is not None:
            kill_user(uid)
        shutil.rmtree(scratch, ignore_errors=True)
