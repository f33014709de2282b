"""The product both CPU choices time: one row through a decode-sized fp32 Linear, the fastest of a few runs.

engine/model/quant.py times it in fp32 and int8 on one thread; engine/model/threads.py times
the chosen kind on 1 and more threads. The fastest, as engine/model/cpu_speed.py takes it:
other processes only ever add time.
"""

from __future__ import annotations

import contextlib
import time

# a decode-shaped product: one row through Qwen3-1.7B's MLP up-projection
_IN, _OUT = 2048, 6144


def decode_layer():
    """A 2048 -> 6144 fp32 Linear (Qwen3-1.7B's MLP up-projection) with fixed random weights, in a Sequential."""
    import torch

    generator = torch.Generator().manual_seed(0)
    # built 1 x 1 and given its weight: nn.Linear's own kaiming init of 12.6M weights takes longer than the
    # timing itself, and skip_init's meta device imports sympy (almost a second)
    layer = torch.nn.Linear(1, 1, bias=False)
    layer.in_features, layer.out_features = _IN, _OUT
    layer.weight = torch.nn.Parameter(torch.randn(_OUT, _IN, generator=generator) * 0.02, requires_grad=False)
    return torch.nn.Sequential(layer)


def time_layer(layer, repeats: int = 15) -> float:
    """The fastest of `repeats` timings, in seconds, of one row through `layer` (a decode step's shape)."""
    import torch

    x = torch.randn(1, _IN, generator=torch.Generator().manual_seed(1))
    times = []
    with torch.no_grad():
        layer(x)  # the first call pays for kernel selection
        for _ in range(repeats):
            started = time.perf_counter()
            layer(x)
            times.append(time.perf_counter() - started)
    return min(times)


@contextlib.contextmanager
def one_thread():
    """Run the block on one torch thread, then restore the count."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
