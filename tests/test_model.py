"""The live engine's decode loop and loading, with the tiny random-weights model only.

Probabilities are checked against an independent forward pass over the whole sequence (no KV
cache), and the greedy tokens against transformers' own `model.generate`.
"""

from __future__ import annotations

import math
import threading
import time

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.core.generation import GenerationSettings
from engine.core.prompt import Request, render
from engine.core.tokenizer import IM_END, MODEL_VOCAB, REAL_VOCAB
from engine.errors import BadInput, EngineError, ModelUnavailable
from engine.harness.loop import Turn
from engine.model.decode import generate, nucleus, stream_steps
from engine.model.live import LiveModel, build_constraint, generate_turn
from engine.model.loading import LoadedModel, load_model
from engine.model.weights import hub_reachable

MESSAGES = [{"role": "user", "content": "How many r are in strawberry?"}]


@pytest.fixture(scope="module")
def prompt(tiny_engine):
    return render(Request(MESSAGES), tiny_engine.tokenizer)


def run(engine, prompt, **settings):
    return list(stream_steps(engine, prompt.ids, GenerationSettings(**settings)))


def full_forward_probs(engine, ids, temperature):
    """The next-token distribution over the real tokens, from one plain forward pass over all of `ids`."""
    with torch.no_grad():
        logits = engine.model(input_ids=torch.tensor([ids])).logits[0, -1].float()
    return torch.softmax(logits[:REAL_VOCAB] / (temperature or 1.0), dim=-1)


class ForceAfter:
    """A test constraint: nothing restricted for `free` steps, then only `token` is allowed."""

    def __init__(self, free: int, token: int = IM_END):
        self.free, self.token, self.accepted = free, token, []

    def next_mask(self):
        if len(self.accepted) < self.free:
            return None
        mask = torch.zeros(MODEL_VOCAB, dtype=torch.bool)
        mask[self.token] = True
        return mask

    def accept(self, token_id):
        self.accepted.append(token_id)


class AllowOnly:
    """A test constraint that allows a fixed set of ids at every step."""

    def __init__(self, ids, size=MODEL_VOCAB, dtype=torch.bool):
        self.mask = torch.zeros(size, dtype=dtype)
        self.mask[list(ids)] = True
        self.accepted = []

    def next_mask(self):
        return self.mask

    def accept(self, token_id):
        self.accepted.append(token_id)


# -- reproducibility ----------------------------------------------------------------------------
def test_greedy_steps_repeat_exactly(tiny_engine, prompt):
    assert run(tiny_engine, prompt, max_new_tokens=8) == run(tiny_engine, prompt, max_new_tokens=8)


def test_sampled_steps_repeat_with_the_same_seed_and_differ_with_another(tiny_engine, prompt):
    first = run(tiny_engine, prompt, max_new_tokens=8, temperature=1.0, seed=7)
    again = run(tiny_engine, prompt, max_new_tokens=8, temperature=1.0, seed=7)
    other = run(tiny_engine, prompt, max_new_tokens=8, temperature=1.0, seed=8)
    assert first == again
    assert [s.id for s in first] != [s.id for s in other]


def test_greedy_tokens_match_transformers_generate(tiny_engine, prompt):
    ids = torch.tensor([prompt.ids])
    with torch.no_grad():
        out = tiny_engine.model.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=8,
            do_sample=False,
            suppress_tokens=list(range(REAL_VOCAB, MODEL_VOCAB)),
        )
    expected = out[0, len(prompt.ids) :].tolist()
    assert [s.id for s in run(tiny_engine, prompt, max_new_tokens=len(expected))] == expected


# -- the probabilities are the model's own ---------------------------------------------------------
@pytest.mark.parametrize("temperature", [0.0, 1.0, 0.05])
def test_each_p_is_the_softmax_of_that_steps_logits(tiny_engine, prompt, temperature):
    steps = run(tiny_engine, prompt, max_new_tokens=5, temperature=temperature, seed=3, top_k=5)
    ids = list(prompt.ids)
    for step in steps:
        probs = full_forward_probs(tiny_engine, ids, temperature)
        assert math.isclose(step.p, float(probs[step.id]), rel_tol=1e-4, abs_tol=1e-7)
        for alt in step.top:
            assert math.isclose(alt.p, float(probs[alt.id]), rel_tol=1e-4, abs_tol=1e-7)
        ids.append(step.id)


