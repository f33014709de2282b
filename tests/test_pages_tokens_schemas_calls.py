"""Page tests (streamlit AppTest) for Home, why call a tool (tokens), tools as schemas, the model writes a call, and the calculator: what each shows, and after each interaction.

No weights: the default model is absent here, so model panels must say so; the tiny
random-weights model covers the generation path, labelled as such.
"""

from __future__ import annotations

import json

import pytest
from helpers import open_page, page_of, page_text, report_step, view_data, view_step

from engine.core.prompt import Request, count_tools_tokens, render
from engine.core.tokenizer import load_tokenizer
from engine.core.tooldefs import load_tool_set
from engine.teaching.calculator import plan_run
from ui.numbers import format_count
from ui.sources import cite

QUESTION = [{"role": "user", "content": "How many times does the letter r appear in strawberry?"}]
P1, P2, P3, CALC = map(page_of, ("why-call-a-tool", "tools-as-schemas", "the-model-writes-a-call", "calculator"))


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_home_lists_every_page_and_says_the_model_is_missing():
    at = open_page()
    assert at.title[0].value == "Tool calling, token by token"
    links = [el.proto.label for el in at.get("page_link")]
    assert "1 · Why call a tool" in links and "Token-cost calculator" in links and "Set-up" in links
    # one line here; how to get the model is on the Set-up page
    assert "no model is loaded" in page_text(at).lower() and "python -m engine" not in page_text(at)
    assert "python -m engine download --model Qwen/Qwen3-1.7B" in page_text(open_page("app_pages/setup.py"))
    assert at.query_params["style"] == "native"


def test_style_and_presenter_mode_come_from_the_url_and_follow_across_pages():
    at = open_page(P1, style="react", present="1")
    assert at.session_state["style"] == "react" and at.session_state["present"] is True
    assert any("font-size: 22px" in m.value for m in at.markdown)
    at.switch_page(P2).run()
    assert at.session_state["style"] == "react"
    assert at.query_params["style"] == "react"


def test_lesson_1_shows_strawberry_as_one_token_and_counts_with_the_tool():
    at = open_page(P1)
    tok = load_tokenizer()
    assert metrics(at)["Tokens"] == "1"  # " strawberry", with its leading space
    strips = [m.value for m in at.markdown if 'class="tok-strip"' in m.value]
    assert str(tok.encode(" strawberry")[0]) in strips[0]
    assert all(str(i) in strips[1] for i in tok.encode("strawberry"))  # the bare word: several tokens
    assert metrics(at)['count_letter(word="strawberry", letter="r")'] == "3"
    assert (
        cite("tool-calling-step-by-step") in page_text(at)
        and "seed 00" not in page_text(at)
        and "Qwen3-1.7B is not on this machine" not in page_text(at)
    )
    assert "no model is loaded" in page_text(at).lower()
    # the scripted with-tools run: the call, the result 3, the answer
    assert [c.value for c in at.code][-1] == 'The letter "r" appears 3 times in "strawberry".'


def test_lesson_1_typing_a_word_and_a_letter():
    at = open_page(P1)
    at.text_input(key="why_call_a_tool_word").input("tokenization").run()
    assert metrics(at)["Tokens"] == str(len(load_tokenizer().encode("tokenization")))
    assert at.query_params["word"] == "tokenization"
    at.text_input(key="why_call_a_tool_letter").input("o").run()
    assert metrics(at)['count_letter(word="tokenization", letter="o")'] == "2"


def test_lesson_2_computes_the_241_tokens_and_both_styles():
    at = open_page(P2)
    shown = metrics(at)
    native = Request(QUESTION, load_tool_set("strawberry"), "native")
    react = Request(QUESTION, load_tool_set("strawberry"), "react")
    assert shown["Native: tools cost"] == "241" == str(count_tools_tokens(native))
    assert any(
        "**159** for the definitions" in m.value and "**82** for the template's instructions" in m.value
        for m in at.markdown
    )
    assert shown["ReAct: tools cost"] == str(count_tools_tokens(react))
    assert shown["Tokens in this prompt"] == str(render(native).count)
    assert any("**241 tokens**" in m.value for m in at.markdown)
    assert any("k-tool" in m.value and "count_letter" in m.value for m in at.markdown)


def test_lesson_2_switching_style_changes_the_prompt_shown():
    at = open_page(P2)
    at.button(key="tools_as_schemas_switch").click().run()
    react = render(Request(QUESTION, load_tool_set("strawberry"), "react"))
    assert at.session_state["style"] == "react"
    assert metrics(at)["Tokens in this prompt"] == str(react.count)
    at.toggle(key="tools_as_schemas_tokens").set_value(True).run()
    assert any('class="tok k-tool"' in m.value for m in at.markdown)


