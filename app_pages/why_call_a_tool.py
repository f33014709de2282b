"""Lesson 1: the model sees token ids, not letters; counting is a job for a tool."""

import re

import streamlit as st

from engine.core.prompt import Request, render
from engine.harness.loop import load_scenario, run_scenario
from engine.harness.tools import run_tool
from ui.draw import draw_tokens, notice, show_token
from ui.glossary import show_intro
from ui.literal import draw_reply
from ui.models import model_label, model_source, no_model_box, tokenizer
from ui.packs import current, current_episode, find_replay, missing_note
from ui.state import from_url, style, to_url
from ui.stream import TokenStream
from ui.understanding import check_understanding
from ui.words import lesson

text = lesson("why-call-a-tool")
tok = tokenizer()
st.title(text["title"])
show_intro("why-call-a-tool", text["intro"])

# -- a word becomes tokens ---------------------------------------------------------------------
st.header("Type a word")
st.markdown(text["try it"])
from_url("why_word", "word", " strawberry")
word = st.text_input("Word or text", key="why_word", max_chars=200)
to_url(word=word)


def letters_hidden(piece) -> str:
    # a byte token's label (<0x8D>) is not letters: count only the characters it really holds
    whole = re.sub(r"<0x[0-9A-F]{2}>", "", piece.text)
    n, parts = sum(ch.isalpha() for ch in whole), len(re.findall(r"<0x[0-9A-F]{2}>", piece.text))
    return f"{n} letter{'s' if n != 1 else ''}" + (f" + {parts} byte{'s' if parts != 1 else ''} of a character" if parts else "")


pieces = tok.encode_and_show_work(word)
st.metric("Tokens", len(pieces))
if word != word.strip():  # a space is invisible in the box: say it is there
    st.caption(f"The box holds `{show_token(word)}`: ␣ marks a space, which is part of the text the model gets.")
if pieces:
    draw_tokens([(p.id, p.text) for p in pieces], extra=[letters_hidden(p) for p in pieces], special=[p.special for p in pieces])

bare = word.strip()
if bare and " " not in bare:
    st.subheader("With and without the leading space")
    st.markdown(text["leading space"])
    left, right = st.columns(2)
    for column, variant in ((left, bare), (right, " " + bare)):
        shown = tok.encode_and_show_work(variant)
        spaced = "with its leading space" if variant.startswith(" ") else "without a space"
        column.markdown(f'`"{show_token(variant)}"` ({spaced}): **{len(shown)} token{"s" if len(shown) != 1 else ""}**')
        with column:
            draw_tokens([(p.id, p.text) for p in shown], extra=[letters_hidden(p) for p in shown])

# -- count with the tool -------------------------------------------------------------------------
st.header("Count with code")
st.markdown(text["count with code"])
from_url("why_letter", "letter", "r")
letter = st.text_input("Letter to count", key="why_letter", max_chars=1)
to_url(letter=letter)
outcome = run_tool("count_letter", {"word": word.strip(), "letter": letter})
if outcome.error:
    st.warning(outcome.error)
else:
    st.metric(f'count_letter(word="{word.strip()}", letter="{letter}")', outcome.result)

# -- the live panel ----------------------------------------------------------------------------------
st.header("Ask the model")
st.markdown(text["live panel"])
scenario = load_scenario("strawberry")
question = scenario.messages[0]["content"]
st.markdown(f"> {question}")
kind, source = model_source("strawberry-no-tools", "lesson1-no-tools")
model_label(kind, source)
if kind in ("live", "random"):
    if st.button("Ask without tools, then with tools", key="why_ask", type="primary"):
        from engine.core.generation import GenerationSettings
        from engine.harness.loop import iterate_episode
        from engine.model.live import LiveModel, generate_turn

        left, right = st.columns(2)
        with left:
            st.subheader("Without tools")
            stream = TokenStream(is_special=tok.is_special)
            settings = GenerationSettings(max_new_tokens=160, top_k=0)
            generation = generate_turn(source, Request(scenario.messages, [], "native"), settings, on_step=stream.add)
            stream.finish()
            st.caption(f"{generation.output_tokens} tokens, finish: {generation.finish}")
        with right:
            st.subheader("With tools")
            # one strip per model call, streamed as it is written; the tool results between them
            streams = [TokenStream(is_special=tok.is_special)]
            live = LiveModel(source, GenerationSettings(max_new_tokens=80, top_k=0), on_step=lambda step: streams[-1].add(step))
            for step in iterate_episode(live, scenario.messages, scenario.tools, style(), max_turns=3):
                streams[-1].finish()
                st.caption(f"{step.turn.output_tokens} tokens, finish: {step.turn.finish}")
                for result in step.results:
                    st.markdown(f"Tool result: `{result.text}`")
                streams.append(TokenStream(is_special=tok.is_special))
            streams[-1].finish()
elif kind == "pack":
    left, right = st.columns(2)
    with left:
        st.subheader("Without tools")
        if current(source, render(Request(scenario.messages, [], "native")).ids, "the question without tools"):
            st.markdown(source.run.data["text"])
            st.caption(f"{len(source.run.data['steps'])} tokens, finish: {source.run.data['finish']}")
    with right:
        st.subheader("With tools")
        with_tools = find_replay(f"lesson1-tools-{style()}")
        played = None if with_tools is None else current_episode(
            with_tools, scenario.messages, scenario.tools, style(), "the question with tools", max_turns=3)
        if with_tools is None:
            missing_note(f"lesson1-tools-{style()}")
        for step in played.steps if played else []:
            draw_reply(step.turn.text)  # long whitespace runs collapsed, as the live view does
            for result in step.results:
                st.markdown(f"Tool result: `{result.text}`")
elif kind == "trace":
    st.code(source.text, language=None, wrap_lines=True)
    st.caption(f"{len(source.steps)} tokens, finish: {source.finish}")
else:
    no_model_box()
st.markdown(text["seed measurement"])

st.subheader("With tools: the scripted run")
st.markdown(text["with tools, scripted"])
run = run_scenario(scenario, style())
for number, step in enumerate(run.steps, start=1):
    with st.chat_message("assistant"):
        st.code(step.turn.text, language=None, wrap_lines=True)
        st.caption(f"model call {number}: {step.cost.input_tokens} tokens in, {step.cost.output_tokens} out")
    for result in step.results:
        with st.chat_message("user", avatar=":material/build:"):
            st.markdown(f"`{result.name}` ran in the harness and returned **{result.text}**")

notice(text["what to notice"])
check_understanding("why-call-a-tool")
