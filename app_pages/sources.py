"""Sources: every outside document the lessons quote, one entry each: title, who, when, where, and what it reports."""

import streamlit as st

from ui import screens
from ui.sections import scene
from ui.sources import address_line, entry_markdown, heading, load_sources
from ui.words import lesson


def lines(source) -> int:
    """About how many projected lines an entry takes: heading, who and when, address, what it reports, note."""
    return sum(
        screens.lines(part)
        for part in (heading(source), f"{source.by} · {source.date}", address_line(source), source.reports, source.note)
    )


text = lesson("sources")
st.title(text["title"])
st.markdown(text["intro"])

# projected, entries go to one screen while they fit it whole
for group in screens.pack(load_sources().values(), lines):
    scene(", ".join(source.label for source in group), heading=None)
    for source in group:
        st.subheader(heading(source), anchor=source.key)  # a lesson's [marker] links to sources#key
        st.markdown(entry_markdown(source))
