"""The chrome every page shares: page config, st.navigation over lessons/index.json, and the shared sidebar."""

from __future__ import annotations

import streamlit as st

from engine.core.styles import get_style
from ui.draw import CSS, PRESENTER_CSS
from ui.models import live_model_name, model_status
from ui.next_lesson import next_lesson
from ui.packs import pack_sidebar
from ui.sections import finish_sections, start_sections
from ui.state import MODEL_CHOICES, STYLES, keep_page_state, setup_defaults, style, to_url
from ui.words import ROOT, lesson_index, page_title

PAGE_TITLE = "Tool calling, token by token"


def _chrome():
    """Page config, navigation and the shared sidebar; the page st.navigation chose for this request."""
    st.set_page_config(page_title=PAGE_TITLE, layout="wide", initial_sidebar_state="collapsed" if presenting() else "auto")
    page = navigation()
    setup_defaults()
    sidebar()
    return page


def presenting() -> bool:
    """Presenter mode, from the toggle or, before it has run, from the URL (?present=1).

    A projector is often 1024 px wide: presenter mode starts with the sidebar collapsed (its
    arrow opens it again), so the lesson gets the whole width.
    """
    if "present" in st.session_state:
        return bool(st.session_state["present"])
    return st.query_params.get("present") in ("1", "true", "yes")


def route() -> None:
    """The router (app.py runs this): the shared chrome, then the chosen page."""
    page = _chrome()
    _run(page)


def _run(page) -> None:
    """Run the page, then keep a copy of its widgets' values, which Streamlit drops when another page runs."""
    start_sections(presenting())
    try:
        page.run()
        next_lesson(page.url_path)
    finally:
        finish_sections()
        keep_page_state()


def navigation():
    """st.navigation over lessons/index.json, by section; a page whose file is not written yet is left out."""
    sections: dict[str, list] = {}
    for entry in lesson_index():
        if (ROOT / entry["page"]).exists():
            page = st.Page(entry["page"], title=page_title(entry["id"]), url_path=entry["url_path"], default=entry.get("default", False))
            sections.setdefault(entry["section"], []).append(page)
    return st.navigation(sections, expanded=True)


def sidebar() -> None:
    """The settings every page shares: style, model, model status, presenter mode."""
    st.markdown(CSS, unsafe_allow_html=True)
    with st.sidebar:
        st.segmented_control(
            "Tool-call style", STYLES, key="style", required=True,
            format_func=lambda s: get_style(s).label,
            help=" ".join(f"{s.label}: {s.help}." for s in map(get_style, STYLES)),
        )
        name = live_model_name()
        st.radio(
            "Model", MODEL_CHOICES, key="model",
            format_func=lambda c: {"live": name, "tiny": "tiny (random weights)", "off": "off"}[c],
        )
        model_status(name)
        pack_sidebar()
        st.toggle("Presenter mode", key="present", help="Large text and a wide page, for projecting in class.")
    if st.session_state.get("present"):
        st.markdown(PRESENTER_CSS, unsafe_allow_html=True)
    to_url(style=style(), present="1" if st.session_state.get("present") else None, model=None if st.session_state.model == "live" else st.session_state.model)
