"""Reading a pack from a folder or a .zip: files admitted one by one under the pack's limits before any is parsed.

Everything in a pack is untrusted (a teacher may upload one to a shared server): a zip's
size, file count and uncompressed total are capped before anything is read, and a name that
leaves the pack or is not JSON is refused; engine/packs/checks.py then checks what the files
say. Each refusal is a `PackError` whose message says what is wrong and how to make a good
pack. The reference for the zip checks is Python's own zipfile documentation ("Decompression
pitfalls"): a member's stated size can lie, so reads are bounded too.
"""

from __future__ import annotations

import io
import os
import re
import stat
import zipfile
import zlib
from pathlib import Path

from .checks import check_pack
from .pack import (
    JUNK,
    MANIFEST,
    MAX_FILE_BYTES,
    MAX_FILES,
    MAX_TOTAL_BYTES,
    MAX_UPLOAD_BYTES,
    Pack,
    PackError,
    megabytes,
)


# -- reading a pack: files first, then what they say ---------------------------------------------
def _safe_name(name: str) -> str:
    """A member's path as a plain relative POSIX path; PackError for one that could leave the pack."""
    if "\\" in name or name.startswith("/") or re.match(r"^[A-Za-z]:", name) or "\x00" in name:
        raise PackError(f"the pack holds {name!r}, a path outside the pack: a pack holds only relative paths")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if not parts or any(p == ".." for p in parts):
        raise PackError(f"the pack holds {name!r}, a path outside the pack: a pack holds only relative paths")
    return "/".join(parts)


def _admit(files: dict[str, bytes], name: str, size: int, total: int) -> None:
    """Refuse before reading what would break a limit."""
    if not name.endswith(".json"):
        raise PackError(f"the pack holds {name}, which is not JSON: a pack holds only manifest.json and runs/*.json")
    if len(files) >= MAX_FILES:
        raise PackError(
            f"the pack holds more than {MAX_FILES} files: a pack made by `python -m engine prepare` holds about 40"
        )
    if size > MAX_FILE_BYTES:
        raise PackError(f"{name} is {size:,} bytes uncompressed; a pack file may hold up to {MAX_FILE_BYTES:,}")
    if total + size > MAX_TOTAL_BYTES:
        raise PackError(f"the pack unpacks to more than {MAX_TOTAL_BYTES:,} bytes; a real pack is a few MB")


def _zip_files(data: bytes) -> dict[str, bytes]:
    """The JSON files of a zipped pack, read into memory with every limit checked (nothing is extracted)."""
    if len(data) > MAX_UPLOAD_BYTES:
        raise PackError(f"the file is {megabytes(len(data))}; a pack may be up to {megabytes(MAX_UPLOAD_BYTES)}")
    files: dict[str, bytes] = {}
    total = 0
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
            if len(members) > MAX_FILES * 2:
                raise PackError(f"the zip holds {len(members):,} entries; a pack holds about 40 files")
            for info in members:
                if info.is_dir() or JUNK.search(info.filename):
                    continue
                name = _safe_name(info.filename)
                if stat.S_ISLNK(info.external_attr >> 16):
                    raise PackError(f"{name} is a symbolic link: a pack holds only plain JSON files")
                _admit(files, name, info.file_size, total)
                # the stated size can lie: read one byte past it and refuse what is longer
                with archive.open(info) as member:
                    body = member.read(info.file_size + 1)
                if len(body) != info.file_size:
                    raise PackError(f"{name} is not the size its zip entry states: the zip is damaged; make it again")
                files[name] = body
                total += len(body)
    except zipfile.BadZipFile as error:
        raise PackError(
            f"the file is not a readable zip ({error}): it may be truncated; zip the pack folder again"
        ) from error
    except (zlib.error, EOFError) as error:
        raise PackError(
            f"the zip is damaged or truncated ({type(error).__name__}); zip the pack folder again"
        ) from error
    except (NotImplementedError, RuntimeError) as error:
        raise PackError(f"the zip cannot be read ({error}): use plain deflate, without a password") from error
    except PackError:
        raise
    except Exception as error:  # a damaged directory: "negative seek value", struct errors, bad offsets...
        raise PackError(
            f"the zip is damaged ({type(error).__name__}: {str(error)[:120]}); zip the pack folder again"
        ) from error
    return files


def _folder_files(folder: Path) -> dict[str, bytes]:
    """The JSON files of a pack folder, with the same limits as a zip; symbolic links are refused."""
    files: dict[str, bytes] = {}
    total = 0
    for base, folders, names in os.walk(folder, followlinks=False):
        for child in list(folders):
            if (Path(base) / child).is_symlink():
                raise PackError(
                    f"{Path(base, child).relative_to(folder)} is a symbolic link: a pack holds only plain files"
                )
        for entry in sorted(names):
            path = Path(base) / entry
            name = path.relative_to(folder).as_posix()
            if JUNK.search(name):
                continue
            if path.is_symlink() or not path.is_file():
                raise PackError(f"{name} is not a plain file: a pack holds only plain JSON files")
            _admit(files, name, path.stat().st_size, total)
            with open(path, "rb") as handle:
                files[name] = handle.read(MAX_FILE_BYTES + 1)
            total += len(files[name])
    return files


# what one file may hold once parsed: a real run file has a few thousand values, a few levels deep;


def read_pack(source: str | Path, allow_random: bool = False) -> Pack:
    """A pack from a folder or a .zip file on disk."""
    path = Path(source).expanduser()
    if path.is_dir():
        return check_pack(_folder_files(path), str(path), allow_random)
    if not path.is_file():
        raise PackError(f"no pack at {path}: give a pack folder or a .zip made from one")
    if path.stat().st_size > MAX_UPLOAD_BYTES:
        raise PackError(
            f"{path} is {megabytes(path.stat().st_size)}; a pack may be up to {megabytes(MAX_UPLOAD_BYTES)}"
        )
    return check_pack(_zip_files(path.read_bytes()), path.name, allow_random)


def read_pack_bytes(data: bytes, name: str, allow_random: bool = False) -> Pack:
    """A pack uploaded as a .zip (its bytes, never written to disk)."""
    return check_pack(_zip_files(data), name, allow_random)


def find_shipped_pack(folder: Path, allow_random: bool = False) -> Pack | None:
    """The first pack (a sub-folder or a .zip, by name) in `folder` (assets/packs/), or None when it holds none."""
    if not folder.is_dir():
        return None
    for candidate in sorted(folder.iterdir()):
        if (candidate.is_dir() and (candidate / MANIFEST).is_file()) or candidate.suffix == ".zip":
            return read_pack(candidate, allow_random)
    return None
