"""Prepared weights kept beside the model cache: written once per model folder and setting, mapped on every later load.

A model folder's first int8 load on a CPU computes what the kernel reads (engine/model/int8_prepared.py)
and writes it here as one safetensors file, so later loads map that file instead of reading and
converting the checkpoint. Nothing here is trusted that this code did not write for this folder:

- the two last folders ($XDG_CACHE_HOME or ~/.cache /qwen-tool-explainer/prepared/<key>) are the
  user's own and no one else may write in them (engine/model/native.py's checks, no symlink followed);
- the file and its record are regular files this user owns, not writable by others, opened without
  following a symlink;
- the record names the folder's config.json and safetensors files with their sizes and modification
  times: a folder changed since (a new download, an edited file) is prepared again;
- the record holds what the file's own stat said once it was written (size, inode, modification and
  change times): any write to it since, a chmod, a copy put in its place or a file cut short changes
  one of them (a change time cannot be set back), so it is prepared again, never used. That check
  costs nothing, where hashing the file would read gigabytes at every load; the sha256 computed as it
  was written is kept in the record too, for anyone who wants to check it by hand.

The mapping is populated as it is made (MAP_POPULATE): when the load ends, every page is in memory
and decoding reads no file.

A record from another version of this code (`VERSION`) is stale too. Where the cache cannot be written
(a read-only home, a full disk) the load goes on with the weights it prepared in memory and says so.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import mmap
import os
import stat
from dataclasses import dataclass
from pathlib import Path

import torch

from .native import UnsafeCache, open_cache, read_own_file, write_own_file
from .weights import safetensors_header_of

# bump when what is prepared, or how, changes: older files are then prepared again (2: the record names its folder)
VERSION = 2
WEIGHTS, RECORD = "weights.safetensors", "record.json"
_DTYPES = {torch.float32: "F32", torch.int8: "I8"}
_TORCH = {name: dtype for dtype, name in _DTYPES.items()}
# what a header may hold at most, against a file that claims gigabytes of header
_HEADER_LIMIT = 16 << 20
# what the record keeps of the written file's stat, in _stat_of's order
_STAT_KEYS = ("size", "inode", "mtime_ns", "ctime_ns")


@dataclass
class Prepared:
    """Tensors of one prepared file (views into its mapping, which they keep alive), or held in memory."""

    tensors: dict[str, torch.Tensor]
    reason: str  # in words, where they came from (mapped, or held in memory where the cache could not be written)


def cache_root() -> Path:
    """QWEN_PREPARED_DIR, else $XDG_CACHE_HOME (or ~/.cache)/qwen-tool-explainer/prepared."""
    from ..settings import load_settings

    chosen = load_settings().prepared_dir
    if chosen:
        return Path(chosen).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "qwen-tool-explainer" / "prepared"


def entry_folder(folder: Path, setting: str) -> Path:
    """The cache folder for one model folder (its resolved path) at one setting ("int8-rows", say)."""
    key = hashlib.sha256(f"{Path(folder).resolve()}\n{setting}".encode()).hexdigest()[:20]
    return cache_root() / key


def source_stamp(folder: Path) -> list[list]:
    """config.json and every safetensors file of `folder`, each as [name, size, modification time in ns]."""
    folder = Path(folder)
    names = ["config.json", *sorted(p.name for p in folder.glob("*.safetensors"))]
    stamp = []
    for name in names:
        info = (folder / name).stat()
        stamp.append([name, info.st_size, info.st_mtime_ns])
    return stamp


# -- reading ----------------------------------------------------------------------------------------------
def open_prepared(folder: Path, setting: str) -> tuple[Prepared | None, str]:
    """The folder's prepared tensors at `setting`, mapped and checked; or None and, in words, why they must be
    prepared (none yet, stale, not this user's own, altered)."""
    try:
        entry = open_cache(entry_folder(folder, setting))
    except (UnsafeCache, OSError) as error:
        return None, f"the prepared-weights cache is not usable ({error})"
    try:
        raw = read_own_file(entry, RECORD)
        if raw is None:
            return None, "no prepared weights for this folder yet"
        try:
            record = json.loads(raw)
            expected = (record["version"], record["setting"], record["sources"])
            written = [int(record["file"][key]) for key in _STAT_KEYS]
        except (ValueError, KeyError, TypeError):
            return None, "its record of prepared weights is unreadable"
        try:
            current = source_stamp(folder)
        except OSError as error:
            return None, f"its files could not be listed ({error.strerror})"
        if expected != (VERSION, setting, current):
            return None, "the folder or this code changed since its weights were prepared"
        return _map_checked(entry, written)
    finally:
        os.close(entry)


def _stat_of(info: os.stat_result) -> list[int]:
    return [info.st_size, info.st_ino, info.st_mtime_ns, info.st_ctime_ns]


def _map_checked(entry: int, written: list[int]) -> tuple[Prepared | None, str]:
    """The weights file mapped (private pages: writes never reach the file), unless it changed since it was written."""
    try:
        fd = os.open(WEIGHTS, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=entry)
    except OSError:
        return None, "its prepared weights file is missing or a symlink"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
            return None, "its prepared weights file is not this user's own"
        if info.st_size != written[0]:
            return None, "its prepared weights file is not the size it was written at"
        if _stat_of(info) != written:
            return None, "its prepared weights file was altered since it was written"
        flags = mmap.MAP_PRIVATE | getattr(mmap, "MAP_POPULATE", 0)
        mapping = mmap.mmap(fd, info.st_size, flags=flags, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    finally:
        os.close(fd)
    try:
        tensors = _tensors_of(mapping)
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        mapping.close()
        return None, f"its prepared weights file does not hold together ({error})"
    return Prepared(tensors, "mapped the weights prepared at an earlier load"), ""


def _tensors_of(mapping: mmap.mmap) -> dict[str, torch.Tensor]:
    """Views of each tensor in a safetensors file's mapping (checked against its length)."""
    mapping.seek(0)
    header, start = safetensors_header_of(mapping, WEIGHTS, _HEADER_LIMIT)
    whole, tensors = torch.frombuffer(mapping, dtype=torch.uint8), {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        dtype = _TORCH[entry["dtype"]]
        shape = [int(n) for n in entry["shape"]]
        begin, end = (start + int(n) for n in entry["data_offsets"])
        count = 1
        for n in shape:
            count *= n
        if end - begin != count * dtype.itemsize or end > len(mapping) or begin % dtype.itemsize:
            raise ValueError(f"{name}: offsets that do not match its shape")
        tensors[name] = whole[begin:end].view(dtype).view(shape)
    return tensors


# -- writing ----------------------------------------------------------------------------------------------
def write_prepared(folder: Path, setting: str, tensors: dict[str, torch.Tensor]) -> str:
    """`tensors` (fp32 and int8) kept for `folder` at `setting`; returns "" or, in words, why they could not be."""
    try:
        stamp = source_stamp(folder)
        entry = open_cache(entry_folder(folder, setting))
    except (UnsafeCache, OSError) as error:
        return f"the prepared-weights cache is not usable ({error})"
    try:
        # the record goes first: a reader that finds the new file under the old record rebuilds, never trusts it
        with contextlib.suppress(FileNotFoundError):
            os.unlink(RECORD, dir_fd=entry)
        digest = _write_safetensors(entry, tensors)
        fd = os.open(WEIGHTS, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=entry)
        try:
            written = dict(zip(_STAT_KEYS, _stat_of(os.fstat(fd)), strict=True))
        finally:
            os.close(fd)
        record = {
            "version": VERSION,
            "setting": setting,
            "folder": str(Path(folder).resolve()),
            "sources": stamp,
            "file": written,
            "sha256": digest,
        }
        write_own_file(entry, RECORD, json.dumps(record).encode())
        forget_stale(keep=entry_folder(folder, setting))
        return ""
    except OSError as error:
        return f"the prepared weights could not be kept ({error.strerror or error})"
    finally:
        os.close(entry)


def forget_stale(keep: Path | None = None) -> list[str]:
    """Remove the entries no load will use again: their model folder is gone, or another version of this code wrote
    them (each holds a model's size on disk). An entry with no record is left alone (one is being written: its
    record goes first), as is anything that is not this user's own; the names removed."""
    root, removed = cache_root(), []
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return removed
    for name in names:
        path = root / name
        if path == keep or len(name) != 20 or any(c not in "0123456789abcdef" for c in name):
            continue
        try:
            entry = open_cache(path)
        except (UnsafeCache, OSError):
            continue
        try:
            raw = read_own_file(entry, RECORD)
            if raw is None or not _is_stale(raw):
                continue
            for file in (RECORD, WEIGHTS):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(file, dir_fd=entry)
        finally:
            os.close(entry)
        # a folder of this user's own, inside a folder no one else may write: nothing can be swapped in meanwhile
        with contextlib.suppress(OSError):
            os.rmdir(path)
            removed.append(name)
    return removed


def _is_stale(raw: bytes) -> bool:
    try:
        record = json.loads(raw)
    except ValueError:
        return False
    if not isinstance(record, dict) or record.get("version") != VERSION:
        return True
    folder = record.get("folder")
    return isinstance(folder, str) and not (Path(folder) / "config.json").is_file()


def _write_safetensors(entry: int, tensors: dict[str, torch.Tensor]) -> str:
    """The tensors as one safetensors file (fp32 first, so every offset is aligned to its dtype), written beside
    and renamed into place; its sha256."""
    ordered = sorted(tensors.items(), key=lambda item: (item[1].dtype != torch.float32, item[0]))
    header, offset = {"__metadata__": {"format": "pt", "written_by": "qwen-tool-explainer"}}, 0
    for name, tensor in ordered:
        nbytes = tensor.numel() * tensor.element_size()
        header[name] = {
            "dtype": _DTYPES[tensor.dtype],
            "shape": list(tensor.shape),
            "data_offsets": [offset, offset + nbytes],
        }
        offset += nbytes
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    digest = hashlib.sha256()

    def chunks():
        # each piece hashed as it is written: the record keeps the file's sha256 without reading it back
        for piece in (len(text).to_bytes(8, "little"), text):
            digest.update(piece)
            yield piece
        for _, tensor in ordered:
            data = memoryview(tensor.contiguous().view(torch.uint8).reshape(-1).numpy())
            digest.update(data)
            yield data

    write_own_file(entry, WEIGHTS, chunks())
    return digest.hexdigest()
