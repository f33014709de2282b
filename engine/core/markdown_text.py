"""Text from a visitor (a link's ?term=, a file name) made safe to put inside Markdown: shown as written, never a link."""

from __future__ import annotations

import re

# every character Markdown (and Streamlit's own :color[] and $math$ syntax) gives a meaning to
MARKDOWN_SPECIALS = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~:$&=])")


def escape_markdown(text: str) -> str:
    """`text` with each Markdown character backslash-escaped, so "[x](http://a)" shows as written."""
    return MARKDOWN_SPECIALS.sub(r"\\\1", text)
