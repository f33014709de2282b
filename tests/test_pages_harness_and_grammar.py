"""Page tests (streamlit AppTest) for check-run-return (the harness), the answer and when not to call, constrained decoding (the grammar) and the harness playground.

Scripted runs and the grammar carry these pages without a model; the tiny random-weights
model covers the panels that need logits, labelled as such. Never weights.
"""

from __future__ import annotations

import pytest
from helpers import open_page, page_of, page_text, report_step, view_data, view_step

from engine.constrain.masks import inspect_mask
from engine.core.markdown_text import escape_markdown
from engine.core.tooldefs import load_tool_set
from engine.harness.loop import list_scenarios, load_scenario, run_scenario
from engine.teaching.cost import measure_malformed_cost

P4, P5, P6, PG = map(page_of, ("check-run-return", "when-not-to-call", "constrained-decoding", "playground"))


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def facts(at, key: str = "constrained_decoding_view") -> dict[str, str]:
    """The figures the step view shows first (label -> value), as a page handed them to it."""
    return dict(view_step(at, key)[1]["facts"])


def captions(at) -> str:
    return "\n".join(c.value for c in at.caption)


# -- lesson 4 ---------------------------------------------------------------------------------------
def test_lesson_4_opens_on_the_broken_call_with_its_failed_check_and_cost():
    at = open_page(P4)
    assert at.title[0].value == "4 · Check it, run it, return it"
    assert (
        at.session_state["check_run_return_scenario"] == "missing-brace"
        and at.session_state["check_run_return_step"] == 2
    )
    text = page_text(at)
    assert "❌ fail" in text and "error: the text inside &lt;tool_call&gt;&lt;/tool_call&gt; is not valid JSON" in text
    assert "<tool_response>\nerror: the text inside <tool_call></tool_call> is not valid JSON\n</tool_response>" in text
    cost = measure_malformed_cost(load_scenario("missing-brace"), "native")
    shown = metrics(at)
    assert shown["Measured: input with it − input without it"] == f"{cost.measured_in:,}"
    assert shown["Formula: C_bad + (a_bad + e) × n_later"] == f"{cost.formula_in:,}"
    assert cost.formula_text in text and "= ✓" in text and "561 + (32 + 22) × 5 = 831" in captions(at)
    assert at.query_params["scenario"] == "missing-brace" and at.query_params["step"] == "2"
    assert at.get("plotly_chart")


def test_lesson_4_steps_forward_and_back_with_a_growing_ledger():
    at = open_page(P4)
    run = run_scenario(load_scenario("missing-brace"), "native")
    report_step(at, "check_run_return_view", 3)
    where, call = view_step(at, "check_run_return_view")
    assert at.session_state["check_run_return_step"] == 3 and where == "Call 3 of 7" and call["title"] == "read_file"
    assert "✅ pass" in call["html"] and "ran <code>read_file(path=&#x27;calc.py&#x27;)</code>" in call["html"]
    assert metrics(at)["Input tokens so far"] == f"{sum(c.input_tokens for c in run.ledger.calls[:3]):,}"
    ledger = next(m.value for m in at.markdown if 'class="plain"' in m.value)
    assert ledger.count("<tr>") == 1 + 3  # the header and one row per call so far
    report_step(at, "check_run_return_view", 7)
    assert (
        "final answer" in view_step(at, "check_run_return_view")[1]["html"]
        and view_step(at, "check_run_return_view")[0] == "Call 7 of 7"
    )
    report_step(at, "check_run_return_view", 6)
    assert at.session_state["check_run_return_step"] == 6 and at.query_params["step"] == "6"


def test_lesson_4_under_vllm_shows_the_run_that_stopped_and_no_error_going_back():
    at = open_page(P4, scenario="missing-brace", policy="vllm", step="2")
    stopped = run_scenario(load_scenario("missing-brace"), "native", "vllm")
    forgiving = run_scenario(load_scenario("missing-brace"), "native", "per-block")
    text = page_text(at)
    assert len(stopped.calls) == 2 and stopped.calls[1].parse.returned_as_text
    assert metrics(at)["vllm: input tokens, whole run"] == f"{stopped.ledger.input_tokens:,}"
    assert metrics(at)["per-block: input tokens, whole run"] == f"{forgiving.ledger.input_tokens:,}"
    assert "Measured: input with it − input without it" not in metrics(
        at
    )  # the per-block run's formula is not this run's
    assert "exactly what the model will read" not in text and "these errors are <strong>not</strong> sent back" in text
    assert "The whole run: **2 calls**" in text and "1 calls" not in text
    assert "the model reads no error" in " ".join(m.value for m in at.markdown if "What to notice" in m.value)


