"""The native decode step's small operations (engine/model/native_step.c), compiled at first use and loaded with ctypes.

The C file is compiled once per machine with the C compiler Python was built with (`cc` on a
fresh Debian) into the user's cache folder, keyed by a hash of the source, the flags and torch's
version, so a changed file or another CPU's flags build anew. A library is native code run inside
the server, so the cache is trusted only as far as it is the server's own: its two folders must be
real folders (no symlink followed) that the server's user owns and no one else may write (made
0700), and a library is loaded only when its sha256 is the one recorded beside it when this code
built it; anything else is built again. Its parallel loop links against the
OpenMP runtime torch ships (its own libgomp), so it shares torch's threads rather than starting a
second pool on the same cores. The instruction sets are the ones /proc/cpuinfo lists (never
-march=native, which once built code a CPU of this kind could not run).

Where there is no compiler, or the build fails, `native_library()` says why in `NativeLibrary.reason`
and the compact forward keeps its torch ops; QWEN_NATIVE_STEP=0 turns it off (engine/settings.py).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import hashlib
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import torch

from ..settings import load_settings

SOURCE = Path(__file__).with_name("native_step.c")
# instruction sets passed to the compiler when /proc/cpuinfo lists them (the loops are plain C either way)
_ISA_FLAGS = {"avx2": "-mavx2", "fma": "-mfma", "f16c": "-mf16c"}
_BUILD_SECONDS = 120


@dataclass
class NativeLibrary:
    """The loaded library (None where it could not be built) and, in words, why or why not."""

    lib: ctypes.CDLL | None
    reason: str


def cache_folder() -> Path:
    """Where built libraries are kept: $XDG_CACHE_HOME (or ~/.cache)/qwen-tool-explainer/native."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "qwen-tool-explainer" / "native"


def cpu_flags() -> set[str]:
    """The instruction-set flags the first CPU lists in /proc/cpuinfo (empty where there is no such file)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def torch_openmp() -> Path | None:
    """The OpenMP runtime shipped inside torch's wheel (libgomp-*.so*), None where torch brings none."""
    folder = Path(torch.__file__).parent / "lib"
    found = sorted(folder.glob("libgomp*.so*"))
    return found[0] if found else None


def compiler() -> str | None:
    """The C compiler: $CC, else the one Python was built with, else cc or gcc on the PATH."""
    for name in (os.environ.get("CC"), (sysconfig.get_config_var("CC") or "").split(" ")[0], "cc", "gcc"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def build_commands(cc: str, openmp: Path | None, output: Path) -> list[list[str]]:
    """The command lines that compile native_step.c to an object and link it into `output`."""
    flags = cpu_flags()
    isa = [flag for name, flag in _ISA_FLAGS.items() if name in flags]
    obj = output.with_suffix(".o")
    # -fopenmp-simd: the loops' simd pragmas alone, where there is no runtime to share
    pragmas = "-fopenmp" if openmp is not None else "-fopenmp-simd"
    compile_ = [cc, "-O3", "-std=gnu11", "-fPIC", pragmas, "-fno-math-errno", *isa, "-c", str(SOURCE), "-o", str(obj)]
    # linked without -fopenmp, so the runtime is torch's copy (named here), not the system's libgomp
    runtime = [str(openmp), f"-Wl,-rpath,{openmp.parent}"] if openmp is not None else []
    link = [cc, "-shared", str(obj), "-o", str(output), *runtime, "-lmvec", "-lm"]
    return [compile_, link]


def _key(commands: list[list[str]]) -> str:
    digest = hashlib.sha256(SOURCE.read_bytes())
    digest.update(repr(commands).encode())
    digest.update(torch.__version__.encode())
    return digest.hexdigest()[:16]


class UnsafeCache(OSError):
    """The cache folder is not the server's own (another user's, open to others, or a symlink)."""


def open_private_folder(parent: int, path: Path) -> int:
    """A descriptor of the folder `path` (its last name read in `parent`, a descriptor): made 0700 where
    missing, never followed through a symlink, and refused unless this user owns it and no one else may
    write in it."""
    name = path.name
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, 0o700, dir_fd=parent)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR):
            raise UnsafeCache(error.errno, f"{path} is a symlink or not a folder; remove it") from None
        raise
    info = os.fstat(fd)
    problem = (
        f"belongs to another user (uid {info.st_uid})"
        if info.st_uid != os.geteuid()
        else f"may be written by other users (mode {stat.S_IMODE(info.st_mode):o})"
        if info.st_mode & 0o022
        else None
    )
    if problem:
        os.close(fd)
        raise UnsafeCache(errno.EPERM, f"{path} {problem}; remove it, or set XDG_CACHE_HOME to a folder of your own")
    if info.st_mode & 0o077:
        os.fchmod(fd, 0o700)
    return fd


