"""Lesson 5: the answer grounded in the result, and the first token that decides whether to call at all."""

import json

import plotly.graph_objects as go
import streamlit as st

from engine.core.call_formats import get_format
from engine.core.prompt import render
from engine.core.tokenizer import TOOL_CALL
from engine.errors import EngineError
from engine.harness.loop import ScriptedModel, Turn, load_scenario, run_episode, run_scenario
from engine.teaching.panels import find_panel
from ui.chart_words import chart_caption
from ui.charts import chart_layout
from ui.description_whatif import description_whatif
from ui.draw import legend_html, notice, prompt_html, show_token
from ui.glossary import show_intro
from ui.models import current_engine, draw_source, panel_source, show_engine_error
from ui.numbers import format_percent
from ui.palette import ink, legend
from ui.sections import headline, more, screen_size, section
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
section("Its answer")
with st.expander(f"The whole prompt of that call ({last.prompt.count:,} tokens, tool definitions included)"):
    st.markdown(prompt_html(last.prompt), unsafe_allow_html=True)
st.markdown(text["its answer"])
st.success(run.answer)

section("When not to call")
# -- the first token: call or answer -----------------------------------------------------------------
st.header("When not to call")
headline(text["when not to call, headline"], key="answer_and_when_not_to_call_first_token")
more(text["when not to call"], key="answer_and_when_not_to_call_first_token")
if not get_format(chosen_style).special_opener:  # the first-token panel needs an opener that is one token
    st.caption(text["native only"])


@st.cache_data(show_spinner="Asking the model for its first token…", max_entries=16)
def first_token_figures(model_key: str, panel_id: str) -> dict:
    from engine.model.peek import first_token

    engine, panel = current_engine(), find_panel(panel_id)
    return figures_of(first_token(engine, render(panel.request, engine.tokenizer).ids, top_k=panel.top_k))


def figures_of(first) -> dict:
    """What the panel draws of a first token, from the model or from a lesson pack's run (engine.model.results.FirstToken)."""
    return {"p": first.p[TOOL_CALL], "top": [(a.token, a.p) for a in first.top], "tokens": first.prompt_tokens}


def first_token_chart(top: list[tuple[str, float]], p_call: float, key: str) -> None:
    if all(t != "<tool_call>" for t, _ in top):
        # <tool_call> always gets its bar, in the control token's colour, however far down it ranks
        top = [*top, ("<tool_call>", p_call)]
    labels = [show_token(t) or "∅" for t, _ in top]
    colours = [ink("control") if t == "<tool_call>" else ink("neutral") for t, _ in top]
    figure = go.Figure(
        go.Bar(
            x=[p for _, p in top],
            y=labels,
            orientation="h",
            marker_color=colours,
            text=[format_percent(p) for _, p in top],
            textposition="auto",
        )
    )
    chart_layout(
        figure,
        screen_size(240, 200),  # (projected, both questions' charts fit the row whole)
        # every bar named (plotly drops every other category label when the rows are this close)
        yaxis={"autorange": "reversed", "type": "category", "tickmode": "linear", "dtick": 1, "tickfont": {"size": 13}},
        xaxis={"title": "probability of the first token", "showticklabels": False},
        # a thin bar's figure at a size a room can read, not shrunk to the bar's thickness
        uniformtext={"minsize": 12, "mode": "show"},
    )
    st.plotly_chart(figure, key=key)
    chart_caption(figure)


sources = [panel_source(find_panel(ID, "first-token", q["id"])) for q in DATA["questions"]]
# one line above both questions says what made their figures (a model, or the pack that recorded them)
if sources[0].computes or all(s.kind == "pack" for s in sources):
    draw_source(sources[0])
columns = st.columns(2)
shown_any = charted = False
for column, question, source in zip(columns, DATA["questions"], sources, strict=True):
    with column:
        st.subheader(question["label"])
        st.markdown(f"> {question['content']}")
        if source.computes:
            try:
                figures = first_token_figures(source.label, source.panel.id)
            except EngineError as error:  # a model server cannot give the whole distribution, or failed
                show_engine_error(error)
                shown_any = True
                continue
        elif source.kind == "pack":
            figures = figures_of(source.run.first_token())
        else:
            if source.why != "no-source":  # a pack that cannot serve this panel: the panel says why
                draw_source(source)
                shown_any = True
            continue
        shown_any = charted = True
        st.metric("P(<tool_call>) as the first token", format_percent(figures["p"]))
        first_token_chart(figures["top"], figures["p"], f"wnc_first_{question['id']}")
if charted:  # one legend under both charts, whose colours mean the same
    legend(
        "control",
        "neutral",
        words={"control": "<tool_call>: the model starts a call", "neutral": "the other first tokens"},
    )
if not shown_any:
    st.info(text["needs the model"])
section("What if the tool said something else")
st.subheader(text["description what if heading"])
description_whatif(DATA["questions"])

section("What Qwen3-1.7B does")
st.subheader("What Qwen3-1.7B does")
st.markdown(text["reported elsewhere"])

section("Grounded, or a guess?")
# -- the twin misconception ------------------------------------------------------------------------
st.header("Grounded, or a guess?")
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

section("What to notice")
notice(text["what to notice"])
check_understanding(ID)
