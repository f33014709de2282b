"""This engine against llama.cpp on the same model: prefill and decode speed, 1 and 2 threads, peak memory.

    python bench/bench_peer.py --arch qwen3-0.6b|qwen3-1.7b [--tokens 32] [--runs 3] [--work DIR] [--torch-ops]
                               [--transformers-load] [--read-int8]

Builds the sized folder (bench/make_sized_model.py: the published architecture, random bf16
weights) and its Q8_0 GGUF (bench/gguf_export.py) in `--work` (a temporary folder unless given;
an existing folder there is reused), then times, in one run:

    llama.cpp     llama_cpp.Llama on the Q8_0 GGUF, in-process (what a user of llama.cpp or
                  ollama runs on a laptop): `eval` of the prompt (prefill), then greedy
                  tokens one `eval` at a time (decode)
    this engine   engine.model.loading.load_model on the folder, at the setting its own probes
                  choose on this CPU (int8, bf16 or fp32: engine/model/quant.py), through its
                  own decode loop (engine/model/decode.py, top-5 kept per step as the pages do,
                  no prefix reuse, no stop token so both make exactly `--tokens` tokens)

each with 1 and 2 threads (QWEN_THREADS / n_threads), each engine and thread count in a
subprocess of its own so its peak resident memory (ru_maxrss) is its own. The prompt is lesson
3's (the strawberry question with its two tools, native style), the same token ids for both.
Per setting: prefill tokens/s (prompt tokens / prompt time) and decode tokens/s (tokens after
the first / their time), medians over `--runs`, plus load seconds and peak RSS. `ratios` divide
this engine's best speed (over thread counts) by llama.cpp's best: above 1 is faster.
`--torch-ops` also times this engine with its decode steps' small operations as torch ops
(QWEN_NATIVE_STEP=0, `engine_torch_ops`), and `ratios.decode_speed_native_step_vs_torch_ops`.
`--transformers-load` also times this engine loaded the way an int8 model was before
engine/model/int8_load.py (transformers' from_pretrained in the checkpoint's dtype, then each
Linear quantized: `engine_transformers_load`), and `ratios.peak_memory_int8_read_vs_transformers_load`.
`--read-int8` also times this engine reading the checkpoint into torch's int8 Linear at every load, as before
weights were prepared once (QWEN_PREPARED=0: `engine_read_int8`), and `ratios.load_seconds_prepared_vs_read_int8`,
`decode_speed_prepared_vs_read_int8` and `peak_memory_prepared_vs_read_int8`.

Loads: each worker reports `import_seconds` (llama_cpp, or torch and this engine's modules), `load_seconds`
(the model, after those imports) and `first_token_from_start_s` (from the worker's start to its first token).
This engine keeps its remembered probes and native step in a cache folder of the run's own: `engine_first_load`
is a worker on that folder empty (a machine's first load), every other worker a warm load.
`ratios.load_seconds_warm_vs_llama_cpp`, `load_seconds_first_vs_llama_cpp` and
`first_token_from_start_vs_llama_cpp` compare the fastest of each.

The weights are random: speed and memory only, never content. Timings on a shared machine are
noisy; `load_average` is in the output. 1.7B needs about 7 GB of RAM for the fp32 engine.
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# as early as this script reads the clock (after the standard library's imports, a few ms): a worker's time to its
# first token counts from here
STARTED = time.perf_counter()

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

ENGINES = ("llama_cpp", "engine")
THREADS = (1, 2)
# set by --transformers-load for its worker: the int8 load goes through transformers, not the tensor-by-tensor reader
TRANSFORMERS_LOAD = "BENCH_TRANSFORMERS_LOAD"


def lesson_prompt_ids() -> list[int]:
    """Lesson 3's prompt as the site renders it (native style, its two tools)."""
    from engine.core.prompt import Request, render

    tools = json.loads((ROOT / "lessons" / "tools" / "strawberry.json").read_text(encoding="utf-8"))
    request = Request([{"role": "user", "content": "How many times does the letter r appear in strawberry?"}], tools)
    return render(request).ids


