"""How fast this CPU can run a model: whether bf16 weights pay here, and the speed a size can reach.

Two measurements, each taken once per process (well under a second together) and cached:

- `cpu_dtype()`: a matrix product shaped like one decode step (a row times a 2048 x 2048
  weight) and one shaped like a prompt pass (32 rows), in float32 and in bfloat16. bf16 is
  chosen when the processor runs it natively, which shows as the decode step getting faster
  (half the bytes to read) and the prompt pass not getting slower; a CPU that emulates bf16
  (no AVX512-BF16 or AMX, say) is several times slower in bf16, and keeps float32. Decided by
  the timing, never by the processor's name; on x86 Linux, a CPU whose flags list no bf16
  instructions keeps float32 whatever a disturbed timing said. QWEN_DTYPE still overrides
  (engine/model/loading.py).
- `copy_bandwidth()`: a large numpy copy, bytes read plus bytes written per second (as
  STREAM's Copy counts them). Generating one token reads every weight once, so
  weight bytes / bandwidth is the floor of ms per token on this machine (`expected_speed`).

`suggest_small_model()` is what a page shows on a machine with no GPU: Qwen3-0.6B (the same
tokenizer and chat template as 1.7B) and the speed this machine can expect from it.
"""

from __future__ import annotations

import functools
import platform
import time
from dataclasses import asdict, dataclass

# decode-step and prompt-pass shapes: a 2048-wide layer, as Qwen3-1.7B's hidden size
_WIDTH = 2048
_PROMPT_ROWS = 32
# bf16 must make a decode step at least this much faster (native bf16 reads half the bytes: about 0.5-0.7)
_BF16_DECODE_RATIO = 0.85
# and must not make a prompt pass slower than this (an emulated bf16 product is 3-20 times slower)
_BF16_PROMPT_RATIO = 1.1

# Qwen3-0.6B: the parameters of the published architecture (28 layers, hidden 1024, MLP 3072,
# 16/8 heads of 128, vocabulary 151,936, tied embeddings), as bench/make_sized_model.py builds it
SMALL_MODEL = "Qwen/Qwen3-0.6B"
SMALL_MODEL_PARAMETERS = 596_049_920
BYTES_PER_PARAMETER = {"float32": 4, "bfloat16": 2, "float16": 2}


@dataclass(frozen=True)
class DtypeChoice:
    """The dtype for weights on this CPU and the timings that chose it (the fastest of each, in microseconds)."""

    dtype: str  # "bfloat16" or "float32"
    decode_us: dict  # {"float32": us, "bfloat16": us}: one row times a 2048 x 2048 weight
    prompt_us: dict  # the same with 32 rows (measured only when the decode step gains)
    reason: str

    def as_json(self) -> dict:
        return asdict(self)


def _time_matmul(dtype, rows: int, repeats: int, give_up: float = float("inf")) -> float:
    """The fastest of `repeats` timings, in seconds, of one (rows x 2048) x (2048 x 2048) linear layer
    in `dtype`; after the first timed product, stops early (returning that time) when it already took
    more than `give_up` seconds.

    The fastest, not the median: other processes only ever add time to a product. That alone does
    not make a busy machine's timing honest (with three busy processes on this 2-core machine, the
    fastest float32 product still came out slower than emulated bf16 in some measurements, since
    its two threads wait for each other), hence cpu_dtype's check of the CPU's flags."""
    import torch
    from torch.nn.functional import linear

    generator = torch.Generator().manual_seed(0)
    # as a model's nn.Linear holds it, (out, in), and through the same call: `x @ w` on a plain
    # (in, out) matrix takes another kernel, which for bf16 was 60 times slower here than linear's
    weight = torch.randn(_WIDTH, _WIDTH, generator=generator).to(dtype)
    x = torch.randn(rows, _WIDTH, generator=generator).to(dtype)
    with torch.no_grad():
        linear(x, weight)  # the first call pays for kernel selection
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            linear(x, weight)
            times.append(time.perf_counter() - started)
            if times[0] > give_up:
                # an emulated kernel: one product says enough (it can be 100 times slower)
                break
    return min(times)


