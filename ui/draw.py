"""How the pages draw tokens, prompts, notices and a reply's checks: HTML strings (the charts are ui/charts.py).

The look of those strings lives in two stylesheets beside this file: ui/style.css (every page, and
its print view) and ui/presenter.css (presenter mode).
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import streamlit as st

from engine.core.call_formats import check_title
from ui.literal import literal
from ui.palette import css_variables

HERE = Path(__file__).resolve().parent


def _style_tag(name: str, before: str = "") -> str:
    """One of ui/'s stylesheets as a <style> block (read once, when this module loads), `before` it."""
    return f"<style>\n{before}\n{(HERE / name).read_text(encoding='utf-8')}</style>"


CSS = _style_tag("style.css", css_variables())  # every page: the palette, tokens, prompts, replies, tables, print
PRESENTER_CSS = _style_tag("presenter.css")  # presenter mode only: larger text, chips and links


KIND_NAMES = {
    "template": "template instructions",
    "tool": "tool definitions",
    "message": "messages",
    "generation": "generation prompt",
}


def show_token(text: str) -> str:
    """A token's text with its invisible characters made visible (space as ␣, newline as ↵)."""
    return text.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥")


RUN_AT = 6  # this many whitespace-only tokens in a row are drawn as one box with a count


def _whitespace_runs(texts: list[str], keep: int | None) -> dict[int, int]:
    """Start -> length of each run of at least RUN_AT whitespace-only tokens (a run holding `keep` is left whole)."""
    runs, n = {}, 0
    while n < len(texts):
        end = n
        while end < len(texts) and texts[end] != "" and not texts[end].strip():
            end += 1
        if end - n >= RUN_AT and not (keep is not None and n <= keep < end):
            runs[n] = end - n
        n = max(end, n + 1)
    return runs


def token_strip(
    pieces,
    show_ids: bool = True,
    current: int | None = None,
    extra=None,
    special=None,
    first: int = 0,
    collapse: bool = True,
) -> str:
    """HTML: one box per token, alternating colours, the id (and `extra[i]`) under each; `current` is outlined.

    Whitespace shows as ␣/↵; a long run of whitespace-only tokens (a random model's 200 newlines)
    becomes one dashed box with its count, so it cannot stretch the page (`collapse=False`: the
    caller collapsed them already). `first` is the position of pieces[0] in a longer strip drawn
    in parts (it keeps the colours alternating).
    """
    texts = [piece[1] for piece in pieces]
    runs = _whitespace_runs(texts, current) if collapse else {}
    boxes, n = [], 0
    while n < len(pieces):
        if n in runs:
            length = runs[n]
            shown = show_token(texts[n]) if len(set(texts[n : n + length])) == 1 else "whitespace"
            later = " later" if current is not None and n > current else ""
            boxes.append(
                f'<span class="tok run{later}" title="{length} whitespace tokens in a row">'
                f'<span class="t">{html.escape(shown)} ×{length}</span><span class="i">{length} tokens</span></span>'
            )
            n += length
            continue
        token_id, text = pieces[n][0], texts[n]
        is_special = special[n] if special is not None else False
        kind = "sp" if is_special else ("a" if (first + n) % 2 == 0 else "b")
        if current is not None:
            kind += " now" if n == current else (" later" if n > current else "")
        under = []
        if show_ids:
            under.append(str(token_id))
        if extra is not None and extra[n] is not None:
            under.append(str(extra[n]))
        sub = f'<span class="i">{html.escape(" · ".join(under))}</span>' if under else ""
        boxes.append(f'<span class="tok {kind}"><span class="t">{html.escape(show_token(text))}</span>{sub}</span>')
        n += 1
    return f'<div class="tok-strip">{"".join(boxes)}</div>'


def draw_tokens(pieces, **options) -> None:
    st.markdown(token_strip(pieces, **options), unsafe_allow_html=True)


