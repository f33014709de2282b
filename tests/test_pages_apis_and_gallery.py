"""Page tests (streamlit AppTest) for the same call in other APIs, the failure gallery,
and the calculator's "same tools elsewhere" section: the figures each shows are the engine's.

Scripted scenarios, the real tokenizer, the vendored OpenAI encodings and the grammar carry
these pages; no model, no weights, no network.
"""

from __future__ import annotations

import json
import re

import pytest
from helpers import open_page, page_text, view_step

from engine.core.call_formats import lesson_format_names
from engine.core.tokenizer import REAL_VOCAB
from engine.core.tooldefs import load_tool_set
from engine.harness.loop import list_gallery, list_scenarios, load_scenario
from engine.teaching.cost import measure_malformed_cost
from engine.teaching.exchanges import scenario_exchanges
from engine.teaching.gallery import check_grammar, measure_retry_loop, measure_schema_cost
from engine.wire.openai_tokens import compare_tool_costs
from ui.sources import cite, expand_citations

P7, GALLERY, CALC = "app_pages/same_call_in_other_apis.py", "app_pages/gallery.py", "app_pages/calculator.py"


def codes(at) -> list[str]:
    return [c.value for c in at.code]


def as_text(value) -> str:
    """A wire object as st.code shows it: literal text or indented JSON, less one leading and one trailing newline."""
    text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
    return re.sub(r"\n\Z", "", re.sub(r"\A\n", "", text))


def wire_texts(written) -> list[str]:
    """What the page must show for one step, in its tab order (native style: qwen3 first)."""
    shown = []
    for exchange in written.exchanges:
        shown.append(as_text(exchange.request))
        for n, reply in enumerate(exchange.replies):
            shown.append(as_text(reply))
            if n < len(exchange.results):
                shown.append(as_text(exchange.results[n]))
    return shown


# -- lesson 7 ---------------------------------------------------------------------------------------
def test_lesson_7_writes_the_strawberry_call_five_ways():
    at = open_page(P7)
    assert at.title[0].value == "7 · The same call in other APIs"
    assert [t.label for t in at.tabs] == ["Qwen3 native", "ReAct", "OpenAI Chat", "OpenAI Responses", "Anthropic"]
    written = scenario_exchanges("strawberry")[0]
    assert codes(at) == wire_texts(written)
    shown = codes(at)
    # the call and the result going back, in each format's own shape
    assert (
        '<tool_call>\n{"name": "count_letter", "arguments": {"word": "strawberry", "letter": "r"}}\n</tool_call><|im_end|>'
        in shown
    )
    assert "<|im_start|>user\n<tool_response>\n3\n</tool_response><|im_end|>" in shown
    assert "<|im_start|>user\nObservation: 3<|im_end|>" in shown
    assert any(
        '"arguments": "{\\"word\\": \\"strawberry\\", \\"letter\\": \\"r\\"}"' in c
        and '"finish_reason": "tool_calls"' in c
        for c in shown
    )
    assert any('"input": {\n' in c and '"stop_reason": "tool_use"' in c for c in shown)
    assert any('"tool_use_id": "toolu_01' in c for c in shown) and any(
        '"type": "function_call_output"' in c for c in shown
    )
    captions = [c.value for c in at.caption]
    assert captions[:3] == ["264 Qwen3 tokens", "28 tokens written", "10 tokens, read by the next call"]
    assert "221 Qwen3 tokens" in captions
    text = page_text(at)
    assert (
        f"`{written.exchanges[2].ids[0]}` (count_letter)" in text
        and "No ids: each result answers the call in the same position." in text
    )


def test_lesson_7_tables_of_differences_and_tool_choice_come_from_the_engine():
    at = open_page(P7)
    text = page_text(at)
    assert "<td>arguments</td>" in text and "a string holding JSON (function.arguments): parse it yourself" in text
    assert "by id: tool_result.tool_use_id = tool_use.id" in text
    # each API's spelling of the four modes, written by engine.wire.formats.tool_choice_for
    assert "<code>{&quot;type&quot;: &quot;any&quot;}</code>" in text
    assert (
        "<code>{&quot;type&quot;: &quot;function&quot;, &quot;name&quot;: &quot;&lt;tool name&gt;&quot;}</code>" in text
    )
    assert "<code>&quot;required&quot;</code>" in text