def test_lesson_4_mixed_turn_under_vllm_greys_the_dropped_good_call():
    at = open_page(P4, scenario="mixed-turn", policy="vllm", step="1")
    turn = view_step(at, "check_run_return_view")[1]["html"]
    assert (
        turn.count('<mark class="dropped">') == 1 and turn.count('<mark class="bad">') == 1 and 'class="ok"' not in turn
    )
    assert "The whole run: **1 call**," in page_text(at)


@pytest.mark.parametrize("name", list_scenarios())
def test_lesson_4_shows_every_scenario(name):
    at = open_page(P4)
    at.selectbox(key="check_run_return_scenario").select(name).run()
    assert not at.exception
    scenario = load_scenario(name)
    if "native" not in scenario.styles:
        assert "exists only in the ReAct style" in page_text(at)
        at.button(key="check_run_return_switch_style").click().run()
        assert at.session_state["style"] == "react"
    step = at.session_state["check_run_return_step"]
    run = run_scenario(scenario, at.session_state["style"])
    assert view_step(at, "check_run_return_view")[0] == f"Call {step} of {len(run.calls)}"
    if scenario.malformed_turn is not None:
        assert "= ✓" in page_text(at)
    else:
        assert "no broken call" in page_text(at)


def test_lesson_4_react_style_and_mixed_turn_policies():
    at = open_page(P4, style="react", scenario="mixed-turn")
    assert "exists only in the native style" in page_text(at)
    at = open_page(P4, scenario="mixed-turn")
    text = page_text(at)
    assert "runs `read_file(path='calc.py')`" in text and "every call dropped; the reply comes back as text" in text
    at.segmented_control(key="check_run_return_policy").set_value("vllm").run()
    assert at.query_params["policy"] == "vllm" and view_step(at, "check_run_return_view")[0] == "Call 1 of 1"
    assert "comes back as plain text" in page_text(at)
    at = open_page(P4, style="react", scenario="missing-brace", step="3")
    assert view_step(at, "check_run_return_view")[0] == "Call 3 of 7" and "Observation: " in page_text(at)
    assert "both policies treat" in page_text(at)


def test_lesson_4_link_past_the_end_is_clamped():
    at = open_page(P4, scenario="strawberry", step="99", policy="nonsense")
    assert at.session_state["check_run_return_step"] == 2 and at.session_state["check_run_return_policy"] == "per-block"


# -- lesson 5 ---------------------------------------------------------------------------------------
def test_lesson_5_without_a_model_says_so_and_shows_the_grounded_answer():
    at = open_page(P5)
    assert at.title[0].value == "5 · The answer, and when not to call"
    assert 'The letter "r" appears 3 times in "strawberry".' in [s.value for s in at.success]
    assert "needs a model's own numbers" in page_text(at) and not at.metric
    assert "under 0.1%" in " ".join(m.value for m in at.markdown)  # quoted for Qwen3-1.7B, on a screen of its own
    stops = [i.value for i in at.info if i.value.startswith("The harness")]
    assert len(stops) == 2 and all("final answer: the turn has no call" in s for s in stops)
    # the grounded run read one tool result, the guess none; the same question opens both
    assert [s.split("Tool results in the conversation: ")[1] for s in stops] == ["**1**", "**0**"]
    assert "> How many times does the letter r appear in strawberry?" in page_text(at)


def test_lesson_5_with_the_tiny_model_shows_the_first_token_probability_labelled():
    at = open_page(P5, timeout=120)
    at.radio(key="model").set_value("tiny").run(timeout=120)
    shown = metrics(at)
    # one metric per question, both with the same label
    assert [m.label for m in at.metric] == ["P(<tool_call>) as the first token"] * 2 and list(shown) == [
        at.metric[0].label
    ]
    assert all(m.value.endswith("%") for m in at.metric)
    assert any("random weights" in w.value for w in at.warning)
    at.segmented_control(key="style").set_value("react").run()
    assert "native style whatever the sidebar says" in captions(at)
    assert "after `Observation:`" in page_text(at)