def test_top_k_is_sorted_and_greedy_picks_its_first(tiny_engine, prompt):
    for step in run(tiny_engine, prompt, max_new_tokens=6, top_k=7):
        assert len(step.top) == 7
        assert [a.p for a in step.top] == sorted((a.p for a in step.top), reverse=True)
        assert step.top[0].id == step.id and step.top[0].p == step.p
        assert step.allowed is None and step.p_unmasked is None and step.top_unmasked is None


def test_top_k_zero_reports_no_alternatives(tiny_engine, prompt):
    assert all(step.top == [] for step in run(tiny_engine, prompt, max_new_tokens=3, top_k=0))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_steps_concatenate_to_the_returned_text(tiny_engine, prompt, seed):
    # sampled at temperature 1 a random model often writes bytes of split characters
    generation = generate(tiny_engine, prompt, GenerationSettings(max_new_tokens=24, temperature=1.0, seed=seed))
    assert "".join(s.text for s in generation.steps) == generation.text
    assert generation.text == tiny_engine.tokenizer.decode([s.id for s in generation.steps])
    assert [s.token for s in generation.steps] == [tiny_engine.tokenizer.token_text(s.id) for s in generation.steps]


# -- stopping -------------------------------------------------------------------------------------
def test_stop_at_the_token_limit_is_reported_as_length(tiny_engine, prompt):
    generation = generate(tiny_engine, prompt, GenerationSettings(max_new_tokens=4))
    assert generation.finish == "length" and generation.output_tokens == 4
    assert [s.finish for s in generation.steps] == [None, None, None, "length"]


def test_stop_at_im_end_forced_by_a_test_constraint_is_reported_as_stop(tiny_engine, prompt):
    # random weights almost never choose <|im_end|> on their own, so a test constraint forces it at step 3
    constraint = ForceAfter(free=3)
    generation = generate(tiny_engine, prompt, GenerationSettings(max_new_tokens=10, model_view=True), constraint)
    assert generation.finish == "stop" and generation.output_tokens == 4
    last = generation.steps[-1]
    assert last.id == IM_END and last.token == "<|im_end|>" and last.text == "" and last.finish == "stop"
    assert "<|im_end|>" not in generation.text
    assert constraint.accepted == [s.id for s in generation.steps]
    assert [s.allowed for s in generation.steps] == [None, None, None, 1]
    assert last.p == 1.0 and last.top[0].id == IM_END
    assert math.isclose(last.forbidden_mass, 1 - last.p_unmasked, rel_tol=1e-4)
    assert last.top_unmasked is not None and len(last.top_unmasked) == 5


# -- the constraint hook --------------------------------------------------------------------------
def test_a_mask_renormalises_p_and_reports_what_it_forbade(tiny_engine, prompt):
    allowed_ids = list(range(1000, 1100))
    constraint = AllowOnly(allowed_ids, size=REAL_VOCAB)  # a mask over the real tokens only is accepted too
    steps = list(
        stream_steps(
            tiny_engine, prompt.ids, GenerationSettings(max_new_tokens=3, temperature=1.0, model_view=True), constraint
        )
    )
    ids = list(prompt.ids)
    for step in steps:
        assert step.allowed == 100 and step.id in allowed_ids
        assert all(a.id in allowed_ids for a in step.top)
        probs = full_forward_probs(tiny_engine, ids, 1.0)
        inside = float(probs[allowed_ids].sum())
        assert math.isclose(step.p, float(probs[step.id]) / inside, rel_tol=1e-4)
        assert math.isclose(step.p_unmasked, float(probs[step.id]), rel_tol=1e-4)
        assert math.isclose(step.forbidden_mass, 1 - inside, rel_tol=1e-4)
        ids.append(step.id)
    assert constraint.accepted == [s.id for s in steps]


def test_a_mask_that_allows_nothing_real_is_an_error_not_a_padding_token(tiny_engine, prompt):
    with pytest.raises(EngineError, match="allowed no token"):
        list(
            stream_steps(
                tiny_engine, prompt.ids, GenerationSettings(max_new_tokens=2), AllowOnly(range(REAL_VOCAB, MODEL_VOCAB))
            )
        )


def test_a_mask_that_is_not_bool_is_refused(tiny_engine, prompt):
    with pytest.raises(EngineError, match="torch.bool"):
        list(
            stream_steps(
                tiny_engine, prompt.ids, GenerationSettings(max_new_tokens=2), AllowOnly([5], dtype=torch.int32)
            )
        )


