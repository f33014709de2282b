"""Write a Qwen3 model folder (config.json, safetensors, the Qwen3 tokenizer's files) as one GGUF file for llama.cpp.

    from gguf_export import write_gguf
    write_gguf(folder, folder.with_suffix(".q8_0.gguf"), "q8_0")   # or "f16"

A small converter on the `gguf` package (llama.cpp's own Python writer, pinned in
requirements-dev.txt), for the architecture this project uses and nothing else: Qwen3 dense,
tied or untied embeddings. It writes what llama.cpp's convert_hf_to_gguf.py writes for Qwen3:
the `qwen3` architecture's hyperparameters, the tensors under llama.cpp's names (Qwen3 keeps
q/k unpermuted: its rope is NeoX-style), and the tokenizer as `gpt2` BPE with the `qwen2`
pre-tokenizer, every vocabulary row named (rows past the tokenizer's are `[PADn]`, unused), the
added tokens as control (special) or user-defined tokens, the merges, and no BOS added (as
tokenizer_config.json says). Norm weights stay float32; matrices become Q8_0 or float16.

Weights are read one tensor at a time from the safetensors (memory: one tensor plus the writer's
queue; the writer holds the converted tensors until it writes them, so about the GGUF's size).
"""

from __future__ import annotations

import json
from pathlib import Path

KINDS = ("q8_0", "f16")


def read_tokenizer(folder: Path, vocab_size: int) -> dict:
    """Tokens, token types, merges and special ids as llama.cpp's converter derives them from tokenizer.json."""
    import gguf

    data = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    reverse = {index: text for text, index in data["model"]["vocab"].items()}
    added = {row["id"]: row for row in data.get("added_tokens", [])}
    tokens, types = [], []
    for index in range(vocab_size):
        if index in added:
            row = added[index]
            looks_special = row["content"].startswith("<|") and row["content"].endswith("|>")
            tokens.append(row["content"])
            types.append(gguf.TokenType.CONTROL if row["special"] or looks_special else gguf.TokenType.USER_DEFINED)
        elif index in reverse:
            tokens.append(reverse[index])
            types.append(gguf.TokenType.NORMAL)
        else:
            tokens.append(f"[PAD{index}]")
            types.append(gguf.TokenType.UNUSED)
    merges = [m if isinstance(m, str) else " ".join(m) for m in data["model"]["merges"]]
    by_text = {row["content"]: row["id"] for row in added.values()}
    config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    return {
        "tokens": tokens,
        "types": types,
        "merges": merges,
        "eos": by_text.get(config.get("eos_token") or "<|im_end|>"),
        "pad": by_text.get(config.get("pad_token") or "<|endoftext|>"),
        "add_bos": bool(config.get("add_bos_token", False)),
    }


def tensor_kind(name: str, shape: tuple, kind: str):
    """The GGML type a tensor is stored as: 1-D tensors (norms) float32; matrices Q8_0 (rows a multiple of 32) or F16."""
    import gguf

    if len(shape) == 1:
        return gguf.GGMLQuantizationType.F32
    if kind == "q8_0" and shape[-1] % 32 == 0:
        return gguf.GGMLQuantizationType.Q8_0
    return gguf.GGMLQuantizationType.F16


def write_gguf(folder: Path, out: Path, kind: str = "q8_0") -> dict:
    """Convert `folder` to `out` (a .gguf file); returns what was written (path, bytes, tensors, kind)."""
    import gguf
    import numpy as np
    from safetensors import safe_open

    if kind not in KINDS:
        raise SystemExit(f"--gguf must be one of {', '.join(KINDS)}, not {kind!r}")
    folder, out = Path(folder), Path(out)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    if config.get("model_type") != "qwen3":
        raise SystemExit(f"{folder} holds a {config.get('model_type')!r} model; this converter writes Qwen3 only")
    blocks = config["num_hidden_layers"]
    head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    rope = config.get("rope_parameters") or {}
    theta = rope.get("rope_theta") or config.get("rope_theta") or 1_000_000.0

    writer = gguf.GGUFWriter(str(out), "qwen3")
    writer.add_name(folder.name)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0 if kind == "q8_0" else gguf.LlamaFileType.MOSTLY_F16)
    writer.add_context_length(config.get("max_position_embeddings") or 40960)
    writer.add_embedding_length(config["hidden_size"])
    writer.add_block_count(blocks)
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_head_count(config["num_attention_heads"])
    writer.add_head_count_kv(config["num_key_value_heads"])
    writer.add_key_length(head_dim)
    writer.add_value_length(head_dim)
    writer.add_rope_freq_base(float(theta))
    writer.add_layer_norm_rms_eps(float(config.get("rms_norm_eps", 1e-6)))

    vocab = read_tokenizer(folder, config["vocab_size"])
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list(vocab["tokens"])
    writer.add_token_types(vocab["types"])
    writer.add_token_merges(vocab["merges"])
    if vocab["eos"] is not None:
        writer.add_eos_token_id(vocab["eos"])
    if vocab["pad"] is not None:
        writer.add_pad_token_id(vocab["pad"])
        bos = config.get("bos_token_id")
        writer.add_bos_token_id(vocab["pad"] if bos is None else bos)
    writer.add_add_bos_token(vocab["add_bos"])

    names = gguf.TensorNameMap(gguf.MODEL_ARCH.QWEN3, blocks)
    count = 0
    for path in sorted(folder.glob("*.safetensors")):
        with safe_open(str(path), framework="pt") as weights:
            for hf_name in weights.keys():  # noqa: SIM118 (safe_open is not a dict)
                name = names.get_name(hf_name, try_suffixes=(".weight", ".bias"))
                if name is None:
                    raise SystemExit(f"{path.name}: no llama.cpp name for the tensor {hf_name}")
                array = weights.get_tensor(hf_name).float().numpy()
                ggml_type = tensor_kind(name, array.shape, kind)
                if ggml_type == gguf.GGMLQuantizationType.F32:
                    data = array.astype(np.float32)
                elif ggml_type == gguf.GGMLQuantizationType.F16:
                    data = array.astype(np.float16)
                else:
                    data = gguf.quants.quantize(array.astype(np.float32), ggml_type)
                writer.add_tensor(name, data, raw_dtype=ggml_type)
                count += 1
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return {"gguf": str(out), "gguf_kind": kind, "gguf_bytes": out.stat().st_size, "gguf_tensors": count}
