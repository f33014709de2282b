"""A chart's figures in words, drawn under it: the text equivalent for a reader who cannot see the chart.

Read from the plotly figure itself (every bar's label and value, or the label the bar shows),
so the words always say what the chart draws. Also a formula's figures in words, where one term
counts more than the chart beside it (lesson 4's a_bad against the ledger's output).
"""

from __future__ import annotations

import zlib

import streamlit as st

from ui.draw import show_token
from ui.words import words


def _number(value) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer() and abs(value) >= 1):
        return f"{int(value):,}"
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def describe_figure(figure, label: str = "{}", limit: int = 30) -> str:
    """One line per trace: its name, then each bar as "label: value" (at most `limit` bars, then how many more).

    `label` shapes each bar's label, such as "call {}"."""
    lines = []
    for trace in figure.data:
        horizontal = getattr(trace, "orientation", None) == "h"
        labels = list((trace.y if horizontal else trace.x) or [])
        values = list((trace.x if horizontal else trace.y) or [])
        shown = list(trace.text) if isinstance(getattr(trace, "text", None), (list, tuple)) else None
        bars = [
            f"{label.format(name)}: {shown[n] if shown else _number(value)}"
            for n, (name, value) in enumerate(zip(labels, values, strict=False))
        ]
        more = f"; and {len(bars) - limit} more" if len(bars) > limit else ""
        name = f"{trace.name}: " if trace.name else ""
        lines.append(f"{name}{'; '.join(bars[:limit])}{more}")
    return "In words: " + " | ".join(lines) if lines else ""


def chart_caption(figure, label: str = "{}", where=st) -> None:
    """The figure in words, as a caption under the chart just drawn (`where`: a column, or the page).

    The words are "more" text (ui/sections.py): read on a screen, left out when projected, where the
    room reads the chart itself.
    """
    words = describe_figure(figure, label)
    if words:
        # a key from the words themselves: two charts on one page have different figures
        where.container(key=f"chart_{zlib.crc32(words.encode())}__more").caption(words)


def a_bad_parts(cost, lesson_id: str) -> str:
    """Where a_bad's tokens come from, beside the ledger's smaller output count for the same call ("" when they agree)."""
    if not cost.a_bad_template:
        return ""
    tokens = " ".join(f"`{show_token(t)}`" for t in cost.a_bad_template)
    return words(
        lesson_id,
        "a_bad parts",
        written=cost.a_bad_output,
        call=cost.bad_call,
        template=len(cost.a_bad_template),
        tokens=tokens,
    ).strip()
