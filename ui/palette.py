"""The site's one colour language: each colour means one thing on every page, chart and view.

A meaning has a strong colour (`ink`: bars, outlines, a verdict's text) and a pale one (`fill`: a box
behind text), and the words its legend says. Pages and charts take colours from here by meaning;
the stylesheets read them as CSS variables (`--pal-failed`, `--pal-failed-fill`), which `css_variables()`
writes for the page and the browser views set on their own root from `view_palette()`. Nothing else
in ui/ or app_pages/ names a colour (tests/test_palette.py checks it).

The hues follow the usual reading: red went wrong, green went right, yellow marks where a run is now
(a highlighter, not a warning), blue the token the model chose. Every coloured mark also has a second
cue (a ✓ or ✗, a dashed or solid outline), so the meaning survives a washed-out projector or
colour-blind eyes.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import streamlit as st


@dataclass(frozen=True)
class Colour:
    """One meaning: its strong colour, its pale colour, and what its legend says."""

    ink: str
    fill: str
    words: str


MEANINGS: dict[str, Colour] = {
    # where a run or a walk-through is now: the loop's stage, the token or call being looked at
    "now": Colour("#c99700", "#ffe08a", "where the run is now"),
    # the token the model picked among its candidates
    "chosen": Colour("#1f5fa0", "#cfe0f5", "the token the model chose"),
    # a check that failed, a refused token, an error going back
    "failed": Colour("#c62828", "#fde0e0", "failed: a check, a refused token, an error"),
    # a check that passed, a call that ran
    "passed": Colour("#1b7f1b", "#d8f0d8", "passed: the checks, a call that ran"),
    # a control token (<|im_start|>, <tool_call>): structure, not words
    "control": Colour("#5b2d9e", "#e6d4ff", "a control token (structure, not words)"),
    # plain things with no verdict: a token, a call, a stage the run is not at, the other candidates
    "neutral": Colour("#6b7685", "#d9e0ea", "no verdict: a token, a call, a stage"),
    # the parts of a prompt (lesson 2, the calculator, other families)
    "tools": Colour("#a35c00", "#ffe2b8", "tool definitions"),
    "template": Colour("#8a8a8a", "#e8e8e8", "the template's instructions"),
    "conversation": Colour("#00796b", "#c9ede8", "the conversation: messages and results"),
    # what the model writes (output tokens; the prompt's cue where its turn begins)
    "written": Colour("#ad1457", "#f9d9e7", "written by the model"),
}

# colours that carry no meaning: text, muted text, rules, backgrounds, a second shade for alternating tokens
NEUTRALS: dict[str, str] = {
    "text": "#111111",
    "muted": "#555555",
    "faint": "#888888",
    "rule": "#dddddd",
    "panel": "#f6f7f9",
    "paper": "#ffffff",
    "shade": "#f4f6f9",  # every other token of a strip, so one token's end shows
}


def ink(meaning: str) -> str:
    """The strong colour of a meaning (a chart's bar, an outline)."""
    return MEANINGS[meaning].ink


def fill(meaning: str) -> str:
    """The pale colour of a meaning (a box behind text)."""
    return MEANINGS[meaning].fill


def neutral(name: str) -> str:
    """A colour with no meaning: "text", "muted", "rule", "paper"…"""
    return NEUTRALS[name]


def all_colours() -> set[str]:
    """Every colour the site may use, lower case."""
    return {c.lower() for m in MEANINGS.values() for c in (m.ink, m.fill)} | {c.lower() for c in NEUTRALS.values()}


def view_palette() -> dict[str, str]:
    """The CSS variables as a browser view sets them on its root: {"--pal-failed": "#c62828", …}."""
    out = {}
    for name, colour in MEANINGS.items():
        out[f"--pal-{name}"] = colour.ink
        out[f"--pal-{name}-fill"] = colour.fill
    out.update({f"--pal-{name}": value for name, value in NEUTRALS.items()})
    return out


def css_variables() -> str:
    """The palette as CSS variables on the page's root (for ui/style.css and the views), and a legend swatch per meaning."""
    swatches = "".join(
        f".pal-swatch.pal-{m} {{background:var(--pal-{m})}} .pal-swatch.pal-{m}-fill {{background:var(--pal-{m}-fill)}}"
        for m in MEANINGS
    )
    return ":root {" + " ".join(f"{k}: {v};" for k, v in view_palette().items()) + "}\n" + swatches


def _words(item: str, words: dict[str, str] | None) -> str:
    # "neutral-fill" names a meaning's pale colour; its words must be given
    return (words or {}).get(item) or MEANINGS[item.removesuffix("-fill")].words


def legend_entries(*items: str, words: dict[str, str] | None = None) -> list[list[str]]:
    """[item, words] for each meaning ("failed", or "neutral-fill" for its pale colour), in order: what a
    browser view's own legend draws."""
    return [[item, _words(item, words)] for item in items]


def legend_html(*items: str, words: dict[str, str] | None = None) -> str:
    """A legend: a swatch and its words for each meaning (`words` overrides a meaning's words where a part
    says it more exactly, as "the token the view is at")."""
    shown = []
    for item, said in legend_entries(*items, words=words):
        shown.append(
            f'<span class="pal-item" data-meaning="{item}"><span class="pal-swatch pal-{item}"></span>'
            f"{html.escape(said)}</span>"
        )
    return f'<div class="pal-legend">{"".join(shown)}</div>'


def legend(*items: str, words: dict[str, str] | None = None) -> None:
    """Draw a legend under a chart or a picture whose colours carry meaning (the one legend of the site)."""
    st.markdown(legend_html(*items, words=words), unsafe_allow_html=True)
