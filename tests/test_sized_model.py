"""bench/make_sized_model.py: the published Qwen3 sizes' config values, and a folder the engine loads and labels."""

from __future__ import annotations

import json
import sys

import pytest
from helpers import ROOT

sys.path.insert(0, str(ROOT / "bench"))

import make_sized_model as sized  # noqa: E402


@pytest.mark.parametrize(("arch", "hidden", "mlp"), [("qwen3-1.7b", 2048, 6144), ("qwen3-0.6b", 1024, 3072)])
def test_the_config_has_the_published_values(arch, hidden, mlp):
    config = sized.sized_config(arch)
    assert (config.hidden_size, config.intermediate_size) == (hidden, mlp)
    assert (config.num_hidden_layers, config.num_attention_heads, config.num_key_value_heads, config.head_dim) == (
        28,
        16,
        8,
        128,
    )
    assert config.vocab_size == 151936 and config.tie_word_embeddings and config.max_position_embeddings == 40960
    assert config.rope_parameters["rope_theta"] == 1e6


def test_an_unknown_size_is_refused_with_the_choices():
    with pytest.raises(SystemExit, match="qwen3-0.6b, qwen3-1.7b|qwen3-1.7b, qwen3-0.6b"):
        sized.sized_config("qwen3-8b")


def test_a_built_folder_is_marked_random_and_loads_in_the_engine(tmp_path, monkeypatch):
    # a small stand-in size: the same code path as the real sizes, in seconds
    monkeypatch.setitem(
        sized.ARCHITECTURES,
        "test-size",
        {
            "hidden_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 16,
            "intermediate_size": 128,
        },
    )
    out = tmp_path / "model"
    written = sized.build_folder("test-size", out, "bfloat16", seed=1)
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    assert config["random_weights"] is True and config["dtype"] == "bfloat16"
    assert {p.name for p in out.iterdir()} >= {
        "config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "model.safetensors",
    }
    # embeddings tied: the vocabulary's 151,936 x 64 counted once; 2 bytes a weight in bf16
    assert written["parameters"] > 151936 * 64 and written["safetensors_bytes"] >= 2 * written["parameters"]
    from engine.model.loading import load_weights

    engine = load_weights(str(out), "cpu", "float32")
    assert engine.info.parameters == written["parameters"] and engine.info.random_weights is True
    with pytest.raises(SystemExit, match="not empty"):
        sized.build_folder("test-size", out)