def open_cache(folder: Path) -> int:
    """A descriptor of `folder` (cache_folder()): its two last folders this user's own, made where missing."""
    os.makedirs(folder.parent.parent, exist_ok=True)
    top = os.open(folder.parent.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        middle = open_private_folder(top, folder.parent)
    finally:
        os.close(top)
    try:
        return open_private_folder(middle, folder)
    finally:
        os.close(middle)


def read_own_file(folder: int, name: str) -> bytes | None:
    """A regular file in the cache that this user owns and no one else may write, whole; None where there is none."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
            return None
        with os.fdopen(os.dup(fd), "rb") as handle:
            return handle.read()
    finally:
        os.close(fd)


def write_own_file(folder: int, name: str, data) -> None:
    """`data` (bytes, or an iterable of byte chunks) as `name` in the cache: written beside it under a fresh name
    and renamed into place."""
    partial = f".partial-{os.getpid()}-{threading.get_ident()}-{name}"
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            for piece in [data] if isinstance(data, (bytes, bytearray, memoryview)) else data:
                handle.write(piece)
        os.replace(partial, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial, dir_fd=folder)
        raise


def _compile(cc: str, openmp: Path | None) -> tuple[bytes | None, str]:
    """The library built from the shipped source in a private scratch folder: its bytes, or None and why."""
    with tempfile.TemporaryDirectory(prefix="native-step-") as scratch:
        built = Path(scratch) / "native_step.so"
        for command in build_commands(cc, openmp, built):
            done = subprocess.run(command, capture_output=True, text=True, timeout=_BUILD_SECONDS, check=False)
            if done.returncode != 0:
                tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
                return None, f"{Path(cc).name} could not build {SOURCE.name}: {' / '.join(tail)}"
        return built.read_bytes(), ""


def build_library() -> NativeLibrary:
    """Compile native_step.c (or find it compiled, and unchanged since) and load it."""
    if not load_settings().native_step:
        return NativeLibrary(None, "QWEN_NATIVE_STEP=0")
    if not sys.platform.startswith("linux"):
        return NativeLibrary(None, f"the native step is built on Linux only, not {sys.platform}")
    cc = compiler()
    if cc is None:
        return NativeLibrary(None, "no C compiler (cc or gcc) on the PATH to build native_step.c")
    openmp = torch_openmp()
    name = f"native_step-{_key(build_commands(cc, openmp, Path('native_step.so')))}.so"
    record = name + ".sha256"
    try:
        folder = open_cache(cache_folder())
    except OSError as error:
        return NativeLibrary(None, f"the native step's cache cannot be used: {error.strerror or error}")
    try:
        data = read_own_file(folder, name)
        recorded = read_own_file(folder, record)
        if data is None or recorded is None or hashlib.sha256(data).hexdigest().encode() != recorded.strip():
            # missing, or not the library this code built and recorded: build it again
            data, why = _compile(cc, openmp)
            if data is None:
                return NativeLibrary(None, why)
            write_own_file(folder, name, data)
            write_own_file(folder, record, hashlib.sha256(data).hexdigest().encode())
        lib = _load_checked(folder, name, hashlib.sha256(data).hexdigest())
    except (OSError, subprocess.TimeoutExpired) as error:
        return NativeLibrary(None, f"building {SOURCE.name} failed: {error}")
    finally:
        os.close(folder)
    if isinstance(lib, str):
        return NativeLibrary(None, lib)
    _declare(lib)
    runtime = "" if openmp is not None else "; on one thread: torch ships no OpenMP runtime here"
    return NativeLibrary(
        lib,
        f"norms, attention and the MLP's gate in C between torch's products ({SOURCE.name}, "
        f"built on this machine{runtime})",
    )


def _load_checked(folder: int, name: str, sha256: str) -> ctypes.CDLL | str:
    """Load `name` through a descriptor whose bytes were just hashed (the same file the loader maps); else why not."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
    try:
        info = os.fstat(fd)
        changed = f"the built {SOURCE.name} changed in the cache before it was loaded; not loaded"
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
            return changed
        digest = hashlib.sha256()
        with os.fdopen(os.dup(fd), "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        if digest.hexdigest() != sha256:
            return changed
        try:
            return ctypes.CDLL(f"/proc/self/fd/{fd}")
        except OSError as error:
            return f"the built {SOURCE.name} would not load: {error}"
    finally:
        os.close(fd)


def _declare(lib: ctypes.CDLL) -> None:
    p, i, f, n = ctypes.c_void_p, ctypes.c_int, ctypes.c_float, ctypes.c_long
    lib.add_norm.argtypes = [p, p, p, p, i, f]
    lib.add_norm.restype = None
    lib.silu_mul.argtypes = [p, p, i]
    lib.silu_mul.restype = None
    lib.attend_step.argtypes = [p, p, p, p, p, i, n, i, i, i, i, f, f, p, i]
    lib.attend_step.restype = i
    lib.int8_rows.argtypes = [p, p, p, p, n, n, n, i]
    lib.int8_rows.restype = i


_build_lock = threading.Lock()


@functools.lru_cache(maxsize=1)
def native_library() -> NativeLibrary:
    """The native step library of this process, built or found on first call (one build at a time)."""
    with _build_lock:
        return build_library()


def attend_layer(
    lib: ctypes.CDLL,
    qkv: torch.Tensor,
    qk_norm: torch.Tensor,
    cos_row: int,
    sin_row: int,
    cache: torch.Tensor,
    layer: int,
    past: int,
    heads: int,
    eps: float,
    scale: float,
    out: torch.Tensor,
    threads: int,
) -> None:
    """native_step.c's attend_step for `layer` of `cache` (layers, 2, kv heads, capacity, head_dim; fp32 or bf16),
    the new token at `past`; `cos_row` and `sin_row` are the addresses of the rotary table's rows for it."""
    _, _, kv_heads, capacity, head_dim = cache.shape
    address = cache.data_ptr() + layer * cache.stride(0) * cache.element_size()
    if lib.attend_step(
        qkv.data_ptr(),
        qk_norm.data_ptr(),
        cos_row,
        sin_row,
        address,
        int(cache.dtype == torch.bfloat16),
        capacity,
        past,
        heads,
        kv_heads,
        head_dim,
        eps,
        scale,
        out.data_ptr(),
        threads,
    ):
        raise MemoryError(f"the native decode step could not allocate its attention buffers at {past + 1} tokens")
