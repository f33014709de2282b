"""The outside sources the site quotes (lessons/sources.json), cited by key and shown by title.

A figure the site did not compute (a blog post's measurement, an API's published overhead) is
quoted with its source named: lesson text writes `[[key]]`, pages call `cite(key)`, and the
Sources page lists every entry with who published it, when, and what it reports.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

SOURCES = Path(__file__).resolve().parent.parent / "lessons" / "sources.json"

CITATION = re.compile(r"\[\[([a-z0-9-]+)\]\]")


@dataclass(frozen=True)
class Source:
    key: str
    title: str
    by: str  # the author, publisher or site, as the source itself names it
    date: str  # as the source states it (or says it gives none)
    reports: str  # what the site quotes from it
    url: str = ""


@lru_cache(maxsize=1)
def load_sources() -> dict[str, Source]:
    """Every source by key, in the file's order."""
    rows = json.loads(SOURCES.read_text(encoding="utf-8"))
    return {row["key"]: Source(**row) for row in rows}


def cite(key: str) -> str:
    """A source named for a reader, in Markdown: its title in italics, who published it, when."""
    sources = load_sources()
    if key not in sources:
        raise KeyError(f"no source {key!r} in lessons/sources.json; add it there (key, title, by, date, reports)")
    source = sources[key]
    return f"*{source.title}* ({source.by}; {source.date})"


def expand_citations(text: str) -> str:
    """Lesson text with each `[[key]]` replaced by the source it names."""
    return CITATION.sub(lambda match: cite(match.group(1)), text)
