"""Where each tensor of a folder's safetensors files lies, read from their headers, and reading one tensor.

Shared by the readers that fill a network tensor by tensor: engine/model/int8_load.py (int8 as it reads)
and engine/model/lean.py (a plain Qwen3 without transformers). A header that does not hold together with
its own bytes raises NotPlainLayout, and the caller loads through transformers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import torch

from .weights import Progress, read_safetensors_header

# safetensors' dtype names read here
_DTYPES = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}


@dataclass(frozen=True)
class StoredTensor:
    """Where one tensor lies in a safetensors file."""

    file: Path
    start: int  # byte offset in the file
    dtype: torch.dtype
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize


class NotPlainLayout(Exception):
    """The checkpoint is not one this reader takes as it is: load it through transformers."""


def index_checkpoint(folder: Path) -> dict[str, StoredTensor]:
    """Every tensor of the folder's safetensors files by name, from their headers."""
    tensors: dict[str, StoredTensor] = {}
    files = sorted(Path(folder).glob("*.safetensors"))
    if not files:
        raise NotPlainLayout("no safetensors files")
    for file in files:
        try:
            header, data_start = read_safetensors_header(file)
        except (OSError, ValueError) as error:
            raise NotPlainLayout(str(error)) from error
        file_size = file.stat().st_size
        for name, entry in header.items():
            if name == "__metadata__":
                continue
            try:
                dtype = _DTYPES[entry["dtype"]]
                shape = tuple(int(n) for n in entry["shape"])
                begin, end = (int(n) for n in entry["data_offsets"])
            except (KeyError, TypeError, ValueError) as error:
                raise NotPlainLayout(
                    f"{name}: an entry this reader does not take ({type(error).__name__}: {error})"
                ) from error
            start = data_start + begin
            stored = StoredTensor(file, start, dtype, shape)
            # a header that does not match its own bytes (or the file's length) is not read on trust
            if end - begin != stored.nbytes or start + (end - begin) > file_size or name in tensors:
                raise NotPlainLayout(f"{name}: its offsets do not match its shape")
            tensors[name] = stored
    return tensors


def read_tensor(stored: StoredTensor) -> torch.Tensor:
    """The tensor's values in its stored dtype, read with plain file reads into memory of its own."""
    raw = torch.empty(stored.nbytes, dtype=torch.uint8)
    with open(stored.file, "rb") as handle:
        handle.seek(stored.start)
        view = memoryview(raw.numpy())
        done = 0
        while done < len(view):
            got = handle.readinto(view[done:])
            if not got:
                raise NotPlainLayout(f"{stored.file.name} ends before its tensors do")
            done += got
    return raw.view(stored.dtype).reshape(stored.shape)


def counted_reader(stored: dict[str, StoredTensor], total: int, stage: str, progress: Progress | None):
    """read(name): that tensor (read_tensor), with `progress` told the bytes read so far of `total`, under `stage`."""
    done = 0

    def read(name: str) -> torch.Tensor:
        nonlocal done
        tensor = read_tensor(stored[name])
        done += stored[name].nbytes
        if progress is not None:
            progress(done, total, stage)
        return tensor

    return read
