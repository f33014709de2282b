"""Text from a visitor (a link's ?term=, a file name) made safe to put inside Markdown: shown as written, never a link."""

from __future__ import annotations

import re

# every character Markdown (and Streamlit's own :color[] and $math$ syntax) gives a meaning to
MARKDOWN_SPECIALS = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~:$&=])")


def escape_markdown(text: str) -> str:
    """`text` with each Markdown character backslash-escaped, so "[x](http://a)" shows as written."""
    return MARKDOWN_SPECIALS.sub(r"\\\1", text)


def code_span(text: str) -> str:
    """`text` as a Markdown code span: shown literally, never linked (a bare www.site.example would be autolinked
    even with its dots escaped); its fence is one backtick longer than the longest run of backticks inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    # a space on each side keeps a backtick at either end from joining the fence
    return f"{fence} {text} {fence}"
