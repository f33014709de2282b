"""Lesson 5's what-if: a learner rewrites a tool's description and sees P(<tool_call>) as the first token move.

The figures are the model's own (engine/teaching/description_effect.py): both questions' first token, with the
lesson's description and with the learner's, from the model in use. With no model, or a pack (whose runs
were recorded for the lesson's own prompts), the scene says what it needs.
"""

from __future__ import annotations

import streamlit as st

from engine.core.markdown_text import escape_markdown
from engine.errors import EngineError
from engine.teaching.description_effect import MAX_DESCRIPTION_CHARS, description_effect
from engine.teaching.panels import find_panel
from ui.models import panel_source, show_engine_error
from ui.numbers import format_percent
from ui.words import words

LESSON = "when-not-to-call"
KEY = "when_not_to_call_description"
TOOL = "count_letter"


def description_whatif(questions: list[dict]) -> None:
    """The description box, its button, and each question's P(<tool_call>) before and after."""
    panels = [find_panel(LESSON, "first-token", q["id"]) for q in questions]
    source = panel_source(panels[0])
    st.markdown(words(LESSON, "description what if"))
    if not source.computes:
        st.caption(words(LESSON, "description needs the model"))
        return
    tool = next(t for t in panels[0].request.tools if t["function"]["name"] == TOOL)
    with st.form(f"{KEY}_form", border=False):
        written = st.text_input(
            words(LESSON, "description label", tool=TOOL),
            value=tool["function"]["description"],
            max_chars=MAX_DESCRIPTION_CHARS,
            key=f"{KEY}_text",
        )
        pressed = st.form_submit_button(words(LESSON, "description button"), type="primary")
    if pressed:
        try:
            st.session_state[f"{KEY}_result"] = (
                source.label,
                written,
                description_effect(
                    source.engine, [(q["label"], p.request) for q, p in zip(questions, panels)], TOOL, written
                ),
            )
        except EngineError as error:  # BadInput (an empty description), a model server that failed
            show_engine_error(error)
            return
    kept = st.session_state.get(f"{KEY}_result")
    if not kept or kept[0] != source.label:
        return
    _, asked, found = kept
    st.caption(words(LESSON, "description asked", description=escape_markdown(asked)))
    for column, chance in zip(st.columns(len(found)), found, strict=True):
        column.metric(
            chance.label,
            format_percent(chance.after),
            # the lesson's own figure beside it, as the model gave it (a change in points reads 0.0 when both are
            # near 0% or 100%, where the interesting moves are)
            delta=words(LESSON, "description before", before=format_percent(chance.before)),
            delta_color="off",
            delta_arrow="off",
        )
