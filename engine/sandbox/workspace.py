"""The sandboxed workspace the harness tools work in: no path leaves it, every size is capped.

A model's output is untrusted input. Every path is resolved (symlinks included) and must
stay inside the workspace root; absolute paths, `~`, `..` that climbs out, NUL bytes, very
long paths and anything that is not a regular file or folder are refused. A refusal is a
`ToolRefusal` whose message goes back to the model as the call's result ([[reading-tool-calls]]).

A checked path is then opened by descriptor, one folder at a time with O_NOFOLLOW (the way
openat2's RESOLVE_NO_SYMLINKS does in the kernel), so a folder swapped for a symlink between
the check and the use cannot lead outside. The workspace's size counts every entry, a block
per folder, and the number of entries is capped as well as the bytes.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ..errors import BadInput


class ToolRefusal(Exception):
    """A tool call the sandbox will not carry out; the message is sent back to the model."""


@dataclass(frozen=True)
class Limits:
    read_bytes: int = 64 * 1024  # largest file read_file returns
    write_bytes: int = 64 * 1024  # largest content write_file accepts
    workspace_bytes: int = 4 * 1024 * 1024  # the whole workspace may not grow past this
    path_chars: int = 512  # longest path accepted
    list_entries: int = 500  # most entries list_files returns
    grep_lines: int = 200  # most matching lines grep returns
    grep_bytes: int = 16 * 1024  # most bytes of grep output
    grep_file_bytes: int = 1024 * 1024  # larger files are skipped by grep
    grep_seconds: float = 2.0  # time budget of one grep
    grep_pattern_chars: int = 1000  # longest pattern grep accepts
    grep_program_size: int = 2000  # largest compiled RE2 program (each byte searched costs up to this)
    grep_line_chars: int = 4096  # grep searches this much of each line
    test_seconds: float = 20.0  # time budget of one run_tests
    test_output_bytes: int = 8 * 1024  # most bytes of run_tests output returned
    workspace_entries: int = 1000  # most files and folders the workspace may hold
    path_depth: int = 16  # most folders a path may go down (write_file makes the missing ones)
    test_write_bytes: int = 8 * 1024 * 1024  # what one run_tests may write on top of the workspace's copy
    test_new_entries: int = 256  # most new files and folders one run_tests may make
    slot_wait_seconds: float = 10.0  # longest a run_tests waits for a free slot before it is refused with a message


# a folder counts as one block in the workspace's size, as it takes on disk
FOLDER_BYTES = 4096


@dataclass(frozen=True)
class Usage:
    """What a workspace holds: every entry is counted, folders included."""

    bytes: int  # file sizes, plus FOLDER_BYTES per folder and the size of each other entry
    files: int  # regular files, symlinks and anything else that is not a folder
    folders: int

    @property
    def entries(self) -> int:
        return self.files + self.folders


class Workspace:
    """A folder the tools may touch, and nothing outside it."""

    def __init__(self, root: str | os.PathLike, limits: Limits | None = None, visitor: str | None = None):
        self.limits = limits or Limits()
        # who works here (a page session's own id), so that run_tests shares its slots fairly; None: unnamed
        self.visitor = visitor
        raw = os.fspath(root)
        if "\0" in raw:
            raise BadInput("the workspace path contains a NUL byte")
        path = Path(raw).expanduser()
        if not path.exists():
            raise BadInput(f"the workspace folder {raw} does not exist")
        if not path.is_dir():
            raise BadInput(f"the workspace {raw} is a file, not a folder")
        self.root = path.resolve()

    def resolve(self, relative: object, must_exist: bool = True) -> Path:
        """The real path of `relative` inside the workspace, or a ToolRefusal saying why not."""
        if not isinstance(relative, str):
            raise ToolRefusal("error: a path must be a string")
        if "\0" in relative:
            raise ToolRefusal("error: the path contains a NUL byte")
        if len(relative) > self.limits.path_chars:
            raise ToolRefusal(f"error: the path is longer than {self.limits.path_chars} characters")
        if relative.startswith("~"):
            raise ToolRefusal("error: paths are relative to the workspace; '~' is not allowed")
        if os.path.isabs(relative):
            raise ToolRefusal("error: paths are relative to the workspace; absolute paths are not allowed")
        try:
            relative.encode("utf-8")
        except UnicodeEncodeError:
            raise ToolRefusal("error: the path is not valid text (it holds a lone surrogate)") from None
        try:
            # resolve symlinks and '..' first, then check the result is still inside the root
            candidate = (self.root / (relative or ".")).resolve()
            if candidate != self.root and self.root not in candidate.parents:
                raise ToolRefusal(f"error: the path {relative!r} leaves the workspace")
            exists = candidate.exists()
            if must_exist and not exists:
                raise ToolRefusal(f"error: no such file or directory: {relative}")
            if exists:
                mode = candidate.stat().st_mode
                if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                    raise ToolRefusal(f"error: {relative} is not a regular file or folder")
        except RuntimeError:  # pathlib's "Symlink loop"
            raise ToolRefusal(f"error: the path {relative!r} goes round a loop of symlinks") from None
        except OSError as error:  # a name too long for the file system, a loop the kernel found
            raise ToolRefusal(f"error: the path cannot be used: {error.strerror or type(error).__name__}") from None
        return candidate

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() or "."

    def usage(self) -> Usage:
        """Every entry under the root (symlinks not followed): bytes, files and folders."""
        total = files = folders = 0
        for folder, dirs, names in os.walk(self.root, followlinks=False):
            folders += len(dirs)
            total += FOLDER_BYTES * len(dirs)
            for name in names:
                files += 1
                try:
                    info = os.lstat(os.path.join(folder, name))
                except OSError:
                    continue
                total += info.st_size
        return Usage(total, files, folders)

    def size(self) -> int:
        """Bytes the workspace holds: every file, and a block per folder."""
        return self.usage().bytes

    # -- opening by descriptor: each component walked with O_NOFOLLOW, so a swap cannot lead out ------
    def open_beneath(self, target: Path, flags: int, mode: int = 0o644, make_folders: int = 0) -> int:
        """An open descriptor of `target` (a path `resolve` returned), reached one folder at a time.

        Each folder is opened relative to the one above it with O_NOFOLLOW, so a folder swapped
        for a symlink after `resolve` checked the path makes the walk fail instead of leaving the
        workspace. With `make_folders`, up to that many missing folders are made on the way.
        """
        parts = target.relative_to(self.root).parts
        if not parts:
            raise ToolRefusal("error: the workspace's own folder cannot be opened as a file")
        folder = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        made = 0
        try:
            for part in parts[:-1]:
                try:
                    below = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
                except FileNotFoundError:
                    if made >= make_folders:
                        raise
                    os.mkdir(part, 0o755, dir_fd=folder)
                    made += 1
                    below = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
                os.close(folder)
                folder = below
            return os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=folder)
        except OSError as error:
            if error.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT, errno.EISDIR):
                raise ToolRefusal(
                    f"error: the path {self.relative(target)!r} changed while it was being opened "
                    "(a folder or file was replaced); try again"
                ) from None
            raise
        finally:
            os.close(folder)

    def open_folder(self, target: Path) -> int:
        """An open descriptor of the folder `target`, walked the same way."""
        if target == self.root:
            return os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        return self.open_beneath(target, os.O_RDONLY | os.O_DIRECTORY)
