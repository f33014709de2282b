"""The launcher `run_tests` starts: it confines itself, then replaces itself with a fresh interpreter running the guard.

Run by path, never imported by the server:

    python -I launcher.py outer     settings as JSON on stdin
    python -I launcher.py inner SETTINGS_JSON

`outer` waits for its settings on stdin (the server first puts it in the run's cgroup, so
that nothing it starts escapes the run's memory and process caps), gives up CPU to the
server (nice 10 on its own autogroup, nice 19 inside it, which it cannot undo), then execs
bubblewrap or `unshare`, which start `inner` in new PID, IPC, mount, network and UTS
namespaces.

`inner` builds the test's world while it may: a user namespace of its own nested in the run's
when the server is not root; the host's name and clocks hidden (UTS and time namespaces); a
read-only view of the filesystem and the workspace copy on a tmpfs of its own, sized, capped in
files and noexec; the copy itself, per-process limits, Landlock rules; then it becomes an
unprivileged user with no capabilities (a dedicated uid per slot when the server is root, uid
1000 of its own namespace otherwise), installs the seccomp filter (syscall_filter.py, beside it) for what
namespaces do not cover, and execs the guard (engine/sandbox/guard.py) in a fresh interpreter, through a
descriptor only it holds: the filter refuses every other exec. ctypes is used here and only
here: the interpreter the tests run in never loads it.
"""

import errno
import json
import os
import stat
import struct
import sys
import time


def load_beside(name):
    """A module that lies beside this file, read by path: the launcher runs by path with -I, in no package and
    with its own folder off sys.path, and bubblewrap shows its companions beside it."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        name, os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


syscall_filter = load_beside("syscall_filter")


# -- the copy -------------------------------------------------------------------------------------
def copy_workspace(source, target, budget):
    """Copy the regular files, folders and symlinks of `source` into `target`, within `budget`.

    Fifos, sockets and devices are skipped (reading a fifo would block); caches are left behind.
    Returns a note when the budget ran out (the copy is then partial)."""
    bytes_left, entries_left = budget["bytes"], budget["entries"]
    for here, dirs, files in os.walk(source, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        relative = os.path.relpath(here, source)
        for name in dirs + sorted(files):
            entries_left -= 1
            if entries_left < 0:
                return "the workspace holds too many files to copy; some were left out"
            src = os.path.join(here, name)
            dst = os.path.normpath(os.path.join(target, relative, name))
            info = os.lstat(src)
            if stat.S_ISDIR(info.st_mode):
                os.mkdir(dst)
            elif stat.S_ISLNK(info.st_mode):
                os.symlink(os.readlink(src), dst)
            elif stat.S_ISREG(info.st_mode):
                bytes_left -= info.st_size
                if bytes_left < 0:
                    return "the workspace is too large to copy; some files were left out"
                with open(src, "rb") as reader, open(dst, "xb") as writer:
                    writer.write(reader.read(info.st_size))
    return None


def give_tree_to(root, uid, gid):
    """Make `root` and everything below it (symlinks themselves) belong to the test's user."""
    # from the bottom up: once a folder is the test's, this process (no CAP_DAC_OVERRIDE) may not list it
    for here, dirs, files in os.walk(root, topdown=False):
        for name in dirs + files:
            os.chown(os.path.join(here, name), uid, gid, follow_symlinks=False)
    os.chown(root, uid, gid)


# -- mounts (namespaces made by unshare, where this process is root of its own mount namespace) ---
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC = 1, 2, 4, 8, 32, 4096, 16384


def mount(libc, ctypes, source, target, kind, flags, data=None):
    if (
        libc.mount(
            source.encode(), target.encode(), kind.encode() if kind else None, flags, data.encode() if data else None
        )
        != 0
    ):
        raise OSError(ctypes.get_errno(), f"mount {kind or 'bind'} on {target}: {os.strerror(ctypes.get_errno())}")


