"""Sources: every outside document the lessons quote, one entry each: title, who, when, where, and what it reports."""

import streamlit as st

from ui.sources import entry_markdown, heading, load_sources
from ui.words import lesson

text = lesson("sources")
st.title(text["title"])
st.markdown(text["intro"])

for source in load_sources().values():
    st.subheader(heading(source), anchor=source.key)  # a lesson's [marker] links to sources#key
    st.markdown(entry_markdown(source))