def test_lesson_2_bad_json_is_reported_beside_the_field_and_the_text_kept():
    at = open_page(P2)
    broken = '[{"type": "function", "function": {"name": "count_letter"'
    at.text_area(key="tools_as_schemas_json").input(broken).run()
    assert at.text_area(key="tools_as_schemas_json").value == broken
    assert at.error[0].value.startswith("Not valid JSON")
    assert metrics(at)["Native: tools cost"] == "241"  # the last good tools still shown
    at.button(key="tools_as_schemas_add").click().run()  # adding to broken text leaves it alone
    assert at.text_area(key="tools_as_schemas_json").value == broken
    schema_problem = json.dumps([{"type": "function", "function": {"name": "x y", "parameters": {"type": "object"}}}])
    at.text_area(key="tools_as_schemas_json").input(schema_problem).run()
    assert "may use only letters" in at.error[0].value


def test_lesson_2_add_and_remove_a_tool_and_the_run_of_n_calls():
    at = open_page(P2)
    at.button(key="tools_as_schemas_add").click().run()
    tools = json.loads(at.text_area(key="tools_as_schemas_json").value)
    assert [t["function"]["name"] for t in tools] == ["count_letter", "tokenize", "new_tool_1"]
    assert metrics(at)["Native: tools cost"] == str(count_tools_tokens(Request(QUESTION, tools)))
    at.button(key="tools_as_schemas_remove").click().run()
    at.button(key="tools_as_schemas_remove").click().run()
    assert metrics(at)["Native: tools cost"] == str(
        count_tools_tokens(Request(QUESTION, load_tool_set("strawberry")[:1]))
    )
    at.slider(key="tools_as_schemas_calls").set_value(10).run()
    per_call = int(metrics(at)["Native: tools cost"])
    assert metrics(at)["Native: tools cost over 10 calls"] == format_count(per_call * 10)  # 2,410: one number format


def test_lesson_3_without_a_model_steps_through_the_scripted_calls_tokens():
    at = open_page(P3)
    tok = load_tokenizer()
    where, first = view_step(at, "the_model_writes_a_call_view")
    assert (where, first["title"]) == ("Token 1 of 28", "<tool_call>")  # numbered from 1, as on lessons 4 and 6
    data = view_data(at, "the_model_writes_a_call_view")
    # no probabilities: each step says it needs a model, beside the tools' grammar's allowed count (tests/test_pages_setup.py)
    assert all(
        ("Probability", "needs a model") in map(tuple, s["facts"]) and not s["bars"] for s in data["steps"]
    ) and not at.get("plotly_chart")
    assert [s["caption"] for s in data["steps"][:3]] == [f"id {i}" for i in tok.encode('<tool_call>\n{"')]
    assert "no model is loaded" in page_text(at).lower()
    report_step(at, "the_model_writes_a_call_view", 2)
    assert (
        view_step(at, "the_model_writes_a_call_view")[0] == "Token 2 of 28"
        and view_step(at, "the_model_writes_a_call_view")[1]["title"] == "↵"
    )
    ((label, step),) = [m for m in data["marks"] if m[0] == "First token of the name"]
    assert tok.token_text(tok.encode('<tool_call>\n{"name": "count_letter"')[step - 1]) == "count"
    report_step(at, "the_model_writes_a_call_view", step)
    assert at.query_params["step"] == str(step) and at.session_state["the_model_writes_a_call_step"] == step


def test_lesson_3_a_link_opens_at_a_step_in_react():
    at = open_page(P3, style="react", step="3")
    assert view_step(at, "the_model_writes_a_call_view")[0].startswith("Token 3 of ")


@pytest.mark.slow
def test_lesson_3_with_the_tiny_model_shows_probabilities_labelled_random():
    at = open_page(P3)
    at.radio(key="model").set_value("tiny").run(timeout=90)
    assert any("random weights" in w.value for w in at.warning)
    at.button(key="the_model_writes_a_call_generate").click().run(timeout=90)
    _, first = view_step(at, "the_model_writes_a_call_view")
    assert first["facts"][0][0] == "Its probability" and "random weights" in first["caption"]
    bars = first["bars"][0]["rows"]
    assert len(bars) == 8 and all(0 <= b["p"] <= 1 for b in bars) and sum(b["chosen"] for b in bars) <= 1
    report_step(at, "the_model_writes_a_call_view", 2)
    assert (
        at.session_state["the_model_writes_a_call_step"] == 2
        and view_step(at, "the_model_writes_a_call_view")[1]["bars"]
    )  # tokens count from 1


