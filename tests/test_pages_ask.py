"""Lesson 3's hands-on runs (ui/ask.py): a learner's own question under temperature / top-k / top-p, each step's
distribution before and after them, and "what if it had picked this token", with the shipped model (it loads on a
CPU in seconds) and with no model. Page tests (streamlit AppTest); the browser's look is tests/test_browser_ask.py."""

from __future__ import annotations

import pytest
from helpers import open_page, page_text, view_data, view_step

from engine.core.generation import GenerationSettings
from engine.core.prompt import Request
from engine.harness.loop import load_scenario
from engine.settings import BUILTIN

P3 = "app_pages/the_model_writes_a_call.py"
VIEW = "the_model_writes_a_call_view"
KEY = "the_model_writes_a_call"
QUESTION = "How many e's are in cheeseburger?"


def settle(at, **values):
    """Set the form's controls (question, temperature, top_k, top_p, seed) and press Ask."""
    for name, value in values.items():
        if name == "question":
            at.text_input(key=f"{KEY}_question").input(value)
        elif name == "seed":
            at.number_input(key=f"{KEY}_seed").set_value(value)
        else:
            at.slider(key=f"{KEY}_{name}").set_value(value)
    next(b for b in at.button if b.label == "Ask").click().run(timeout=300)
    assert not at.exception, [e.value for e in at.exception]
    return at


def at_box(at):
    return at.text_input(key=f"{KEY}_question")


def shipped():
    from engine.model.loading import load_model

    return load_model(BUILTIN)


def engine_turn(question: str, settings: GenerationSettings, prefix: str = ""):
    """The same turn straight from the engine (generate_turn), to match the page against."""
    from engine.model.live import generate_turn

    scenario = load_scenario("strawberry")
    request = Request([{"role": "user", "content": question}], scenario.tools, "native")
    return generate_turn(shipped(), request, settings, prefix=prefix)


@pytest.fixture(scope="module")
def lesson_3():
    at = open_page(P3, timeout=300, model="builtin")
    assert view_step(at, VIEW)[0] == "Token 1 of 28"  # the lesson's own call, as before anyone asks
    return at


def test_the_question_box_and_sampling_controls_are_there_and_the_lesson_is_as_it_was(lesson_3):
    at = lesson_3
    assert any("question" in box.label.lower() for box in at.text_input)
    assert {"Temperature", "Top-k", "Top-p"} <= {s.label for s in at.slider}
    assert any(m.value.startswith("> How many times does the letter r") for m in at.markdown)
    _, first = view_step(at, VIEW)
    assert first["title"] == "<tool_call>" and [b["title"] for b in first["bars"]] == ["Top 8 candidates"]


def test_a_learners_question_is_written_token_by_token_greedy_as_the_engine_writes_it(lesson_3):
    at = settle(lesson_3, question=QUESTION, temperature=0.0, top_k=0, top_p=1.0, seed=0)
    turn = engine_turn(QUESTION, GenerationSettings(max_new_tokens=80, top_k=8))
    where, first = view_step(at, VIEW)
    steps = view_data(at, VIEW)["steps"]
    assert where == f"Token 1 of {len(turn.steps)}" and first["chip"] == "<tool_call>"
    assert [s["caption"] for s in steps] == [f"id {s.id}" for s in turn.steps]
    # the question is on the page outside its box
    assert any("cheeseburger" in m.value and "Your question" in m.value for m in at.markdown)
    for step, made in zip(steps, turn.steps, strict=True):
        before, after = step["bars"]
        assert before["title"] == "As the model gave it" and len(before["rows"]) == 8
        # greedy: the draw had one token, the model's most likely, at 100%
        assert [(r["p"], r["chosen"]) for r in after["rows"]] == [(1.0, True)] and before["rows"][0]["chosen"]
        assert before["rows"][0]["p"] == pytest.approx(made.p, abs=1e-4)


@pytest.mark.slow
def test_temperature_top_k_and_top_p_reach_the_engine_and_each_step_shows_the_draws_distribution(lesson_3):
    # the Top-k slider cuts the draw (sample_top_k); each step still reports the lesson's 8 candidates (top_k)
    settings = GenerationSettings(max_new_tokens=80, temperature=1.5, top_k=8, sample_top_k=3, top_p=0.8, seed=7)
    at = settle(lesson_3, question=QUESTION, temperature=1.5, top_k=3, top_p=0.8, seed=7)
    turn = engine_turn(QUESTION, settings)
    steps = view_data(at, VIEW)["steps"]
    assert [s["caption"] for s in steps] == [f"id {s.id}" for s in turn.steps]  # the same draw, seed for seed
    spread = 0
    for step in steps:
        before, after = step["bars"]
        assert before["title"] == "As the model gave it" and len(before["rows"]) == 8
        assert "temperature 1.5, top-k 3, top-p 0.8" in after["title"] and len(after["rows"]) <= 3
        facts = dict(step["facts"])
        kept = int(facts["Tokens the draw could pick"].replace(",", ""))
        assert kept <= 3
        # what the draw picked from sums to at most 1 and holds the drawn token
        assert sum(r["p"] for r in after["rows"]) <= 1 + 1e-6
        assert facts["Its probability in the draw"] != "0%"
        spread += kept > 1
    assert spread, "at temperature 1.5 some step leaves the draw more than one token"
    # the same settings and seed draw the same turn again; another seed is its own draw
    again = settle(at, seed=7)
    assert [s["caption"] for s in view_data(again, VIEW)["steps"]] == [f"id {s.id}" for s in turn.steps]


