"""Where `run_tests` runs a workspace's tests: a confined child process, killed at its time limit.

The strongest confinement this machine offers is chosen once and kept, and
`describe_confinement` says which, and why a stronger one was not:
- `bwrap` (bubblewrap, https://github.com/containers/bubblewrap): new mount, PID, network,
  IPC and UTS namespaces; the filesystem holds Python's own folders read-only and a tmpfs of a
  fixed size and number of files, noexec, holding a copy of the workspace; no /proc of the host,
  no other process to see, signal or trace.
- `landlock`: new PID, IPC, mount, network and UTS namespaces made by `unshare` (where the
  machine allows it), the whole filesystem read-only but for the copy on a sized tmpfs, and
  Landlock rules that allow reads of Python's files and the copy only, writes to the copy only.
- `weak`: the same namespaces where `unshare` can make them, without Landlock. It is refused
  unless the settings allow it (`QWEN_SANDBOX_WEAK=1`, for a single-user machine), since a test
  could then read any file the server can.
In every mode the test runs as an unprivileged user with no capabilities (a uid of its own
per slot when the server is root), under a seccomp filter, yielding the CPU to the server
(nice 10 on its own autogroup, nice 19 inside it), with its memory and processes capped for the whole
run (a cgroup where one is delegated, else per-process limits and a per-user process count),
behind the guard's audit hook (engine/harness/sandbox_guard.py) in an interpreter that never loaded
ctypes. At most `sandbox_slots` runs go at once, and one visitor's runs at most half of them; the
others wait for a free slot, a bounded time (`Limits.slot_wait_seconds`), then are refused with a message. The whole
run is killed at the time limit, whatever the test did with its output. What the tests write
stays in the copy, which is dropped.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..settings import load_settings
from .sandbox_cgroup import open_run_cgroup
from .workspace import ToolRefusal, Workspace

LOG = logging.getLogger(__name__)
GUARD = Path(__file__).resolve().with_name("sandbox_guard.py")
LAUNCHER = Path(__file__).resolve().with_name("sandbox_launch.py")
# the modes tried, strongest first (tests narrow this to check one mode on its own)
MODES = ("bwrap", "landlock", "weak")
# the layers inside the child (tests narrow this to check one layer on its own)
LAYERS = ("landlock", "seccomp", "hook")
# the machines the launcher's seccomp filter is written for (sandbox_launch.SYSCALL_TABLES; a test keeps them equal)
SECCOMP_MACHINES = ("x86_64", "aarch64")
GUARD_INSIDE = "/run/sandbox_guard.py"  # where bubblewrap shows the guard
LAUNCHER_INSIDE = "/run/sandbox_launch.py"  # and the launcher
SOURCE_INSIDE = "/run/workspace"  # where bubblewrap shows the workspace, read-only, to be copied
MEMORY_BYTES = 1 << 30  # each test process's address space
RUN_MEMORY_BYTES = 768 << 20  # the whole run's memory, where a cgroup caps it
RUN_PROCESSES = 32  # the whole run's processes and threads
SLOT_UID_BASE = 1_990_000_000  # a server run as root runs its slots' tests from this uid up (no account has these)
SLOT_UIDS_PER_SERVER = 16  # each server process (a test worker too) has its own block of uids, by its pid
# the namespaces unshare makes for the landlock and weak modes (its own /proc, the mounts private)
UNSHARE = (
    "unshare",
    "--pid",
    "--fork",
    "--kill-child",
    "--ipc",
    "--mount",
    "--net",
    "--uts",
    "--mount-proc",
    "--propagation",
    "private",
)


def resolved_python() -> str:
    """The interpreter the tests run: the real file behind sys.executable (a venv's python is a symlink)."""
    return os.path.realpath(sys.executable)


def running_as_root() -> bool:
    return os.geteuid() == 0


@dataclass(frozen=True)
class Confinement:
    mode: str  # "bwrap", "landlock" or "weak"
    network_prefix: tuple[str, ...] = ()  # the unshare command that makes the namespaces (landlock, weak), () if none
    why_not: tuple[str, ...] = ()  # for each stronger mode, why it was not chosen


@dataclass(frozen=True)
class ConfinementReport:
    """What `run_tests` does with a visitor's code on this server, in words a page can show as they are."""

    mode: str  # "bwrap", "landlock", "weak" or "off"
    summary: str  # one sentence: the mode in force
    why_not: tuple[str, ...]  # why each stronger mode was not chosen
    limits: str  # the whole run's limits and where they come from


@dataclass(frozen=True)
class ChildRun:
    """What one confined run gave back."""

    output: bytes  # at most a little more than the cap
    returncode: int | None
    stopped: str | None  # None, "time" (killed at the limit) or "output" (killed for printing too much)
    seconds: float  # from start to the moment the whole group was gone
    mode: str
    waited: bool = False  # whether it waited for a free slot


def python_folders() -> list[str]:
    """The folders the resolved interpreter needs: its real prefix (stdlib, site-packages, libpython) and its own folder."""
    folders = {os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix)}
    folders.add(os.path.dirname(resolved_python()))
    # a folder inside another needs no bind of its own
    return sorted(f for f in folders if not any(f != g and f.startswith(g + os.sep) for g in folders))