def prompt_html(prompt, by_token: bool = False, spans=None) -> str:
    """HTML of a rendered prompt coloured by span kind (only `spans`, when given); with `by_token`, one box per token."""
    if by_token:
        boxes = []
        for n, (piece, owner) in enumerate(zip(prompt.pieces, prompt.token_spans, strict=True)):
            kind = prompt.spans[owner].kind
            shade = "" if n % 2 == 0 else "filter:brightness(0.9);"
            boxes.append(
                f'<span class="tok k-{kind}" style="{shade}" title="{piece.id}"><span class="t">'
                f'{html.escape(show_token(piece.text))}</span><span class="i">{piece.id}</span></span>'
            )
        return f'<div class="tok-strip">{"".join(boxes)}</div>'
    parts = [
        f'<span class="k-{s.kind}" title="{html.escape(s.label)}: {s.tokens} tokens">{literal(prompt.span_text(s))}</span>'
        for s in (prompt.spans if spans is None else spans)
    ]
    return f'<div class="prompt-view">{"".join(parts)}</div>'


def legend_html() -> str:
    return '<div class="legend">' + "".join(f'<span class="k-{k}">{v}</span>' for k, v in KIND_NAMES.items()) + "</div>"


def notice(text: str, heading: str = "What to notice") -> None:
    """The box a teacher reads out at the end of a lesson."""
    body = inline_markdown(text)
    st.markdown(f'<div class="notice"><b>{html.escape(heading)}</b>{body}</div>', unsafe_allow_html=True)


def inline_markdown(text: str) -> str:
    """Paragraphs, `code` and **bold** as HTML, the rest escaped: enough for a notice box or a step view's note."""
    out = []
    for para in [p for p in text.split("\n\n") if p.strip()]:
        escaped = html.escape(para.strip())
        escaped = re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped)
        escaped = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", escaped)
        out.append(f"<p>{escaped}</p>")
    return "".join(out)


# -- lesson 4: a reply's blocks and their checks -----------------------------------------------
VERDICTS = {True: ("pass", "✅ pass"), False: ("fail", "❌ fail"), None: ("skip", "· not reached")}


def turn_html(turn_text: str, blocks, dropped: bool = False) -> str:
    """The reply, literally, with each block the parser found highlighted: green if it passed, red if not,
    grey and struck through when the policy dropped every call of the reply (`dropped`)."""
    parts, cursor = [], 0
    for block in sorted(blocks, key=lambda b: b.start):
        parts.append(literal(turn_text[cursor : block.start]))
        kind = "bad" if block.call is None else ("dropped" if dropped else "ok")
        parts.append(f'<mark class="{kind}">{literal(turn_text[block.start : block.end])}</mark>')
        cursor = block.end
    parts.append(literal(turn_text[cursor:]))
    return f'<div class="turn-view">{"".join(parts)}</div>'


def checks_html(block, style: str, errors: bool = True) -> str:
    """A block's checks as a table: verdict, check (in the words of `style`'s parser), and (`errors`) the error a
    failed check sends back."""
    rows = []
    for check in block.checks:
        kind, verdict = VERDICTS[check.passed]
        error = (
            f"<td><code>{html.escape(check.error)}</code></td>"
            if errors and check.error
            else ("<td></td>" if errors else "")
        )
        rows.append(
            f'<tr class="{kind}"><td class="v">{verdict}</td><td>{html.escape(check_title(style, check.name))}</td>{error}</tr>'
        )
    return f'<table class="checks">{"".join(rows)}</table>'


def call_words(name: str, arguments: dict) -> str:
    shown = ", ".join(
        f"{k}={v!r}" if len(repr(v)) < 60 else f"{k}=…({len(str(v))} characters)" for k, v in arguments.items()
    )
    return f"{name}({shown})"


def draw_reading(verdict) -> None:
    """What a harness policy does with a reply: the calls it runs and the error each bad block gets."""
    if verdict.returned_as_text:
        st.error("every call dropped; the reply comes back as text")
    for call in verdict.calls:
        st.success(f"runs `{call_words(call.name, call.arguments)}`")
    if not verdict.returned_as_text:
        for error in verdict.errors:
            st.error(f"block {error.block + 1} answered with `{error.error}`")
