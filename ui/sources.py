"""The outside sources the site quotes (lessons/sources.json), cited by key and listed on the Sources page.

A figure the site did not compute (a blog post's measurement, an API's published overhead) is
quoted with its source named: lesson text writes `[[key]]`, and it shows as the source's title in
italics, linked to its entry on the Sources page, with its date, or "undated" where it gives none
(the sentence around it says the figure was reported there, not measured here). The entry says the
rest once: author or publisher, the date as the source states it, its address (or that it gives
none) and what the site quotes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

LESSONS = Path(__file__).resolve().parent.parent / "lessons"
SOURCES = LESSONS / "sources.json"

CITATION = re.compile(r"\[\[([a-z0-9-]+)\]\]")
UNDATED = "undated"  # how a date field starts when the source gives none


@dataclass(frozen=True)
class Source:
    key: str
    title: str
    label: str  # a short name: the Sources page groups its entries into presenter sections by it
    by: str  # the author, publisher or site, as the source itself names it
    date: str  # as the source states it, or "undated (...)" when it gives none
    reports: str  # what the site quotes from it, in Markdown (code in backticks)
    url: str = ""  # its address, where one exists
    no_url: str = ""  # where there is none: why, said once on the Sources page
    note: str = ""  # what a reader must know about every figure quoted from it
    also: tuple[tuple[str, str], ...] = ()  # further documents of the same source: (title, address)


@lru_cache(maxsize=1)
def load_sources() -> dict[str, Source]:
    """Every source by key, in the file's order."""
    rows = json.loads(SOURCES.read_text(encoding="utf-8"))
    return {row["key"]: Source(**{**row, "also": tuple(tuple(a) for a in row.get("also", ()))}) for row in rows}


def page_path() -> str:
    """The Sources page's url_path, from lessons/index.json."""
    index = json.loads((LESSONS / "index.json").read_text(encoding="utf-8"))
    return next(e["url_path"] for e in index if e["id"] == "sources")


def source_url(key: str) -> str:
    """A relative link to one entry of the Sources page (its heading carries the key as anchor)."""
    return f"{page_path()}#{key}"


def when(source: Source) -> str:
    """Its date as a citation gives it: the date the source states, or "undated"."""
    return "undated" if source.date.startswith(UNDATED) else source.date


def cite(key: str) -> str:
    """A source cited inline, in Markdown: its title in italics, linked to its entry on the Sources page, and its date."""
    sources = load_sources()
    if key not in sources:
        raise KeyError(
            f"no source {key!r} in lessons/sources.json; add it there (key, title, label, by, date, reports)"
        )
    source = sources[key]
    return f"*[{heading(source)}]({source_url(key)})* ({when(source)})"


def expand_citations(text: str) -> str:
    """Text with each `[[key]]` replaced by its citation (cite)."""
    return CITATION.sub(lambda match: cite(match.group(1)), text)


def heading(source: Source) -> str:
    """A source's title as a Markdown heading: a tag in it (`</tool_call>`) shown as code, not read as HTML."""
    return re.sub(r"(</?[A-Za-z_]+>)", r"`\1`", source.title)


def address_line(source: Source) -> str:
    """Markdown: where to find a source, or why there is no address."""
    if source.url:
        line = f"[{source.url}]({source.url})"
    else:
        line = f"No web address: {source.no_url}"
    more = " · ".join(f"[{title}]({url})" for title, url in source.also)
    return line + (f" · also {more}" if more else "")


def entry_markdown(source: Source) -> str:
    """One entry of the Sources page under its heading: who and when, where, what the site quotes, and its note."""
    lines = [f"**{source.by}** · {source.date}", address_line(source), source.reports]
    if source.note:
        lines.append(f"*{source.note}*")
    return "\n\n".join(lines)
