"""The state a page keeps: widget values seeded from the URL, so a teacher's link reopens a page as it was."""

from __future__ import annotations

import streamlit as st

STYLES = ("native", "react")
MODEL_CHOICES = ("live", "tiny", "off")


def from_url(key: str, param: str, default, cast=str, choices=None):
    """Seed a widget's session state from the URL's `param` the first time it runs, so a shared link reproduces it."""
    if key not in st.session_state:
        value = default
        raw = st.query_params.get(param)
        if raw is not None:
            try:
                candidate = cast(raw)
                if choices is None or candidate in choices:
                    value = candidate
            except (TypeError, ValueError):
                pass
        st.session_state[key] = value
    elif choices is not None and st.session_state[key] not in choices:
        # a widget can be left empty (a segmented control clicked off): fall back, never pass None on
        st.session_state[key] = default
    return st.session_state[key]


def to_url(**params) -> None:
    """Write the page's state into the URL (None removes a parameter)."""
    for name, value in params.items():
        if value is None:
            st.query_params.pop(name, None)
        elif st.query_params.get(name) != str(value):
            st.query_params[name] = str(value)


def style() -> str:
    return st.session_state.get("style") or "native"


def setup_defaults() -> None:
    """Global defaults, set once per session (the URL can set style, model and presenter mode)."""
    from_url("style", "style", "native", str, STYLES)
    from_url("model", "model", "live", str, MODEL_CHOICES)
    from_url("present", "present", False, lambda v: v in ("1", "true", "yes"))
