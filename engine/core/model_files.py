"""A model folder's small files and a model's name, checked before anything is read: a folder is input from a stranger.

A teacher downloads a model folder, or a school shares one. Every file the site reads from it
(config.json, the tokenizer's files, the chat template, generation_config.json) is checked on
its open descriptor before a byte is read: a regular file (not a FIFO or a device), no larger
than its limit in FILE_LIMITS, and, where it is a symbolic link, one that stays inside the
folder (or, in a Hugging Face cache snapshot, inside that model's `blobs/` folder, where the
cache keeps the bytes its links point at). A 1.5 GB sparse config.json is refused by its size
in microseconds, instead of being read whole into gigabytes of memory.

Files that transformers opens by path itself (the load of the weights, AutoTokenizer) are checked
the same way just before it reads them (`check_folder_files`).

A model's name is checked too (`model_path`): a name no folder or hub id can have (a control
character, a length past PATH_MAX, `~someone` for a user this machine does not have) is refused
in one line, where `Path.expanduser` would raise a RuntimeError.
"""

from __future__ import annotations

import os
import stat
import unicodedata
from pathlib import Path

from ..errors import ModelFolderRefused

MB = 1_000_000  # a megabyte as the limits and their messages write it

# the most bytes read of each file of a model folder, and why that is room enough: every limit is
# several times the largest real file of its kind we know (sizes from the hub's Qwen3, Llama 3.1,
# Mistral and Gemma 3 repos; the vendored copies in assets/ are the same files)
FILE_LIMITS = {
    "config.json": 1 * MB,  # Qwen3-1.7B's is 726 bytes; a multimodal model's a few tens of kB
    "generation_config.json": 1 * MB,  # a few hundred bytes
    "adapter_config.json": 1 * MB,  # a LoRA adapter's settings (transformers looks for one): about 1 kB
    "tokenizer.json": 64 * MB,  # Qwen3's is 11 MB, Llama 3.1's 9 MB, Gemma 3's (262k tokens) 33 MB
    "tokenizer_config.json": 16 * MB,  # Qwen3's is 10 kB, Llama 3.1's 51 kB, Gemma 3's 1.2 MB (its added tokens)
    "special_tokens_map.json": 1 * MB,  # under 1 kB
    "added_tokens.json": 16 * MB,  # Qwen3's is 707 bytes
    "vocab.json": 32 * MB,  # Qwen3's is 2.8 MB
    "merges.txt": 32 * MB,  # Qwen3's is 1.7 MB
    "chat_template.jinja": 1 * MB,  # Qwen3's template is 4 kB; the longest we know (gpt-oss) about 16 kB
    "chat_template.json": 1 * MB,  # the same template, written as JSON
    "model.safetensors.index.json": 64 * MB,  # a sharded checkpoint's map: Qwen3-1.7B's 32 kB, DeepSeek-V3's 9 MB
}
# a chat template's characters, wherever it is written (tokenizer_config.json may hold it): as chat_template.jinja
TEMPLATE_CHARS = FILE_LIMITS["chat_template.jinja"]

NAME_BYTES = 255  # one name in a path (Linux's NAME_MAX)
PATH_BYTES = 4096  # a whole path (Linux's PATH_MAX)
GIVE_A_MODEL = "give tiny, a hub id such as Qwen/Qwen3-1.7B, or a folder that holds the weights"


def _size(count: int) -> str:
    return f"{count / MB:,.0f} MB" if count >= MB else f"{count:,} bytes"


def allowed_roots(folder: Path) -> list[Path]:
    """Where a model folder's files may really lie: the folder, and for a Hugging Face cache snapshot its blobs/ too."""
    real = Path(os.path.realpath(folder))
    roots = [real]
    # a cache snapshot (.../models--Org--Name/snapshots/<commit>/) is links to ../../blobs/<hash>
    if real.parent.name == "snapshots":
        roots.append(real.parent.parent / "blobs")
    return roots


