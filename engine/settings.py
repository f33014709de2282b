"""Settings shared by the engine, read once from the environment, in one dataclass."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "assets"
LESSONS = ROOT / "lessons"
VENDORED_TOKENIZER = ASSETS / "qwen3-tokenizer"
DEFAULT_MODEL = "Qwen/Qwen3-1.7B"
BUILTIN = (
    "builtin"  # the model the project trains and ships (engine/train), named by --model builtin and QWEN_MODEL=builtin
)
BUILTIN_FOLDER = ASSETS / "builtin-model"


@dataclass(frozen=True)
class Settings:
    # hub id or local folder of the live model (or "builtin", the shipped model); QWEN_MODEL overrides the default
    model: str = field(default_factory=lambda: os.environ.get("QWEN_MODEL") or DEFAULT_MODEL)
    # whether QWEN_MODEL names the model: without it, the site starts on the shipped model unless Qwen3 is cached
    model_chosen: bool = field(default_factory=lambda: bool(os.environ.get("QWEN_MODEL")))
    # another tokenizer than the vendored copy: QWEN_TOKENIZER, else the model's own folder or cached
    # id (QWEN_MODEL); None means the vendored files (every Qwen3 size shares one tokenizer)
    tokenizer: str | None = field(
        default_factory=lambda: os.environ.get("QWEN_TOKENIZER") or _model_tokenizer(os.environ.get("QWEN_MODEL"))
    )
    # where the live model runs: auto (a GPU when there is one), cpu, cuda or mps (QWEN_DEVICE)
    device: str = field(default_factory=lambda: os.environ.get("QWEN_DEVICE") or "auto")
    # the live model's weights: auto (chosen for the device), float32, bfloat16 or float16 (QWEN_DTYPE)
    dtype: str = field(default_factory=lambda: os.environ.get("QWEN_DTYPE") or "auto")
    # the live model's weights on a CPU: auto (int8 where a timing shows it pays), int8 or none (QWEN_QUANT)
    quant: str = field(default_factory=lambda: (os.environ.get("QWEN_QUANT") or "auto").strip())
    # torch threads for a model on a CPU: auto (1 or torch's default, chosen by a timing at load) or a count (QWEN_THREADS)
    threads: str = field(default_factory=lambda: (os.environ.get("QWEN_THREADS") or "auto").strip())
    # the thread count's timing is remembered per machine (engine/model/remembered.py); QWEN_REPROBE=1 times it again
    reprobe: bool = field(default_factory=lambda: os.environ.get("QWEN_REPROBE", "").strip() == "1")
    # a CPU Qwen3 runs through the compact forward of engine/model/fast_forward.py; QWEN_FAST_DECODE=0 keeps
    # transformers' own forward (read when a loaded model first runs)
    fast_decode: bool = field(default_factory=lambda: os.environ.get("QWEN_FAST_DECODE", "1").strip() != "0")
    # that forward's key/value cache: auto (an int8 model's in bf16 where a timing shows it pays, else the
    # model's own dtype), float32 or bfloat16 (QWEN_KV_DTYPE)
    kv_dtype: str = field(default_factory=lambda: (os.environ.get("QWEN_KV_DTYPE") or "auto").strip())
    # that forward's decode steps run their small operations in C (engine/model/native_step.c, compiled at first
    # use); QWEN_NATIVE_STEP=0 keeps them torch ops
    native_step: bool = field(default_factory=lambda: os.environ.get("QWEN_NATIVE_STEP", "1").strip() != "0")
    # an int8 load on a CPU maps weights prepared once per folder (engine/model/int8_prepared.py), kept in
    # QWEN_PREPARED_DIR (default ~/.cache/qwen-tool-explainer/prepared); QWEN_PREPARED=0 reads the checkpoint instead
    prepared: bool = field(default_factory=lambda: os.environ.get("QWEN_PREPARED", "1").strip() != "0")
    prepared_dir: str = field(default_factory=lambda: os.environ.get("QWEN_PREPARED_DIR", "").strip())
    # an OpenAI-compatible server (vLLM, SGLang, llama.cpp) that runs the model instead of this process,
    # e.g. http://gpu-box:8000/v1 (QWEN_ENGINE_URL); None = the local model
    engine_url: str | None = field(default_factory=lambda: (os.environ.get("QWEN_ENGINE_URL") or "").strip() or None)
    # seconds a request to that server may wait for its answer before the panel says it is too slow (QWEN_ENGINE_TIMEOUT)
    engine_timeout: float = field(default_factory=lambda: float(os.environ.get("QWEN_ENGINE_TIMEOUT") or 120))
    # run_tests without bubblewrap or Landlock (the audit hook alone): only on a single-user machine,
    # since a test could then read any file the server can; QWEN_SANDBOX_WEAK=1 allows it
    sandbox_weak: bool = field(default_factory=lambda: os.environ.get("QWEN_SANDBOX_WEAK", "") == "1")
    # how many run_tests go at once on this server; the others wait for a free slot (QWEN_SANDBOX_SLOTS)
    sandbox_slots: int = field(default_factory=lambda: min(16, _positive(os.environ.get("QWEN_SANDBOX_SLOTS"), 4)))
    # memory for the KV caches of prompts' shared prefixes, per loaded model (QWEN_PREFIX_CACHE_MB; "" = default, 0 = off)
    prefix_cache_mb: str = field(default_factory=lambda: os.environ.get("QWEN_PREFIX_CACHE_MB", "").strip())
    # warm the tokenizer and the shipped grammars in the background when the server starts (QWEN_WARMUP=0: don't)
    warmup: bool = field(default_factory=lambda: os.environ.get("QWEN_WARMUP", "1").strip() != "0")


def _positive(text: str | None, default: int) -> int:
    try:
        return max(1, int(text)) if text and len(text) < 6 else default
    except ValueError:
        return default


def _model_tokenizer(model: str | None) -> str | None:
    # the tiny model is built in memory, and the shipped model's folder holds no tokenizer: both use the vendored one
    return None if model in (None, "", "tiny", BUILTIN) else model


def load_settings() -> Settings:
    """The settings in force now (environment read at call time)."""
    return Settings()
