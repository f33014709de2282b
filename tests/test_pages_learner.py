"""Page tests (streamlit AppTest) for what lets a learner follow alone: the glossary and its links,
"check your understanding" with the engine's figures, and each page's state kept across pages."""

from __future__ import annotations

import json
import re

import pytest
from helpers import ROOT, open_page, report_step

from engine.core.tokenizer import REAL_VOCAB, TOOL_CALL
from engine.core.tooldefs import load_tool_set
from engine.harness.loop import load_scenario
from engine.teaching.calculator import measure_tools_cost
from engine.teaching.cost import measure_malformed_cost
from ui.glossary import entry_text, hover_text, link_terms, term_url
from ui.words import NUMBERED

GLOSSARY = json.loads((ROOT / "lessons" / "glossary.json").read_text(encoding="utf-8"))
INDEX = {e["id"]: e for e in json.loads((ROOT / "lessons" / "index.json").read_text(encoding="utf-8"))}
# every numbered lesson asks "check your understanding" the same way (lesson 7 too, since issue 45)
LESSON_PAGES = {i: e["page"] for i, e in INDEX.items() if e["section"] == NUMBERED}
WANTED_TERMS = [
    "token",
    "vocabulary",
    "special token",
    "chat template",
    "system prompt",
    "tool schema",
    "thinking",
    "harness",
    "tool call",
    "tool result",
    "ReAct",
    "logit",
    "probability",
    "top-k",
    "sampler",
    "grammar",
    "mask",
    "tool_choice",
    "constrained decoding",
    "malformed call",
    "parallel calls",
    "opener",
]


def answers(at) -> list[str]:
    return [e.children[0].value for e in at.expander if e.label.startswith("Answer ")]


# -- the glossary ---------------------------------------------------------------------------------
def test_the_glossary_has_every_term_each_pointing_to_a_lesson_that_exists():
    assert [t["term"] for t in GLOSSARY["terms"]] == WANTED_TERMS
    assert len({t["id"] for t in GLOSSARY["terms"]}) == len(WANTED_TERMS)
    assert all(t["lesson"] in LESSON_PAGES and len(t["text"]) < 500 for t in GLOSSARY["terms"])


def test_the_glossary_page_lists_every_term_under_its_anchor_with_the_tokenizers_figures():
    at = open_page("app_pages/glossary.py")
    assert at.title[0].value == "Glossary" and not at.exception
    assert [h.value for h in at.subheader] == WANTED_TERMS
    assert [h.proto.anchor for h in at.subheader] == [t["id"] for t in GLOSSARY["terms"]]
    text = "\n".join(m.value for m in at.markdown if not m.value.startswith("<style>"))
    assert f"{REAL_VOCAB:,} for Qwen3, ids 0 to {REAL_VOCAB - 1:,}" in text and f"(id {TOOL_CALL})" in text
    assert "{" not in text  # every placeholder filled


@pytest.mark.parametrize(
    ("term", "shown"),
    [
        pytest.param("mask", "**mask**: At one step, the set of tokens the grammar allows next", id="known-term"),
        pytest.param("tool-choice", "**tool_choice**: A request setting", id="term-with-underscore"),
    ],
)
def test_a_link_with_term_puts_that_entry_on_the_first_screen(term, shown):
    at = open_page("app_pages/glossary.py", term=term)
    assert at.markdown[1].value.startswith(shown) or any(m.value.startswith(shown) for m in at.markdown[:4])


@pytest.mark.parametrize(
    ("term", "shown"),
    [
        ("<script>", "` '<script>' `"),
        # a bare address is autolinked even with its dots escaped: inside a code span it never is
        ("www.example.com", "` 'www.example.com' `"),
        ("a`b``c", "``` 'a`b``c' ```"),
    ],
)
def test_an_unknown_term_says_so_literally_and_still_lists_everything(term, shown):
    at = open_page("app_pages/glossary.py", term=term)
    # a code span in the Markdown source: shown as typed, never as markup or a link
    assert f"No entry is called {shown};" in at.info[0].value and len(at.subheader) == len(WANTED_TERMS)


@pytest.mark.parametrize(
    ("text", "linked"),
    [
        pytest.param(
            "the text is cut into **tokens**, pieces",
            "**[tokens](glossary?term=token#token)**",
            id="plural-inside-bold",
        ),
        pytest.param(
            "a `token` in code and a token",
            "a `token` in code and a [token](glossary?term=token#token)",
            id="code-left-alone",
        ),
        pytest.param(
            "a tool call, then a tool result", "[tool call](glossary?term=tool-call#tool-call)", id="longest-term-first"
        ),
        pytest.param(
            "see [harness](elsewhere) and tokenizer",
            "see [harness](elsewhere) and tokenizer",
            id="links-and-longer-words-left-alone",
        ),
        pytest.param("react in lower case is a verb", "react in lower case is a verb", id="ReAct-is-case-sensitive"),
    ],
)
def test_link_terms_links_the_first_mention_only_outside_code_and_links(text, linked):
    without_titles = re.sub(r' "[^"]*"\)', ")", link_terms(text))
    assert linked in without_titles
    assert without_titles.count("](glossary") == without_titles.count("glossary?term=")


@pytest.mark.parametrize("entry", GLOSSARY["terms"], ids=lambda e: e["id"])
def test_a_linked_term_shows_its_definitions_first_sentence_on_hover(entry):
    linked = link_terms(f"words about {entry['term']} here")
    title = hover_text(entry)
    assert f'({term_url(entry["id"])} "{title}")' in linked
    # plain text a browser can show: no Markdown marks, no quote that would end the title, one sentence at most
    assert title and not set('`*"\n') & set(title) and len(title) <= 201
    assert entry_text(entry).replace("`", "").replace("*", "").replace('"', "'").startswith(title.rstrip("…"))


