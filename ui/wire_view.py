"""How lesson 7 draws one call in every wire format (engine.wire.formats' registry): each format's request, reply and result as literal text, and the tables of what differs."""

from __future__ import annotations

import html
import json

import streamlit as st

from engine.teaching.exchanges import scenario_exchanges
from engine.wire.formats import NAME, differences, format_names, get_format, text_format_for, tool_choice_formats


@st.cache_resource(show_spinner="Writing the call in each format…", max_entries=64)
def exchanges(name: str, chosen_style: str):
    """Each step of the scenario's run written in every format (engine.teaching.exchanges), once per style."""
    return scenario_exchanges(name, chosen_style)


def short(text: str, limit: int = 100) -> str:
    """A one-line glimpse of arguments (the full text is in the formats below); no backticks to break the markdown."""
    text = text.replace("`", "'")
    return text if len(text) <= limit else text[:limit] + "…"


def draw_formats(shown, chosen_style: str) -> None:
    """The formats of one step, a tab each: the request beside the reply and the result going back."""
    by_format = {e.format: e for e in shown.exchanges}
    formats = ordered_formats(chosen_style)
    for tab, fmt in zip(st.tabs([tab_name(f) for f in formats]), formats, strict=True):
        # (a taller row when projected: ui/presenter.css)
        with tab, st.container(key=f"same_call_in_other_apis_format_{fmt}"):
            draw_exchange(by_format[fmt], shown.calls)


def as_text(value) -> str:
    """A wire object as its literal text: the prompt text as is, a JSON body indented."""
    return value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)


def short_name(fmt: str) -> str:
    """A format's name in tables and notes ("Qwen3 native", "OpenAI Chat Completions")."""
    found = get_format(fmt)
    return found.short or found.title


def tab_name(fmt: str) -> str:
    """A format's name on its tab ("OpenAI Chat")."""
    return get_format(fmt).tab or short_name(fmt)


def ordered_formats(style: str) -> list[str]:
    """Every registered format, with the text format of the sidebar's style first."""
    names = format_names()
    own = text_format_for(style)
    first = own.key if own else names[0]
    return [first, *(f for f in names if f != first)]


def narrow() -> bool:
    """Presenter mode: large text on a projector, so side-by-side panes are stacked instead."""
    return bool(st.session_state.get("present"))


def panes(count: int) -> list:
    """`count` columns side by side, or, in presenter mode, `count` containers one under the other."""
    return [st.container() for _ in range(count)] if narrow() else st.columns(count, gap="medium")


def _code(value, height: int | None = None) -> None:
    language = None if isinstance(value, str) else "json"
    st.code(as_text(value), language=language, wrap_lines=True, height=height)


def draw_exchange(exchange, calls) -> None:
    """One format: the request on the left; each reply and what goes back after it on the right (presenter mode as well)."""
    text_format = get_format(exchange.format).is_text
    # (side by side in presenter mode too: one format is one screen, the request in a shorter box)
    request, answer = st.columns(2, gap="small" if narrow() else "medium")
    with request:
        st.markdown(
            "**The request**" + (" (the prompt the model reads)" if text_format else " (the body sent to the API)")
        )
        _code(exchange.request, height=330 if narrow() else 420)
        if exchange.tokens:
            st.caption(f"{exchange.tokens['request']:,} Qwen3 tokens")
    with answer:
        many = len(exchange.replies) > 1
        for n, reply in enumerate(exchange.replies):
            st.markdown(
                f"**The reply{f' {n + 1}' if many else ''}**" + (" (the text the model writes)" if text_format else "")
            )
            _code(reply)
            if exchange.tokens:
                st.caption(f"{exchange.tokens['replies'][n]:,} tokens written")
            if n < len(exchange.results):
                st.markdown(f"**The result{'s' if len(calls) > 1 and not many else ''} going back**")
                _code(exchange.results[n])
                if exchange.tokens:
                    st.caption(f"{exchange.tokens['results'][n]:,} tokens, read by the next call")
        if exchange.ids:
            pairs = ", ".join(f"`{i}` ({c.name})" for i, c in zip(exchange.ids, calls, strict=True))
            st.caption(f"The id that ties each call to its result: {pairs}")
        elif calls and text_format:
            st.caption("No ids: each result answers the call in the same position.")


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f'<table class="wire"><tr>{head}</tr>{body}</table>'


def differences_screens(style: str) -> list[tuple[str, str]]:
    """engine.wire.formats.differences() as (title, table) screens: on a screen one table, a row per question and a
    column per format; projected, one question a screen, its five formats one to a row, so no cell is squeezed to a
    word and no table scrolls out of sight."""
    formats = ordered_formats(style)
    rows_of = differences()
    if narrow():
        return [
            (
                f"What differs: {d['aspect']}",
                f'<table class="wire"><tr><th colspan="2">{html.escape(d["aspect"])}</th></tr>'
                + "".join(
                    f"<tr><td>{html.escape(short_name(f))}</td><td>{html.escape(d[f])}</td></tr>" for f in formats
                )
                + "</table>",
            )
            for d in rows_of
        ]
    rows = [[html.escape(d["aspect"]), *(html.escape(d[f]) for f in formats)] for d in rows_of]
    return [("What differs, format by format", _table(["", *(short_name(f) for f in formats)], rows))]


def tool_choice_html() -> str:
    """Each API's words for the four tool_choice modes, written by engine.wire.formats.tool_choice_for."""
    modes = {
        "auto": "auto: the model decides",
        "required": "required: some tool",
        "none": "none: no call",
        NAME: "one named tool",
    }
    rows = []
    apis = tool_choice_formats()
    for mode, label in modes.items():
        cells = [f"<code>{html.escape(json.dumps(f.tool_choice_for(mode)))}</code>" for f in apis]
        rows.append([html.escape(label), *cells])
    return _table(["tool_choice", *(short_name(f.key) for f in apis)], rows)


def step_label(written) -> str:
    """A step of the run in the picker: its calls, or the final answer."""
    if not written.calls:
        return f"Call {written.step + 1}: the final answer"
    names = ", ".join(c.name for c in written.calls)
    return f"Call {written.step + 1}: {names}" + (
        " (an error goes back)" if any(c.is_error for c in written.calls) else ""
    )
