"""Numbers as people read them: one count format and one percent format for every page, chart label and metric."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

FLOOR = 1e-6  # one in a million: a probability below it reads "<0.0001%"


def _plain_digits(x: float, digits: int) -> str:
    """`x` (> 0) to `digits` significant digits in plain decimals (0.0000764, never 7.64e-05), trailing zeros dropped."""
    decimals = max(0, digits - 1 - math.floor(math.log10(x)))
    # the float's exact value rounded half up, as JavaScript's toFixed rounds (so the two agree on a tie like 1.125)
    text = f"{Decimal(x).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP):f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def format_percent(p: float) -> str:
    """A probability (0..1) as a percent a 16-year-old reads: 99.7%, 0.042%, 0.000544%, and "<0.0001%" below one
    in a million (never e-notation). The step view formats its bars by the same rule (ui/views/numbers.js).

    A tiny probability never reads as 0% (only an exact 0 does), and one just under 1 never
    reads as 100%: the digits grow until the rounding no longer hides the difference.
    """
    if p <= 0:
        return "0%"
    percent = p * 100
    if p < FLOOR:
        return f"<{_plain_digits(FLOOR * 100, 1)}%"
    digits = 3
    text = _plain_digits(percent, digits)
    while p < 1 and text == "100" and digits < 12:
        digits += 1
        text = _plain_digits(percent, digits)
    return f"{text}%"


def format_count(n: int) -> str:
    """A count (tokens, calls, lessons) as every page prints it: digits grouped by commas, 1,205 (never 1205)."""
    return f"{n:,}"


def format_allowed(n: int | None, vocab: int) -> str:
    """How many tokens a mask allows, as the step view says it: "all" (no mask, or every one of `vocab`), else 8 or 1,234."""
    return "all" if n is None or n == vocab else format_count(n)
