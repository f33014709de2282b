"""Lesson 5's first-token panels: for each question, P(<tool_call>) as the model's first token and its top tokens.

The figures come from the model in use (one forward pass a prompt, engine/model/peek.py), or from a lesson
pack's recording of the same panel; with neither, the page says what it needs.
"""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from engine.core.prompt import render
from engine.core.tokenizer import TOOL_CALL
from engine.errors import EngineError
from engine.teaching.panels import find_panel
from ui.chart_words import chart_caption
from ui.charts import chart_layout
from ui.draw import show_token
from ui.models import current_engine, draw_source, panel_source, show_engine_error
from ui.numbers import format_percent
from ui.palette import ink, legend
from ui.sections import screen_size

LESSON = "when-not-to-call"


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


def question_figures(source) -> dict | None:
    """One question's figures from the model or the pack; None (the panel said why, or nothing) where neither gives them."""
    if source.computes:
        return first_token_figures(source.label, source.panel.id)
    if source.kind == "pack":
        return figures_of(source.run.first_token())
    return None


def first_token_panels(questions: list[dict], needs_model: str) -> None:
    """Both questions side by side, each with its P(<tool_call>) and chart, one legend under them."""
    sources = [panel_source(find_panel(LESSON, "first-token", q["id"])) for q in questions]
    # one line above both questions says what made their figures (a model, or the pack that recorded them)
    if sources[0].computes or all(s.kind == "pack" for s in sources):
        draw_source(sources[0])
    shown_any = charted = False
    for column, question, source in zip(st.columns(2), questions, sources, strict=True):
        with column:
            st.subheader(question["label"])
            st.markdown(f"> {question['content']}")
            try:
                figures = question_figures(source)
            except EngineError as error:  # a model server cannot give the whole distribution, or failed
                show_engine_error(error)
                shown_any = True
                continue
            if figures is None:
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
        st.info(needs_model)
