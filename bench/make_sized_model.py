"""Build a model folder with a real Qwen3 size's architecture and random weights, for load, memory and speed only.

    python bench/make_sized_model.py --arch qwen3-1.7b|qwen3-0.6b|tiny --out DIR [--dtype bfloat16] [--seed 0] [--gguf q8_0|f16]

The folder holds what a published Qwen3 checkpoint holds where it matters for speed: the
same config values (hidden size, layers, heads, key/value heads, head_dim, MLP width,
vocabulary, tied embeddings, rope theta, context length; from the published config.json of
Qwen/Qwen3-1.7B and Qwen/Qwen3-0.6B, which transformers' Qwen3Config documents), the same
safetensors layout and bf16 storage as published, and the vendored tokenizer files. The
weights are random (normal, std 0.02, from `--seed`): what it writes means nothing, so it is
for load time, memory and tokens per second, never for content.

`--arch tiny` writes the tests' tiny model (engine/model/loading.py's build_tiny_network, fp32,
the real vocabulary) with the same files. `--gguf q8_0|f16` also writes the folder as one GGUF
for llama.cpp beside it (DIR.q8_0.gguf; bench/gguf_export.py) and prints its path under "gguf".

config.json carries a top-level `"random_weights": true`: the site labels such a folder as
random weights on every panel. Keep that key exactly.

Sizes on disk: 1.7B 3.4 GB in bf16 (1,720,574,976 parameters; 6.9 GB as fp32), 0.6B 1.2 GB. Build
it outside the repository (a temporary folder), once. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from engine.core.tokenizer import END_OF_TEXT, IM_END, MODEL_VOCAB  # noqa: E402
from engine.settings import VENDORED_TOKENIZER  # noqa: E402

# the published config.json values of each size (huggingface.co/Qwen/Qwen3-1.7B, Qwen/Qwen3-0.6B)
ARCHITECTURES = {
    "qwen3-1.7b": {
        "hidden_size": 2048,
        "num_hidden_layers": 28,
        "num_attention_heads": 16,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "intermediate_size": 6144,
    },
    "qwen3-0.6b": {
        "hidden_size": 1024,
        "num_hidden_layers": 28,
        "num_attention_heads": 16,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "intermediate_size": 3072,
    },
}
SHARED = {
    "vocab_size": MODEL_VOCAB,
    "tie_word_embeddings": True,
    "max_position_embeddings": 40960,
    "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"},
    "rms_norm_eps": 1e-6,
    "hidden_act": "silu",
    "attention_bias": False,
    "use_sliding_window": False,
    "max_window_layers": 28,
    "initializer_range": 0.02,
    "bos_token_id": END_OF_TEXT,
    "eos_token_id": IM_END,
    "pad_token_id": END_OF_TEXT,
}
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")
TINY_ARCH = "tiny"  # the tests' tiny model (engine/model/loading.py), not a published size
RANDOM_WEIGHTS_KEY = "random_weights"  # read by the site to label the folder: keep this exact key


def sized_config(arch: str):
    """The Qwen3Config of a published size."""
    from transformers import Qwen3Config

    if arch not in ARCHITECTURES:
        raise SystemExit(f"--arch must be one of {', '.join(ARCHITECTURES)}, not {arch!r}")
    return Qwen3Config(**ARCHITECTURES[arch], **SHARED)


def build_network(arch: str, dtype: str, seed: int):
    """The random-weights Qwen3ForCausalLM of `arch`, built straight in `dtype` (the tiny one as the tests build it)."""
    import torch
    from transformers import Qwen3ForCausalLM

    if arch == TINY_ARCH:
        from engine.model.loading import build_tiny_network

        return build_tiny_network(seed).to(getattr(torch, dtype))
    config = sized_config(arch)
    # build straight in the storage dtype: a 1.7B model in fp32 first would need twice the memory
    before = torch.get_default_dtype()
    torch.set_default_dtype(getattr(torch, dtype))
    try:
        torch.manual_seed(seed)
        return Qwen3ForCausalLM(config).eval()
    finally:
        torch.set_default_dtype(before)


def gguf_path(out: Path, kind: str) -> Path:
    """Where the GGUF of the folder `out` goes: beside it, DIR.q8_0.gguf."""
    return out.with_name(f"{out.name}.{kind}.gguf")


def build_folder(arch: str, out: Path, dtype: str = "bfloat16", seed: int = 0, gguf: str | None = None) -> dict:
    """Write the folder (and its GGUF when `gguf` names a kind); returns what was written (parameters, bytes, seconds)."""
    if arch not in ARCHITECTURES and arch != TINY_ARCH:
        raise SystemExit(f"--arch must be one of {', '.join([*ARCHITECTURES, TINY_ARCH])}, not {arch!r}")
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"{out} exists and is not empty: pass a new folder")
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    model = build_network(arch, dtype, seed)
    parameters = sum(p.numel() for p in model.parameters())
    model.save_pretrained(out)
    del model
    for name in TOKENIZER_FILES:
        shutil.copy(VENDORED_TOKENIZER / name, out / name)
    path = out / "config.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data[RANDOM_WEIGHTS_KEY] = True
    data["dtype"] = dtype
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    weights = sum(p.stat().st_size for p in out.glob("*.safetensors"))
    built = {
        "arch": arch,
        "out": str(out),
        "parameters": parameters,
        "dtype": dtype,
        "safetensors_bytes": weights,
        "seed": seed,
        "seconds": round(time.perf_counter() - started, 1),
        RANDOM_WEIGHTS_KEY: True,
    }
    if gguf:
        from gguf_export import write_gguf

        converting = time.perf_counter()
        built.update(write_gguf(out, gguf_path(out, gguf), gguf))
        built["gguf_seconds"] = round(time.perf_counter() - converting, 1)
    return built


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", required=True, choices=sorted([*ARCHITECTURES, TINY_ARCH]))
    parser.add_argument("--out", required=True, type=Path, help="a new folder, outside the repository")
    parser.add_argument(
        "--dtype",
        choices=("bfloat16", "float32", "float16"),
        help="storage dtype of the safetensors (default: bfloat16 as published; float32 for tiny, as the tests build it)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--gguf", choices=("q8_0", "f16"), help="also write the folder as a GGUF for llama.cpp, beside it"
    )
    args = parser.parse_args(argv)
    dtype = args.dtype or ("float32" if args.arch == TINY_ARCH else "bfloat16")
    print(json.dumps(build_folder(args.arch, args.out, dtype, args.seed, args.gguf), indent=1))


if __name__ == "__main__":
    main()
