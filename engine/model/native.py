"""The native decode step's small operations (engine/model/native_step.c), compiled at first use and loaded with ctypes.

The C file is compiled once per machine with the C compiler Python was built with (`cc` on a
fresh Debian) into the user's cache folder, keyed by a hash of the source, the flags and torch's
version, so a changed file or another CPU's flags build anew. Its parallel loop links against the
OpenMP runtime torch ships (its own libgomp), so it shares torch's threads rather than starting a
second pool on the same cores. The instruction sets are the ones /proc/cpuinfo lists (never
-march=native, which once built code a CPU of this kind could not run).

Where there is no compiler, or the build fails, `native_library()` says why in `NativeLibrary.reason`
and the compact forward keeps its torch ops; QWEN_NATIVE_STEP=0 turns it off (engine/settings.py).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
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


def build_library() -> NativeLibrary:
    """Compile native_step.c (or find it compiled) and load it."""
    if not load_settings().native_step:
        return NativeLibrary(None, "QWEN_NATIVE_STEP=0")
    if not sys.platform.startswith("linux"):
        return NativeLibrary(None, f"the native step is built on Linux only, not {sys.platform}")
    cc = compiler()
    if cc is None:
        return NativeLibrary(None, "no C compiler (cc or gcc) on the PATH to build native_step.c")
    openmp = torch_openmp()
    folder = cache_folder()
    target = folder / f"native_step-{_key(build_commands(cc, openmp, Path('native_step.so')))}.so"
    if not target.exists():
        try:
            folder.mkdir(parents=True, exist_ok=True)
            # built beside its final name and renamed into place: two processes building at once never load half a file
            with tempfile.TemporaryDirectory(dir=folder) as scratch:
                partial = Path(scratch) / target.name
                for command in build_commands(cc, openmp, partial):
                    done = subprocess.run(command, capture_output=True, text=True, timeout=_BUILD_SECONDS, check=False)
                    if done.returncode != 0:
                        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
                        return NativeLibrary(None, f"{Path(cc).name} could not build {SOURCE.name}: {' / '.join(tail)}")
                os.replace(partial, target)
        except (OSError, subprocess.TimeoutExpired) as error:
            return NativeLibrary(None, f"building {SOURCE.name} failed: {error}")
    try:
        lib = ctypes.CDLL(str(target))
    except OSError as error:
        return NativeLibrary(None, f"the built {SOURCE.name} would not load: {error}")
    _declare(lib)
    runtime = "" if openmp is not None else "; on one thread: torch ships no OpenMP runtime here"
    return NativeLibrary(lib, f"norms, attention and the MLP's gate in C between torch's products ({SOURCE.name}, "
                              f"built on this machine{runtime})")


def _declare(lib: ctypes.CDLL) -> None:
    p, i, f, n = ctypes.c_void_p, ctypes.c_int, ctypes.c_float, ctypes.c_long
    lib.add_norm.argtypes = [p, p, p, p, i, f]
    lib.add_norm.restype = None
    lib.silu_mul.argtypes = [p, p, i]
    lib.silu_mul.restype = None
    lib.attend_step.argtypes = [p, p, p, p, p, i, n, i, i, i, i, f, f, p, i]
    lib.attend_step.restype = i


_build_lock = threading.Lock()


@functools.lru_cache(maxsize=1)
def native_library() -> NativeLibrary:
    """The native step library of this process, built or found on first call (one build at a time)."""
    with _build_lock:
        return build_library()


def attend_layer(lib: ctypes.CDLL, qkv: torch.Tensor, qk_norm: torch.Tensor, cos_row: int, sin_row: int, cache: torch.Tensor,
                 layer: int, past: int, heads: int, eps: float, scale: float, out: torch.Tensor, threads: int) -> None:
    """native_step.c's attend_step for `layer` of `cache` (layers, 2, kv heads, capacity, head_dim; fp32 or bf16),
    the new token at `past`; `cos_row` and `sin_row` are the addresses of the rotary table's rows for it."""
    _, _, kv_heads, capacity, head_dim = cache.shape
    address = cache.data_ptr() + layer * cache.stride(0) * cache.element_size()
    if lib.attend_step(qkv.data_ptr(), qk_norm.data_ptr(), cos_row, sin_row, address, int(cache.dtype == torch.bfloat16),
                       capacity, past, heads, kv_heads, head_dim, eps, scale, out.data_ptr(), threads):
        raise MemoryError(f"the native decode step could not allocate its attention buffers at {past + 1} tokens")