def make_filesystem_read_only(libc, ctypes):
    """Every mount this namespace sees becomes read-only (mount_setattr with AT_RECURSIVE, Linux 5.12+)."""
    attr = struct.pack("<QQQQ", 1, 0, 0, 0)  # attr_set MOUNT_ATTR_RDONLY
    done = libc.syscall(442, -100, b"/", 0x8000, attr, len(attr))  # AT_FDCWD, AT_RECURSIVE
    if done != 0:
        raise OSError(ctypes.get_errno(), f"mount_setattr: {os.strerror(ctypes.get_errno())}")


def mount_work(libc, ctypes, work, settings):
    """The copy's own tmpfs: sized, no programs run or mapped from it, its files counted by the kernel."""
    mount(
        libc,
        ctypes,
        "tmpfs",
        work,
        "tmpfs",
        MS_NOSUID | MS_NODEV | MS_NOEXEC,
        f"size={settings['tmpfs_bytes']},nr_inodes={settings['tmpfs_inodes']},mode=0700",
    )


def cap_new_files(libc, ctypes, work, new_entries):
    """Once the copy is made: the tmpfs holds at most `new_entries` more files and folders, whatever makes them
    (the audit hook sees open() and mkdir; sqlite's own files and a test's native code it does not)."""
    info = os.statvfs(work)
    used = info.f_files - info.f_ffree
    mount(
        libc,
        ctypes,
        "tmpfs",
        work,
        None,
        MS_REMOUNT | MS_NOSUID | MS_NODEV | MS_NOEXEC,
        f"nr_inodes={used + new_entries}",
    )


def hide_the_host(libc, ctypes):
    """The host's name (this UTS namespace's own) and its boot time: a time namespace, entered at the exec,
    whose clocks start now, where the kernel has them. /proc/uptime and /proc/stat's btime follow its clocks."""
    import socket

    socket.sethostname("sandbox")
    if libc.unshare(0x00000080) != 0:  # CLONE_NEWTIME: entered at the exec
        return
    offsets = []
    for name, clock in (("monotonic", time.CLOCK_MONOTONIC), ("boottime", time.CLOCK_BOOTTIME)):
        offsets.append(f"{name} {-int(time.clock_gettime(clock))} 0")
    try:
        with open("/proc/self/timens_offsets", "w") as f:
            f.write("\n".join(offsets))
    except OSError:
        pass  # the clocks stay the host's; the namespace is still a new one


def expose_python(libc, ctypes, folders, uid):
    """Python's folders where `uid` cannot reach them (say under a private /root): a tmpfs over the
    first closed folder above, holding read-only binds of those folders at their own paths."""
    covered = set()
    for folder in folders:
        closed = next((p for p in _ancestors(folder) if not _open_to(p, uid)), None)
        if closed is None:
            continue
        opened = os.open(folder, os.O_PATH)  # held so that the bind finds it once the tmpfs hides it
        if closed not in covered:
            mount(libc, ctypes, "tmpfs", closed, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0755")
            covered.add(closed)
        os.makedirs(folder, exist_ok=True)
        mount(libc, ctypes, f"/proc/self/fd/{opened}", folder, None, MS_BIND | MS_REC)
        mount(libc, ctypes, "none", folder, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
        os.close(opened)


def _ancestors(path):
    """The folders above `path` and `path` itself, from the top down."""
    parts = path.strip("/").split("/")
    return ["/" + "/".join(parts[:i]) for i in range(1, len(parts) + 1)]


def _open_to(folder, uid):
    info = os.stat(folder)
    return bool(info.st_mode & 0o001 or (info.st_uid == uid and info.st_mode & 0o100))


# -- Landlock ---------------------------------------------------------------------------------------
def restrict_with_landlock(libc, ctypes, root, readable):
    """Landlock rules: read and write `root`, read `readable`; nothing else. The ABI version, 0 if unavailable."""
    abi = libc.syscall(444, None, 0, 1)  # landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
    if abi < 1:
        return 0
    read = (1 << 2) | (1 << 3)  # read a file, list a folder
    # write a file, remove a folder or file, make a folder, file, socket, fifo or symlink
    write = sum(1 << b for b in (1, 4, 5, 7, 8, 9, 10, 12))
    devices = (1 << 6) | (1 << 11)  # make a character or block device: handled, granted nowhere
    if abi >= 2:
        write |= 1 << 13  # refer: link or rename across folders
    if abi >= 3:
        write |= 1 << 14  # truncate
    execute = 1
    fs = read | write | devices | execute  # execute is granted on Python's own files only
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

    def allow(path, access):
        try:
            folder = os.open(path, os.O_PATH)
        except OSError:
            return True  # a path Python lists but that does not exist needs no rule
        is_dir = stat.S_ISDIR(os.fstat(folder).st_mode)
        # a rule on a file may only carry file rights
        rule = PathBeneath(access if is_dir else access & ((1 << 0) | (1 << 1) | (1 << 2) | (1 << 14)), folder)
        done = libc.syscall(445, ruleset, 1, ctypes.byref(rule), 0) == 0  # landlock_add_rule, path beneath
        os.close(folder)
        return done

    ok = allow(root, read | write)
    for path in readable:
        ok = ok and allow(path, read | execute)
    ok = ok and libc.prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
    ok = ok and libc.syscall(446, ruleset, 0) == 0  # landlock_restrict_self
    os.close(ruleset)
    return abi if ok else 0


# -- becoming nobody --------------------------------------------------------------------------------
def enter_own_user_namespace(libc, ctypes):
    """The server is not root: this process becomes uid 1000 of a user namespace of its own, nested in the one
    bubblewrap or `unshare` made, with new mount and UTS namespaces that namespace owns. Until the exec it holds
    every capability there (enough to build the test's filesystem); the exec, as uid 1000, leaves none."""
    outer_uid, outer_gid = os.getuid(), os.getgid()
    if libc.unshare(0x10000000 | 0x00020000 | 0x04000000) != 0:  # CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWUTS
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWUSER) for the test's user failed")
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"1000 {outer_uid} 1")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"1000 {outer_gid} 1")


