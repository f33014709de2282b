"""The prefix cache (engine/model/prefix_cache.py): same tokens and probabilities as a full prefill, hit on a rerun,
never changed by a run, bounded, and correct with several runs at once on the one shared tiny model."""

from __future__ import annotations

import math
import threading

import pytest
import torch

from engine.core.generation import GenerationSettings
from engine.core.prompt import Request, render
from engine.core.tooldefs import load_tool_set
from engine.model.decode import generate
from engine.model.prefix_cache import PrefixCache, configured_bytes, prefix_cache_for

QUESTIONS = ["How many times does the letter r appear in strawberry?", "What is 2 + 2?", "Spell banana backwards."]


@pytest.fixture
def kept(tiny_engine):
    cache = prefix_cache_for(tiny_engine)
    cache.clear()
    yield cache
    cache.clear()


def prompt_for(engine, question: str):
    return render(Request([{"role": "user", "content": question}], load_tool_set("strawberry")), engine.tokenizer)


def run(engine, prompt, reuse: bool, **overrides):
    settings = GenerationSettings(**{"max_new_tokens": 6, "top_k": 5, "reuse_prefix": reuse, **overrides})
    return generate(engine, prompt, settings).steps


def assert_same_steps(with_cache, without):
    assert [s.id for s in with_cache] == [s.id for s in without]
    for a, b in zip(with_cache, without, strict=True):
        assert math.isclose(a.p, b.p, rel_tol=1e-4)
        assert [x.id for x in a.top] == [x.id for x in b.top]
        assert all(math.isclose(x.p, y.p, rel_tol=1e-4) for x, y in zip(a.top, b.top, strict=True))


@pytest.mark.parametrize("overrides", [{}, {"temperature": 1.0, "seed": 5}], ids=["greedy", "sampled"])
def test_a_rerun_hits_the_cache_and_gives_the_same_tokens_and_probabilities(tiny_engine, kept, overrides):
    prompt = prompt_for(tiny_engine, QUESTIONS[0])
    cold = run(tiny_engine, prompt, reuse=False, **overrides)
    assert len(kept) == 0  # a run told not to reuse keeps nothing either
    first = run(tiny_engine, prompt, reuse=True, **overrides)
    assert kept.stats.misses == 1 and kept.stats.stored == 1 and len(kept) == 1
    second = run(tiny_engine, prompt, reuse=True, **overrides)
    # everything but the last prompt token came from the cache
    assert kept.stats.hits == 1 and kept.stats.last_reused == len(prompt.ids) - 1
    assert_same_steps(first, cold)
    assert_same_steps(second, cold)
    assert second == first  # a rerun of the same prompt starts where the first stood: equal to the bit


def test_another_question_with_the_same_tools_reuses_the_shared_system_prompt(tiny_engine, kept):
    one, two = prompt_for(tiny_engine, QUESTIONS[0]), prompt_for(tiny_engine, QUESTIONS[1])
    shared = next(i for i, (a, b) in enumerate(zip(one.ids, two.ids, strict=False)) if a != b)
    assert shared > 200  # the system prompt with the tool definitions
    run(tiny_engine, one, reuse=True)
    steps = run(tiny_engine, two, reuse=True)
    assert kept.stats.last_reused == shared
    assert_same_steps(steps, run(tiny_engine, two, reuse=False))
    assert len(kept) == 2


def test_a_run_never_changes_what_is_kept(tiny_engine, kept):
    prompt = prompt_for(tiny_engine, QUESTIONS[0])
    run(tiny_engine, prompt, reuse=True)
    entry = next(iter(kept._entries.values()))
    before = [(k.clone(), v.clone()) for k, v in entry.layers]
    for _ in range(2):
        run(tiny_engine, prompt, reuse=True, max_new_tokens=4)
    assert all(k.shape[-2] == len(prompt.ids) - 1 for k, _ in entry.layers)  # all but the last token, read by each run
    assert all(torch.equal(k, k0) and torch.equal(v, v0) for (k, v), (k0, v0) in zip(entry.layers, before, strict=True))


def test_several_runs_at_once_match_each_run_alone(tiny_engine, kept):
    prompts = [prompt_for(tiny_engine, q) for q in QUESTIONS]
    alone = [[s.id for s in run(tiny_engine, p, reuse=False, temperature=1.0, seed=i)] for i, p in enumerate(prompts)]
    results: dict[tuple[int, int], list[int]] = {}
    errors: list[BaseException] = []

    def session(i: int, repeat: int) -> None:
        try:
            steps = run(tiny_engine, prompts[i], reuse=True, temperature=1.0, seed=i)
            results[(i, repeat)] = [s.id for s in steps]
        except BaseException as error:  # reported below, with the thread's own error
            errors.append(error)

    # one run keeps the shared system prompt; then every session starts from it while others store theirs
    run(tiny_engine, prompts[0], reuse=True, max_new_tokens=1)
    threads = [threading.Thread(target=session, args=(i, r)) for r in range(2) for i in range(len(prompts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    assert {key: ids for key, ids in results.items()} == {
        (i, r): alone[i] for r in range(2) for i in range(len(prompts))
    }
    assert kept.stats.hits == len(threads)


def test_the_cache_is_bounded_in_entries_and_bytes(tiny_engine):
    from transformers import DynamicCache

    def prompt_cache(ids):
        cache = DynamicCache(config=tiny_engine.model.config)
        with torch.no_grad():
            tiny_engine.model(input_ids=torch.tensor([ids]), cache=cache)
        return cache

    prompts = [prompt_for(tiny_engine, q).ids for q in QUESTIONS]
    small = PrefixCache(max_entries=2)
    assert all(small.store(ids, prompt_cache(ids)) for ids in prompts)
    assert len(small) == 2 and small.stats.evicted == 1
    # the least recently used went first: the first prompt now shares only the system prompt
    _, reused = small.lookup(prompts[0], tiny_engine.model.config)
    assert reused < len(prompts[0]) - 1
    tiny_budget = PrefixCache(max_bytes=1000)
    assert not tiny_budget.store(prompts[0], prompt_cache(prompts[0])) and len(tiny_budget) == 0
    off = PrefixCache(max_bytes=0)
    assert not off.store(prompts[0], prompt_cache(prompts[0]))
    assert off.lookup(prompts[0], tiny_engine.model.config)[1] == 0


def test_a_cache_that_does_not_hold_exactly_the_prompt_is_not_kept(tiny_engine):
    from transformers import DynamicCache

    ids = prompt_for(tiny_engine, QUESTIONS[1]).ids
    cache = DynamicCache(config=tiny_engine.model.config)
    with torch.no_grad():
        tiny_engine.model(input_ids=torch.tensor([ids[:-3]]), cache=cache)
    fresh = PrefixCache()
    assert not fresh.store(ids, cache)
    assert not fresh.store(ids, DynamicCache(config=tiny_engine.model.config))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", 512 * 2**20),  # unset: the default
        ("64", 64 * 2**20),
        ("0", 0),  # off
        ("-5", 0),
        ("lots", 512 * 2**20),  # not a number: the default
    ],
)
def test_the_byte_budget_comes_from_the_environment(monkeypatch, value, expected):
    monkeypatch.setenv("QWEN_PREFIX_CACHE_MB", value)
    assert configured_bytes() == expected
