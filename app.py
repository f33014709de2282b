"""The tool-calling explainer: the router. Page config, navigation from lessons/index.json, the shared sidebar."""

from pathlib import Path

import streamlit as st

from pages.common import PAGE_TITLE, lesson_index, setup_defaults, sidebar

st.set_page_config(page_title=PAGE_TITLE, layout="wide")

ROOT = Path(__file__).parent
sections: dict[str, list] = {}
for entry in lesson_index():
    # a page whose file is not written yet is left out, so the site always runs
    if (ROOT / entry["page"]).exists():
        page = st.Page(entry["page"], title=entry["title"], url_path=entry["url_path"], default=entry.get("default", False))
        sections.setdefault(entry["section"], []).append(page)

pg = st.navigation(sections)
setup_defaults()
sidebar()
st.session_state["_routed"] = True  # this run has the sidebar; see pages.common.page_chrome
pg.run()