def test_lesson_7_costs_qwen3_exact_and_openai_estimated():
    at = open_page(P7)
    text = page_text(at)
    # strawberry: 241 native and 198 ReAct (exact); about 83 on gpt-4o and 89 on gpt-4 (the cookbook's method)
    assert "cost **241** tokens in Qwen3's native prompt and **198**\nin ReAct, counted exactly" in text
    assert "cost about **83** tokens on gpt-4o and **89** on gpt-4, estimates\nnot measured against the API" in text
    # the method checked on the cookbook's own example, under the table
    assert (
        "it gives 101 on gpt-4o and 105 on gpt-4; the cookbook reports that the API returned 101 and 105"
        in " ".join(c.value for c in at.caption)
    )
    table = at.table[0].value
    assert list(table["model"]) == ["Qwen3 native", "Qwen3 ReAct", "gpt-4o", "gpt-4"]
    assert list(table["the tools cost"]) == [241, 198, 83, 89] and list(table["whole prompt"]) == [264, 221, 101, 107]
    assert list(table["figure"]) == ["exact", "exact", "estimate", "estimate"]
    quoted = at.table[1].value
    assert list(quoted["system prompt tokens"])[:2] == [530, 281]
    assert "docs.anthropic.com/en/docs/tool-use-pricing-and-tokens" in text


@pytest.mark.slow
@pytest.mark.parametrize("style", lesson_format_names())
def test_lesson_7_every_scenario_and_step(style):
    at = open_page(P7, style=style)
    for name in [*list_scenarios(), *list_gallery()]:
        at.selectbox(key="same_call_in_other_apis_scenario").select(name).run()
        assert not at.exception, name
        styles = load_scenario(name).styles
        chosen = at.session_state["style"] if at.session_state["style"] in styles else styles[0]
        written = scenario_exchanges(name, chosen)
        assert len(at.selectbox(key="same_call_in_other_apis_step").options) == len(written), name
        for index in range(len(written)):
            at.selectbox(key="same_call_in_other_apis_step").select(index).run()
            assert not at.exception, (name, index)
            assert sorted(codes(at)) == sorted(wire_texts(written[index])), (name, index)
        assert at.query_params.get("scenario") == (None if name == "strawberry" else name)


def test_lesson_7_two_calls_have_two_ids_and_react_takes_two_replies():
    at = open_page(P7, scenario="two-calls")
    written = scenario_exchanges("two-calls")[0]
    text = page_text(at)
    for exchange in written.exchanges[2:]:
        assert len(exchange.ids) == 2 and all(f"`{i}`" in text for i in exchange.ids)
    react = written.exchanges[1]
    assert len(react.replies) == 2 and "**The reply 2** (the text the model writes)" in text


def test_lesson_7_follows_the_sidebar_style():
    at = open_page(P7, style="react")
    assert [t.label for t in at.tabs][:2] == ["ReAct", "Qwen3 native"]
    assert "<th>ReAct</th><th>Qwen3 native</th>" in page_text(at)
    at = open_page(P7, style="react", scenario="tag-in-string")
    assert "scripted in the Qwen3 native style only" in page_text(at)


def test_lesson_7_projected_stacks_the_panes_and_groups_the_table():
    # presenter mode shows one section at a time: the five formats are section 1, under the title (request
    # beside reply, one format a screen), the words section 2, the three parts section 3, what differs sections 4-5,
    # then its table one question a section: where the call is written section 6, arguments section 7
    # (set after the page opens: the router's first run is Home, whose five sections would clamp a ?section=7)
    at = open_page(P7, present="1")
    at.session_state["present_section"] = 7
    text = page_text(at.run())
    # one block per question, a row per format: no six-column table squeezed onto a projector, none scrolling
    assert (
        '<table class="wire"><tr><th colspan="2">arguments</th></tr><tr><td>Qwen3 native</td><td>a JSON object, in the text</td></tr>'
        in text
    )
    assert "where the call is written" not in text and "parallel calls" not in text
    assert codes(open_page(P7, present="1")) == wire_texts(scenario_exchanges("strawberry")[0])


