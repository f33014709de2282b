""" "Next lesson →" at the end of a page, in lessons/index.json's order (the last page links back to Home)."""

from __future__ import annotations

import streamlit as st

from ui.words import ROOT, lesson_index


def next_entry(url_path: str) -> dict | None:
    """The index entry after the lesson at `url_path`; None after the last lesson or for a page that is not one."""
    entries = [e for e in lesson_index() if (ROOT / e["page"]).exists()]
    at = next((n for n, e in enumerate(entries) if e["url_path"] == url_path and e["section"] == "Lessons"), None)
    return None if at is None or at + 1 >= len(entries) else entries[at + 1]


def next_lesson(url_path: str) -> None:
    """ "Next lesson →" under a lesson (the router calls it after the page ran); nothing under other pages."""
    entry = next_entry(url_path)
    if entry is not None:
        st.divider()
        st.page_link(
            entry["page"], label=f"{'Next lesson' if entry['section'] == 'Lessons' else 'Next'} → {entry['title']}"
        )
