"""Sources: every outside document the lessons quote, by title, with who published it, when and what it reports."""

import streamlit as st

from ui.sources import load_sources
from ui.words import lesson

text = lesson("sources")
st.title(text["title"])
st.markdown(text["intro"])

for source in load_sources().values():
    st.subheader(source.title, anchor=source.key)
    st.markdown(f"{source.by} · {source.date}" + (f" · [{source.url}]({source.url})" if source.url else ""))
    st.markdown(source.reports)