@functools.lru_cache(maxsize=1)
def cpu_dtype() -> DtypeChoice:
    """bfloat16 where this CPU runs it natively (measured), else float32; measured once per process
    (about 0.1 s where bf16 is native; where it is emulated, two bf16 products, then it stops)."""
    import torch

    decode = {"float32": _time_matmul(torch.float32, 1, 15)}
    decode["bfloat16"] = _time_matmul(torch.bfloat16, 1, 15, give_up=2 * decode["float32"])
    decode_ratio = decode["bfloat16"] / decode["float32"]
    prompt, prompt_ratio = {}, None
    if decode_ratio <= _BF16_DECODE_RATIO:
        # a decode step gains: check that reading a prompt does not lose (native kernels gain there too)
        prompt["float32"] = _time_matmul(torch.float32, _PROMPT_ROWS, 5)
        prompt["bfloat16"] = _time_matmul(torch.bfloat16, _PROMPT_ROWS, 5, give_up=2 * prompt["float32"])
        prompt_ratio = prompt["bfloat16"] / prompt["float32"]
    native = decode_ratio <= _BF16_DECODE_RATIO and prompt_ratio is not None and prompt_ratio <= _BF16_PROMPT_RATIO
    reason = f"bf16 takes {decode_ratio:.2f}x the time of fp32 for a decode step"
    if prompt_ratio is not None:
        reason += f" and {prompt_ratio:.2f}x for a prompt pass"
    reason += ": this CPU runs bf16 natively" if native else ": this CPU does not run bf16 faster"
    # a timing on a busy machine can still lie (float32's two threads wait for each other when other
    # processes hold the cores; emulated bf16 runs on one): an x86 CPU without bf16 instructions keeps float32
    if native and listed_bf16_instructions(read_cpu_flags()) is False:
        native = False
        reason += (
            ", but its flags in /proc/cpuinfo list neither avx512_bf16 nor amx_bf16, so bf16 is emulated "
            "here and the timing was disturbed by other processes"
        )
    return DtypeChoice(
        dtype="bfloat16" if native else "float32",
        decode_us={k: round(v * 1e6, 1) for k, v in decode.items()},
        prompt_us={k: round(v * 1e6, 1) for k, v in prompt.items()},
        reason=reason,
    )


def read_cpu_flags() -> str | None:
    """The `flags` line of /proc/cpuinfo on an x86 Linux machine, or None where there is none to read."""
    if platform.system() != "Linux" or platform.machine().lower() not in ("x86_64", "amd64", "i686", "i386"):
        return None
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            return next((line for line in info if line.startswith("flags")), None)
    except OSError:
        return None


def listed_bf16_instructions(flags: str | None) -> bool | None:
    """Whether an x86 flags line lists a bf16 instruction set (AVX512-BF16, AMX-BF16); None when unknown."""
    if not flags:
        return None
    names = set(flags.partition(":")[2].split())
    return bool(names & {"avx512_bf16", "amx_bf16"})


def measure_copy_bandwidth(megabytes: int = 64, repeats: int = 3) -> float:
    """Bytes per second of a large numpy copy (read + write), the best of `repeats`."""
    import numpy as np

    source = np.ones(megabytes * 2**20 // 8, dtype=np.float64)
    target = np.empty_like(source)
    np.copyto(target, source)  # touch every page first
    best = min(_timed_copy(target, source) for _ in range(repeats))
    return 2 * source.nbytes / best


def _timed_copy(target, source) -> float:
    import numpy as np

    started = time.perf_counter()
    np.copyto(target, source)
    return time.perf_counter() - started


@functools.lru_cache(maxsize=1)
def copy_bandwidth() -> float:
    """measure_copy_bandwidth(), once per process."""
    return measure_copy_bandwidth()


@dataclass(frozen=True)
class SpeedEstimate:
    """The floor of ms per token for a model size on this machine: its weight bytes over the copy bandwidth."""

    model: str
    parameters: int
    dtype: str
    weight_bytes: int
    bandwidth_gb_s: float  # measured here, read + write per second, in GB (1e9 bytes)
    ms_per_token: float  # weight bytes / bandwidth: no CPU run can be faster
    tokens_per_second: float

    def as_json(self) -> dict:
        return asdict(self)


def expected_speed(parameters: int, dtype: str, model: str = "", bandwidth: float | None = None) -> SpeedEstimate:
    """What this machine can reach with `parameters` weights in `dtype` (bandwidth measured unless given)."""
    bandwidth = bandwidth or copy_bandwidth()
    weight_bytes = parameters * BYTES_PER_PARAMETER.get(dtype, 4)
    seconds = weight_bytes / bandwidth
    return SpeedEstimate(
        model,
        parameters,
        dtype,
        weight_bytes,
        round(bandwidth / 1e9, 2),
        round(1000 * seconds, 1),
        round(1 / seconds, 1),
    )


def suggest_small_model() -> SpeedEstimate:
    """For a machine with no GPU: Qwen3-0.6B in the dtype this CPU would use, and its expected speed.

    lessons/home.md's "no gpu" section is the sentence a page shows with these figures."""
    return expected_speed(SMALL_MODEL_PARAMETERS, cpu_dtype().dtype, SMALL_MODEL)
