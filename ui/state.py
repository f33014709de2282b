"""The state a page keeps: widget values seeded from the URL, so a teacher's link reopens a page as it was.

Streamlit forgets a widget's value when a run does not draw that widget, which is every run of
another page: a learner who opened Home and came back found lesson 4 reset. So every key a page
seeds here is also copied into a plain (non-widget) dict in session_state, which Streamlit
keeps, and restored from it when the learner comes back without a link. A link's URL
parameters still win: a teacher's link opens the state it names.
"""

from __future__ import annotations

import base64
import zlib

import streamlit as st

from engine.core.call_formats import lesson_format_names

STYLE_NAMES = lesson_format_names()  # the lesson call formats the sidebar's switch offers
MODEL_CHOICES = ("builtin", "live", "tiny", "off")  # the shipped model, QWEN_MODEL (Qwen3-1.7B), tiny, none


KEPT = "_kept_page_state"  # key -> last value of every widget a page seeded here (not a widget key itself)


def _kept() -> dict:
    return st.session_state.setdefault(KEPT, {})


def from_url(key: str, param: str, default, cast=str, choices=None):
    """Seed a widget's session state from the URL's `param`, else from the session's kept copy, else `default`.

    A shared link reproduces a state; coming back to a page in the same session finds it as it was left.
    """
    if key not in st.session_state:
        value = default
        raw = st.query_params.get(param)
        kept = _kept()
        if raw is not None:
            try:
                candidate = cast(raw)
                if choices is None or candidate in choices:
                    value = candidate
            except (TypeError, ValueError):
                pass
        elif key in kept and (choices is None or kept[key] in choices):
            value = kept[key]
        st.session_state[key] = value
    elif choices is not None and st.session_state[key] not in choices:
        # a widget can be left empty (a segmented control clicked off): fall back, never pass None on
        st.session_state[key] = default
    _kept()[key] = st.session_state[key]
    return st.session_state[key]


def restore(key: str) -> bool:
    """Bring back a widget's value from the session's kept copy when Streamlit has dropped it; True if it has one now.

    For widgets with no URL parameter (a text a learner typed): call before drawing the widget.
    """
    kept = _kept()
    if key not in st.session_state and key in kept:
        st.session_state[key] = kept[key]
    if key in st.session_state:
        kept[key] = st.session_state[key]
        return True
    return False


def forget(key: str) -> None:
    """Drop a widget's value and its kept copy (a page resetting part of itself)."""
    st.session_state.pop(key, None)
    _kept().pop(key, None)


def keep_page_state() -> None:
    """Copy the current value of every kept key (the router calls this at the end of each run)."""
    kept = _kept()
    for key in list(kept):
        if key in st.session_state:
            kept[key] = st.session_state[key]


def reset_to(key: str, value) -> None:
    """A widget's on_change that puts `key` back to `value` (a new reply or scenario opens at its first step)."""
    st.session_state[key] = value


def to_url(**params) -> None:
    """Write the page's state into the URL (None removes a parameter)."""
    for name, value in params.items():
        if value is None:
            st.query_params.pop(name, None)
        elif st.query_params.get(name) != str(value):
            st.query_params[name] = str(value)


def style() -> str:
    return st.session_state.get("style") or STYLE_NAMES[0]


def style_button(label: str, to: str, key: str) -> None:
    """A primary button that switches the sidebar's style to `to` (the page reruns in it)."""
    st.button(label, key=key, on_click=lambda: st.session_state.update(style=to), type="primary")


def setup_defaults() -> None:
    """Global defaults, set once per session (the URL can set style, model and presenter mode)."""
    from_url("style", "style", STYLE_NAMES[0], str, STYLE_NAMES)
    from ui.shipped_model import default_model_choice

    from_url("model", "model", default_model_choice(), str, MODEL_CHOICES)
    from_url("present", "present", False, lambda v: v in ("1", "true", "yes"))


# -- a learner's edits in a link: compressed, base64url, within a size a browser and a chat app keep -----------
MAX_LINK_EDITS = 8_000  # characters of the URL parameter; past it the link carries no edits and the page says so


def pack_edits(text: str) -> str:
    """A learner's text as a URL parameter value: zlib-compressed, then base64url without padding."""
    packed = base64.urlsafe_b64encode(zlib.compress(text.encode("utf-8"), 9)).decode("ascii")
    return packed.rstrip("=")


def unpack_edits(value: str) -> str | None:
    """The text a link carries (pack_edits' inverse), or None if the value is not one (a truncated link, or one longer
    than any this site writes)."""
    if len(value) > MAX_LINK_EDITS:
        return None
    try:
        raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
        # at most 1 MB unpacked: a hand-made link cannot make the server inflate a bomb
        inflater = zlib.decompressobj()
        text = inflater.decompress(raw, 1_000_000)
        if inflater.unconsumed_tail:
            return None
        return text.decode("utf-8")
    except (ValueError, zlib.error, UnicodeDecodeError):
        return None


def edits_from_url(key: str, param: str) -> bool:
    """Seed a text widget from a link's edits (`param`) when the session has no value of its own; True if it did."""
    if key in st.session_state or (raw := st.query_params.get(param)) is None:
        return False
    text = unpack_edits(raw)
    if text is None:
        return False
    st.session_state[key] = text
    _kept()[key] = text
    return True


def edits_to_url(param: str, text: str | None) -> str | None:
    """Write `text` into the link as `param` (None: the shipped text, nothing to carry); a note when it is too long."""
    if text is None:
        to_url(**{param: None})
        return None
    packed = pack_edits(text)
    if len(packed) > MAX_LINK_EDITS:
        to_url(**{param: None})
        return (
            f"Your edits are too long to travel in a link ({len(packed):,} characters compressed; the limit is "
            f"{MAX_LINK_EDITS:,}): a copied link opens the shipped text. Shorten them to share them."
        )
    to_url(**{param: packed})
    return None