def build_bwrap_argv(ws_root: str) -> list[str]:
    """The bubblewrap prefix: Python read-only, an empty folder at the workspace's own path, nothing else.

    The launcher inside mounts the copy's tmpfs on that folder itself (bubblewrap's own tmpfs takes a
    size, but no cap on files and no noexec) and starts a time namespace. Run as root, bubblewrap makes
    no user namespace: the launcher needs CAP_SYS_ADMIN and CAP_SYS_TIME for those, and CAP_SETUID,
    CAP_SETGID and CAP_CHOWN to become the slot's own uid, and loses every capability when it does.
    Otherwise bubblewrap maps the server's uid into a user namespace of its own, with no capabilities,
    and the launcher makes a user namespace nested in it, where it may build the test's filesystem."""
    if running_as_root():
        command = [
            "bwrap",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-net",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--hostname",
            "sandbox",
            "--cap-drop",
            "ALL",
            "--cap-add",
            "CAP_SYS_ADMIN",
            "--cap-add",
            "CAP_SYS_TIME",
            "--cap-add",
            "CAP_SETUID",
            "--cap-add",
            "CAP_SETGID",
            "--cap-add",
            "CAP_CHOWN",
        ]
    else:
        command = ["bwrap", "--unshare-all", "--hostname", "sandbox", "--cap-drop", "ALL"]
    command += [
        "--die-with-parent",
        "--new-session",
        "--ro-bind",
        "/usr",
        "/usr",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        # the dynamic linker's list of library folders (sqlite3 and others live in multiarch folders)
        "--perms",
        "0755",
        "--dir",
        "/etc",
        "--ro-bind-try",
        "/etc/ld.so.cache",
        "/etc/ld.so.cache",
    ]
    # Debian's merged /usr: the top-level names are symlinks into it
    for name in ("bin", "lib", "lib64", "lib32", "sbin"):
        top = Path("/") / name
        if top.is_symlink():
            command += ["--symlink", os.readlink(top), f"/{name}"]
        elif top.is_dir():
            command += ["--ro-bind", str(top), f"/{name}"]
    made = set()
    for folder in python_folders():
        if not folder.startswith("/usr/"):
            # the folders above it open to the test's user (bubblewrap would copy a private /root's mode)
            parts = folder.strip("/").split("/")[:-1]
            for depth in range(1, len(parts) + 1):
                above = "/" + "/".join(parts[:depth])
                if above not in made:
                    made.add(above)
                    command += ["--perms", "0755", "--dir", above]
            command += ["--ro-bind", folder, folder]
    command += [
        "--perms",
        "0755",
        "--dir",
        "/run",
        "--ro-bind",
        str(GUARD),
        GUARD_INSIDE,
        "--ro-bind",
        str(LAUNCHER),
        LAUNCHER_INSIDE,
        "--ro-bind",
        ws_root,
        SOURCE_INSIDE,
        "--perms",
        "0755",
        "--dir",
        ws_root,
        # the root bubblewrap builds is a tmpfs of its own, with no size: make it read-only
        "--remount-ro",
        "/",
        "--chdir",
        "/",
    ]
    return command


def _last_line(data: bytes) -> str:
    lines = data.decode("utf-8", "replace").strip().splitlines()
    return lines[-1][:300] if lines else "no message"