class PaddingLover(torch.nn.Module):
    """The tiny model with its logits for the 267 padding ids raised far above every real token."""

    def __init__(self, model):
        super().__init__()
        self.inner, self.config = model, model.config

    def forward(self, **kwargs):
        out = self.inner(**kwargs)
        out.logits[..., REAL_VOCAB:] += 1000.0
        return out


@pytest.mark.parametrize("temperature", [0.0, 2.0])
def test_padding_ids_are_never_chosen_even_when_the_model_prefers_them(tiny_engine, prompt, temperature):
    engine = LoadedModel(PaddingLover(tiny_engine.model), tiny_engine.tokenizer, tiny_engine.info)
    steps = run(engine, prompt, max_new_tokens=6, temperature=temperature, top_k=10)
    assert all(s.id < REAL_VOCAB and all(a.id < REAL_VOCAB for a in s.top) for s in steps)


# -- settings -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "bad, message",
    [
        ({"max_new_tokens": 0}, "max_new_tokens"),
        ({"temperature": -1.0}, "temperature"),
        ({"top_p": 0.0}, "top_p"),
        ({"top_k": 1000}, "top_k"),
    ],
)
def test_bad_settings_say_what_to_change(tiny_engine, prompt, bad, message):
    with pytest.raises(BadInput, match=message):
        run(tiny_engine, prompt, **bad)


def test_nucleus_keeps_the_smallest_set_reaching_top_p():
    probs = torch.tensor([0.25, 0.5, 0.25])
    assert nucleus(probs, 0.5).tolist() == [0.0, 0.5, 0.0]
    assert nucleus(probs, 0.6).tolist() in ([0.25, 0.5, 0.0], [0.0, 0.5, 0.25])  # a tie: either one
    assert nucleus(probs, 0.9).tolist() == [0.25, 0.5, 0.25]
    assert nucleus(probs, 1.0) is probs


# a distribution as the loop holds it (float32), from positive weights; its sums are exact to about 1e-7
WEIGHTS = st.lists(st.integers(min_value=1, max_value=1000), min_size=1, max_size=60)
TOP_P = st.floats(min_value=1e-9, max_value=1.0)


@settings(max_examples=300, deadline=None)
@given(weights=WEIGHTS, top_p=TOP_P)
def test_the_nucleus_reaches_top_p_and_no_member_of_it_can_go(weights, top_p):
    probs = torch.tensor(weights, dtype=torch.float32)
    probs = probs / probs.sum()
    kept = nucleus(probs, top_p)
    members = probs[kept > 0]
    # the kept tokens keep their probabilities, and are the most likely ones
    assert torch.equal(kept[kept > 0], members) and members.numel() >= 1
    dropped = probs[kept == 0]
    if dropped.numel():
        assert float(members.min()) >= float(dropped.max())
    mass = float(members.double().sum())
    # its mass reaches top_p, and without its least likely member it would not
    assert mass >= top_p - 1e-6
    assert mass - float(members.min()) < top_p + 1e-6


def test_top_p_narrows_the_draw_to_the_nucleus(tiny_engine, prompt):
    # at a low temperature the top token holds most of the mass, so a small top_p leaves only it
    steps = run(tiny_engine, prompt, max_new_tokens=4, temperature=0.05, top_p=0.01, seed=5)
    assert [s.id for s in steps] == [s.top[0].id for s in steps]