# -- lesson 6 ---------------------------------------------------------------------------------------
def test_lesson_6_computes_8_of_151669_at_the_name_without_a_model():
    at = open_page(P6)
    expected = inspect_mask(load_tool_set("strawberry"), '<tool_call>\n{"name": "', "auto").allowed
    assert expected == 8
    assert metrics(at)["Tokens allowed at the tool's name"] == "8 of 151,669"
    assert "**8 of 151,669**" in page_text(at) and "14 of 111" in captions(at)
    assert facts(at)["Allowed before token 1"] == "all of 151,669"
    assert "need only the grammar" in page_text(at)
    data = view_data(at, "constrained_decoding_view")
    assert dict(data["steps"][6]["facts"])["Allowed before token 7"] == "8 of 151,669"  # every step is sent at once
    assert data["steps"][6]["sub"] == "8" and len(data["steps"][6]["sample"]["tokens"]) == 8
    report_step(at, "constrained_decoding_view", 7)
    assert facts(at)["Allowed before token 7"] == "8 of 151,669" and at.query_params["step"] == "7"


@pytest.mark.parametrize(
    ("mode", "first", "second"),
    [
        ("auto", "all of 151,669", "1 of 151,669"),
        ("required", "1 of 151,669", "1 of 151,669"),
        ("count_letter", "1 of 151,669", "1 of 151,669"),
        ("none", "all of 151,669", "all of 151,669"),
    ],
)
def test_lesson_6_tool_choice_modes(mode, first, second):
    at = open_page(P6)
    at.segmented_control(key="constrained_decoding_tool_choice").set_value(mode).run()
    assert facts(at)["Allowed before token 1"] == first
    report_step(at, "constrained_decoding_view", 2)
    assert facts(at)["Allowed before token 2"] == second


def test_lesson_6_prose_is_free_under_auto_and_forbidden_under_required():
    at = open_page(P6, turn="prose")
    assert (
        facts(at)["Allowed before token 1"] == "all of 151,669"
        and not view_step(at, "constrained_decoding_view")[1]["bad"]
    )
    at.segmented_control(key="constrained_decoding_tool_choice").set_value("required").run()
    assert "forbids this token" in view_step(at, "constrained_decoding_view")[1]["bad"]
    at = open_page(P6, turn="other-tool", tool_choice="count_letter", step="7")
    assert "forbids this token" in view_step(at, "constrained_decoding_view")[1]["bad"]


def test_lesson_6_with_the_tiny_model_shows_before_after_and_side_by_side():
    at = open_page(P6, timeout=120, step="7", tool_choice="required")
    at.radio(key="model").set_value("tiny").run(timeout=120)
    assert (
        "Probability the model put on forbidden tokens" in facts(at)
        and len(view_step(at, "constrained_decoding_view")[1]["bars"]) == 2
    )
    assert not at.metric[1:] and "draws both for every masked step" in captions(
        at
    )  # no server-side bars: the view has them
    assert any("random weights" in w.value for w in at.warning)
    at.button(key="constrained_decoding_generate").click().run(timeout=120)
    replies = [m.value for m in at.markdown if 'class="turn-view reply"' in m.value]
    assert len(replies) == 2 and all("random weights" in r for r in replies)  # the tiny model's label on each panel
    assert '<div class="turn-view reply">&lt;tool_call&gt;&#10;{"name": "' in replies[1]  # literal, held to the grammar
    assert "Calls that pass every check: **0**. It hit the token limit (48 tokens)." in page_text(at)
    # a cut-off call says why it has no passing call, and links to the explanation below
    assert any("Why 0?" in w.value and "(#cut-off)" in w.value for w in at.warning)