def probe_bwrap() -> str | None:
    """None when bubblewrap runs the resolved interpreter here; else why not, in a sentence."""
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (apt-get install bubblewrap)"
    with tempfile.TemporaryDirectory(prefix="bwrap-probe-") as folder:
        command = [*build_bwrap_argv(folder), resolved_python(), "-I", "-c", "print('ok')"]
        try:
            probe = subprocess.run(command, capture_output=True, timeout=20, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"bubblewrap could not be started ({error})"
    if probe.returncode == 0 and probe.stdout.strip() == b"ok":
        return None
    return f"bubblewrap failed here: {_last_line(probe.stderr or probe.stdout)}"


def bwrap_works() -> bool:
    """Whether bubblewrap is installed and can make its namespaces here (user namespaces, or root)."""
    return probe_bwrap() is None


def _network_isolation() -> tuple[str, ...]:
    """The unshare command that gives the child its own namespaces, when this system allows it."""
    return probe_unshare()[0]


_UNSHARE_PROBE: list[tuple[tuple[str, ...], str | None]] = []


def probe_unshare() -> tuple[tuple[str, ...], str | None]:
    """The unshare command that works here (with a user namespace when not root), and why none does."""
    if not _UNSHARE_PROBE:
        prefix = UNSHARE if running_as_root() else ("unshare", "--user", "--map-root-user", *UNSHARE[1:])
        try:
            probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
            reason = None if probe.returncode == 0 else f"unshare failed here: {_last_line(probe.stderr)}"
        except (OSError, subprocess.TimeoutExpired) as error:
            reason = f"unshare could not be started ({error})"
        _UNSHARE_PROBE.append((prefix if reason is None else (), reason))
    return _UNSHARE_PROBE[0]


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
_WHY_NOT: dict[tuple[str, ...], tuple[str, ...]] = {}

REFUSED = (
    "error: run_tests is switched off on this server: it has neither bubblewrap (install the "
    "'bubblewrap' package) nor Landlock (Linux 5.13 or later), so a test could read every file the "
    "server can. On a single-user machine, set QWEN_SANDBOX_WEAK=1 to run tests behind the audit hook alone."
)


def choose_confinement(modes: tuple[str, ...] | None = None, allow_weak: bool | None = None) -> Confinement:
    """The strongest mode of `modes` this machine can give, or a ToolRefusal saying why none can.

    A probe that fails is logged with its reason, once, and kept in the Confinement's `why_not`."""
    modes = MODES if modes is None else modes
    if modes not in _CHOSEN:
        found = None
        why_not: list[str] = []
        if "bwrap" in modes:
            reason = probe_bwrap()
            if reason is None:
                found = Confinement("bwrap")
            else:
                why_not.append(f"not bubblewrap: {reason}")
        if found is None and "landlock" in modes:
            abi = landlock_abi()
            if abi >= 1:
                found = Confinement("landlock", _network_isolation(), tuple(why_not))
            else:
                why_not.append(
                    "not Landlock: this kernel has none (Linux 5.13 or later, with landlock in its LSM list)"
                )
        for line in why_not:
            LOG.warning("run_tests: %s", line)
        _CHOSEN[modes] = found
        _WHY_NOT[modes] = tuple(why_not)
    chosen = _CHOSEN[modes]
    if chosen is not None:
        return chosen
    allow_weak = load_settings().sandbox_weak if allow_weak is None else allow_weak
    if "weak" in modes and allow_weak:
        return Confinement("weak", _network_isolation(), _WHY_NOT[modes])
    raise ToolRefusal(REFUSED)


MODE_WORDS = {
    "bwrap": "bubblewrap: the tests see only Python's files and their copy of the workspace",
    "landlock": "Landlock: the tests may read only Python's files and write only their copy of the workspace",
    "weak": "the audit hook alone (QWEN_SANDBOX_WEAK=1): the tests can read any file the server can",
}


def has_seccomp_filter() -> bool:
    """Whether this machine's architecture has a seccomp filter (elsewhere only the weak mode runs, without one)."""
    return os.uname().machine in SECCOMP_MACHINES


def describe_confinement() -> ConfinementReport:
    """Which mode run_tests uses here and why no stronger one, and the whole run's limits: for the pages to show."""
    try:
        chosen = choose_confinement()
    except ToolRefusal:
        return ConfinementReport(
            "off", "run_tests is switched off: " + REFUSED.split(": ", 2)[-1], _WHY_NOT.get(MODES, ()), ""
        )
    why_not = list(chosen.why_not)
    if chosen.mode != "bwrap" and not chosen.network_prefix:
        why_not.append(f"no namespaces of its own: {probe_unshare()[1]}")
    cgroup_reason = cgroup_status()
    who = (
        "a uid of its own per slot"
        if running_as_root()
        else "an unprivileged user in a user namespace"
        if chosen.mode == "bwrap" or chosen.network_prefix
        else "the server's own user (no user namespace here)"
    )
    if not has_seccomp_filter():
        why_not.append(
            f"no seccomp filter: it is written for {' and '.join(SECCOMP_MACHINES)}, and this machine is "
            f"{os.uname().machine}"
            + (
                ""
                if chosen.mode == "weak"
                else "; every run is refused (QWEN_SANDBOX_WEAK=1 runs them without it, for trusted visitors only)"
            )
        )
    seccomp = "a seccomp filter" if has_seccomp_filter() else "no seccomp filter"
    limits = (
        f"Each run: {who}, no capabilities, {seccomp}, nice 10 on its own autogroup; at most {slot_count()} at once, "
        f"{visitor_share(slot_count())} per visitor; "
        + (
            f"memory {RUN_MEMORY_BYTES >> 20} MiB and {RUN_PROCESSES} processes for the whole run ({cgroup_reason})"
            if cgroup_reason.startswith("cgroup")
            else f"{MEMORY_BYTES >> 20} MiB per process and {RUN_PROCESSES} processes ({cgroup_reason})"
        )
    )
    return ConfinementReport(chosen.mode, "run_tests runs in " + MODE_WORDS[chosen.mode], tuple(why_not), limits)


_CGROUP_STATUS: list[str] = []


def cgroup_status() -> str:
    """Whether runs get a cgroup: "cgroup v1", "cgroup v2", or why not (checked once)."""
    if not _CGROUP_STATUS:
        group, reason = open_run_cgroup(f"run-tests-probe-{os.getpid()}", RUN_MEMORY_BYTES, RUN_PROCESSES)
        if group is not None:
            group.close()
        else:
            LOG.warning("run_tests: no cgroup for the runs: %s", reason)
        _CGROUP_STATUS.append(reason)
    return _CGROUP_STATUS[0]


# -- the slots: at most a few runs at once, server-wide, and a share of them per visitor ----------------
@dataclass
class SlotStatus:
    total: int
    busy: int
    waiting: int

    def words(self) -> str:
        text = f"{self.busy} of {self.total} run_tests slots busy"
        if self.busy >= self.total:
            text += f"; a run waits for a free slot ({self.waiting} waiting)"
        return text + "."


def visitor_share(total: int) -> int:
    """How many slots one visitor may hold at once: half of them, rounded up (one of one)."""
    return max(1, (total + 1) // 2)


@dataclass
class _Slots:
    total: int
    free: list[int] = field(default_factory=list)
    held: dict[str, int] = field(default_factory=dict)  # slots each visitor holds now
    queue: list[tuple[object, str | None]] = field(default_factory=list)  # (ticket, visitor), first come first
    condition: threading.Condition = field(default_factory=threading.Condition)

    def __post_init__(self):
        self.free = list(range(self.total))

    def next_in_line(self) -> object | None:
        """The first waiting ticket whose visitor is under their share (an unnamed visitor always is)."""
        share = visitor_share(self.total)
        return next(
            (ticket for ticket, visitor in self.queue if visitor is None or self.held.get(visitor, 0) < share), None
        )


_SLOTS: list[_Slots] = []
_SLOTS_LOCK = threading.Lock()


def slot_count() -> int:
    return load_settings().sandbox_slots


def _slots() -> _Slots:
    with _SLOTS_LOCK:
        if not _SLOTS:
            _SLOTS.append(_Slots(slot_count()))
        return _SLOTS[0]


def slot_status() -> SlotStatus:
    """How many runs go now and how many wait for a free slot (for the playground to show)."""
    slots = _slots()
    with slots.condition:
        return SlotStatus(slots.total, slots.total - len(slots.free), len(slots.queue))


@contextlib.contextmanager
def take_slot(visitor: str | None = None, wait_seconds: float = 10.0):
    """A free slot's number and whether it waited for one; a ToolRefusal after `wait_seconds` without one.

    A visitor (a page session's id; None: unnamed) holds at most `visitor_share` slots at once, so one
    visitor's runs never hold them all; the waiting runs are served first come, first served among
    those whose visitor is under the share."""
    slots = _slots()
    ticket = object()
    with slots.condition:
        slots.queue.append((ticket, visitor))
        deadline = time.monotonic() + wait_seconds
        waited = False
        try:
            while not (slots.free and slots.next_in_line() is ticket):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ToolRefusal(_busy_words(slots, visitor, wait_seconds))
                waited = True
                slots.condition.wait(left)
        finally:
            slots.queue.remove(next(entry for entry in slots.queue if entry[0] is ticket))
            slots.condition.notify_all()  # the runs behind this one may be next in line now
        slot = slots.free.pop(0)
        if visitor is not None:
            slots.held[visitor] = slots.held.get(visitor, 0) + 1
    try:
        yield slot, waited
    finally:
        with slots.condition:
            slots.free.append(slot)
            if visitor is not None:
                slots.held[visitor] -= 1
                if not slots.held[visitor]:
                    del slots.held[visitor]
            slots.condition.notify_all()


def _busy_words(slots: _Slots, visitor: str | None, wait_seconds: float) -> str:
    share = visitor_share(slots.total)
    if visitor is not None and slots.held.get(visitor, 0) >= share:
        return (
            f"error: you already have {share} run_tests going, the most one visitor may have at once "
            f"({share} of {slots.total}); run this again when one has finished"
        )
    return (
        f"error: all {slots.total} run_tests slots stayed busy for {wait_seconds:g} s (other visitors' tests); "
        "run it again in a moment"
    )


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