# -- sharing and the harness ----------------------------------------------------------------------
def test_two_users_at_once_get_the_same_steps_as_one_at_a_time(tiny_engine, prompt):
    alone = {seed: run(tiny_engine, prompt, max_new_tokens=6, temperature=1.0, seed=seed) for seed in (1, 2)}
    together = {}
    threads = [
        threading.Thread(
            target=lambda s=seed: together.__setitem__(
                s, run(tiny_engine, prompt, max_new_tokens=6, temperature=1.0, seed=s)
            )
        )
        for seed in (1, 2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert together == alone


def test_live_model_answers_the_harness_with_a_turn(tiny_engine):
    seen = []
    live = LiveModel(tiny_engine, GenerationSettings(max_new_tokens=5), on_step=seen.append)
    turn = live.next_turn(Request(MESSAGES))
    assert isinstance(turn, Turn)
    assert turn.finish == "length" and turn.output_tokens == 5 and turn.steps == seen
    assert turn.text == live.generations[-1].text
    assert live.generations[-1].prompt_tokens == render(Request(MESSAGES), tiny_engine.tokenizer).count


def test_generate_turn_renders_thinking_on_and_off(tiny_engine):
    off = generate_turn(tiny_engine, Request(MESSAGES, enable_thinking=False), GenerationSettings(max_new_tokens=1))
    on = generate_turn(tiny_engine, Request(MESSAGES, enable_thinking=True), GenerationSettings(max_new_tokens=1))
    assert off.prompt_text.endswith("<think>\n\n</think>\n\n") and on.prompt_text.endswith("assistant\n")


def test_tool_choice_without_tools_says_to_add_tools(tiny_engine):
    with pytest.raises(BadInput, match="needs tools"):
        build_constraint(tiny_engine, [], "required")
    assert build_constraint(tiny_engine, [{"type": "function"}], "none") is None


# -- loading --------------------------------------------------------------------------------------
def test_tiny_engine_is_labelled_as_random_weights(tiny_engine):
    info = tiny_engine.info
    assert info.random_weights and "outputs mean nothing" in info.note and "random weights" in info.label()
    assert tiny_engine.model.config.vocab_size == MODEL_VOCAB
    assert load_model("tiny") is tiny_engine  # loaded once per process


@pytest.mark.parametrize("offline_flag", [True, False])
def test_a_model_that_is_nowhere_fails_fast_with_the_way_to_get_it(monkeypatch, offline_flag):
    if offline_flag:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    started = time.perf_counter()
    with pytest.raises(ModelUnavailable) as caught:
        load_model("nobody-at-all/no-such-model-7f3a9c")
    assert time.perf_counter() - started < 10
    message = str(caught.value)
    assert "python -m engine download --model nobody-at-all/no-such-model-7f3a9c" in message
    assert "QWEN_MODEL=" in message and "cache" in message


def test_a_folder_without_weights_says_what_it_needs(tmp_path):
    with pytest.raises(ModelUnavailable, match="config.json"):
        load_model(str(tmp_path))


def test_hub_probe_answers_no_at_once_when_offline_is_set(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    started = time.perf_counter()
    assert hub_reachable() is False
    assert time.perf_counter() - started < 0.5


def test_sampling_draws_each_token_as_often_as_its_probability():
    from engine.model.decode import pick_token

    probs = torch.tensor([0.1, 0.6, 0.3, 0.0])
    generator = torch.Generator().manual_seed(0)
    settings = GenerationSettings(temperature=1.0)
    counts = torch.bincount(torch.tensor([pick_token(probs, settings, generator) for _ in range(20000)]), minlength=4)
    assert counts[3] == 0
    assert torch.allclose(counts[:3] / 20000, probs[:3], atol=0.015)


def test_live_model_runs_a_harness_episode(tiny_engine):
    import json

    from engine.harness.loop import run_episode
    from engine.settings import LESSONS

    tools = json.loads((LESSONS / "tools" / "strawberry.json").read_text(encoding="utf-8"))
    live = LiveModel(tiny_engine, GenerationSettings(max_new_tokens=3), tool_choice="required")
    run = run_episode(live, MESSAGES, tools)
    calls = run.ledger.as_json()["calls"]
    assert len(calls) == len(live.generations) >= 1
    assert [c["output_tokens"] for c in calls] == [g.output_tokens for g in live.generations]
    assert all(g.text.startswith("<tool_call>") for g in live.generations)


def fake_snapshot(tmp_path, fail=None):
    """A stand-in for huggingface_hub.snapshot_download that reports bytes from a worker thread, as the real one does."""
    from concurrent.futures import ThreadPoolExecutor

    def snapshot_download(repo_id, tqdm_class=None, **kwargs):
        def work():
            network = tqdm_class(desc="Downloading bytes", total=0, unit="B")
            written = tqdm_class(desc="Reconstructing (incomplete total...)", total=100, unit="B")
            for _ in range(4):
                network.update(30)
                written.update(25)
            if fail:
                raise fail
            folder = tmp_path / "snapshots" / "0123abcd"
            folder.mkdir(parents=True)
            (folder / "config.json").write_text("{}")
            (folder / "model.safetensors").write_bytes(b"")
            return str(folder)

        with ThreadPoolExecutor(1) as pool:
            return pool.submit(work).result()

    return snapshot_download


def test_download_reports_bytes_on_the_callers_thread(monkeypatch, tmp_path):
    import huggingface_hub

    from engine.model import weights

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot(tmp_path))
    monkeypatch.setattr(weights, "hub_reachable", lambda: True)
    monkeypatch.setattr(
        weights, "planned_bytes", lambda model_id: 0
    )  # the hub's file list: unknown (offline, it took 20 s to fail)
    seen = []
    folder = weights.download_weights("someone/some-model", lambda *event: seen.append((*event, threading.get_ident())))
    assert [(d, t) for d, t, _, _ in seen] == [(25, 100), (50, 100), (75, 100), (100, 100)]
    assert {who for *_, who in seen} == {threading.get_ident()}  # a page may draw from the callback
    assert seen[0][2] == "downloading someone/some-model"
    assert weights.revision_of(folder) == "0123abcd"


def test_a_failed_download_says_what_failed_and_how_to_get_the_weights(monkeypatch, tmp_path):
    import huggingface_hub

    from engine.model import weights

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot(tmp_path, fail=OSError("401 gated repo")))
    monkeypatch.setattr(weights, "hub_reachable", lambda: True)
    monkeypatch.setattr(
        weights, "planned_bytes", lambda model_id: 0
    )  # the hub's file list: unknown (offline, it took 20 s to fail)
    with pytest.raises(ModelUnavailable, match="the download failed: OSError: 401 gated repo") as caught:
        weights.download_weights("someone/some-model")
    assert "python -m engine download --model someone/some-model" in str(caught.value)


def test_a_model_folder_loads_through_the_real_path_and_gives_the_same_steps(tiny_engine, prompt, tmp_path):
    # the tiny weights saved as a model folder go through AutoModelForCausalLM.from_pretrained, as Qwen3-1.7B does
    tiny_engine.model.save_pretrained(tmp_path)
    engine = load_model(str(tmp_path), device="cpu")
    assert engine.info.source == "local folder" and engine.info.dtype == "float32" and not engine.info.random_weights
    assert engine.info.parameters == tiny_engine.info.parameters
    loaded, built = run(engine, prompt, max_new_tokens=4), run(tiny_engine, prompt, max_new_tokens=4)
    assert [s.id for s in loaded] == [s.id for s in built]
    assert all(math.isclose(a.p, b.p, rel_tol=1e-5) for a, b in zip(loaded, built, strict=True))
    assert load_model(str(tmp_path), device="cpu") is engine


def test_check_model_says_where_a_model_would_come_from(tiny_engine, tmp_path, monkeypatch):
    from engine.model import loading
    from engine.model.availability import check_model

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert check_model("tiny").state == "loaded" and check_model("tiny").available  # the fixture loaded it
    monkeypatch.setattr(loading, "_loaded", {})
    assert check_model("tiny").state == "tiny" and check_model("tiny").available
    missing = check_model("nobody-at-all/no-such-model-7f3a9c", probe_hub=True)
    assert missing.state == "missing" and not missing.available
    assert "python -m engine download --model nobody-at-all/no-such-model-7f3a9c" in missing.message
    assert check_model(str(tmp_path)).state == "missing"


@pytest.mark.parametrize("k", [1, 5, 37, 100])
def test_fast_topk_equals_torch_topk(k):
    from engine.model.decode import fast_topk

    values = torch.softmax(torch.randn(MODEL_VOCAB, generator=torch.Generator().manual_seed(k)), dim=-1)
    top, ids = fast_topk(values, k)
    expected_top, expected_ids = values.topk(k)
    assert torch.equal(top, expected_top) and torch.equal(ids, expected_ids)
    assert torch.equal(fast_topk(values[:1000], k)[1], values[:1000].topk(k)[1])  # a length that is not in blocks


def test_the_top_k_cut_keeps_the_k_likeliest_renormalised_and_a_draw_never_leaves_them():
    import torch

    from engine.core.generation import GenerationSettings
    from engine.model.decode import pick_token, top_k_cut

    probs = torch.softmax(torch.randn(151_936, generator=torch.Generator().manual_seed(3)), dim=-1)
    cut = top_k_cut(probs, 3)
    top3 = set(probs.topk(3).indices.tolist())
    assert set(cut.nonzero().flatten().tolist()) == top3 and float(cut.sum()) == pytest.approx(1.0)
    assert top_k_cut(probs, 0) is probs
    settings = GenerationSettings(temperature=1.0, sample_top_k=3)
    generator = torch.Generator().manual_seed(0)
    assert {pick_token(probs, settings, generator) for _ in range(200)} <= top3
    # written to JSON only when set: a pack or trace recorded before the field still matches
    assert "sample_top_k" not in GenerationSettings().as_json()
    assert GenerationSettings.from_json(settings.as_json()) == settings
    for bad in (-1, 1001):
        with pytest.raises(BadInput, match="sample_top_k must be 0"):
            GenerationSettings(sample_top_k=bad).check()
