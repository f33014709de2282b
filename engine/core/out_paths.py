"""Where a command writes, checked before the work, and the temporary folder a run owns.

A command that writes or runs long (prepare --out, download, eval, generate --record) checks where it will
write before it loads a model, so that a wrong path costs the command line's import time, not a load's minutes:

    check_writable_folder  a folder to create or fill: not under a file, writable, not a symbolic link, and
                           no name it creates starts with "-" (such a name reads as a flag to the next command)
    check_temp_root        TMPDIR, when set, is a writable folder (Python would quietly fall back to /tmp, or
                           to the working folder)
    own_temp_folder        a folder of the run's own in TMPDIR, removed at the end; torch's and triton's
                           compile caches point into it, because importing torch._dynamo (transformers does)
                           creates $TMPDIR/torchinductor_<user> and leaves it there

Nothing here imports torch: the checks run before it is imported.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import BadInput
from .json_input import file_kind

NAME_BYTES = 255  # one name in a path (Linux's NAME_MAX)
PATH_BYTES = 4096  # a whole path (Linux's PATH_MAX)
# the compile caches torch and triton fill, and the folder each gets inside the run's own temporary folder
COMPILE_CACHES = {"TORCHINDUCTOR_CACHE_DIR": "torchinductor", "TRITON_CACHE_DIR": "triton"}


def check_path_text(raw: str, flag: str) -> Path:
    """A path given on the command line as a Path: not empty, no NUL, within Linux's lengths."""
    if not raw or "\x00" in raw:
        raise BadInput(f"{flag} needs a folder's path, such as packs/qwen3 (without a NUL character)")
    size = len(os.fsencode(raw))
    if size > PATH_BYTES:
        raise BadInput(f"{flag}'s path is {size:,} bytes; a path may be up to {PATH_BYTES:,}: give a shorter one")
    longest = max(len(os.fsencode(part)) for part in raw.split(os.sep))
    if longest > NAME_BYTES:
        raise BadInput(f"{flag}'s path holds a name of {longest:,} bytes; a name may be up to {NAME_BYTES}")
    return Path(raw)


def _lstat(path: Path, flag: str) -> os.stat_result | None:
    """os.lstat of `path` (never following a last link), None where nothing is there."""
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        raise BadInput(f"{flag} {path}: cannot look at it: {error.strerror or error}") from error


def _to_create(path: Path, flag: str) -> tuple[list[Path], Path]:
    """The folders of `path` that are not there yet (outermost first), and the nearest one that is."""
    missing = []
    here = path
    while _lstat(here, flag) is None and here != here.parent:
        missing.insert(0, here)
        here = here.parent
    return missing, here


def check_flag_like(path: Path, flag: str) -> None:
    """Refuse a name that starts with "-": the next command to read it (ls, rm, cp) would take it for a flag."""
    if path.name.startswith("-"):
        raise BadInput(
            f"{flag} {path}: the name {path.name!r} starts with '-' and would read as a flag to other commands; "
            "give a name that starts with a letter or a digit"
        )


def _probe_writable(folder: Path, flag: str, shown: Path) -> None:
    """Make and remove an empty folder in `folder`: the one sure test that files can be made there (root, read-only disks)."""
    if not os.access(folder, os.W_OK | os.X_OK):
        raise BadInput(f"{flag} {shown}: the folder {folder} is not writable by you; give a folder you can write in")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".write-check-", dir=folder))
    except OSError as error:
        raise BadInput(
            f"{flag} {shown}: nothing can be written in {folder} ({error.strerror or error}); give another folder"
        ) from error


def check_writable_folder(raw: str | os.PathLike, flag: str, *, follow_link: bool = False) -> Path:
    """`raw` as a folder a command may create or fill, or BadInput saying what to change. Creates nothing.

    `follow_link`: a folder the user configured rather than named on this command line (the Hugging Face cache)
    may be a symbolic link they made; a folder named here may not, so nothing is written through a link."""
    path = check_path_text(os.fspath(raw), flag)
    found = _lstat(path, flag)
    if found is not None and stat.S_ISLNK(found.st_mode) and not follow_link:
        raise BadInput(f"{flag} {path} is a symbolic link; give the path of the folder itself")
    if found is not None and not path.is_dir():
        kind = "a file" if stat.S_ISREG(found.st_mode) else file_kind(found.st_mode)
        raise BadInput(f"{flag} {path} is {kind}; give a folder (it is created if missing)")
    missing, nearest = _to_create(path, flag)
    # the folder's own name, and every folder made on the way to it
    for folder in [*missing, path]:
        check_flag_like(folder, flag)
    if missing and not nearest.is_dir():
        raise BadInput(
            f"{flag} {path}: {nearest} is a file, so no folder can be made under it; give a path in a folder"
        )
    _probe_writable(nearest if missing else path, flag, path)
    return path


def check_temp_root() -> Path:
    """The folder temporary files go to; BadInput when TMPDIR names one that cannot be used."""
    named = os.environ.get("TMPDIR")
    if named:
        folder = Path(named)
        if not folder.is_dir():
            raise BadInput(f"TMPDIR={named} is not a folder; point TMPDIR at a writable folder, or unset it")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise BadInput(f"TMPDIR={named} is not writable by you; point TMPDIR at a writable folder, or unset it")
    return Path(tempfile.gettempdir())


@contextmanager
def own_temp_folder(prefix: str = "engine-") -> Iterator[Path]:
    """A temporary folder of the run's own, removed at the end, with torch's and triton's compile caches inside.

    A cache the user set (TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR) is theirs and kept; the ones set here are
    unset again afterwards, so a process that runs several commands (a test) leaves the environment as it was."""
    check_temp_root()
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    saved = {name: os.environ.get(name) for name in COMPILE_CACHES}
    try:
        for name, sub in COMPILE_CACHES.items():
            if saved[name] is None:
                os.environ[name] = str(folder / sub)
        yield folder
    finally:
        # torch writes its cache folder's absolute path back into the environment: put back what was there
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(folder, ignore_errors=True)
