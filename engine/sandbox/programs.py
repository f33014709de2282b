"""The programs a confined run starts by path, where they lie here and where bubblewrap shows them, and the
interpreter that runs them.

The launcher (launcher.py, with the seccomp filter it reads beside it, syscall_filter.py) confines itself
and execs the guard (guard.py), which installs the audit hook and runs the tests. Each runs in a fresh
interpreter with -I, so none imports the engine.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
GUARD = HERE / "guard.py"
LAUNCHER = HERE / "launcher.py"
SYSCALL_FILTER = HERE / "syscall_filter.py"
# where bubblewrap shows them: the launcher's folder holds the filter it imports, under the same names as here
INSIDE = "/run"
GUARD_INSIDE = f"{INSIDE}/{GUARD.name}"
LAUNCHER_INSIDE = f"{INSIDE}/{LAUNCHER.name}"
SYSCALL_FILTER_INSIDE = f"{INSIDE}/{SYSCALL_FILTER.name}"
SOURCE_INSIDE = f"{INSIDE}/workspace"  # where bubblewrap shows the workspace, read-only, to be copied


def resolved_python() -> str:
    """The interpreter the tests run: the real file behind sys.executable (a venv's python is a symlink)."""
    return os.path.realpath(sys.executable)


def python_folders() -> list[str]:
    """The folders the resolved interpreter needs: its real prefix (stdlib, site-packages, libpython) and its own folder."""
    folders = {os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix)}
    folders.add(os.path.dirname(resolved_python()))
    # a folder inside another needs no bind of its own
    return sorted(f for f in folders if not any(f != g and f.startswith(g + os.sep) for g in folders))


def running_as_root() -> bool:
    return os.geteuid() == 0