def peak_rss_mb() -> float:
    """This process's peak resident memory: VmHWM, whose count starts afresh at exec, where Linux has it.

    Not ru_maxrss: Linux carries it over from the forking parent through exec, so a worker started
    by a run that had just built the sized folder reported the builder's peak."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def time_llama_cpp(gguf: str, ids: list[int], tokens: int, runs: int, threads: int) -> dict:
    """Prefill and greedy decode with llama_cpp.Llama, `runs` times after one warm-up."""
    began = time.perf_counter()
    import llama_cpp
    import numpy as np

    imported = time.perf_counter() - began
    started = time.perf_counter()
    llm = llama_cpp.Llama(
        gguf,
        n_ctx=len(ids) + tokens + 16,
        n_batch=512,
        n_threads=threads,
        n_threads_batch=threads,
        logits_all=False,
        verbose=False,
    )
    load = time.perf_counter() - started

    def once() -> tuple[float, float]:
        llm.reset()
        began = time.perf_counter()
        llm.eval(ids)
        prefill = time.perf_counter() - began
        began = time.perf_counter()
        for _ in range(tokens - 1):
            chosen = int(np.argmax(llm.scores[llm.n_tokens - 1]))
            llm.eval([chosen])
        return prefill, time.perf_counter() - began

    # warm-up: the first eval maps the weights in; its prefill's end is this process's first token
    prefill, _ = once()
    first_token = started - STARTED + load + prefill
    timings = [once() for _ in range(runs)]
    return {
        "setting": "Q8_0 GGUF",
        "import_seconds": round(imported, 2),
        "load_seconds": round(load, 2),
        "first_token_from_start_s": round(first_token, 2),
        "timings": timings,
    }


def time_engine(folder: str, ids: list[int], tokens: int, runs: int, threads: int) -> dict:
    """Prefill and decode through this engine's own loop, at the setting its probes choose, `runs` times after one warm-up."""
    os.environ["QWEN_THREADS"] = str(threads)
    began = time.perf_counter()
    # the compute library and this engine's modules, as llama_cpp's import on the other side: not the load
    import torch  # noqa: F401

    import engine.model.loading as loading
    from engine.core.generation import GenerationSettings
    from engine.model.decode import stream_steps
    from engine.model.loading import load_model

    imported = time.perf_counter() - began
    if os.environ.get(TRANSFORMERS_LOAD) == "1":
        loading.read_int8_if_plain = lambda folder, progress=None: None
        loading.read_lean_if_plain = lambda *args, **kwargs: None
    started = time.perf_counter()
    engine = load_model(folder)
    load = time.perf_counter() - started
    settings = GenerationSettings(max_new_tokens=tokens, top_k=5, reuse_prefix=False, stop_ids=())

    def once() -> tuple[float, float]:
        began = time.perf_counter()
        first = None
        count = 0
        for _ in stream_steps(engine, ids, settings):
            count += 1
            if first is None:
                first = time.perf_counter()  # the prompt's forward pass plus choosing the first token
        if count != tokens:
            raise SystemExit(f"the engine made {count} tokens, not {tokens}")
        return first - began, time.perf_counter() - first

    prefill, _ = once()  # warm-up; its prompt pass and first token end this process's first token
    first_token = started - STARTED + load + prefill
    timings = [once() for _ in range(runs)]
    info = engine.info
    setting = "int8 weights" if info.quant == "int8" else info.dtype
    return {
        "setting": setting,
        "threads_chosen": info.threads,
        "kv_cache": engine.reasons.get("kv_cache"),
        "decode_step": engine.reasons.get("decode_step"),
        "network": type(engine.model).__name__,
        "import_seconds": round(imported, 2),
        "load_seconds": round(load, 2),
        "first_token_from_start_s": round(first_token, 2),
        "timings": timings,
    }


def run_worker(args) -> None:
    """One engine at one thread count, in this process; prints its JSON."""
    ids = json.loads(Path(args.prompt).read_text())
    timer = time_llama_cpp if args.worker == "llama_cpp" else time_engine
    result = timer(args.model, ids, args.tokens, args.runs, args.threads)
    prefill = statistics.median(t[0] for t in result["timings"])
    decode = statistics.median(t[1] for t in result["timings"])
    result.update(
        {
            "threads": args.threads,
            "prompt_tokens": len(ids),
            "tokens": args.tokens,
            "prefill_seconds": round(prefill, 3),
            "prefill_tokens_per_s": round(len(ids) / prefill, 1),
            "decode_ms_per_token": round(1000 * decode / (args.tokens - 1), 1),
            "decode_tokens_per_s": round((args.tokens - 1) / decode, 2),
            "peak_rss_mb": peak_rss_mb(),
            "timings": [[round(a, 3), round(b, 3)] for a, b in result["timings"]],
        }
    )
    print(json.dumps(result))


