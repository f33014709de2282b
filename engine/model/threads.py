"""How many torch threads a CPU model runs on: 1 or torch's default, chosen by a short timing at load.

On a 2-core machine that other processes share, two torch threads wait for each other: a
decode step on 2 threads took 1.3 to 5 times as long as on 1 under load (llama.cpp behaves
alike). So `choose_threads(layer)` times one decode-shaped product through the layer the model
will run (fp32 or int8: engine/model/quant.py builds it) on 1 thread and on torch's default,
the fastest of a few runs each, and keeps more threads only when they take at most
`_MORE_THREADS_RATIO` of one thread's time. QWEN_THREADS overrides (engine/settings.py).

torch's thread count is process-wide: `apply_threads` sets it for every model of the process.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass

from ..errors import BadInput
from ..settings import load_settings

# more threads must make a decode step at least this much faster to be kept
_MORE_THREADS_RATIO = 0.8


@dataclass(frozen=True)
class ThreadChoice:
    """The torch thread count for the model, and why (timings in microseconds, the fastest of each)."""

    threads: int
    reason: str
    decode_us: dict  # {threads: us}; empty when QWEN_THREADS decided

    def as_json(self) -> dict:
        return asdict(self)


@functools.lru_cache(maxsize=1)
def default_threads() -> int:
    """torch's own thread count when this process started choosing (its physical cores, usually)."""
    import torch

    return torch.get_num_threads()


def requested_threads(requested: str | None = None) -> int | None:
    """QWEN_THREADS (or `requested`) as a count, None for auto; BadInput for anything else."""
    text = (requested if requested is not None else load_settings().threads).strip()
    if text in ("", "auto"):
        return None
    if not text.isdigit() or int(text) < 1:
        raise BadInput(f"QWEN_THREADS must be auto or a whole number of threads of at least 1, not {text!r}")
    return int(text)


def choose_threads(layer=None, requested: str | None = None) -> ThreadChoice:
    """1 thread or torch's default for a model that runs `layer`'s kind of product (default an fp32 Linear)."""
    import torch

    from . import probe

    asked = requested_threads(requested)
    if asked is not None:
        return ThreadChoice(asked, f"QWEN_THREADS={asked}", {})
    most = default_threads()
    if most <= 1:
        return ThreadChoice(1, "torch sees one core", {})
    layer = layer if layer is not None else probe.decode_layer()
    before = torch.get_num_threads()
    timings = {}
    try:
        for count in (1, most):
            torch.set_num_threads(count)
            timings[count] = probe.time_layer(layer)
    finally:
        torch.set_num_threads(before)
    ratio = timings[most] / timings[1]
    threads = most if ratio <= _MORE_THREADS_RATIO else 1
    reason = f"a decode step on {most} threads took {ratio:.2f}x the time of 1 thread here: " + (
        f"{most} threads" if threads == most else "1 thread (the cores are shared or too few to gain)"
    )
    return ThreadChoice(threads, reason, {str(k): round(v * 1e6, 1) for k, v in timings.items()})


def apply_threads(choice: ThreadChoice) -> None:
    """Set torch's process-wide thread count to the choice."""
    import torch

    torch.set_num_threads(choice.threads)
