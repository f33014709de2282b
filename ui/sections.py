"""Presenter mode, one screen at a time: a page is a sequence of sections, and a projector shows one.

A page marks where each scene begins with `scene("title")`: one line at the top level of the script, no
indentation to change, that begins a section and draws the scene's heading; the part above the first mark is
section 1. Outside presenter mode the marks only draw their headings and the page reads as one page. In presenter
mode (?present=1 or the sidebar's toggle) only the current section is kept, "Section k of n" and two buttons sit
above it, PageDown / PageUp move between sections, and ?section=k carries the section in a link.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx
from streamlit.runtime.state.session_state_proxy import get_session_state

from ui.screens import blocks, texts
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
    drawn_ids: set = field(default_factory=set)  # the widget ids drawn before the open section began
    widgets: list[list[str]] = field(default_factory=list)  # each section's widget keys (values, not buttons)


RUN = "_present_sections"  # this run's Sections (session state: each session runs in a thread of its own)
SHOWN = "_present_shown"  # (the section shown by the last run, each section's widget keys then)
# the widget values a browser is sent back when their section comes on screen (buttons hold no value to send)
VALUE_TYPES = {
    "bool_value",
    "int_value",
    "double_value",
    "string_value",
    "double_array_value",
    "int_array_value",
    "string_array_value",
}

_KEYS = st.components.v2.component("section_keys", js=read_asset("section_keys.js"))


def _move(by: int, count: int) -> None:
    st.session_state[KEY] = min(max(st.session_state[KEY] + by, 1), count)


def _current() -> Sections | None:
    return st.session_state.get(RUN)


def projected() -> bool:
    """Whether the page running now is drawn projected, in sections: what the router decided from
    ui.chrome.presenting() before the page ran (start_sections). Pages and views ask this, not the toggle."""
    return _current() is not None


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
    resend_widget_values(st.session_state[KEY])
    _open("")


def resend_widget_values(current: int) -> None:
    """When another section comes on screen, send its widgets' values to the browser again.

    A hidden section is drawn and then emptied, so the browser never holds its widgets: shown later,
    a slider would stand at its minimum and a text box be empty while the page computes with the
    session's values. Setting each value again (before its widget is drawn) makes Streamlit send it.
    """
    shown, widgets = st.session_state.get(SHOWN, (None, []))
    if shown is None or shown == current or current > len(widgets):
        return
    for key in widgets[current - 1]:
        if key in st.session_state:
            try:
                st.session_state[key] = st.session_state[key]
            except Exception:  # noqa: BLE001 (a value Streamlit will not take back is left as the browser has it)
                pass


def _widget_ids() -> set:
    ctx = get_script_run_ctx()
    try:
        return set(ctx.shared.widget_ids_this_run.snapshot()) if ctx is not None else set()
    except AttributeError:  # another Streamlit: nothing recorded, nothing re-sent
        return set()


def _widget_keys(ids: set) -> list[str]:
    """The user keys of these widget ids, for the widgets that hold a value (Streamlit's own records)."""
    try:
        state = get_session_state()._state  # noqa: SLF001
        by_id = {wid: key for key, wid in state._key_id_mapper._key_id_mapping.items()}  # noqa: SLF001
        metadata = state._new_widget_state.widget_metadata  # noqa: SLF001
    except AttributeError:
        return []
    return [by_id[i] for i in ids if i in by_id and i in metadata and metadata[i].value_type in VALUE_TYPES]


def section(title: str) -> None:
    """Here a new section begins (presenter mode shows one at a time); nothing outside presenter mode."""
    if _current() is None:
        return
    _close()
    _open(title)


def scene(
    title: str, heading: str | None = "", *, level: Literal["header", "subheader"] = "header", anchor: str | None = None
) -> None:
    """A scene begins: a section of its own in presenter mode (`title` in the bar above it), then its heading.

    The heading is `heading`, or the title when none is given; `heading=None` draws none (a screen that goes on
    from the one before, or whose first words say what it is). `level` and `anchor` are st.header's and
    st.subheader's own: the heading's size, and the #anchor a link may name (by default made from its words)."""
    section(title)
    if heading is not None:
        (st.header if level == "header" else st.subheader)(heading or title, anchor=anchor)


def _open(title: str) -> None:
    _run = _current()
    _run.titles.append(title)
    _run.drawn_ids = _widget_ids()
    placeholder = st.empty()
    box = placeholder.container()
    box.__enter__()
    _run.open = (placeholder, box)


def _close() -> None:
    _run = _current()
    placeholder, box = _run.open
    box.__exit__(None, None, None)
    _run.widgets.append(_widget_keys(_widget_ids() - _run.drawn_ids))
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
    st.session_state[SHOWN] = (current, _run.widgets)  # (past the last: none was shown, the rerun sends them)
    if count > 1:
        if current > count:
            # a link or PageDown past the last section: show the last
            st.session_state[KEY] = count
            st.rerun()
        with _run.bar.container(key="present_bar"):
            back, where, forward = st.columns([1, 4, 1], vertical_alignment="center")
            back.button("◀ Section", key="present_prev", on_click=_move, args=(-1, count), disabled=current <= 1)
            where.markdown(
                f"**Section {current} of {count}**"
                + (f" · {_run.titles[current - 1]}" if _run.titles[current - 1] else "")
                + " · PageDown / PageUp"
            )  # (ui/presenter.css sets it small, on one or two lines)
            forward.button(
                "Section ▶",
                key="present_next",
                on_click=_move,
                args=(1, count),
                disabled=current >= count,
                type="primary",
            )
        to_url(section=current if current > 1 else None)


def markdown_in_sections(markdown: str, title: str, per: int = 2) -> None:
    """A Markdown part whose top-level list is too long for one screen: projected, its lead and `per` items to a section.

    Outside presenter mode it is drawn whole, as one part of the page.
    """
    if _current() is None:
        st.markdown(markdown)
        return
    parts = blocks(markdown)  # paragraphs and list items, cut where a screen may end
    first = next((n for n, part in enumerate(parts) if part.startswith("- ")), len(parts))
    lead, items = parts[:first], parts[first:]
    groups = [items[i : i + per] for i in range(0, len(items), per)] or [[]]
    for number, group in enumerate(groups):
        if number:
            section(f"{title} ({number + 1} of {len(groups)})")
        for text in texts((lead if number == 0 else []) + group):
            st.markdown(text)


def headline(markdown: str, key: str) -> None:
    """A scene's one idea in a sentence, in larger type (on a screen and projected alike); `key` carries the page's name."""
    st.container(key=f"{key}__headline").markdown(markdown)


def screen_size(reading: int, projected: int) -> int:
    """A chart's or a box's height in pixels: `projected` in presenter mode, where a section fills one screen whole,
    else `reading`, for a learner scrolling a page (the one place a page's sizes depend on the mode)."""
    return projected if _current() is not None else reading


def more(markdown: str, key: str) -> None:
    """Words for the learner reading alone: drawn on a screen, left out when projected (ui/presenter.css)."""
    st.container(key=f"{key}__more").markdown(markdown)
