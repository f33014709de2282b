"""How much text one projected screen holds: page scripts use it to split long data into sections.

Projected (1024×768, presenter mode's type), a line holds about 80 characters and a section has
room for about 19 lines under its bar (18 are used, with room to spare). The estimates count what a reader sees: a link by its text,
a table by its rows. A page packs its entries or paragraphs into screens with `pack` and marks each
screen with `section()`; outside presenter mode the marks do nothing, so the page reads as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

WIDTH = 80  # characters a projected line holds
LINES = 18  # lines a projected section holds under its bar, with room to spare
TABLE_ROWS = 10  # a table's rows (under its header) that its box shows projected (ui/presenter.css: 59% of the screen)
ROW_CHARS = 60  # a table row's Markdown longer than this wraps onto two lines projected (a long label's cell wraps)
LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")


def lines(markdown: str) -> int:
    """About how many projected lines this Markdown takes: each paragraph or item wrapped, a table row as one and a half."""
    total = 0
    for line in markdown.splitlines():
        if line.lstrip().startswith("|"):
            total += 1.5  # a table's row is taller than a line of text
        elif line.strip():
            total += -(-len(LINK.sub(r"\1", line.strip())) // WIDTH)
    return round(total)


def _greedy(items: list, size: Callable[[object], int], budget: int) -> list[list]:
    groups: list[list] = []
    used = budget
    for item in items:
        if not groups or used + size(item) > budget:
            groups.append([])
            used = 0
        groups[-1].append(item)
        used += size(item)
    return groups


def pack(items: Iterable, size: Callable[[object], int], budget: int = LINES) -> list[list]:
    """The items in order, in groups whose sizes add up to at most `budget` (an item too big alone has a group of its own).

    As few groups as the budget allows, filled evenly: the last is not a line or two alone.
    """
    items = list(items)
    groups = _greedy(items, size, budget)
    for even in range(-(-sum(map(size, items)) // max(len(groups), 1)), budget):
        if len(evenly := _greedy(items, size, even)) == len(groups):
            return evenly
    return groups


def row_height(row: str) -> int:
    """How many of a projected table box's lines a table row takes: one, or more where its text wraps."""
    return -(-len(row.strip()) // ROW_CHARS)


def blocks(markdown: str) -> list[str]:
    """Markdown cut where a screen may end: between paragraphs, between list items, and inside a table too
    long for its box (each part keeps the table's header)."""
    out: list[str] = []
    for chunk in re.split(r"\n\s*\n", markdown.strip()):
        rows = chunk.splitlines()
        if rows and rows[0].lstrip().startswith("|") and sum(map(row_height, rows[2:])) > TABLE_ROWS:
            head, body = rows[:2], rows[2:]
            # even parts by height, so the last is not a row or two alone
            heights = list(map(row_height, body))
            parts = -(-sum(heights) // TABLE_ROWS)
            cut, done, part = [[]], 0, sum(heights) / parts
            for row, height in zip(body, heights, strict=True):
                if cut[-1] and done + height > part * len(cut) + 0.01:
                    cut.append([])
                cut[-1].append(row)
                done += height
            out += ["\n".join(head + group) for group in cut]
        elif rows and rows[0].startswith("- "):
            items: list[list[str]] = []
            for row in rows:
                if row.startswith("- ") or not items:
                    items.append([row])
                else:
                    items[-1].append(row)
            out += ["\n".join(item) for item in items]
        else:
            out.append(chunk)
    return out


def texts(parts: list[str]) -> list[str]:
    """Blocks back into Markdown texts to draw one by one: list items that follow each other stay one list.

    A table is drawn on its own: projected, a Markdown text holding a table scrolls inside a box of
    59% of the screen (ui/presenter.css), and the paragraphs drawn with it would scroll out of sight.
    """
    out: list[str] = []
    for part in parts:
        if out and part.startswith("- ") and out[-1].startswith("- "):
            out[-1] += "\n" + part
        else:
            out.append(part)
    return out