def test_calculator_default_run_matches_the_engine():
    at = open_page(CALC)
    plan = plan_run(load_tool_set("strawberry"), "native", calls=3, malformed=1)
    clean = plan_run(load_tool_set("strawberry"), "native", calls=3, malformed=0)
    shown = metrics(at)
    assert shown["Model calls"] == "5"
    assert shown["Input tokens, whole run"] == f"{plan.input_tokens:,}"
    assert shown["Extra input from the malformed calls"] == f"{plan.input_tokens - clean.input_tokens:,}"
    # the same "tools cost" as lesson 2: definitions + the template's instructions, on every call
    assert shown["of which the tools cost"] == f"{plan.tools_cost:,}" == f"{241 * 5:,}"
    assert any("Tools cost per call: 241 tokens** = 159 for the tool definitions + 82" in m.value for m in at.markdown)
    chart = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert chart["data"][0]["y"] == [c.tools_tokens for c in plan.calls]


def test_calculator_inputs_style_and_tool_sets():
    at = open_page(CALC)
    at.slider(key="calculator_calls").set_value(5).run()
    at.slider(key="calculator_bad").set_value(0).run()
    assert metrics(at)["Model calls"] == "6"
    assert metrics(at)["Extra input from the malformed calls"] == "0"
    at.get("button_group")[0].set_value("react").run()
    plan = plan_run(load_tool_set("strawberry"), "react", calls=5)
    assert metrics(at)["Input tokens, whole run"] == f"{plan.input_tokens:,}"
    at.selectbox(key="calculator_set").set_value("coding-agent").run()
    plan = plan_run(load_tool_set("coding-agent"), "react", calls=5)
    assert metrics(at)["Input tokens, whole run"] == f"{plan.input_tokens:,}"
    at.text_area(key="calculator_json").input("not json").run()
    assert at.error[0].value.startswith("Not valid JSON") and at.text_area(key="calculator_json").value == "not json"


@pytest.mark.parametrize("family", ["llama3.1", "gpt-oss"])
def test_calculator_prices_the_same_tools_in_another_family(family):
    from engine.core.call_formats import families, price_tools

    at = open_page(CALC)
    assert not any("per call** = " in m.value and "In " in m.value for m in at.markdown)  # Qwen3 alone by default
    at.selectbox(key="calculator_family").set_value(family).run()
    price = price_tools(
        family,
        [{"role": "user", "content": "How many times does the letter r appear in strawberry?"}],
        load_tool_set("strawberry"),
    )
    line = f"**In {families()[family].display_family}: {price.total} tokens per call** = {price.definitions} for the tool definitions + {price.instructions}"
    assert any(line in m.value for m in at.markdown)
    assert any(f"that is {price.total * 5:,} tokens for the tools" in m.value for m in at.markdown)
    assert (
        metrics(at)["Input tokens, whole run"]
        == f"{plan_run(load_tool_set('strawberry'), 'native', calls=3, malformed=1).input_tokens:,}"
    )
    assert at.query_params.get("family") in (family, [family])


def test_set_up_suggests_the_smaller_qwen3_with_this_machines_measured_speed():
    import streamlit as st
    import torch

    from engine.model.cpu_speed import suggest_small_model

    # the page keeps its sentence in st.cache_resource for the process; test_cpu_speed re-measures the
    # dtype choice (cache_clear) after an earlier page test may have cached it: measure both afresh
    st.cache_resource.clear()
    at = open_page("app_pages/setup.py")
    captions = "\n".join(c.value for c in at.caption)
    if torch.cuda.is_available():
        assert "Without a GPU" not in captions
        return
    estimate = suggest_small_model()  # measured once per process: the page showed the same figures
    assert "Without a GPU, try Qwen/Qwen3-0.6B" in captions
    assert f"copies memory at {estimate.bandwidth_gb_s} GB/s" in captions
    assert f"({estimate.ms_per_token} ms a token, measured here)" in captions


def test_calculator_projected_opens_on_the_chart_with_the_editor_next():
    at = open_page(CALC, present="1")
    plan = plan_run(load_tool_set("strawberry"), "native", calls=3, malformed=1)
    chart = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert chart["data"][0]["y"] == [c.tools_tokens for c in plan.calls]
    assert [s.key for s in at.slider] == ["calculator_calls", "calculator_bad"] and not at.text_area
    editor = open_page(CALC, present="1", section="2")
    assert editor.text_area(key="calculator_json").value.startswith("[") and not editor.get("plotly_chart")
