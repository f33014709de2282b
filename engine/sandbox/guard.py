"""The program the tests run in: an audit hook, then unittest. Started by engine/sandbox/launcher.py.

Run by path in a fresh interpreter, never imported by the engine:
`python -I guard.py SETTINGS_JSON`, in the folder the tests run in (the workspace's
copy on a sized tmpfs). The launcher has already confined the process (namespaces, Landlock,
an unprivileged user, a seccomp filter, resource limits) and exec'd this interpreter, so
ctypes, which the launcher needed, was never loaded here.

This is the innermost layer: an audit hook (PEP 578) refusing the network, child processes,
native code (ctypes, extension modules that were not loaded before the hook, sqlite
extensions and ATTACH), code objects made from parts or bytes (code.replace and CodeType raise
code.__new__, marshal and a planted .pyc raise marshal.loads: bytecode the compiler never
checked reads and writes memory), signals, device nodes, writes outside (dir_fd included), and
more than a set number of new files and folders (sqlite's databases too). Audit hooks are not a
sandbox on their own (code that patches the standard library can get past them), so its state
lives in a closure, not in globals a test can reassign, and it also refuses the known ways round
it. The exit code is unittest's verdict, given here: a test may not end the process itself.
"""

import json
import os
import sys

# where each path argument's dir_fd= is, in the audit events of calls that take one (-1: none given)
PATH_AND_DIR_FD = {
    "os.remove": ((0, 1),),
    "os.rmdir": ((0, 1),),
    "os.mkdir": ((0, 2),),
    "os.chmod": ((0, 2),),
    "os.chown": ((0, 3),),
    "os.utime": ((0, 3),),
    "os.symlink": ((1, 2),),
    "os.link": ((0, 2), (1, 3)),
    "os.rename": ((0, 2), (1, 3)),
}
# the audited events the hook watches, by family: each family has its check (below)
PROCESS_EVENTS = frozenset(
    (
        "subprocess.Popen",
        "os.system",
        "os.exec",
        "os.posix_spawn",
        "os.spawn",
        "os.fork",
        "sqlite3.enable_load_extension",
        "sqlite3.load_extension",
        "os.forkpty",
        "pty.spawn",
        "ctypes.dlopen",
        "ctypes.dlsym",
        "ctypes.cdata",
        "os.startfile",
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
    )
)
SIGNAL_EVENTS = frozenset(("os.kill", "os.killpg", "signal.pthread_kill"))
CHANGE_EVENTS = frozenset(
    (
        "os.remove",
        "os.rmdir",
        "os.mkdir",
        "os.chmod",
        "os.chown",
        "os.truncate",
        "os.utime",
        "shutil.rmtree",
        "os.symlink",
        "os.link",
        "os.rename",
        "shutil.copyfile",
        "shutil.move",
        "os.chflags",
        "os.lchflags",
        "os.setxattr",
        "os.removexattr",
        "shutil.copytree",
        "shutil.chown",
        "shutil.make_archive",
        "shutil.unpack_archive",
    )
)
CREATION_EVENTS = frozenset(("os.mkdir", "os.symlink", "os.link"))  # the changes that make a new entry
# code objects made from parts (code.replace raises code.__new__ too) or from bytes: bytecode the compiler
# never checked, whose LOAD_CONST may read past its constants (memory read and write, then native code)
CODE_SURGERY_EVENTS = frozenset(("code.__new__", "marshal.loads", "marshal.load"))
# modules that hold what the guard replaced (take_away_unaudited): a fresh import would bring the originals back
FRESH_IMPORTS = frozenset(("_posixsubprocess", "_ctypes", "_winapi", "posix", "_signal", "_imp"))
LOCAL_SOCKET_EVENTS = frozenset(("socket.__new__", "socket.gethostname"))  # the socket events that reach no one
NO_PROCESSES = "run_tests may not start processes or load native code"
NO_SIGNALS = "run_tests may not send signals"
NO_WRITES = "run_tests may not write outside the workspace"
NO_CHANGES = "run_tests may not change files outside the workspace"


def install_audit_hook(root, max_new_entries):
    """The audit hook over the folder `root`, once the functions that raise no audit event are taken away.

    Each check is a closure made here, before any test runs, and the hook reaches them through a table in
    its own closure: a test that rewrites this module's globals (`import __main__`) changes nothing it reads."""
    rules = path_rules(root, max_new_entries)
    hook = dispatch(audited_events(rules))
    take_away_unaudited()
    refuse_sqlite_attach()
    # imports compile from source from now on: a cached .pyc would be loaded through marshal, refused above
    # (and a test could write one whose bytecode the compiler never made)
    sys.pycache_prefix = "/dev/null/no-bytecode-cache"  # a path no one can make
    sys.addaudithook(hook)