@pytest.mark.parametrize("lesson_id", list(LESSON_PAGES))
def test_every_lesson_links_to_the_glossary_and_asks_questions_with_hidden_answers(lesson_id):
    at = open_page(LESSON_PAGES[lesson_id])
    assert not at.exception
    text = "\n".join(m.value for m in at.markdown)
    if lesson_id != "same-call-in-other-apis":  # (lesson 7 compares the APIs' formats: no glossary term is its own)
        assert "**Words in this lesson** (glossary):" in text and "(glossary)" in text
    assert all(term_url(t["id"]) in text for t in GLOSSARY["terms"] if t["lesson"] == lesson_id)
    assert "Check your understanding" in [h.value for h in at.header]
    shown = answers(at)
    assert 2 <= len(shown) <= 3 and all(not e.proto.expanded for e in at.expander if e.label.startswith("Answer "))
    assert not any(re.search(r"\{[a-z_]+\}", a) for a in shown)  # every placeholder filled (JSON's braces stay)


# -- the answers carry the engine's figures ----------------------------------------------------------
def test_lesson_2_answers_follow_the_tools_in_the_editor():
    at = open_page(LESSON_PAGES["tools-as-schemas"])
    strawberry = measure_tools_cost(load_tool_set("strawberry"))
    assert answers(at)[0].startswith(
        f"**{67}** tokens natively: the tools cost goes from {strawberry.total} to {strawberry.total + 67}"
    )
    at.button(
        key="tools_as_schemas_add"
    ).click().run()  # the learner tries it: the tools cost moves by the answer's figure
    assert next(m.value for m in at.metric if m.label == "Native: tools cost") == str(strawberry.total + 67)
    third = measure_tools_cost(json.loads(at.text_area(key="tools_as_schemas_json").value))
    assert f"goes from {third.total} to" in answers(at)[0]


def test_lesson_1_and_4_and_6_answers_are_computed():
    assert "**1** token (id 72600)" in answers(open_page(LESSON_PAGES["why-call-a-tool"]))[0]
    cost = measure_malformed_cost(load_scenario("missing-brace"), "native")
    four = answers(open_page(LESSON_PAGES["check-run-return"]))
    assert cost.formula_text in four[1] and "per-block runs **1**" in four[2] and "vllm\nruns **0**" in four[2]
    six = open_page(LESSON_PAGES["constrained-decoding"], timeout=120)
    allowed = next(m.value for m in six.metric if m.label == "Tokens allowed at the tool's name").split(" of ")[0]
    assert answers(six)[0].startswith(f"**{allowed}**, shown at the top")


# -- state kept when the learner visits another page --------------------------------------------
def _leave_and_come_back(at, page: str):
    at.switch_page("app_pages/home.py").run()
    for name in list(at.query_params):  # the browser drops a page's URL parameters on the way to another page
        del at.query_params[name]
    at.run()
    at.switch_page(page).run()
    assert not at.exception
    return at


def test_lesson_4_keeps_its_scenario_and_step_after_a_visit_home():
    at = open_page(LESSON_PAGES["check-run-return"])
    at.selectbox(key="check_run_return_scenario").select("unknown-tool").run()
    report_step(at, "check_run_return_view", at.session_state["check_run_return_step"] + 1)
    step = at.session_state["check_run_return_step"]
    _leave_and_come_back(at, LESSON_PAGES["check-run-return"])
    assert (at.session_state["check_run_return_scenario"], at.session_state["check_run_return_step"]) == (
        "unknown-tool",
        step,
    )
    assert at.query_params["scenario"] == "unknown-tool" and at.query_params["step"] == str(step)


def test_lesson_6_keeps_tool_choice_and_step_and_a_link_still_wins():
    at = open_page(LESSON_PAGES["constrained-decoding"], timeout=120, tool_choice="required", step="5")
    assert (at.session_state["constrained_decoding_tool_choice"], at.session_state["constrained_decoding_step"]) == (
        "required",
        5,
    )
    _leave_and_come_back(at, LESSON_PAGES["constrained-decoding"])
    assert (at.session_state["constrained_decoding_tool_choice"], at.session_state["constrained_decoding_step"]) == (
        "required",
        5,
    )


def test_edited_tools_and_playground_files_survive_a_visit_to_another_page():
    at = open_page(LESSON_PAGES["tools-as-schemas"])
    at.button(key="tools_as_schemas_add").click().run()
    edited = at.text_area(key="tools_as_schemas_json").value
    _leave_and_come_back(at, LESSON_PAGES["tools-as-schemas"])
    assert at.text_area(key="tools_as_schemas_json").value == edited
    at.switch_page("app_pages/playground.py").run()
    at.text_input(key="playground_path_0").input("calc2.py").run()
    _leave_and_come_back(at, "app_pages/playground.py")
    assert [t.value for t in at.text_input] == ["calc2.py", "test_calc.py"]


def test_lesson_4_answers_follow_the_style_switch():
    at = open_page(LESSON_PAGES["check-run-return"], style="react")
    cost = measure_malformed_cost(load_scenario("missing-brace"), "react")
    shown = answers(at)
    assert "`error: the Action Input is not valid JSON`" in shown[0] and cost.formula_text in shown[1]
