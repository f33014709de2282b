"""The program `run_tests` runs in its child: copy the workspace in, confine this process, then run unittest.

Run by path, never imported by the engine: `python -I sandbox_guard.py SETTINGS_JSON`, in the
folder the tests run in (a size-limited tmpfs under bubblewrap, a fresh temporary folder
otherwise). It follows the kernel's Landlock documentation
(https://docs.kernel.org/userspace-api/landlock.html) and PEP 578 (audit hooks).

The child's confinement, in up to three layers, the outermost set up by the parent:
1. bubblewrap (when present): its own mount, PID, network and IPC namespaces, a filesystem
   holding only Python's files (read-only) and the workspace copy, no capabilities.
2. Landlock (Linux 5.13+), set up here before any test code runs: the kernel refuses every
   read outside Python's own files and the workspace, every write, file creation, deletion
   and rename outside the workspace, device nodes anywhere, every exec, and (ABI 4+) every
   TCP bind or connect, (ABI 6+) abstract unix sockets and signals to other processes.
3. An audit hook (PEP 578) refusing the network, child processes, native code, signals,
   device nodes, writes outside (dir_fd included), and more than a set number of new files
   and folders. Audit hooks are not a sandbox on their own (code that patches the standard
   library can get past them), so its state lives in a closure, not in globals a test can
   reassign, and it also refuses the known ways round it.
"""

import json
import os
import stat
import sys


def copy_workspace(source, budget):
    """Copy the regular files, folders and symlinks of `source` into the current folder, within `budget`.

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
            dst = os.path.normpath(os.path.join(relative, name))
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


def restrict_with_landlock(root, readable):
    """Landlock rules: read and write `root`, read `readable`; nothing else. The ABI version, 0 if unavailable."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
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
    fs = read | write | devices | 1  # and execute, which no rule grants
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
        rule = PathBeneath(access if is_dir else access & ((1 << 1) | (1 << 2) | (1 << 14)), folder)
        done = libc.syscall(445, ruleset, 1, ctypes.byref(rule), 0) == 0  # landlock_add_rule, path beneath
        os.close(folder)
        return done

    ok = allow(root, read | write)
    for path in readable:
        ok = ok and allow(path, read)
    ok = ok and libc.prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
    ok = ok and libc.syscall(446, ruleset, 0) == 0  # landlock_restrict_self
    os.close(ruleset)
    return abi if ok else 0


# where each path argument's dir_fd= is, in the audit events of calls that take one (-1: none given)
PATH_AND_DIR_FD = {
    "os.remove": ((0, 1),), "os.rmdir": ((0, 1),), "os.mkdir": ((0, 2),), "os.chmod": ((0, 2),),
    "os.chown": ((0, 3),), "os.utime": ((0, 3),), "os.symlink": ((1, 2),),
    "os.link": ((0, 2), (1, 3)), "os.rename": ((0, 2), (1, 3)),
}


