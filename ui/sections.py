"""Presenter mode, one screen at a time: a page is a sequence of sections, and a projector shows one.

A page marks where each section begins with `section("title")` (one line at the top level of the
script, no indentation to change); the part above the first mark is section 1. Outside presenter
mode the marks do nothing and the page reads as one page. In presenter mode (?present=1 or the
sidebar's toggle) only the current section is kept, "Section k of n" and two buttons sit above it,
PageDown / PageUp move between sections, and ?section=k carries the section in a link.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import streamlit as st

from ui.state import from_url, to_url
from ui.views import read_asset

KEY = "present_section"  # the section shown, 1-based


@dataclass
class Sections:
    """The sections of this run: where they are drawn and which one is kept."""

    current: int
    bar: object  # the placeholder above the page for "Section k of n"
    titles: list[str] = field(default_factory=list)
    open: tuple | None = None  # (placeholder, entered container) of the section being drawn


RUN = "_present_sections"  # this run's Sections (session state: each session runs in a thread of its own)

_KEYS = st.components.v2.component("section_keys", js=read_asset("section_keys.js"))


def _move(by: int, count: int) -> None:
    st.session_state[KEY] = min(max(st.session_state[KEY] + by, 1), count)


def _current() -> Sections | None:
    return st.session_state.get(RUN)


def start_sections(presenting: bool) -> None:
    """Before a page runs (the router): in presenter mode, open section 1 under a bar for its number."""
    st.session_state.pop(RUN, None)
    if not presenting:
        return
    from_url(KEY, "section", 1, int)
    moved = _KEYS(key="present_keys", on_move_change=lambda: None).move
    if moved in (1, -1):
        st.session_state[KEY] = max(st.session_state[KEY] + moved, 1)  # clamped once the count is known
    st.session_state[RUN] = Sections(current=st.session_state[KEY], bar=st.empty())
    _open("")


def section(title: str) -> None:
    """Here a new section begins (presenter mode shows one at a time); nothing outside presenter mode."""
    if _current() is None:
        return
    _close()
    _open(title)


def _open(title: str) -> None:
    _run = _current()
    _run.titles.append(title)
    placeholder = st.empty()
    box = placeholder.container()
    box.__enter__()
    _run.open = (placeholder, box)


def _close() -> None:
    _run = _current()
    placeholder, box = _run.open
    box.__exit__(None, None, None)
    if len(_run.titles) != _run.current:
        placeholder.empty()  # drawn, so its widgets keep their values, but not shown
    _run.open = None


def finish_sections() -> None:
    """After a page ran (the router): close the last section and write "Section k of n" with its buttons."""
    _run = st.session_state.pop(RUN, None)
    if _run is None or _run.open is None:
        return
    st.session_state[RUN] = _run  # _close reads it
    _close()
    count, current = len(_run.titles), _run.current
    st.session_state.pop(RUN, None)
    if count > 1:
        if current > count:
            # a link or PageDown past the last section: show the last
            st.session_state[KEY] = count
            st.rerun()
        with _run.bar.container(key="present_bar"):
            back, where, forward = st.columns([1, 4, 1], vertical_alignment="center")
            back.button("◀ Section", key="present_prev", on_click=_move, args=(-1, count), disabled=current <= 1)
            where.markdown(f"**Section {current} of {count}**" + (f" · {_run.titles[current - 1]}" if _run.titles[current - 1] else "")
                           + " · PageDown / PageUp")  # (ui/presenter.css sets it small, on one or two lines)
            forward.button("Section ▶", key="present_next", on_click=_move, args=(1, count), disabled=current >= count,
                           type="primary")
        to_url(section=current if current > 1 else None)