def become_unprivileged(settings):
    """Drop to the slot's own uid (the server is root): the exec that follows leaves no capability."""
    uid = settings.get("uid")
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)


def limit_resources(settings):
    """Per-process limits: memory, file size, descriptors, no core dumps; processes for the whole user."""
    import resource

    memory = settings["memory_bytes"]
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_FSIZE, (settings["file_bytes"], settings["file_bytes"]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    resource.setrlimit(resource.RLIMIT_NICE, (0, 0))  # no way back from nice 19
    resource.setrlimit(resource.RLIMIT_RTPRIO, (0, 0))
    resource.setrlimit(resource.RLIMIT_MSGQUEUE, (0, 0))
    resource.setrlimit(resource.RLIMIT_MEMLOCK, (0, 0))
    if settings.get("processes"):
        # counted per user (per user namespace): the slot's uid, or the namespace made for this run
        resource.setrlimit(resource.RLIMIT_NPROC, (settings["processes"], settings["processes"]))


def set_autogroup_nice(nice):
    """This session's autogroup at `nice` (best effort). Without CAP_SYS_ADMIN in the first user namespace
    the kernel takes one such change per 100 ms on the whole machine (EAGAIN), and runs start together."""
    for _ in range(40):
        try:
            with open("/proc/self/autogroup", "w") as autogroup:
                autogroup.write(str(nice))
            return
        except OSError as error:
            if error.errno != errno.EAGAIN:
                return
            time.sleep(0.03)


def run_outer():
    settings = json.loads(sys.stdin.buffer.read())
    # the runs yield to the server: nice 10 on this session's autogroup (the kernel ranks nice values
    # only within an autogroup, and each run is a session of its own), so a run's whole group weighs a
    # tenth of the server's; its processes at nice 19 inside it. RLIMIT_NICE 0 keeps them there.
    # (SCHED_IDLE was tried: on a machine loaded by other work, a run then never got the CPU at all.)
    set_autogroup_nice(settings.get("autogroup_nice", 10))
    os.setpriority(os.PRIO_PROCESS, 0, 19)
    argv = settings["argv"]
    os.execv(argv[0], argv)


def fail(message):
    print(f"run_tests: {message}; the tests were not run", flush=True)
    sys.exit(3)


def open_interpreter(python):
    """The interpreter to exec, held open at the filter's EXEC_FD (closed on exec), before the descriptor limit drops below it."""
    fd = os.open(python, os.O_RDONLY | os.O_CLOEXEC)
    if fd != syscall_filter.EXEC_FD:
        os.dup2(fd, syscall_filter.EXEC_FD, inheritable=False)
        os.close(fd)


def drop_ambient_capabilities(libc):
    """No capability may live through the exec: an ambient one (bubblewrap raises those it adds) would."""
    libc.prctl(47, 4, 0, 0, 0)  # PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL
    kept = [cap for cap in range(64) if libc.prctl(47, 1, cap, 0, 0) == 1]  # PR_CAP_AMBIENT_IS_SET
    if os.geteuid() == 0 or kept:
        raise OSError(0, "the test's user would keep capabilities")


def run_inner(settings):
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    work = settings["work"]
    # bwrap's --new-session made this run a session of its own, and so an autogroup of its own at nice 0:
    # the outer launcher's nice 10 is set again here, while /proc is still writable
    set_autogroup_nice(settings.get("autogroup_nice", 10))
    try:
        if settings.get("nested_user"):
            enter_own_user_namespace(libc, ctypes)
        if settings.get("remount"):
            hide_the_host(libc, ctypes)  # first: its clocks' offsets are written in /proc, read-only next
            make_filesystem_read_only(libc, ctypes)
            os.makedirs(work, exist_ok=True)
            mount_work(libc, ctypes, work, settings)
        # entered now: once the copy is the test's user's, this process may have no right to walk into it
        os.chdir(work)
        note = copy_workspace(settings["source"], work, settings["copy_budget"])
        if settings.get("remount"):
            cap_new_files(libc, ctypes, work, settings["guard_settings"]["max_new_entries"])
        if settings.get("uid") is not None:
            give_tree_to(work, settings["uid"], settings["uid"])
            if settings.get("remount") and settings.get("expose_python", True):
                expose_python(libc, ctypes, settings["python_folders"], settings["uid"])
        open_interpreter(settings["python"])
    except OSError as error:
        fail(f"the test's filesystem could not be set up ({error})")
    if note:
        print(f"run_tests: {note}", flush=True)
    limit_resources(settings)
    if "landlock" in settings["layers"]:
        readable = settings["python_folders"] + [
            settings["guard"],
            "/usr/lib",
            "/usr/lib64",
            "/lib",
            "/lib64",
            "/etc/ld.so.cache",
            "/dev/null",
            "/dev/urandom",
            "/proc/self/fd",
        ]
        try:
            abi = restrict_with_landlock(libc, ctypes, os.path.realpath(work), readable)
        except OSError:
            abi = 0
        if settings.get("landlock_required") and not abi:
            # fail closed: the parent chose this mode because the kernel offered Landlock
            fail("the Landlock rules could not be set up")
    try:
        become_unprivileged(settings)
        drop_ambient_capabilities(libc)
    except OSError as error:
        fail(f"could not drop to an unprivileged user ({error.strerror or error})")
    if "seccomp" in settings["layers"] and not syscall_filter.install_seccomp(libc, ctypes):
        if settings.get("seccomp_required"):
            machine = os.uname().machine
            fail(
                "the seccomp filter could not be installed"
                + (
                    ""
                    if machine in syscall_filter.SYSCALL_TABLES
                    else f": it is written for {' and '.join(syscall_filter.SYSCALL_TABLES)}, and this machine is {machine}; run the site on "
                    "one of those, or set QWEN_SANDBOX_WEAK=1 to run tests under the audit hook alone (trusted visitors only)"
                )
            )
    guard = settings["guard"]
    try:
        # through the descriptor: the filter refuses every other exec
        os.execve(
            syscall_filter.EXEC_FD,
            [settings["python"], "-I", guard, json.dumps(settings["guard_settings"])],
            settings["env"],
        )
    except OSError as error:
        fail(
            f"the interpreter could not be started as the test's user ({error.strerror}: without a mount "
            "namespace, a user of its own cannot reach a Python installed in a private folder)"
        )


if __name__ == "__main__":
    if sys.argv[1] == "outer":
        run_outer()
    else:
        run_inner(json.loads(sys.argv[2]))
