"""The bubblewrap command a confined run starts in (https://github.com/containers/bubblewrap).

Python's own folders read-only, the programs a run starts (programs.py) and the workspace to copy,
an empty folder at the workspace's own path, and nothing else; new PID, IPC, network and UTS
namespaces, no capabilities but those the launcher needs to build the test's world and then drops.
"""

from __future__ import annotations

import os
from pathlib import Path

from .programs import (
    GUARD,
    GUARD_INSIDE,
    INSIDE,
    LAUNCHER,
    LAUNCHER_INSIDE,
    SOURCE_INSIDE,
    SYSCALL_FILTER,
    SYSCALL_FILTER_INSIDE,
    python_folders,
    running_as_root,
)


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
        INSIDE,
        "--ro-bind",
        str(GUARD),
        GUARD_INSIDE,
        "--ro-bind",
        str(LAUNCHER),
        LAUNCHER_INSIDE,
        "--ro-bind",
        str(SYSCALL_FILTER),
        SYSCALL_FILTER_INSIDE,
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