def build_models(arch: str, work: Path) -> tuple[Path, Path, dict]:
    """The sized folder and its Q8_0 GGUF in `work`, built once (reused when both are there)."""
    from make_sized_model import build_folder, gguf_path

    folder = work / arch
    gguf = gguf_path(folder, "q8_0")
    if folder.is_dir() and gguf.is_file():
        return folder, gguf, {"reused": True}
    if folder.exists():
        import shutil

        shutil.rmtree(folder)
    return folder, gguf, build_folder(arch, folder, "bfloat16", 0, "q8_0")


def measure(
    engine: str, model: Path, prompt: Path, tokens: int, runs: int, threads: int, env: dict | None = None
) -> dict:
    """One worker subprocess's figures, or its error (`env`: more environment for the worker)."""
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--worker",
        engine,
        "--model",
        str(model),
        "--prompt",
        str(prompt),
        "--tokens",
        str(tokens),
        "--runs",
        str(runs),
        "--threads",
        str(threads),
    ]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=3600,
        env={**os.environ, "OMP_NUM_THREADS": str(threads), "PYTHONWARNINGS": "ignore", **(env or {})},
    )
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def best(rows: list[dict], key: str) -> float | None:
    values = [row[key] for row in rows if key in row]
    return max(values) if values else None


def least(rows: list[dict], key: str) -> float | None:
    values = [row[key] for row in rows if key in row]
    return min(values) if values else None


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", choices=("qwen3-0.6b", "qwen3-1.7b"))
    parser.add_argument("--tokens", type=int, default=32, help="tokens to decode per run (at least 2)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per setting, after one warm-up")
    parser.add_argument("--work", type=Path, help="where the folder and GGUF are built (default: a temporary folder)")
    parser.add_argument("--threads", type=int, nargs="*", default=list(THREADS), help="thread counts to time")
    parser.add_argument(
        "--torch-ops",
        action="store_true",
        help="also time this engine with its decode steps in torch ops alone (QWEN_NATIVE_STEP=0)",
    )
    parser.add_argument(
        "--transformers-load",
        action="store_true",
        help="also time this engine with its int8 model loaded through transformers' from_pretrained",
    )
    parser.add_argument(
        "--read-int8",
        action="store_true",
        help="also time this engine reading the checkpoint into torch's int8 Linear at each load (QWEN_PREPARED=0)",
    )
    # the worker's own arguments (one engine, one thread count, in a subprocess)
    parser.add_argument("--worker", choices=ENGINES, help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--prompt", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.tokens < 2 or args.runs < 1:
        raise SystemExit("--tokens must be at least 2 and --runs at least 1")
    if args.worker:
        args.threads = args.threads[0] if isinstance(args.threads, list) else args.threads
        run_worker(args)
        return
    if not args.arch:
        raise SystemExit("--arch is required: qwen3-0.6b or qwen3-1.7b")

    temporary = None
    if args.work is None:
        temporary = tempfile.TemporaryDirectory(prefix="bench-peer-")
        args.work = Path(temporary.name)
    args.work.mkdir(parents=True, exist_ok=True)
    folder, gguf, built = build_models(args.arch, args.work)
    prompt = args.work / "prompt.json"
    ids = lesson_prompt_ids()
    prompt.write_text(json.dumps(ids))
    # the engine's probes and native step are kept in a cache of the run's own: its first worker finds it empty
    # (a machine's first load), every later one finds what it left (a warm load)
    cache = {"XDG_CACHE_HOME": str(args.work / "cache")}
    if (args.work / "cache").exists():
        import shutil

        shutil.rmtree(args.work / "cache")
    first = measure("engine", folder, prompt, args.tokens, 1, args.threads[0], {**cache, "QWEN_THREADS": "auto"})
    results: dict[str, list[dict]] = {engine: [] for engine in ENGINES}
    if args.torch_ops:
        results["engine_torch_ops"] = []
    if args.transformers_load:
        results["engine_transformers_load"] = []
    if args.read_int8:
        results["engine_read_int8"] = []
    # interleaved by thread count, so a burst of load from other processes falls on every engine alike
    for threads in args.threads:
        for engine in ENGINES:
            model = gguf if engine == "llama_cpp" else folder
            results[engine].append(measure(engine, model, prompt, args.tokens, args.runs, threads, cache))
        if args.torch_ops:
            results["engine_torch_ops"].append(
                measure("engine", folder, prompt, args.tokens, args.runs, threads, {**cache, "QWEN_NATIVE_STEP": "0"})
            )
        if args.transformers_load:
            results["engine_transformers_load"].append(
                measure("engine", folder, prompt, args.tokens, args.runs, threads, {**cache, TRANSFORMERS_LOAD: "1"})
            )
        if args.read_int8:
            results["engine_read_int8"].append(
                measure("engine", folder, prompt, args.tokens, args.runs, threads, {**cache, "QWEN_PREPARED": "0"})
            )
    ratios = {}
    for name, key in (
        ("decode_speed_vs_llama_cpp_q8_0", "decode_tokens_per_s"),
        ("prefill_speed_vs_llama_cpp_q8_0", "prefill_tokens_per_s"),
    ):
        ours, theirs = best(results["engine"], key), best(results["llama_cpp"], key)
        ratios[name] = round(ours / theirs, 3) if ours and theirs else None
    # loads: the fastest of each side's workers (the engine's after its first, whose cache was empty)
    loads = least(results["engine"], "load_seconds"), least(results["llama_cpp"], "load_seconds")
    ratios["load_seconds_warm_vs_llama_cpp"] = round(loads[0] / loads[1], 2) if all(loads) else None
    ratios["load_seconds_first_vs_llama_cpp"] = (
        round(first["load_seconds"] / loads[1], 2) if "load_seconds" in first and loads[1] else None
    )
    starts = (
        least(results["engine"], "first_token_from_start_s"),
        least(results["llama_cpp"], "first_token_from_start_s"),
    )
    ratios["first_token_from_start_vs_llama_cpp"] = round(starts[0] / starts[1], 2) if all(starts) else None
    memory = best(results["engine"], "peak_rss_mb"), best(results["llama_cpp"], "peak_rss_mb")
    ratios["peak_memory_vs_llama_cpp_q8_0"] = round(memory[0] / memory[1], 2) if all(memory) else None
    if args.torch_ops:
        ours, ops = (
            best(results["engine"], "decode_tokens_per_s"),
            best(results["engine_torch_ops"], "decode_tokens_per_s"),
        )
        ratios["decode_speed_native_step_vs_torch_ops"] = round(ours / ops, 3) if ours and ops else None
    if args.transformers_load:
        before = best(results["engine_transformers_load"], "peak_rss_mb")
        ratios["peak_memory_int8_read_vs_transformers_load"] = (
            round(memory[0] / before, 2) if memory[0] and before else None
        )
    if args.read_int8:
        read = results["engine_read_int8"]
        for name, pick, key in (
            ("load_seconds_prepared_vs_read_int8", least, "load_seconds"),
            ("decode_speed_prepared_vs_read_int8", best, "decode_tokens_per_s"),
            ("peak_memory_prepared_vs_read_int8", best, "peak_rss_mb"),
        ):
            ours, before = pick(results["engine"], key), pick(read, key)
            ratios[name] = round(ours / before, 3) if ours and before else None
    print(
        json.dumps(
            {
                "arch": args.arch,
                "prompt_tokens": len(ids),
                "tokens": args.tokens,
                "runs": args.runs,
                "cpu_count": os.cpu_count(),
                "load_average": [round(x, 2) for x in os.getloadavg()],
                "gguf_bytes": gguf.stat().st_size,
                "built": built,
                "engine_first_load": first,
                **results,
                "ratios": ratios,
            },
            indent=1,
        )
    )
    if temporary is not None:
        temporary.cleanup()


if __name__ == "__main__":
    main()
