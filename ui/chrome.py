"""The chrome every page shares: page config, st.navigation over lessons/index.json, and the shared sidebar."""

from __future__ import annotations

import streamlit as st

from engine.core.call_formats import get_format
from engine.startup.warmup import page_drawn
from ui.draw import CSS, PRESENTER_CSS
from ui.model_status import choice_label, model_status
from ui.models import live_model_name, setup_link
from ui.next_lesson import next_lesson
from ui.sections import finish_sections, start_sections
from ui.shipped_model import default_model_choice
from ui.state import MODEL_CHOICES, STYLE_NAMES, keep_page_state, setup_defaults, style, to_url
from ui.teacher import minutes_words, own_page_keys, teacher_sidebar
from ui.words import ROOT, lesson_index, page_title

PAGE_TITLE = "Tool calling, token by token"


def _chrome():
    """Page config, navigation and the shared sidebar; the page st.navigation chose for this request."""
    st.set_page_config(
        page_title=PAGE_TITLE, layout="wide", initial_sidebar_state="collapsed" if presenting() else "auto"
    )
    page = navigation()
    setup_defaults()
    sidebar()
    teacher_sidebar(page.url_path, lesson_id(page))
    return page


def lesson_id(page) -> str:
    """The lessons/index.json id of a navigation page (the default page answers at "" and at its own url_path)."""
    ids = {entry["url_path"]: entry["id"] for entry in lesson_index()}
    ids[""] = next((entry["id"] for entry in lesson_index() if entry.get("default")), "")
    return ids.get(page.url_path, "")


def presenting() -> bool:
    """Presenter mode, from the toggle or, before it has run, from the URL (?present=1).

    A projector is often 1024 px wide: presenter mode starts with the sidebar collapsed (its
    arrow opens it again), so the lesson gets the whole width.
    """
    if "present" in st.session_state:
        return bool(st.session_state["present"])
    return st.query_params.get("present") in ("1", "true", "yes")


def route() -> None:
    """The router (router.py runs this): the shared chrome, then the chosen page."""
    page = _chrome()
    try:
        _run(page)
    finally:
        page_drawn()  # the warm-up waits for a fresh server's first page before it imports torch


def _run(page) -> None:
    """Run the page, then keep a copy of its widgets' values, which Streamlit drops when another page runs."""
    start_sections(presenting())
    if (minutes := minutes_words(lesson_id(page))) is not None and lesson_id(page) != "home":
        # st.html, not a caption or markdown: a page's own elements keep their places (its tests count them)
        st.html(
            f'<div class="minutes" title="from lessons/teaching.json, for planning a class">⏱ Suggested: {minutes}</div>'
        )
    before = set(st.session_state)
    try:
        page.run()
        next_lesson(page.url_path)
    finally:
        finish_sections()
        keep_page_state()
        own_page_keys(page.url_path, before)


def navigation():
    """st.navigation over lessons/index.json, by section; a page whose file is not written yet is left out.

    The default page is served at the root URL, so its own url_path ("home") would find no page:
    it is given "" and a hidden copy of the same file answers /home (Streamlit tells pages apart
    by url_path, so the two do not clash). A page's earlier addresses (its entry's "old_url_paths",
    in teachers' links) answer too, hidden, and send the visit on to the page's own address with its query.
    """
    sections: dict[str, list] = {}
    moved = {}  # an old url_path -> the page it now is
    for entry in lesson_index():
        if (ROOT / entry["page"]).exists():
            default = entry.get("default", False)
            page = st.Page(
                entry["page"],
                title=page_title(entry["id"]),
                url_path="" if default else entry["url_path"],
                default=default,
            )
            sections.setdefault(entry["section"], []).append(page)
            if default and entry["url_path"]:
                alias = st.Page(entry["page"], title=entry["title"], url_path=entry["url_path"], visibility="hidden")
                sections[entry["section"]].append(alias)
            for old in entry.get("old_url_paths", []):
                sections[entry["section"]].append(
                    st.Page(entry["page"], title=entry["title"], url_path=old, visibility="hidden")
                )
                moved[old] = page
    chosen = st.navigation(sections, expanded=True)
    if chosen.url_path in moved:
        st.switch_page(moved[chosen.url_path], query_params=st.query_params.to_dict())
    return chosen


def sidebar() -> None:
    """The settings every page shares: style, model, one line of model status (the rest is on the Set-up page), presenter mode."""
    st.markdown(CSS, unsafe_allow_html=True)
    with st.sidebar:
        st.segmented_control(
            "Tool-call style",
            STYLE_NAMES,
            key="style",
            required=True,
            format_func=lambda s: get_format(s).label,
            help=" ".join(f"{s.label}: {s.help}." for s in map(get_format, STYLE_NAMES)),
        )
        name = live_model_name()
        st.radio("Model", MODEL_CHOICES, key="model", format_func=lambda c: choice_label(c, name))
        model_status(name)
        setup_link()
        st.toggle("Presenter mode", key="present", help="Large text and a wide page, for projecting in class.")
    if st.session_state.get("present"):
        st.markdown(PRESENTER_CSS, unsafe_allow_html=True)
    to_url(
        style=style(),
        present="1" if st.session_state.get("present") else None,
        model=None if st.session_state.model == default_model_choice() else st.session_state.model,
    )
