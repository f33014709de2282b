"""Model text shown literally: every character as the model wrote or read it, never read as Markdown.

st.markdown reads a page's HTML as Markdown first: a blank line ends an HTML block, and what
follows becomes paragraphs, indented code and raw entities. These helpers keep model text in
one HTML line, and draw replies and tables so that nothing is lost or stretched.
"""

from __future__ import annotations

import html
import re

import streamlit as st


def literal(text: str) -> str:
    """HTML that shows `text` character for character inside an st.markdown HTML block.

    Markdown ends an HTML block at a blank line and reads what follows as Markdown (paragraphs,
    indented code, entities shown raw), so the newlines travel as character references and
    the block stays one line long.
    """
    return html.escape(text, quote=False).replace("\r", "&#13;").replace("\n", "&#10;")


def plural(n: int, word: str, many: str | None = None) -> str:
    """ "1 call", "2 calls" (and `many` for irregular plurals)."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


LONG_BLANK = re.compile(r"[ \t]*(?:\r?\n[ \t]*){4,}|[ \t]{40,}")


def reply_html(text: str, label: str | None = None) -> str:
    """A model's reply shown literally, every character, except that a long run of blank lines or spaces
    (a random model's 200 newlines) becomes one marked count; `label` says what wrote it."""
    parts, cursor = [], 0
    for run in LONG_BLANK.finditer(text):
        parts.append(literal(text[cursor : run.start()]))
        newlines = run.group().count("\n")
        what = plural(newlines, "newline") if newlines else plural(len(run.group()), "space")
        parts.append(f'<span class="ws-run" title="collapsed: {what}">{"↵" if newlines else "␣"} × {what}</span>')
        cursor = run.end()
    parts.append(literal(text[cursor:]))
    caption = f'<div class="reply-label">{html.escape(label)}</div>' if label else ""
    body = "".join(parts) or '<span class="ws-run">(empty)</span>'
    return f'{caption}<div class="turn-view reply">{body}</div>'


def draw_reply(text: str, label: str | None = None) -> None:
    st.markdown(reply_html(text, label), unsafe_allow_html=True)


def cell(text: str) -> str:
    """One table cell, shown literally; a cell of several lines (a model's turn) keeps its line breaks."""
    lines = ' class="lines"' if "\n" in text else ""
    return f"<td{lines}>{literal(text)}</td>"


def table_html(rows: list[dict]) -> str:
    """A plain HTML table whose cells wrap (a dataframe grid scrolls sideways on a projector)."""
    if not rows:
        return ""
    head = "".join(f"<th>{html.escape(str(k))}</th>" for k in rows[0])
    body = "".join("<tr>" + "".join(cell(str(v)) for v in row.values()) + "</tr>" for row in rows)
    return f'<table class="plain"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
