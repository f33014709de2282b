"""What a teacher needs around the lessons: reset (this page, or everything), suggested minutes, the print view.

Reset works from the keys each page made: the router hands every session key that appeared while a
page's script ran to that page (ui/chrome.py), so "Reset this page" drops that page's widgets and
its URL parameters, and leaves the sidebar's settings, the model and an uploaded pack alone. The handout is the page itself
printed: ui/style.css's print rules leave out the sidebar and the controls.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

import streamlit as st

from ui.state import KEPT, forget
from ui.words import LESSONS

SHARED = ("style", "model", "present")  # the sidebar's settings, kept by "Reset this page"
OWNERS = "_page_keys"  # url_path -> the session keys that page made (not a widget key itself)


@lru_cache(maxsize=1)
def _minutes() -> dict[str, int]:
    return json.loads((LESSONS / "teaching.json").read_text(encoding="utf-8"))["minutes"]


@dataclass(frozen=True)
class ClassStep:
    """One stop of the 50-minute path: a page, its minutes, the screens to project, what to do and what to ask."""

    page: str
    minutes: int
    screens: tuple[str, ...]
    show: str
    ask: str


@lru_cache(maxsize=1)
def class_path() -> tuple[ClassStep, ...]:
    """The path a teacher can follow through a 50-minute class (lessons/teaching.json), in order."""
    rows = json.loads((LESSONS / "teaching.json").read_text(encoding="utf-8"))["path"]
    return tuple(ClassStep(r["page"], r["minutes"], tuple(r["screens"]), r["show"], r["ask"]) for r in rows)


def minutes_for(lesson_id: str) -> int | None:
    """Suggested minutes in class for a lesson or page (lessons/teaching.json), or None."""
    return _minutes().get(lesson_id)


def minutes_words(lesson_id: str) -> str | None:
    minutes = minutes_for(lesson_id)
    return None if minutes is None else f"about {minutes} minutes in class"


def own_page_keys(url_path: str, before: set[str]) -> None:
    """Give the page that just ran every session key its script made (`before`: the keys when it started)."""
    new = {k for k in st.session_state if k not in before and not k.startswith("_") and k not in SHARED}
    if new:
        st.session_state.setdefault(OWNERS, {}).setdefault(url_path, set()).update(new)


def reset_page(url_path: str) -> None:
    """Forget this page's widgets and URL parameters; the shared settings stay."""
    for key in st.session_state.get(OWNERS, {}).pop(url_path, set()):
        forget(key)
    for name in [n for n in st.query_params if n not in SHARED]:
        del st.query_params[name]


def reset_everything() -> None:
    """Forget every page's state and every setting: the site as a new visitor finds it."""
    for key in list(st.session_state):
        del st.session_state[key]
    st.session_state[KEPT] = {}
    st.query_params.clear()


def teacher_sidebar(url_path: str, lesson_id: str) -> None:
    """The sidebar's teacher aids: the two resets and how to print a handout."""
    with st.sidebar, st.expander("For the teacher"):
        if (words := minutes_words(lesson_id)) is not None:
            st.caption(f"This page: {words}.")
        st.button(
            "Reset this page",
            key="_reset_page",
            on_click=reset_page,
            args=(url_path,),
            width="stretch",
            help="Back to how this page opens, with the sidebar's settings kept.",
        )
        st.button(
            "Reset everything",
            key="_reset_all",
            on_click=reset_everything,
            width="stretch",
            help="Every page and setting back to how a new visitor finds them.",
        )
        st.caption(
            "A handout: print this page (Ctrl+P or ⌘P). The print view leaves out the sidebar and the "
            "controls and keeps the text, the figures, what to notice and the questions."
        )
        st.caption("A chart as a picture: hover it and press the camera icon in its corner (PNG).")
        st.caption(
            "A link copied from the address bar reopens this page as it is, with your edits "
            "(added tools, edited files) up to 8,000 characters compressed."
        )