def open_folder_file(folder: Path, name: str) -> tuple[int, int]:
    """A read-only descriptor of `name` in `folder` and its size, after every check; FileNotFoundError where it is absent.

    Raises ModelFolderRefused (one line naming the file and its limit) for a file past its limit,
    one that is not a regular file, or a link that leads out of the folder."""
    limit = FILE_LIMITS.get(name, FILE_LIMITS["config.json"])
    target = os.path.realpath(Path(folder) / name)
    if not any(Path(target).is_relative_to(root) for root in allowed_roots(Path(folder))):
        raise ModelFolderRefused(
            f"the model folder's {name} is a link to {target}, outside the folder: copy the file into the folder"
        )
    # the path is resolved already: O_NOFOLLOW refuses a link swapped in since; O_NONBLOCK never waits on a FIFO
    fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a folder" if stat.S_ISDIR(info.st_mode) else "a FIFO" if stat.S_ISFIFO(info.st_mode) else "a device"
            raise ModelFolderRefused(
                f"the model folder's {name} is {kind}, not a regular file: replace it with the file"
            )
        if info.st_size > limit:
            raise ModelFolderRefused(
                f"the model folder's {name} is {_size(info.st_size)} ({info.st_size:,} bytes); at most {_size(limit)} "
                f"of it is read (a real model's is far smaller): use the model's own {name}"
            )
    except BaseException:
        os.close(fd)
        raise
    return fd, info.st_size


def read_folder_file(folder: Path, name: str) -> bytes:
    """The bytes of `name` in `folder`, checked first (open_folder_file); FileNotFoundError where it is absent."""
    limit = FILE_LIMITS.get(name, FILE_LIMITS["config.json"])
    fd, _ = open_folder_file(folder, name)
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(limit + 1)
    # a file that grew since it was checked is refused the same way
    if len(data) > limit:
        raise ModelFolderRefused(
            f"the model folder's {name} is larger than {_size(limit)}, the most of it that is read"
        )
    return data


def read_folder_text(folder: Path, name: str) -> str:
    """`name` in `folder` as UTF-8 text, read with read_folder_file's checks."""
    try:
        return read_folder_file(folder, name).decode("utf-8")
    except UnicodeDecodeError:
        raise ModelFolderRefused(f"the model folder's {name} is not UTF-8 text: use the model's own {name}") from None


def check_folder_files(folder: Path) -> None:
    """ModelFolderRefused for the first file of FILE_LIMITS in `folder` that is too large, not a file, or a link out.

    For the loads that open the files by path themselves (transformers): they read only what was checked here."""
    for name in FILE_LIMITS:
        try:
            fd, _ = open_folder_file(folder, name)
        except FileNotFoundError:
            continue
        os.close(fd)


def check_template(template: str) -> str:
    """`template` when its length is one a chat template can have; ModelFolderRefused otherwise."""
    if len(template) > TEMPLATE_CHARS:
        raise ModelFolderRefused(
            f"the model folder's chat template is {len(template):,} characters; at most {TEMPLATE_CHARS:,} are read "
            "(Qwen3's is about 4,000): use the model's own template"
        )
    return template


def model_name_problem(name: str) -> str | None:
    """Why `name` can be neither a folder nor a hub id, in one line; None when it can be either."""
    if not name or "\x00" in name:
        return f"give a model: {GIVE_A_MODEL.removeprefix('give ')}"
    if found := next((c for c in name if unicodedata.category(c) == "Cc"), None):
        return f"the model name holds a control character ({found!r}), which no folder or hub id has: {GIVE_A_MODEL}"
    try:
        encoded = os.fsencode(name)
    except UnicodeEncodeError:
        return f"the model name holds a lone surrogate, which no folder or hub id has: {GIVE_A_MODEL}"
    longest = max(len(os.fsencode(part)) for part in name.split("/"))
    if len(encoded) > PATH_BYTES or longest > NAME_BYTES:
        return (
            f"the model name is {len(name):,} characters, too long for a folder's path ({PATH_BYTES:,} bytes, "
            f"{NAME_BYTES} a name) or a hub id: {GIVE_A_MODEL}"
        )
    try:
        Path(name).expanduser()
    except RuntimeError:
        # "~someone/..." for a user this machine does not have (or a "~" with no home folder to stand for)
        user = name[1:].split("/", 1)[0]
        if user:
            return f"the model name starts with ~{user}, and this machine has no user {user!r}: give the folder's full path"
        return "the model name starts with ~, and this process has no home folder: give the folder's full path"
    return None


def model_path(name: str) -> Path:
    """`name` as a path (a leading ~ expanded); ModelFolderRefused, in one line, for a name no folder or hub id can have."""
    problem = model_name_problem(name)
    if problem:
        raise ModelFolderRefused(problem)
    return Path(name).expanduser()
