"""The tool-calling explainer: the router. Page config, navigation from lessons/index.json, the shared sidebar."""

import streamlit as st

from pages.common import PAGE_TITLE, navigation, setup_defaults, sidebar

st.set_page_config(page_title=PAGE_TITLE, layout="wide")
pg = navigation()
setup_defaults()
sidebar()
st.session_state["_routed"] = True  # this run has the sidebar; see pages.common.page_chrome
pg.run()