# -- the failure gallery --------------------------------------------------------------------------------
def test_gallery_opens_on_the_tag_inside_a_string():
    at = open_page(GALLERY)
    assert at.title[0].value == "Ways a call goes wrong"
    assert at.session_state["gallery_case"] == "tag-in-string" and at.query_params["case"] == "tag-in-string"
    text = page_text(at)
    assert "at a `</tool_call>` that sits **inside** a\nJSON string" in text
    assert ' on its own line.\\n"}}\n</tool_call>' in codes(at)
    assert "finds no call: the first block is not valid JSON" in text
    # the escaped slash of the fix stays visible through Markdown
    assert "(<\\\\/tool_call> is the same JSON string)" in text
    assert "every call dropped; the reply comes back as text" in text
    # the bug reports it reproduces, each by title and date, linked to its entry on the Sources page
    assert (
        f"for Qwen {cite('vllm-issue-45167')}; SGLang's Hermes detector had the same bug {cite('sglang-pr-28698')}"
        in text
    )
    assert "The regex `<tool_call>(.*?)</tool_call>` ends the block" in text
    # the honest part: today's grammar lets </tool_call> through inside the string
    assert f"today's grammar allows 147,021 of\n{REAL_VOCAB:,} tokens, and `</tool_call>` is **allowed**" in text
    assert "**the parser is the fix**" in text
    # the figures the engine measures for this case (the error's wording sets e)
    cost = measure_malformed_cost(load_scenario("tag-in-string"), "native")
    assert cost.agrees and cost.c_bad == 539 and cost.n_later == 2
    assert {m.label: m.value for m in at.metric} == {
        "Measured": f"{cost.measured_in:,}",
        "By the formula": f"{cost.formula_in:,}",
    }
    assert f"C_bad + (a_bad + e) × n_later = {cost.formula_text} tokens" in text
    assert "C_bad = 539 is the prompt the broken call was sent with" in page_text(at)


# name -> what the page must say, computed by the engine where it is a figure
CASES = {
    "two-calls": [
        "finds one call: `count_letter(word='strawberry', letter='r')`",
        "never looks at the other 1 block: 2 were written, 1 is read",
        "The grammar walks all 49 tokens of this turn and refuses none",
    ],
    "made-up-name": [
        "refuses token 8 (`_letters`): at that point only 4 of 151,669 tokens are allowed",
        "`_letter`",
        "block 1 answered with `error: unknown tool 'count_letters'; the tools are count_letter, tokenize`",
    ],
    "tool-choice-none": ["Under `tool_choice: none` no grammar runs at all", "no call in this reply: it is the answer"],
    "endless-number": [
        "refuses token 28 (`0`): at that point only 3 of 151,669 tokens are allowed",
        "allows **all\n64 tokens** of the turn",
        "block 1 answered with `error: the <tool_call> block is not closed",
    ],
    "retry-loop": [
        "refuses token 14 (`verbose`)",
        "block 1 answered with `error: run_tests has no argument 'verbose'`",
        "*retry budget spent: too many turns in a row had only failed calls*",
    ],
}


@pytest.mark.parametrize("name", list(CASES))
def test_gallery_case(name):
    at = open_page(GALLERY, case=name)
    assert at.session_state["gallery_case"] == name
    text = page_text(at)
    for expected in CASES[name]:
        assert expected in text, (name, expected)
    # where the case comes from: the report it reproduces, as a marker to its source, or "constructed"
    assert expand_citations(load_scenario(name).gallery["origin"]["text"]) in text
    check = check_grammar(load_scenario(name))
    assert (check.at is not None) == (name not in ("two-calls", "tool-choice-none"))