def install_audit_hook(root, max_new_entries):
    realpath, isdir, lexists, fsdecode, sep, join = (
        os.path.realpath, os.path.isdir, os.path.lexists, os.fsdecode, os.sep, os.path.join)
    listdir, readlink = os.listdir, os.readlink
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
    processes = frozenset(("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
        "os.forkpty", "pty.spawn", "ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata", "os.startfile",
        "gc.get_objects", "gc.get_referrers", "gc.get_referents"))
    signals = frozenset(("os.kill", "os.killpg", "signal.pthread_kill"))
    changes = frozenset(("os.remove", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.truncate", "os.utime",
        "shutil.rmtree", "os.symlink", "os.link", "os.rename", "shutil.copyfile", "shutil.move", "os.chflags",
        "os.lchflags", "os.setxattr", "os.removexattr", "shutil.copytree", "shutil.chown", "shutil.make_archive",
        "shutil.unpack_archive"))
    creations = frozenset(("os.mkdir", "os.symlink", "os.link"))
    # modules that hold what the guard replaced below: a fresh import would bring the originals back
    fresh_imports = frozenset(("_posixsubprocess", "_ctypes", "_winapi", "posix", "_signal", "_imp"))
    created = [0]
    path_and_dir_fd = dict(PATH_AND_DIR_FD)  # a copy in this closure: a test may rewrite the module's globals

    def inside(p):
        try:
            real = realpath(fsdecode(p))
        except Exception:
            return False
        return real == root or real.startswith(root + sep)

    def fd_path(fd):
        """The path an open descriptor names (through /proc), or None."""
        try:
            return readlink(f"/proc/self/fd/{fd}")
        except (OSError, TypeError):
            return None

    def open_folders():
        """Every folder this process holds open: a relative path may be opened against any of them (dir_fd=)."""
        try:
            fds = listdir("/proc/self/fd")
        except OSError:
            return []
        found = []
        for fd in fds:
            target = fd_path(int(fd))
            if target and target.startswith(sep) and isdir(target):
                found.append(target)
        return found

    def inside_from_anywhere(p):
        """`p` stays inside whether it is read from the current folder or from any folder held open."""
        text = fsdecode(p)
        if text.startswith(sep):
            return inside(text)
        return inside(text) and all(inside(join(base, text)) for base in open_folders())

    def count_new(p, dir_fd=None):
        text = fsdecode(p)
        base = fd_path(dir_fd) if isinstance(dir_fd, int) else None
        if lexists(join(base, text) if base else text):
            return
        created[0] += 1
        if created[0] > max_new_entries:
            raise PermissionError(f"run_tests may make at most {max_new_entries} new files and folders")

    def guard(event, args):
        if event == "open":
            path, mode, flags = args
            if path is None or isinstance(path, int):
                return
            writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (flags or 0) & write_flags
            if writes and not inside_from_anywhere(path):
                raise PermissionError("run_tests may not write outside the workspace")
            # a folder outside opened as a file descriptor would let dir_fd= write there
            if not inside_from_anywhere(path) and isdir(path):
                raise PermissionError("run_tests may not open folders outside the workspace")
            if writes:
                count_new(path)
        elif event.startswith("socket.") and event not in ("socket.__new__", "socket.gethostname"):
            raise PermissionError("run_tests may not use the network")
        elif event in processes:
            raise PermissionError("run_tests may not start processes or load native code")
        elif event in signals:
            raise PermissionError("run_tests may not send signals")
        elif event == "import" and args[0] in fresh_imports:
            raise PermissionError("run_tests may not start processes or load native code")
        elif event == "sqlite3.connect":
            target = fsdecode(args[0]) if args and args[0] is not None else ""
            if target not in ("", ":memory:") and not inside(target):
                raise PermissionError("run_tests may not write outside the workspace")
        elif event in changes:
            # each path argument, read from the folder its dir_fd= names (an open descriptor) when one is given
            pairs = dict(path_and_dir_fd.get(event, ()))
            for index, value in enumerate(args):
                if isinstance(value, int) and not isinstance(value, bool) and index == 0:
                    target = fd_path(value)  # a call on an open file (fchmod, ftruncate): where is that file?
                    if target is None or not inside(target):
                        raise PermissionError("run_tests may not change files outside the workspace")
                    continue
                if not isinstance(value, (str, bytes, os.PathLike)):
                    continue
                text = fsdecode(value)
                fd = args[pairs[index]] if index in pairs else -1
                if isinstance(fd, int) and fd >= 0 and not text.startswith(sep):
                    base = fd_path(fd)
                    if base is None or not inside(join(base, text)):
                        raise PermissionError("run_tests may not change files outside the workspace")
                elif not inside_from_anywhere(text):
                    raise PermissionError("run_tests may not change files outside the workspace")
            if event in creations:
                last = max(pairs) if pairs else 0
                fd = args[pairs[last]] if pairs else -1
                count_new(args[last], fd if isinstance(fd, int) and fd >= 0 else None)

    import _imp
    import _posixsubprocess  # loaded now, so that the hook refuses any later (fresh) import of it
    import _signal
    import posix
    import signal

    def no_processes(*args, **kwargs):
        raise PermissionError("run_tests may not start processes or load native code")

    def no_signals(*args, **kwargs):
        raise PermissionError("run_tests may not send signals")

    def no_devices(*args, **kwargs):
        raise PermissionError("run_tests may not make device nodes")

    def no_fifos(*args, **kwargs):
        raise PermissionError("run_tests may not make fifos")

    _posixsubprocess.fork_exec = no_processes
    # mknod and mkfifo raise no audit event either
    for module in (posix, os):
        module.mknod = no_devices
        module.mkfifo = no_fifos
    # pidfd_open and pidfd_send_signal raise no audit event: take them away
    for module in (posix, os):
        if hasattr(module, "pidfd_open"):
            module.pidfd_open = no_signals
    for module in (_signal, signal):
        if hasattr(module, "pidfd_send_signal"):
            module.pidfd_send_signal = no_signals
    # a builtin module made afresh from its spec would bring the originals back, without an import event:
    # load every builtin module now, then take away the function that makes them
    for name in sys.builtin_module_names:
        if name not in sys.modules:
            try:
                __import__(name)
            except Exception:
                pass
    _imp.create_builtin = no_processes
    sys.addaudithook(guard)


def limit_resources(settings):
    """Memory, file size (the copy's largest first; lowered once it is made), descriptors, no core dumps."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (settings["memory_bytes"], settings["memory_bytes"]))
    total = settings["copy_budget"]["bytes"]
    resource.setrlimit(resource.RLIMIT_FSIZE, (total, total))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    # the tests yield to the server's own threads: a spinning test must not slow other sessions
    os.nice(10)


def main():
    settings = json.loads(sys.argv[1])
    limit_resources(settings)
    root = os.path.realpath(os.getcwd())
    sys.dont_write_bytecode = True  # -I ignores PYTHONDONTWRITEBYTECODE; leave no __pycache__ behind
    note = copy_workspace(settings["source"], settings["copy_budget"]) if settings.get("source") else None
    if note:
        print(f"run_tests: {note}", flush=True)
    # the copy may hold files as large as the workspace allows; what the tests write, up to this per file
    import resource

    resource.setrlimit(resource.RLIMIT_FSIZE, (settings["file_bytes"], settings["file_bytes"]))
    layers = settings["layers"]
    if "landlock" in layers:
        # Python's own files, the system's libraries (extension modules link to them), and
        # /proc/self/fd, where the hook reads which folder an open descriptor names
        readable = [p for p in sys.path if p and os.path.realpath(p) != root]
        readable += ["/usr/lib", "/usr/lib64", "/lib", "/lib64", "/etc/ld.so.cache", "/dev/null", "/dev/urandom", "/proc/self/fd"]
        try:
            abi = restrict_with_landlock(root, readable)
        except Exception:
            abi = 0
        if settings.get("landlock_required") and not abi:
            # fail closed: the parent chose this mode because the kernel offered Landlock
            print("run_tests: the Landlock rules could not be set up; the tests were not run", flush=True)
            sys.exit(3)
    for name in [m for m in sys.modules if m == "ctypes" or m.startswith(("ctypes.", "_ctypes"))]:
        del sys.modules[name]
    if "hook" in layers:
        install_audit_hook(root, settings["max_new_entries"])
    import unittest

    sys.path.insert(0, root)
    argv = ["run_tests", "discover", "-s", ".", "-t", ".", "-p", settings["pattern"]]
    unittest.main(module=None, argv=argv, verbosity=1)


if __name__ == "__main__":
    main()
