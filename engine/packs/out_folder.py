"""The folder `prepare --out` records a pack into: checked before a model loads, written without following a link.

engine/packs/prepare.py records the runs; this module, which never imports torch, says whether a folder may
take them (new, empty, or a pack of ours to resume) and writes each file so that an interruption leaves the old
file or the new one, and a symbolic link planted in the folder is never written through.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from pathlib import Path

from ..core.json_input import InputProblem, read_json_text, read_text_file
from ..core.out_paths import check_writable_folder
from ..errors import BadInput
from .pack import MANIFEST, PACK_FORMAT, RUNS

FLAG = "--out"


def _links_in(out: Path) -> list[str]:
    """The symbolic links among the pack's own files (the folder's top and runs/), as paths inside it."""
    found = []
    for folder in (out, out / RUNS):
        if not folder.is_dir() or folder.is_symlink():
            continue
        found += [p.relative_to(out).as_posix() for p in sorted(folder.iterdir()) if p.is_symlink()]
    return found


def _holds_our_pack(out: Path) -> bool:
    """Whether `out`'s manifest is a lesson pack's (read as a regular file, with the command line's cap)."""
    try:
        data = read_json_text(read_text_file(str(out / MANIFEST)))
    except (OSError, InputProblem, ValueError):
        return False
    return isinstance(data, dict) and data.get("format") == PACK_FORMAT


def check_out_folder(raw: str | os.PathLike) -> Path:
    """`raw` as a place for a pack: creatable and writable, no link in it, and empty or a pack to resume."""
    out = check_writable_folder(raw, FLAG)
    if not out.is_dir() or not any(out.iterdir()):
        return out
    links = _links_in(out)
    if links:
        raise BadInput(
            f"{FLAG} {out} holds a symbolic link ({links[0]}); a pack is never written through a link: "
            "remove it, or give a new folder"
        )
    if not _holds_our_pack(out):
        raise BadInput(f"{FLAG} {out} is not empty and holds no lesson pack; give an empty or new folder")
    runs = out / RUNS
    if runs.exists() and not runs.is_dir():
        raise BadInput(f"{FLAG} {out}: its {RUNS} is not a folder; give a new folder, or remove {RUNS}")
    return out


def write_atomically(path: Path, data: dict) -> bytes:
    """Write JSON so that an interruption leaves the old file or the new one, never half of one, and no link is followed."""
    body = json.dumps(data, ensure_ascii=False, indent=1).encode("utf-8")
    temporary = path.with_name(f".{path.name}.partial")
    # whatever lies under the temporary name (a link planted there, say) is removed, never written through
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temporary)
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(handle, "wb") as file:
        file.write(body)
    # os.replace puts the new file where a link was, and leaves the link's target alone
    os.replace(temporary, path)
    return body


def regular_file(path: Path) -> bool:
    """Whether `path` is a regular file itself (not a link to one): the only kind of run file a resume reads."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False
