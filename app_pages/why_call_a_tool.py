"""Lesson 1: the model sees token ids, not letters; counting is a job for a tool."""

import streamlit as st

from engine.harness.loop import load_scenario, run_scenario
from engine.harness.tools import run_tool
from engine.teaching.letters import letters_hidden
from engine.teaching.panels import find_panel
from ui.ask_both import ask_both_live, replay_both
from ui.draw import draw_tokens, notice, show_token
from ui.glossary import show_intro
from ui.models import draw_source, panel_source, tokenizer
from ui.numbers import format_count
from ui.sections import scene
from ui.state import from_url, style, to_url
from ui.understanding import check_understanding
from ui.words import lesson

text = lesson("why-call-a-tool")
tok = tokenizer()
st.title(text["title"])
show_intro("why-call-a-tool", text["intro"])

# -- a word becomes tokens ---------------------------------------------------------------------
st.header("Type a word")
st.markdown(text["try it"])
from_url("why_call_a_tool_word", "word", " strawberry")
word = st.text_input("Word or text", key="why_call_a_tool_word", max_chars=200)
to_url(word=word)

pieces = tok.encode_and_show_work(word)
st.metric("Tokens", format_count(len(pieces)))
if word != word.strip():  # a space is invisible in the box: say it is there
    st.caption(f"The box holds `{show_token(word)}`: ␣ marks a space, which is part of the text the model gets.")
if pieces:
    draw_tokens(
        [(p.id, p.text) for p in pieces],
        extra=[letters_hidden(p.text) for p in pieces],
        special=[p.special for p in pieces],
    )

bare = word.strip()
if bare and " " not in bare:
    scene("With and without the leading space", level="subheader")
    st.markdown(text["leading space"])
    left, right = st.columns(2)
    for column, variant in ((left, bare), (right, " " + bare)):
        shown = tok.encode_and_show_work(variant)
        spaced = "with its leading space" if variant.startswith(" ") else "without a space"
        column.markdown(f'`"{show_token(variant)}"` ({spaced}): **{len(shown)} token{"s" if len(shown) != 1 else ""}**')
        with column:
            draw_tokens([(p.id, p.text) for p in shown], extra=[letters_hidden(p.text) for p in shown])

# -- count with the tool -------------------------------------------------------------------------
scene("Count with code")
st.markdown(text["count with code"])
from_url("why_call_a_tool_letter", "letter", "r")
letter = st.text_input("Letter to count", key="why_call_a_tool_letter", max_chars=1)
to_url(letter=letter)
outcome = run_tool("count_letter", {"word": word.strip(), "letter": letter})
if outcome.error:
    st.warning(outcome.error)
else:
    st.metric(f'count_letter(word="{word.strip()}", letter="{letter}")', outcome.result)

# -- the live panel ----------------------------------------------------------------------------------
scene("Ask the model")
st.markdown(text["live panel"])
scenario = load_scenario("strawberry")
question = scenario.messages[0]["content"]
st.markdown(f"> {question}")
bare, with_tools = find_panel("why-call-a-tool", "no-tools"), find_panel("why-call-a-tool", "with-tools", style())
bare_source, tools_source = panel_source(bare), panel_source(with_tools)
if bare_source.computes:
    draw_source(bare_source)
    if st.button("Ask without tools, then with tools", key="why_call_a_tool_ask", type="primary"):
        ask_both_live(bare_source.engine, bare, with_tools)
elif "pack" in (bare_source.kind, tools_source.kind):
    replay_both(bare_source, tools_source, with_tools)
else:
    draw_source(bare_source)
st.markdown(text["reported elsewhere"])

scene("With tools: the scripted run", level="subheader")
st.markdown(text["with tools, scripted"])
run = run_scenario(scenario, style())
for number, call in enumerate(run.calls, start=1):
    with st.chat_message("assistant"):
        st.code(call.turn.text, language=None, wrap_lines=True)
        st.caption(
            f"model call {number}: {format_count(call.cost.input_tokens)} tokens in, {format_count(call.cost.output_tokens)} out"
        )
    for result in call.results:
        with st.chat_message("user", avatar=":material/build:"):
            st.markdown(f"`{result.name}` ran in the harness and returned **{result.text}**")

scene("What to notice", heading=None)
notice(text["what to notice"])
check_understanding("why-call-a-tool")