def path_rules(root, max_new_entries):
    """Where a path leads, seen from every folder the tests hold open, and the count of new entries they make.

    Returns the closures (inside, fd_path, inside_from_anywhere, count_new) the checks share."""
    realpath, isdir, lexists, fsdecode, sep, join = (
        os.path.realpath,
        os.path.isdir,
        os.path.lexists,
        os.fsdecode,
        os.sep,
        os.path.join,
    )
    listdir, readlink = os.listdir, os.readlink
    created = [0]

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
        if base:
            bases = [base]
        elif text.startswith(sep):
            bases = [""]
        else:
            # the open event does not say which folder a relative path is read from (dir_fd=):
            # it is new unless it exists from the current folder and from every folder held open
            bases = ["", *open_folders()]
        if all(lexists(join(b, text) if b else text) for b in bases):
            return
        created[0] += 1
        if created[0] > max_new_entries:
            raise PermissionError(f"run_tests may make at most {max_new_entries} new files and folders")

    return inside, fd_path, inside_from_anywhere, count_new


def open_check(rules):
    """open(): a write only inside (counted when it makes a file), and no folder outside held open."""
    _inside, _fd_path, inside_from_anywhere, count_new = rules
    isdir = os.path.isdir
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
    no_writes = NO_WRITES

    def check_open(event, args):
        path, mode, flags = args
        if path is None or isinstance(path, int):
            return
        writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (flags or 0) & write_flags
        if writes and not inside_from_anywhere(path):
            raise PermissionError(no_writes)
        # a folder outside opened as a file descriptor would let dir_fd= write there
        if not inside_from_anywhere(path) and isdir(path):
            raise PermissionError("run_tests may not open folders outside the workspace")
        if writes:
            count_new(path)

    return check_open


def sqlite_check(rules):
    """sqlite3.connect(): a database file (a plain path or a file: URI) only inside, counted when it is new."""
    inside, _fd_path, _inside_from_anywhere, count_new = rules
    fsdecode = os.fsdecode
    no_writes = NO_WRITES
    from urllib.parse import unquote

    def sqlite_path(target):
        """The file a sqlite3.connect() argument opens: a plain path, or the path of a file: URI."""
        if not target.startswith("file:"):
            return target
        path = target[5:].split("?", 1)[0].split("#", 1)[0]
        if path.startswith("//"):  # file://host/path: the path after the authority
            path = "/" + path[2:].partition("/")[2]
        return unquote(path)

    def check_sqlite(event, args):
        target = sqlite_path(fsdecode(args[0]) if args and args[0] is not None else "")
        if target not in ("", ":memory:"):
            if not inside(target):
                raise PermissionError(no_writes)
            count_new(target)

    return check_sqlite


def change_check(rules):
    """A call that changes files: each path argument inside, read from the folder its dir_fd= names (an open
    descriptor) when one is given; a call on an open file, where that file is; a new entry counted."""
    inside, fd_path, inside_from_anywhere, count_new = rules
    fsdecode, sep, join, path_like = os.fsdecode, os.sep, os.path.join, os.PathLike
    path_and_dir_fd = dict(PATH_AND_DIR_FD)  # copies in this closure: a test may rewrite the module's globals
    creations = CREATION_EVENTS
    no_changes = NO_CHANGES

    def check_change(event, args):
        pairs = dict(path_and_dir_fd.get(event, ()))
        for index, value in enumerate(args):
            if isinstance(value, int) and not isinstance(value, bool) and index == 0:
                target = fd_path(value)  # a call on an open file (fchmod, ftruncate): where is that file?
                if target is None or not inside(target):
                    raise PermissionError(no_changes)
                continue
            if not isinstance(value, (str, bytes, path_like)):
                continue
            text = fsdecode(value)
            fd = args[pairs[index]] if index in pairs else -1
            if isinstance(fd, int) and fd >= 0 and not text.startswith(sep):
                base = fd_path(fd)
                if base is None or not inside(join(base, text)):
                    raise PermissionError(no_changes)
            elif not inside_from_anywhere(text):
                raise PermissionError(no_changes)
        if event in creations:
            last = max(pairs) if pairs else 0
            fd = args[pairs[last]] if pairs else -1
            count_new(args[last], fd if isinstance(fd, int) and fd >= 0 else None)

    return check_change


def import_check():
    """import: none of the modules the guard changed, made afresh."""
    fresh_imports = FRESH_IMPORTS
    no_processes = NO_PROCESSES

    def check_import(event, args):
        if args[0] in fresh_imports:
            raise PermissionError(no_processes)

    return check_import


def refusal(message):
    """A check that refuses its event whatever its arguments."""

    def refuse(event, args):
        raise PermissionError(message)

    return refuse


def audited_events(rules):
    """The hook's table: each audited event it watches, and the check that event runs."""
    families = (
        (("open",), open_check(rules)),
        (PROCESS_EVENTS, refusal(NO_PROCESSES)),
        (SIGNAL_EVENTS, refusal(NO_SIGNALS)),
        (("import",), import_check()),
        (("sqlite3.connect",), sqlite_check(rules)),
        (
            CODE_SURGERY_EVENTS,
            refusal(
                "run_tests may not make code objects from parts or bytes (code.replace, "
                "CodeType, marshal): compile source instead"
            ),
        ),
        (CHANGE_EVENTS, change_check(rules)),
    )
    return {event: check for events, check in families for event in events}


