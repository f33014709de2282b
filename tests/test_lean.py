"""engine/model/lean.py: a plain Qwen3 folder read without transformers gives transformers' weights and the compact
forward's numbers, and anything else is left to transformers, in words."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM

from engine.core.generation import GenerationSettings
from engine.model import loading
from engine.model.fast_build import build_fast_forward
from engine.model.lean import LeanQwen3, NotLean, read_config, read_lean
from engine.model.loading import build_tiny_network, load_weights
from engine.settings import BUILTIN_FOLDER

ROOT = Path(__file__).resolve().parent.parent
IDS = [151644, 872, 198, 4340, 1657, 435, 304, 72600, 30, 151645]


def write_tiny(folder: Path, dtype=torch.bfloat16, tied: bool = True) -> Path:
    network = build_tiny_network()
    if not tied:
        network.config.tie_word_embeddings = False
        network.lm_head.weight = torch.nn.Parameter(network.model.embed_tokens.weight.detach() * 1.5)
    network.to(dtype).save_pretrained(folder)
    return folder


def edit_config(folder: Path, change) -> None:
    config = json.loads((folder / "config.json").read_text())
    change(config)
    (folder / "config.json").write_text(json.dumps(config))


def edit_tensors(folder: Path, change) -> None:
    tensors = load_file(folder / "model.safetensors")
    change(tensors)
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})


@pytest.mark.parametrize(("dtype", "tied"), [(torch.bfloat16, True), (torch.float32, True), (torch.bfloat16, False)])
def test_a_plain_folder_holds_transformers_weights_and_gives_the_compact_forwards_numbers(tmp_path, dtype, tied):
    folder = write_tiny(tmp_path, dtype, tied)
    expected = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    got = read_lean(folder, torch.float32)
    want_state, have_state = expected.state_dict(), got.state_dict()
    assert want_state.keys() == have_state.keys()
    for name, tensor in want_state.items():
        assert have_state[name].dtype == torch.float32 and torch.equal(tensor, have_state[name]), name
    assert (got.lm_head.weight is got.model.embed_tokens.weight) == tied
    assert torch.equal(expected.model.rotary_emb.inv_freq, got.model.rotary_emb.inv_freq)
    ids = torch.tensor([IDS])
    with torch.inference_mode():
        transformers_logits = expected(input_ids=ids).logits
        compact = build_fast_forward(expected)(ids).logits
        lean = got(input_ids=ids).logits
    # the same network through the same compact forward: the same numbers, to the bit
    assert torch.equal(compact, lean)
    torch.testing.assert_close(transformers_logits, lean, rtol=1e-4, atol=1e-4)


NOT_PLAIN = {
    "another architecture": (lambda c: c.update(model_type="llama", architectures=["LlamaForCausalLM"]), "model_type"),
    "attention biases": (lambda c: c.update(attention_bias=True), "biases"),
    "a sliding window": (lambda c: c.update(use_sliding_window=True), "sliding window"),
    "a scaled rotary": (lambda c: c.update(rope_parameters={"rope_type": "yarn", "rope_theta": 1e6}), "scaled"),
    "a vocabulary of a billion": (lambda c: c.update(vocab_size=10**9), "vocab_size"),
    "no layers": (lambda c: c.update(num_hidden_layers=0), "num_hidden_layers"),
    "a size as text": (lambda c: c.update(hidden_size="64"), "hidden_size"),
    "an odd head_dim": (lambda c: c.update(head_dim=15), "head_dim"),
    "heads that do not group": (lambda c: c.update(num_key_value_heads=3), "key/value heads"),
    "a negative rotary base": (lambda c: c.update(rope_parameters={"rope_type": "default", "rope_theta": -1}), "rope"),
    "a rotary base of NaN": (
        lambda c: c.update(rope_parameters={"rope_type": "default", "rope_theta": float("nan")}),
        "rope",
    ),
    "an infinite epsilon": (lambda c: c.update(rms_norm_eps=float("inf")), "rms_norm_eps"),
}


@pytest.mark.parametrize("case", NOT_PLAIN)
def test_a_config_that_is_not_a_plain_qwen3_is_left_to_transformers_with_why(tmp_path, case):
    change, said = NOT_PLAIN[case]
    folder = write_tiny(tmp_path)
    edit_config(folder, change)
    with pytest.raises(NotLean, match=said):
        read_lean(folder)


TENSOR_CHANGES = {
    "a tensor the network lacks": (lambda t: t.update({"model.extra.weight": torch.zeros(2)}), "model.extra.weight"),
    "a missing norm": (lambda t: t.pop("model.norm.weight"), "model.norm.weight"),
    "a projection of another shape": (
        lambda t: t.update({"model.layers.0.mlp.up_proj.weight": torch.zeros(7, 64, dtype=torch.bfloat16)}),
        "not shaped",
    ),
}


@pytest.mark.parametrize("case", TENSOR_CHANGES)
def test_tensors_that_do_not_match_the_network_are_left_to_transformers(tmp_path, case):
    change, said = TENSOR_CHANGES[case]
    folder = write_tiny(tmp_path)
    edit_tensors(folder, change)
    with pytest.raises(NotLean, match=said):
        read_lean(folder)


def test_the_shipped_config_reads_as_transformers_reads_it():
    config = read_config(BUILTIN_FOLDER)
    raw = json.loads((BUILTIN_FOLDER / "config.json").read_text())
    assert (config.hidden_size, config.num_hidden_layers, config.head_dim) == (
        raw["hidden_size"],
        raw["num_hidden_layers"],
        raw["head_dim"],
    )
    assert config.rope_theta == raw["rope_parameters"]["rope_theta"] and config.tie_word_embeddings


def test_a_load_reads_a_plain_folder_lean_and_falls_back_to_transformers_in_words(tmp_path, monkeypatch):
    plain, other = write_tiny(tmp_path / "plain"), write_tiny(tmp_path / "other")
    edit_config(other, lambda c: c.update(rope_parameters={"rope_type": "linear", "rope_theta": 1e6, "factor": 2.0}))
    said = []
    assert type(load_weights(str(plain), "cpu", "float32").model) is LeanQwen3
    fallback = load_weights(str(other), "cpu", "float32", progress=lambda *event: said.append(event[2]))
    assert type(fallback.model).__name__ == "Qwen3ForCausalLM"
    assert "loading through transformers (its rotary embedding is scaled)" in said
    # QWEN_FAST_DECODE=0 asks for transformers' own forward: the folder is not read lean then
    monkeypatch.setenv("QWEN_FAST_DECODE", "0")
    assert type(load_weights(str(plain), "cpu", "float32").model).__name__ == "Qwen3ForCausalLM"


def test_the_shipped_models_turn_is_the_same_read_lean_or_through_transformers(monkeypatch):
    from engine.core.prompt import Request, render
    from engine.model.decode import stream_steps

    lean = load_weights(str(BUILTIN_FOLDER), "cpu", "float32")
    monkeypatch.setattr(loading, "read_lean_if_plain", lambda *args, **kwargs: None)
    through = load_weights(str(BUILTIN_FOLDER), "cpu", "float32")
    assert type(lean.model) is LeanQwen3 and type(through.model) is not LeanQwen3
    prompt = render(Request([{"role": "user", "content": "How many r are in strawberry?"}]), lean.tokenizer).ids
    settings = GenerationSettings(max_new_tokens=24, top_k=5, reuse_prefix=False)
    steps = [list(stream_steps(engine, prompt, settings)) for engine in (lean, through)]
    assert [s.id for s in steps[0]] == [s.id for s in steps[1]]
    assert [[(c.id, c.p) for c in s.top] for s in steps[0]] == [[(c.id, c.p) for c in s.top] for s in steps[1]]


def test_the_shipped_model_loads_without_importing_transformers_modeling_code():
    script = (
        "import sys, json; import torch\n"
        "from engine.model.loading import load_model\n"
        "engine = load_model('builtin')\n"
        "print(json.dumps({'class': type(engine.model).__name__, 'forward': engine.reasons.get('forward'),"
        " 'modules': sorted(m for m in ('transformers.models.qwen3.modeling_qwen3', 'torch._dynamo', 'sympy')"
        " if m in sys.modules)}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("QWEN_MODEL", None)
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=True
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found == {
        "class": "LeanQwen3",
        "forward": "a compact Qwen3 forward (engine/model/fast_forward.py)",
        "modules": [],
    }


def test_weights_that_cannot_be_allocated_are_refused_in_one_line(tmp_path, monkeypatch):
    """A checkpoint whose tensors the machine cannot hold (a sparse file that declares 128 GB, say): torch's
    allocation error becomes the load's one line, as transformers' own failures do."""
    from engine.errors import ModelUnavailable
    from engine.model import stored

    folder = write_tiny(tmp_path)

    def cannot(entry):
        raise RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 137438953472 bytes.")

    monkeypatch.setattr(stored, "read_tensor", cannot)
    with pytest.raises(
        ModelUnavailable, match="could not be loaded: RuntimeError: DefaultCPUAllocator: can't allocate"
    ):
        load_weights(str(folder), "cpu", "float32")
