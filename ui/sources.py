"""The outside sources the site quotes (lessons/sources.json), cited by key and listed on the Sources page.

A figure the site did not compute (a blog post's measurement, an API's published overhead) is
quoted with its source named: lesson text writes `[[key]]`, and it shows as a short marker such as
[vLLM parser] that links to the source's entry on the Sources page. The entry says the rest once:
title, author or publisher, date, its address (or that it gives none) and what the site quotes.
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
    label: str  # the short marker a lesson shows inline: [label]
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


def cite(key: str) -> str:
    """A source cited inline, in Markdown: its short label in brackets, linked to its entry on the Sources page."""
    sources = load_sources()
    if key not in sources:
        raise KeyError(
            f"no source {key!r} in lessons/sources.json; add it there (key, title, label, by, date, reports)"
        )
    # the brackets stay outside the link, so a link-aware pass (glossary terms) leaves the marker whole
    return f"[[{sources[key].label}]({source_url(key)})]"


def expand_citations(text: str) -> str:
    """Text with each `[[key]]` replaced by its short marker."""
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
