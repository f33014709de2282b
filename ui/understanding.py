"""Check your understanding: two or three questions at the end of a lesson, each answer revealed on demand.

The words are in lessons/<lesson>.md, sections "## Question N" and "## Answer N"; every figure
in them is a {placeholder} that engine/teaching/quiz.py computes, from the lesson's own data or
from what the page passes in (the tools in its editor, a mask it computed). This module only
draws them.
"""

from __future__ import annotations

import json

import streamlit as st

from engine.teaching.quiz import compute_quiz_values
from ui.sections import section
from ui.state import style
from ui.words import lesson


@st.cache_data(max_entries=64, show_spinner=False)
def _figures(lesson_id: str, chosen_style: str, page_figures: str) -> dict:
    # cached per lesson, style and the page's own figures: some answers replay whole scripted runs
    return compute_quiz_values(lesson_id, chosen_style, **json.loads(page_figures))


def questions(lesson_id: str, **page_figures) -> list[tuple[str, str]]:
    """The lesson's (question, answer) pairs with their figures filled in."""
    text = lesson(lesson_id)
    # never sort the keys: a tool's keys are rendered in their own order, and the order changes the count
    values = _figures(lesson_id, style(), json.dumps(page_figures))
    pairs, n = [], 1
    while f"question {n}" in text and f"answer {n}" in text:
        pairs.append((text[f"question {n}"].format(**values), text[f"answer {n}"].format(**values)))
        n += 1
    return pairs


def check_understanding(lesson_id: str, **page_figures) -> None:
    """The questions, each with its answer behind an expander, so the learner tries first."""
    pairs = questions(lesson_id, **page_figures)
    if not pairs:
        return
    section("Check your understanding")  # a screen of its own in presenter mode (called at a page's top level)
    st.header("Check your understanding")
    st.caption("Try each question first, using the page above; then open the answer.")
    for n, (question, answer) in enumerate(pairs, start=1):
        st.markdown(f"**{n}.** {question}")
        with st.expander(f"Answer {n}"):
            st.markdown(answer)