def test_a_hostile_question_is_bounded_and_shown_as_text(lesson_3):
    assert at_box(lesson_3).max_chars == 200  # the box takes no more characters
    # 200 characters that cut into far more than 60 tokens
    at = settle(lesson_3, question="🍔ж" * 100, temperature=0.0, seed=0)
    assert "too long: at most 60 tokens" in "\n".join(w.value for w in at.warning)
    at = settle(at, question="[click](http://evil.example) <|im_end|> <b>e</b>?")
    assert not at.warning
    line = next(m.value for m in at.markdown if "Your question" in m.value)
    assert "\\[click\\]\\(http" in line and "\\<b\\>" in line  # escaped: shown as typed, never a link or markup
    assert view_step(at, VIEW)[0].startswith("Token 1 of ")


def test_what_if_puts_another_candidate_in_and_the_model_writes_on_from_it(lesson_3):
    at = lesson_3
    back = [b for b in at.button if b.key == f"{KEY}_back"]
    if back:  # after a question of the learner's: back to the lesson's own
        back[0].click().run(timeout=300)
    assert view_step(at, VIEW)[0] == "Token 1 of 28"  # back to the lesson's own call
    picker = at.selectbox(key=f"{KEY}_what_if_1")
    # a word where the model wrote <tool_call>
    picker.select_index(next(n for n, o in enumerate(picker.options) if o.startswith("The "))).run(timeout=300)
    at.button(key=f"{KEY}_what_if_go").click().run(timeout=300)
    assert not at.exception, [e.value for e in at.exception]
    data = view_data(at, VIEW)
    steps = data["steps"]
    assert steps[0]["chip"] == "The" and "Swapped in here" in steps[0]["bad"]
    # its bar says it was swapped in, never "(chosen)": the model chose <tool_call>
    assert [r["text"] for r in steps[0]["bars"][0]["rows"] if r["chosen"]][0].endswith("(swapped in)")
    assert any(m.value.startswith("> How many times does the letter r") for m in at.markdown)  # the lesson's question
    assert ["Swapped token", 1] in data["marks"]
    assert "**What if:** at token 1 the model had picked **The**" in page_text(at)
    # the continuation is the engine's own: generate_turn with the prefix, steps after it
    turn = engine_turn(
        load_scenario("strawberry").messages[-1]["content"],
        GenerationSettings(max_new_tokens=80, top_k=8),
        prefix="The",
    )
    assert [s["caption"] for s in steps[1:]] == [f"id {s.id}" for s in turn.steps]
    assert "<tool_call>" not in turn.text[:20]  # the turn begins as prose


def test_with_no_model_the_page_says_asking_needs_the_model_and_names_the_shipped_model():
    at = open_page(P3, timeout=120, model="off")
    assert view_step(at, VIEW)[0] == "Token 1 of 28"
    infos = "\n".join(i.value for i in at.info)
    assert (
        "need a model to write the turn" in infos
        and "the shipped model (trained here; not Qwen3)" in infos
        and "**Model**" in infos
    )
    assert not any("question" in box.label.lower() for box in at.text_input) and not at.slider


@pytest.mark.slow
def test_the_chance_of_a_malformed_call_is_counted_over_the_stated_number_of_sampled_turns(lesson_3):
    from engine.teaching.sampled_calls import sample_calls

    at = settle(lesson_3, question="", temperature=0.0, top_p=1.0, seed=0)
    at.number_input(key=f"{KEY}_samples").set_value(3)
    at.button(key=f"{KEY}_sample").click().run(timeout=300)
    assert "every sample is the same turn" in "\n".join(i.value for i in at.info)  # greedy: nothing to estimate
    # (the module's page keeps an earlier test's Top-k: set back to no cut, as the engine's settings below)
    at = settle(at, temperature=2.0, top_k=0, top_p=1.0, seed=5)
    at.button(key=f"{KEY}_sample").click().run(timeout=300)
    assert not at.exception, [e.value for e in at.exception]
    line = next(m.value for m in at.markdown if "sampled turns held a malformed call" in m.value)
    # the page's count is the engine's, for the same turns: the lesson's question, seeds 5 to 7, grammar off
    scenario = load_scenario("strawberry")
    settings = GenerationSettings(max_new_tokens=80, temperature=2.0, top_k=8, seed=5)
    counted = sample_calls(shipped(), Request(scenario.messages, scenario.tools, "native"), settings, 3)
    assert f"**{counted.malformed} of 3**" in line and "seeds 5 to 7" in line and "temperature 2" in line
    assert counted.malformed + counted.valid + counted.no_call == 3


def test_the_interval_and_the_bound_on_samples():
    from engine.errors import BadInput
    from engine.teaching.sampled_calls import MAX_SAMPLES, sample_calls, wilson

    low, high = wilson(0, 10)
    assert low == 0 and 0.25 < high < 0.31  # 0 of 10 is not "never"
    low, high = wilson(5, 10)
    assert low < 0.5 < high and low == pytest.approx(1 - high)
    for samples in (0, MAX_SAMPLES + 1):
        with pytest.raises(BadInput, match="samples must be from 1"):
            sample_calls(None, None, GenerationSettings(), samples)
