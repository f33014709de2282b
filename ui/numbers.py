"""Numbers as people read them: one count format and one percent format for every page, chart label and metric."""

from __future__ import annotations


def format_percent(p: float) -> str:
    """A probability (0..1) as a percent with three significant digits: 99.7%, 0.042%, 3.1e-07%.

    A tiny probability never reads as 0% (only an exact 0 does), and one just under 1 never
    reads as 100%: the digits grow until the rounding no longer hides the difference.
    """
    if p <= 0:
        return "0%"
    percent = p * 100
    digits = 3  # "g" turns to 1e-05 style where fixed digits would show only zeros
    text = f"{percent:.{digits}g}"
    while p < 1 and text == "100" and digits < 12:
        digits += 1
        text = f"{percent:.{digits}g}"
    return f"{text}%"


def format_count(n: int) -> str:
    """A count (tokens, calls, lessons) as every page prints it: digits grouped by commas, 1,205 (never 1205)."""
    return f"{n:,}"


def format_allowed(n: int | None, vocab: int) -> str:
    """How many tokens a mask allows, as the step view says it: "all" (no mask, or every one of `vocab`), else 8 or 1,234."""
    return "all" if n is None or n == vocab else format_count(n)
