"""Lesson 5: the answer grounded in the result, and the first token that decides whether to call at all."""

import json

import streamlit as st

from engine.core.call_formats import get_format
from engine.harness.loop import ScriptedModel, Turn, load_scenario, run_episode, run_scenario
from ui.description_whatif import description_whatif
from ui.draw import legend_html, notice, prompt_html
from ui.first_token_panel import first_token_panels
from ui.glossary import show_intro
from ui.sections import headline, more, scene
from ui.state import style
from ui.understanding import check_understanding
from ui.words import LESSONS, for_format, lesson

ID = "when-not-to-call"
ROLE_NAMES = {"tool": "tool result"}
DATA = json.loads((LESSONS / f"{ID}.json").read_text(encoding="utf-8"))

text = lesson(ID)
st.title(text["title"])
show_intro(ID, text["intro"])
chosen_style = style()
strawberry = load_scenario("strawberry")


@st.cache_resource(show_spinner=False, max_entries=8)
def scripted(chosen: str, guess: bool):
    if not guess:
        return run_scenario(strawberry, chosen)
    model = ScriptedModel([Turn(DATA["guess"][chosen])])
    return run_episode(model, strawberry.messages, strawberry.tools, style=chosen)


def conversation_html(prompt) -> str:
    """The prompt from the first message on (the tool definitions before it are in the expander)."""
    return prompt_html(prompt, spans=prompt.conversation_spans())


# -- the answer, read off the result ---------------------------------------------------------------
st.header("With the result in context")
run = scripted(chosen_style, False)
last = run.calls[-1]
headline(for_format(text, "the answer, headline", chosen_style), key="answer_and_when_not_to_call_answer")
more(for_format(text, "the answer", chosen_style), key="answer_and_when_not_to_call_answer")
st.markdown(legend_html(), unsafe_allow_html=True)
st.container(key="answer_and_when_not_to_call_prompt").markdown(conversation_html(last.prompt), unsafe_allow_html=True)
scene("Its answer", heading=None)
with st.expander(f"The whole prompt of that call ({last.prompt.count:,} tokens, tool definitions included)"):
    st.markdown(prompt_html(last.prompt), unsafe_allow_html=True)
st.markdown(text["its answer"])
st.success(run.answer)

# -- the first token: call or answer -----------------------------------------------------------------
scene("When not to call")
headline(text["when not to call, headline"], key="answer_and_when_not_to_call_first_token")
more(text["when not to call"], key="answer_and_when_not_to_call_first_token")
if not get_format(chosen_style).special_opener:  # the first-token panel needs an opener that is one token
    st.caption(text["native only"])

first_token_panels(DATA["questions"], text["needs the model"])

scene("What if the tool said something else", text["description what if heading"], level="subheader")
description_whatif(DATA["questions"])

scene("What Qwen3-1.7B does", level="subheader")
st.markdown(text["reported elsewhere"])

# -- the twin misconception ------------------------------------------------------------------------
scene("Grounded, or a guess?")
headline(text["the twin misconception, headline"], key="answer_and_when_not_to_call_twins")
more(text["the twin misconception"], key="answer_and_when_not_to_call_twins")
twins = {is_guess: scripted(chosen_style, is_guess) for is_guess in (False, True)}
st.markdown("> " + twins[False].messages[0]["content"])  # the same question to both
for column, is_guess in zip(st.columns(2), (False, True), strict=True):
    with column:
        episode = twins[is_guess]
        st.subheader("A guess" if is_guess else "Grounded")
        st.markdown(text["guess" if is_guess else "grounded"])
        # what follows the question, in one box, a message to a line after its role: both fit side by side on one screen
        turns = [f"{ROLE_NAMES.get(m['role'], m['role'])}: {m['content']}" for m in episode.messages[1:]]
        st.container(key=f"answer_and_when_not_to_call_twin_{int(is_guess)}").code(
            "\n".join(turns), language=None, wrap_lines=True
        )
        results = sum(len(s.results) for s in episode.calls)
        st.info(f"The harness: *{episode.stop_reason}*. Tool results in the conversation: **{results}**")

scene("What to notice", heading=None)
notice(text["what to notice"])
check_understanding(ID)