def test_gallery_costs_are_the_engines():
    at = open_page(GALLERY, case="tool-choice-none")
    cost = measure_schema_cost(load_scenario("tool-choice-none"))
    assert {m.label: m.value for m in at.metric} == {"Prompt with the tools": "264", "Prompt without them": "23"}
    assert f"Paid for tools the model may not use: **{cost.wasted} tokens** over the run's 1 call." in page_text(at)
    assert cost.wasted == 241
    at = open_page(GALLERY, case="endless-number")
    assert {m.label: m.value for m in at.metric} == {"Tokens written": "64 of 64", "Repeated digits at the end": "40"}
    assert "finish `length`" in page_text(at)
    at = open_page(GALLERY, case="retry-loop")
    loop = measure_retry_loop(load_scenario("retry-loop"))
    shown = {m.label: m.value for m in at.metric}
    assert shown == {
        "Input and output tokens, budget of 2": f"{loop.with_budget['tokens']:,}",
        "Input and output tokens, no budget": f"{loop.without_budget['tokens']:,}",
    }
    # the run's own line names the same figure's two parts (1,722 input + 57 output = 1,779)
    assert (
        f"{loop.with_budget['input_tokens']:,} input and {loop.with_budget['output_tokens']:,} output tokens "
        f"({loop.with_budget['tokens']:,} in all)"
    ) in page_text(at)
    assert f"The budget saves **{loop.saved_tokens:,} tokens**" in page_text(at) and loop.saved_tokens == 3785


def test_gallery_steps_through_the_cases_and_follows_the_style():
    at = open_page(GALLERY)
    for name in list_gallery()[1:]:
        at.selectbox(key="gallery_case").select(name).run()
        assert not at.exception and at.session_state["gallery_case"] == name and at.query_params["case"] == name
    at = open_page(GALLERY, case="made-up-name")
    where, token = view_step(at, "gallery_view_made-up-name")  # the step view opens at the refused token
    assert where.startswith("Token 8 of ") and "refuses" in token["bad"] and token["sub"] == "✗"
    at = open_page(GALLERY, case="retry-loop", style="react")
    text = page_text(at)
    assert (
        "a `<tool_call>` regex finds\nnothing at all" in text
        and "This site's grammar is built for Qwen3's native" in text
    )
    at = open_page(GALLERY, case="two-calls", style="react")
    assert "scripted in the native style only" in page_text(at)


# -- the calculator's section ---------------------------------------------------------------------------------
def test_calculator_shows_the_same_tools_elsewhere():
    at = open_page(CALC)
    assert "The same tools elsewhere" in [h.value for h in at.header]
    rows = compare_tool_costs(load_tool_set("strawberry"), load_scenario("strawberry").messages)
    table = at.table[0].value
    assert list(table["the tools cost"]) == [r.tools_tokens for r in rows] == [241, 198, 83, 89]
    assert list(table["figure"]) == ["exact", "exact", "estimate", "estimate"]
    text = page_text(at)
    assert "**estimates by that method, not measured against the API**" in text
    assert "it gives 101 on gpt-4o and 105 on gpt-4; the cookbook reports that the API returned 101 and 105" in text
    assert list(at.table[1].value["system prompt tokens"]) == [530, 281, 159, 235, 264, 340, 395]
    at.selectbox(key="calculator_set").set_value("coding-agent").run()
    rows = compare_tool_costs(load_tool_set("coding-agent"), load_scenario("strawberry").messages)
    assert list(at.table[0].value["the tools cost"]) == [r.tools_tokens for r in rows]


# -- links a teacher (or anyone) can type ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "page, query, key, expected",
    [
        (P7, {"scenario": "../../etc/passwd"}, "same_call_in_other_apis_scenario", "strawberry"),
        (P7, {"scenario": "two-calls", "step": "99"}, "same_call_in_other_apis_step", 0),
        (P7, {"scenario": "missing-brace", "step": "-1"}, "same_call_in_other_apis_step", 0),
        (P7, {"step": "one"}, "same_call_in_other_apis_step", 0),
        (P7, {"scenario": "missing-brace", "step": "2"}, "same_call_in_other_apis_step", 2),
        (GALLERY, {"case": "strawberry"}, "gallery_case", "tag-in-string"),
        (GALLERY, {"case": "<script>"}, "gallery_case", "tag-in-string"),
        (GALLERY, {"case": "retry-loop"}, "gallery_case", "retry-loop"),
    ],
    ids=[
        "unknown-scenario",
        "step-past-the-end",
        "negative-step",
        "step-not-a-number",
        "good-step",
        "lesson-4-scenario-is-no-case",
        "markup",
        "good-case",
    ],
)
def test_a_typed_link_falls_back_to_a_valid_state(page, query, key, expected):
    at = open_page(page, **query)
    assert at.session_state[key] == expected and not at.exception
