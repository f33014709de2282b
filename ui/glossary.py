"""The glossary (lessons/glossary.json) and the links to its entries from the lesson pages.

Each entry has a stable id; its heading on the glossary page carries that id as its anchor,
and a link reads `glossary?term=ID#ID`: the anchor scrolls to the entry, and `?term=` makes
the page repeat the entry at its top, so the looked-up word is on the first screen even
where the browser does not scroll.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache

from engine.core.tokenizer import IM_END, REAL_VOCAB, TOOL_CALL, TOOL_CALL_END, load_tokenizer
from ui.words import LESSONS, lesson_index

PATH = LESSONS / "glossary.json"


@lru_cache(maxsize=2)
def _glossary_cached(mtime: float) -> dict:
    return json.loads(PATH.read_text(encoding="utf-8"))


def glossary() -> dict:
    """The glossary: "title", "intro" and "terms" (id, term, lesson, text), in the order a learner meets them."""
    return _glossary_cached(PATH.stat().st_mtime)


def figures() -> dict[str, str]:
    """The tokenizer's figures that entries quote as {placeholders}."""
    (im_start,) = load_tokenizer().encode("<|im_start|>")  # one token: the tokenizer says which id
    return {
        "vocab": f"{REAL_VOCAB:,}",
        "last_id": f"{REAL_VOCAB - 1:,}",
        "im_start": str(im_start),
        "im_end": str(IM_END),
        "tool_call": str(TOOL_CALL),
        "tool_call_end": str(TOOL_CALL_END),
    }


def entry_text(entry: dict) -> str:
    return entry["text"].format(**figures())


def hover_text(entry: dict, limit: int = 200) -> str:
    """An entry's first sentence as plain text, for a link's title (the browser shows it on hover): no Markdown
    marks (`, *), no double quotes (they would end the title), cut at a word past `limit` characters."""
    plain = re.sub(r"[`*]", "", entry_text(entry)).replace('"', "'").replace("\n", " ")
    first = re.split(r"(?<=[.])\s", plain, maxsplit=1)[0]
    if len(first) > limit:
        first = first[:limit].rsplit(" ", 1)[0] + "…"
    return first


def term_link(words: str, entry: dict) -> str:
    """Markdown: `words` linked to `entry` in the glossary, its definition shown on hover."""
    return f'[{words}]({term_url(entry["id"])} "{hover_text(entry)}")'


def page_path() -> str:
    """The glossary page's url_path, from lessons/index.json."""
    return next(e["url_path"] for e in lesson_index() if e["id"] == "glossary")


def term_url(term_id: str) -> str:
    """A relative link to one entry: the glossary page, told the term (which it shows on its first screen), scrolled
    to its anchor; in presenter mode the link keeps presenter mode (a link opens a new session, which reads the URL)."""
    from ui.chrome import presenting

    return f"{page_path()}?term={term_id}" + ("&present=1" if presenting() else "") + f"#{term_id}"


def lesson_terms(lesson_id: str) -> list[dict]:
    """The entries whose lesson is `lesson_id`."""
    return [e for e in glossary()["terms"] if e["lesson"] == lesson_id]


def terms_line(lesson_id: str) -> str:
    """Markdown: the words this lesson introduces, each linked to its glossary entry, then the whole glossary."""
    links = " · ".join(term_link(e["term"], e) for e in lesson_terms(lesson_id))
    whole = f"[all terms]({page_path()})"
    return f"**Words in this lesson** (glossary): {links} · {whole}" if links else f"**Glossary:** {whole}"


# a span of Markdown that must stay as it is: `code`, a [link](...), an HTML tag
_PROTECTED = re.compile(r"`[^`]*`|\[[^\]]*\]\([^)]*\)|<[^>]+>")


def link_terms(text: str, limit: int = 6) -> str:
    """Markdown with the first mention of each glossary term linked to its entry (at most `limit` links), its
    definition on hover.

    Code spans, existing links and HTML are left alone; a plural "s" goes inside the link.
    """
    terms = sorted(glossary()["terms"], key=lambda e: -len(e["term"]))  # "tool call" before "tool"
    protected = [(m.start(), m.end()) for m in _PROTECTED.finditer(text)]
    chosen: list[tuple[int, int, dict]] = []  # (start, end, entry), never overlapping
    for entry in terms:
        if len(chosen) >= limit:
            break
        flags = 0 if entry["term"] != entry["term"].lower() else re.IGNORECASE
        pattern = re.compile(r"(?<![\w-])(" + re.escape(entry["term"]) + r"s?)(?![\w-])", flags)
        for found in pattern.finditer(text):
            start, end = found.span()
            if not any(a < end and start < b for a, b in protected + [(c[0], c[1]) for c in chosen]):
                chosen.append((start, end, entry))
                break
    out, cursor = [], 0
    for start, end, entry in sorted(chosen, key=lambda c: c[0]):
        out.append(text[cursor:start] + term_link(text[start:end], entry))
        cursor = end
    return "".join(out) + text[cursor:]


def show_intro(lesson_id: str, intro: str) -> None:
    """A lesson's opening words with its terms linked to the glossary, and the line of this lesson's words.

    Where the lesson's Markdown has a "## Headline" (its one idea in a sentence), the headline opens
    the page and the opening words are "more" text: read on a screen, left out when projected.
    """
    import streamlit as st

    from ui.sections import headline, more
    from ui.words import lesson

    stated = lesson(lesson_id).get("headline")
    if stated:
        headline(stated, key=f"{lesson_id}_intro")
        more(link_terms(intro), key=f"{lesson_id}_intro")
    else:
        st.markdown(link_terms(intro))
    with st.container(key="terms_line"):  # presenter mode leaves it out (ui/presenter.css): the room reads the lesson
        st.markdown(terms_line(lesson_id))
