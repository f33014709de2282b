"""The chrome every page shares: page config, st.navigation over lessons/index.json, and the shared sidebar."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from pages.common.confinement import confinement_sidebar
from pages.common.draw import CSS, PRESENTER_CSS
from pages.common.models import live_model_name, model_status
from pages.common.packs import pack_sidebar
from pages.common.state import MODEL_CHOICES, STYLES, keep_page_state, setup_defaults, style, to_url
from pages.common.words import ROOT, lesson_index

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
    st.session_state["_routed"] = True  # this run has the sidebar; the page's page_chrome() lets it through
    _run(page)


def _run(page) -> None:
    """Run the page, then keep a copy of its widgets' values, which Streamlit drops when another page runs."""
    try:
        page.run()
    finally:
        keep_page_state()


def page_chrome(page_file: str) -> None:
    """Call first in every page as `page_chrome(__file__)`: when the page runs without app.py's router, run it through the router instead.

    With a pages/ folder beside app.py, Streamlit runs a page file directly when its url_path
    equals the file's name and st.navigation has not yet run in the process: a cold server's
    first request (a teacher's link), and every AppTest switch_page. Drawing the page in that
    run is not enough: st.navigation moves the run onto app.py's page hash, so the page's
    widgets would get other element ids than in the routed runs that follow, and the browser
    would then send their defaults back (lesson 4's scenario jumped to its first option on the
    second click). So the fallback does what app.py does: the page runs again inside it, under
    its own page hash, and this outer run stops.
    """
    if st.session_state.pop("_routed", False):
        return
    caller = Path(page_file).resolve()
    page = _chrome()
    # (the default page's url_path reads "" whatever index.json gives it)
    chosen = {"" if e.get("default") else e["url_path"]: ROOT / e["page"] for e in lesson_index()}.get(page.url_path)
    if chosen is not None and chosen.resolve() == caller:
        st.session_state["_routed"] = True
        _run(page)
        st.stop()
    # st.navigation chose another page than the one running (never seen): go on drawing this one


def navigation():
    """st.navigation over lessons/index.json, by section; a page whose file is not written yet is left out."""
    sections: dict[str, list] = {}
    for entry in lesson_index():
        if (ROOT / entry["page"]).exists():
            page = st.Page(entry["page"], title=entry["title"], url_path=entry["url_path"], default=entry.get("default", False))
            sections.setdefault(entry["section"], []).append(page)
    return st.navigation(sections, expanded=True)


def sidebar() -> None:
    """The settings every page shares: style, model, model status, presenter mode."""
    st.markdown(CSS, unsafe_allow_html=True)
    with st.sidebar:
        st.segmented_control(
            "Tool-call style", STYLES, key="style", required=True,
            format_func=lambda s: {"native": "Native", "react": "ReAct"}[s],
            help="Native: Qwen3's own <tool_call> JSON. ReAct: Thought / Action / Action Input lines in plain text.",
        )
        name = live_model_name()
        st.radio(
            "Model", MODEL_CHOICES, key="model",
            format_func=lambda c: {"live": name, "tiny": "tiny (random weights)", "off": "off"}[c],
        )
        model_status(name)
        pack_sidebar()
        confinement_sidebar()
        st.toggle("Presenter mode", key="present", help="Large text and a wide page, for projecting in class.")
    if st.session_state.get("present"):
        st.markdown(PRESENTER_CSS, unsafe_allow_html=True)
    to_url(style=style(), present="1" if st.session_state.get("present") else None, model=None if st.session_state.model == "live" else st.session_state.model)