def test_lesson_6_with_the_tiny_model_sends_every_steps_bars_from_one_pass_and_steps_without_recomputing(
    tiny_engine, monkeypatch
):
    import streamlit as st

    import engine.model.peek as peek
    from engine.constrain.masks import walk
    from engine.core.prompt import render
    from engine.teaching.panels import find_panel
    from ui.numbers import format_percent

    passes = []
    whole = peek.logits_at_each_position
    monkeypatch.setattr(peek, "logits_at_each_position", lambda *args: passes.append(args[2]) or whole(*args))
    st.cache_data.clear()  # a page cached by an earlier test would hide the pass
    at = open_page(P6, timeout=120, tool_choice="required")
    at.radio(key="model").set_value("tiny").run(timeout=120)
    panel, tools, tok = (
        find_panel("constrained-decoding", "mask", "call", "required"),
        load_tool_set("strawberry"),
        tiny_engine.tokenizer,
    )
    reply, prompt = tok.encode(panel.reply), render(panel.request, tok).ids
    walked = walk(tools, panel.reply, "required")
    assert len(passes) == 1 and passes[0] == reply[: len(walked)]  # one forward pass over the whole reply
    data = view_data(at, "constrained_decoding_view")
    masked = [n for n, s in enumerate(walked, 1) if s.allowed is not None]
    assert len(masked) == len(walked) == len(data["steps"]) > 20  # required masks every token of the call
    for n in masked:  # each step as inspect_mask gives it with the logits after that prefix, computed alone
        direct = inspect_mask(
            tools,
            tok.decode(reply[: n - 1]),
            "required",
            logits=peek.next_logits(tiny_engine, prompt + reply[: n - 1]),
            top_k=panel.top_k,
        )
        shown = data["steps"][n - 1]
        before, after = shown["bars"]
        for drawn, expected in ((before, direct.top_before), (after, direct.top_after)):
            assert len(drawn["rows"]) == len(expected) > 0
            assert [b["p"] for b in drawn["rows"]] == pytest.approx([t.p for t in expected], abs=1e-5), n
        assert dict(shown["facts"])["Probability the model put on forbidden tokens"] == format_percent(
            direct.forbidden_mass
        )
    report_step(at, "constrained_decoding_view", 9)  # stepping reruns the page but never the model
    report_step(at, "constrained_decoding_view", 3)
    assert at.session_state["constrained_decoding_step"] == 3 and len(passes) == 1
    at.segmented_control(key="constrained_decoding_tool_choice").set_value("auto").run(timeout=120)
    steps = view_data(at, "constrained_decoding_view")["steps"]
    assert len(passes) == 2 and not steps[0]["bars"] and steps[1]["bars"]  # auto: free before <tool_call>, masked after
    at.segmented_control(key="constrained_decoding_tool_choice").set_value("required").run(timeout=120)
    assert len(passes) == 2  # each reply, tool_choice and model once
    at.segmented_control(key="constrained_decoding_tool_choice").set_value("none").run(timeout=120)
    assert len(passes) == 2 and not any(s["bars"] for s in view_data(at, "constrained_decoding_view")["steps"])
    assert "Nothing is masked in this reply, so at every step the probabilities are the model's own." in page_text(at)


# -- the playground ---------------------------------------------------------------------------------
def test_playground_scripted_run_shows_the_loop_and_the_ledger():
    at = open_page(PG)
    assert [t.value for t in at.text_input] == ["calc.py", "test_calc.py"]
    at.button(key="playground_run").click().run()
    run = run_scenario(load_scenario("missing-brace"), "native")
    assert metrics(at) == {
        "Calls": "7",
        "Input tokens": f"{run.ledger.input_tokens:,}",
        "Output tokens": f"{run.ledger.output_tokens:,}",
    }
    assert any("final answer" in i.value for i in at.info)
    assert any(f"{escape_markdown('calc.py')} (changed)" in e.label for e in at.expander)


def test_playground_bad_files_get_a_message_and_keep_their_text():
    at = open_page(PG)
    at.text_input(key="playground_path_0").input("../outside.py").run()
    assert "the path '../outside.py' leaves the workspace" in [e.value for e in at.error]
    assert at.text_input(key="playground_path_0").value == "../outside.py"
    at.text_area(key="playground_text_1").input("x" * 70_000).run()
    assert (
        any("70,000 bytes" in e.value for e in at.error) and len(at.text_area(key="playground_text_1").value) == 70_000
    )
    at.button(key="playground_run").click().run()
    assert not at.exception and "2 file(s) left out" in captions(at)
    at.button(key="playground_add").click().run()
    assert len(at.text_input) == 3
    at.button(key="playground_remove_2").click().run()
    assert len(at.text_input) == 2


