"""Lesson 5's what-if (engine/teaching/description_effect.py, ui/description_whatif.py): a learner rewrites
count_letter's description and the first token's P(<tool_call>) is measured again, by the model in use."""

from __future__ import annotations

import json

import pytest
from helpers import open_page, page_text

from engine.core.markdown_text import escape_markdown
from engine.core.prompt import render
from engine.core.tokenizer import TOOL_CALL
from engine.errors import BadInput
from engine.model.peek import first_token
from engine.settings import BUILTIN
from engine.teaching.description_effect import MAX_DESCRIPTION_CHARS, description_effect, with_description
from engine.teaching.panels import find_panel
from ui.numbers import format_percent
from ui.words import LESSONS

P5 = "app_pages/answer_and_when_not_to_call.py"
QUESTIONS = json.loads((LESSONS / "when-not-to-call.json").read_text(encoding="utf-8"))["questions"]
FRENCH = "Translate a sentence into French."


def requests():
    return [(q["label"], find_panel("when-not-to-call", "first-token", q["id"]).request) for q in QUESTIONS]


def test_both_figures_are_the_models_first_token_on_each_prompt(tiny_engine):
    asked = requests()
    kept = json.dumps([r.tools for _, r in asked])
    found = description_effect(tiny_engine, asked, "count_letter", FRENCH)
    assert [f.label for f in found] == [q["label"] for q in QUESTIONS]
    for chance, (_, request) in zip(found, asked, strict=True):
        before_ids = render(request, tiny_engine.tokenizer).ids
        after_ids = render(with_description(request, "count_letter", FRENCH), tiny_engine.tokenizer).ids
        assert chance.before == first_token(tiny_engine, before_ids).p[TOOL_CALL]
        assert chance.after == first_token(tiny_engine, after_ids).p[TOOL_CALL]
        assert (chance.prompt_tokens_before, chance.prompt_tokens_after) == (len(before_ids), len(after_ids))
        assert before_ids != after_ids
    # the lesson's own requests are left as they were
    assert json.dumps([r.tools for _, r in asked]) == kept


def test_the_same_description_gives_the_same_figure(tiny_engine):
    asked = requests()
    own = next(t for t in asked[0][1].tools if t["function"]["name"] == "count_letter")["function"]["description"]
    for chance in description_effect(tiny_engine, asked, "count_letter", own):
        assert chance.before == chance.after and chance.prompt_tokens_before == chance.prompt_tokens_after


@pytest.mark.parametrize(
    ("tool", "description", "said"),
    [
        ("count_letter", "   ", "an empty one says nothing"),
        ("count_letter", "x" * (MAX_DESCRIPTION_CHARS + 1), f"at most {MAX_DESCRIPTION_CHARS} characters"),
        ("weather", "Say the weather.", "no tool named 'weather'"),
    ],
)
def test_a_description_that_cannot_be_measured_says_why(tool, description, said):
    with pytest.raises(BadInput, match=said):
        with_description(requests()[0][1], tool, description)


def test_the_page_measures_a_rewritten_description_with_the_shipped_model():
    from engine.model.loading import load_model

    at = open_page(P5, timeout=300, model="builtin")
    box = at.text_input(key="when_not_to_call_description_text")
    assert box.value.startswith("Count how many times")
    box.input(FRENCH)
    next(b for b in at.button if b.label == "Measure the first token again").click().run(timeout=300)
    assert not at.exception, [e.value for e in at.exception]
    expected = description_effect(load_model(BUILTIN), requests(), "count_letter", FRENCH)
    metrics = {m.label: m.value for m in at.metric}
    for chance in expected:
        assert metrics[chance.label] == format_percent(chance.after)
    assert f'With the description "{escape_markdown(FRENCH)}"' in page_text(at)


def test_with_no_model_the_scene_says_what_it_needs():
    at = open_page(P5, timeout=120, model="off")
    assert "This needs a model's own numbers for a prompt no one recorded" in page_text(at)
