"""Glossary: every term the lessons use, short and exact, with the lesson that shows it."""

import streamlit as st

from engine.core.markdown_text import code_span
from ui import screens
from ui.glossary import entry_text, glossary, term_url
from ui.sections import scene
from ui.words import lesson_index, page_title


def lines(entry: dict) -> int:
    """About how many projected lines an entry takes: its term, its text and the link to its lesson."""
    return screens.lines(entry["term"]) + screens.lines(entry_text(entry)) + 1


data = glossary()
pages = {e["id"]: e for e in lesson_index()}
st.title(data["title"])
st.markdown(data["intro"])
terms = {e["id"]: e for e in data["terms"]}

# -- the term a lesson linked to, first, so it is on the opening screen ---------------------------
wanted = st.query_params.get("term")
if wanted in terms:
    entry = terms[wanted]
    with st.container(border=True):
        st.markdown(f"**{entry['term']}**: {entry_text(entry)}")
        st.page_link(pages[entry["lesson"]]["page"], label=f"Shown in {page_title(entry['lesson'])}", icon="➡️")
elif wanted is not None:
    st.info(f"No entry is called {code_span(repr(wanted[:60]))}; every term is listed below.")

# each term's link opens it on the first screen (a bare #anchor is on another screen when projected)
st.markdown(" · ".join(f"[{e['term']}]({term_url(e['id'])})" for e in data["terms"]))

# -- every term, each under a heading whose anchor is its id; projected, a few to a screen ---------
# projected, entries go to one screen while they fit it whole
for group in screens.pack(data["terms"], lines):
    # its first and last term: a short name keeps the section's bar on one line
    scene(
        f"Terms: {group[0]['term']} – {group[-1]['term']}" if len(group) > 1 else f"Term: {group[0]['term']}",
        heading=None,
    )
    for entry in group:
        st.subheader(entry["term"], anchor=entry["id"])
        st.markdown(entry_text(entry))
        st.page_link(pages[entry["lesson"]]["page"], label=f"Shown in {page_title(entry['lesson'])}")