def test_playground_scenarios_and_live_mode():
    at = open_page(PG)
    at.selectbox(key="playground_scenario").select("strawberry").run()
    assert not at.text_input and "playground_result" not in at.session_state
    at.button(key="playground_run").click().run()
    assert any("appears 3 times" in i.value for i in at.info)
    at.segmented_control(key="playground_mode").set_value("live").run()
    assert "A live run needs a model" in page_text(at) and at.button(key="playground_run").disabled
    at.radio(key="model").set_value("tiny").run(timeout=120)
    at.button(key="playground_run").click().run(timeout=120)
    assert not at.exception and any(w.value.startswith("Tiny model") for w in at.warning)
    assert any("The run stopped" in i.value for i in at.info)


def test_playground_scripted_run_stops_where_the_learners_files_depart_from_the_script():
    at = open_page(PG)
    assert any("scripted turns are fixed text" in c.value for c in at.caption)
    at.button(key="playground_remove_1").click().run()  # remove test_calc.py
    at.button(key="playground_run").click().run()
    warning = next(w.value for w in at.warning if "The script stopped at call 1" in w.value)
    assert "`list_files` answered differently" in warning
    codes = [c.value for c in at.code]
    assert "calc.py\ntest_calc.py" in codes and "calc.py" in codes
    assert metrics(at)["Calls"] == "1"
    assert not any("both tests pass" in c for c in codes + [i.value for i in at.info])


# -- projected (?present=1): each page's first section is its key visual ------------------------------------------
def test_lesson_4_projected_opens_on_the_run_with_the_checks_beside_the_reply():
    at = open_page(P4, present="1")
    where, call = view_step(at, "check_run_return_view")
    assert where == "Call 2 of 7" and call["title"] == "no tool run"
    # compact: the reply and what goes back in one column, the checks in the other, no paragraphs between them
    assert call["html"].startswith('<div class="sv-cols">') and "The checks</h4><table" in call["html"]
    assert "as the harness received it" not in call["html"] and "The tool runs" not in call["html"]
    # the error is not repeated in the table: it is in what goes back, word for word
    assert (
        call["html"].count("is not valid JSON") == 1 and "&lt;tool_response&gt;\nerror: the text inside" in call["html"]
    )
    assert "Pick a scenario" not in [h.value for h in at.header] and not at.metric  # the ledger is a later section
    story = open_page(P4, present="1", section="2")
    assert [h.value for h in story.header] == ["The harness and this run"]
    text = page_text(story)
    assert "A program around it, the" in text and "Turn 2's call misses its closing brace" in text


def test_lesson_4_unprojected_keeps_the_paragraphs_and_the_error_column():
    call = view_step(open_page(P4), "check_run_return_view")[1]
    assert (
        "sv-cols" not in call["html"]
        and "as the harness received it" in call["html"]
        and "The tool runs" in call["html"]
    )
    assert call["html"].count("is not valid JSON") == 2  # in the checks' table and in what goes back


def test_lesson_6_projected_opens_the_view_at_the_tools_name():
    at = open_page(P6, present="1")
    where, step = view_step(at, "constrained_decoding_view")
    allowed = inspect_mask(load_tool_set("strawberry"), '<tool_call>\n{"name": "', "auto").allowed
    assert where == "Token 7 of 27" and step["title"] == "count"
    assert dict(step["facts"])["Allowed before token 7"] == f"{allowed} of 151,669" and allowed == 8
    assert not at.metric and at.query_params["step"] == "7"  # the headline metric is the next section's
    words = open_page(P6, present="1", section="2")
    assert {m.label: m.value for m in words.metric} == {"Tokens allowed at the tool's name": "8 of 151,669"}
    # without presenter mode the view opens at token 1, as before
    assert view_step(open_page(P6), "constrained_decoding_view")[0] == "Token 1 of 27"


def test_playground_projected_opens_on_the_loop():
    at = open_page(PG, present="1")
    loop = view_data(at, "playground_loop")
    assert loop["frames"] == [] and loop["names"][0] == "model" and "Run the episode" in loop["caption"]
    assert not at.text_area  # the workspace and the question are later sections
