"""fp32 against bf16 weights on this CPU: the matmul timing the engine decides by, and whole decode steps of a model.

    python bench/bench_dtype.py [--model DIR] [--steps 3] [--prompt-tokens 16]

1. engine.model.cpu_speed.cpu_dtype(): the measurement that picks the CPU's default dtype at load
   (a decode-shaped and a prompt-shaped 2048-wide matmul), with the choice and its reason.
2. With `--model` (a folder from bench/make_sized_model.py, say): the model loaded in each
   dtype in turn, a short prompt read, then `--steps` greedy decode steps through the loop;
   seconds for the prompt and median ms per decode step, side by side, and the ratio.
   A short prompt keeps an emulated bf16 (which can be 50-100 times slower) within minutes.

Prints one JSON object, with the machine's load.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from engine.core.generation import GenerationSettings
from engine.model.cpu_speed import cpu_dtype  # noqa: E402
from engine.model.decode import stream_steps  # noqa: E402
from engine.model.loading import load_weights  # noqa: E402


def time_model(folder: str, dtype: str, steps: int, prompt_tokens: int) -> dict:
    started = time.perf_counter()
    engine = load_weights(folder, "cpu", dtype)
    load = time.perf_counter() - started
    ids = engine.tokenizer.encode("How many times does the letter r appear in strawberry? " * 8)[:prompt_tokens]
    settings = GenerationSettings(max_new_tokens=steps + 1, top_k=5, reuse_prefix=False, stop_ids=())
    stamps = [time.perf_counter()]
    for _ in stream_steps(engine, ids, settings):
        stamps.append(time.perf_counter())
    gaps = [b - a for a, b in zip(stamps[1:], stamps[2:], strict=False)]
    del engine
    gc.collect()
    return {
        "load_s": round(load, 1),
        "prompt_tokens": len(ids),
        "prompt_s": round(stamps[1] - stamps[0], 2),
        "ms_per_step": round(1000 * statistics.median(gaps), 1),
        "steps": [round(1000 * g, 1) for g in gaps],
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--prompt-tokens", type=int, default=16)
    args = parser.parse_args(argv)
    load = [round(x, 2) for x in os.getloadavg()]
    started = time.perf_counter()
    choice = cpu_dtype()
    report = {"matmul": {**choice.as_json(), "seconds": round(time.perf_counter() - started, 2)}}
    if args.model:
        runs = {
            dtype: time_model(args.model, dtype, args.steps, args.prompt_tokens) for dtype in ("float32", "bfloat16")
        }
        runs["bf16_over_fp32"] = {
            "prompt": round(runs["bfloat16"]["prompt_s"] / runs["float32"]["prompt_s"], 2),
            "decode_step": round(runs["bfloat16"]["ms_per_step"] / runs["float32"]["ms_per_step"], 2),
        }
        report["model"] = {"folder": args.model, **runs}
    report["machine"] = {
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "load_average_before": load,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
