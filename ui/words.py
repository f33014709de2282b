"""The lessons' words: lessons/index.json and one Markdown file per lesson, split into sections."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from ui.sources import expand_citations

ROOT = Path(__file__).resolve().parent.parent
LESSONS = ROOT / "lessons"


NUMBERED = "Lessons"  # the section whose pages are numbered, in their order


def lesson_index() -> list[dict]:
    """The ordered lessons and pages (lessons/index.json): id, title, section, page, url_path."""
    return json.loads((LESSONS / "index.json").read_text(encoding="utf-8"))


def lesson_number(lesson_id: str, index: list[dict] | None = None) -> int | None:
    """A lesson's number: its position among the Lessons section (None for a page outside it)."""
    numbered = [e["id"] for e in (index if index is not None else lesson_index()) if e["section"] == NUMBERED]
    return numbered.index(lesson_id) + 1 if lesson_id in numbered else None


def page_title(lesson_id: str, index: list[dict] | None = None) -> str:
    """A page's title as the site shows it: "4 · Check it, run it, return it" for a lesson, else its title."""
    index = index if index is not None else lesson_index()
    entry = next(e for e in index if e["id"] == lesson_id)
    number = lesson_number(lesson_id, index)
    return entry["title"] if number is None else f"{number} · {entry['title']}"


@lru_cache(maxsize=32)
def _lesson_cached(path: str, mtime: float) -> dict[str, str]:
    text = Path(path).read_text(encoding="utf-8")
    sections: dict[str, str] = {}
    title = ""
    name = "intro"
    lines: list[str] = []
    for line in text.splitlines():
        if line.startswith("# ") and not title and name == "intro" and not any(lines):  # only a first line
            title = line[2:].strip()
            continue
        if line.startswith("## "):
            sections[name] = "\n".join(lines).strip()
            name, lines = line[3:].strip().lower(), []
            continue
        lines.append(line)
    sections[name] = "\n".join(lines).strip()
    # a page's title is written once, in lessons/index.json; a Markdown "# " line is for texts without a page
    sections["title"] = title or next((page_title(e["id"]) for e in lesson_index() if e["id"] == Path(path).stem), "")
    # a quoted figure names its source: [[key]] becomes the source's title (lessons/sources.json)
    return {name: expand_citations(body) for name, body in sections.items()}


def lesson(lesson_id: str) -> dict[str, str]:
    """A lesson's Markdown split into sections: "title" (from lessons/index.json), "intro", then each "## Heading" by its lowercase name."""
    path = LESSONS / f"{lesson_id}.md"
    return _lesson_cached(str(path), path.stat().st_mtime)


def for_format(text: dict[str, str], section: str, style: str) -> str:
    """A lesson section in the words for one call format: "## Section (react)" where the lesson has one, else "## Section"."""
    return text.get(f"{section} ({style})", text[section])


def words(lesson_id: str, section: str, **values) -> str:
    """One section of a lesson, with {placeholders} filled from `values` (figures the engine computed)."""
    text = lesson(lesson_id).get(section.lower(), "")
    return text.format(**values) if values else text