def dispatch(table):
    """The audit hook: each event's check from the table; every socket event but the local ones refused."""
    local_sockets = LOCAL_SOCKET_EVENTS
    refuse_network = refusal("run_tests may not use the network")

    def guard(event, args):
        check = table.get(event)
        if check is None and event.startswith("socket.") and event not in local_sockets:
            check = refuse_network
        if check is not None:
            check(event, args)

    return guard


def take_away_unaudited():
    """The functions that start processes, send signals, make devices or end the process without an audit
    event, replaced by refusals; every builtin and standard extension module loaded now, and the functions
    that would make one afresh (with the originals) taken away."""
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

    def no_exit(*args, **kwargs):
        raise PermissionError("run_tests may not end the process itself: its exit code is the tests' verdict")

    _posixsubprocess.fork_exec = no_processes
    # the exit code is the verdict: a test may not end the run with one of its choosing (os._exit(0))
    for module in (posix, os):
        module._exit = no_exit
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
    # the same for extension modules (.so): the standard library's are loaded now; afterwards none is,
    # so a test cannot load one it wrote, nor a fresh copy of one the guard changed (its constructor
    # would run native code with no audit event)
    preload_extensions()
    _imp.create_dynamic = no_processes


# extension modules of the standard library that are not loaded for the tests: native code on demand
# (ctypes, the C API test modules), terminals, or files outside the workspace (shared memory)
NOT_PRELOADED = frozenset(
    (
        "_ctypes",
        "_ctypes_test",
        "_testbuffer",
        "_testcapi",
        "_testclinic",
        "_testimportmultiple",
        "_testinternalcapi",
        "_testmultiphase",
        "_xxsubinterpreters",
        "_xxtestfuzz",
        "xxlimited",
        "xxlimited_35",
        "_tkinter",
        "_curses",
        "_curses_panel",
        "readline",
        "ossaudiodev",
        "nis",
        "spwd",
        "_posixshmem",
        "_crypt",
    )
)


def refuse_sqlite_attach():
    """ATTACH opens a file in sqlite's own C code, with no audit event: connections refuse it in SQL.

    (A test that resets the authorizer gets past this layer; the read-only filesystem outside
    its copy, in every mode with namespaces, still stops the write.)"""
    import sqlite3

    connect = sqlite3.connect

    def refuse_attach(action, *rest):
        return sqlite3.SQLITE_DENY if action == sqlite3.SQLITE_ATTACH else sqlite3.SQLITE_OK

    def guarded_connect(*args, **kwargs):
        connection = connect(*args, **kwargs)
        connection.set_authorizer(refuse_attach)
        return connection

    sqlite3.connect = sqlite3.dbapi2.connect = guarded_connect


def preload_extensions():
    """Import the standard library's extension modules (lib-dynload) now, while they may be loaded."""
    import sysconfig

    folder = os.path.join(sysconfig.get_paths()["platstdlib"], "lib-dynload")
    try:
        names = sorted({entry.split(".")[0] for entry in os.listdir(folder) if entry.endswith(".so")})
    except OSError:
        return
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a deprecated module (audioop) says so on import
        for name in names:
            if name not in NOT_PRELOADED and name not in sys.modules:
                try:
                    __import__(name)
                except Exception:
                    pass
    # the pure-Python modules over them that tests use most
    for name in (
        "sqlite3",
        "json",
        "decimal",
        "datetime",
        "hashlib",
        "csv",
        "pickle",
        "socket",
        "ssl",
        "asyncio",
        "unittest",
        "unittest.mock",
        "multiprocessing",
        "zoneinfo",
        "uuid",
        "statistics",
    ):
        try:
            __import__(name)
        except Exception:
            pass


def main():
    settings = json.loads(sys.argv[1])
    root = os.path.realpath(os.getcwd())
    sys.dont_write_bytecode = True  # -I ignores PYTHONDONTWRITEBYTECODE; leave no __pycache__ behind
    exit_now = os._exit  # kept here: the hook's layer takes it away from the tests
    if "hook" in settings["layers"]:
        install_audit_hook(root, settings["max_new_entries"])
    import unittest

    sys.path.insert(0, root)
    argv = ["run_tests", "discover", "-s", ".", "-t", ".", "-p", settings["pattern"]]
    # the exit code is unittest's own verdict (3.12's: 5 when no test ran), given here with no chance for
    # a test to choose it (no atexit handler, no thread left running)
    try:
        result = unittest.main(module=None, argv=argv, verbosity=1, exit=False).result
        code = 5 if result.testsRun == 0 and not result.skipped else (0 if result.wasSuccessful() else 1)
    except BaseException:  # a SystemExit from setUpClass too: the run did not finish
        import traceback

        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # a test may have closed or replaced it
            pass
    exit_now(code)


if __name__ == "__main__":
    main()
