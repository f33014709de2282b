"""Tokens drawn as the model writes them, in O(n) page work for n tokens, and long whitespace runs collapsed.

Redrawing the whole strip at every token sends 1 + 2 + … + n token boxes to the browser: a
160-token turn sends about 13,000. A `TokenStream` instead sends each batch of new tokens once,
at most every `every` seconds, as a small strip of its own in a wrapping row; when the turn
ends, one full strip replaces the row. A random-weights model often writes dozens of newline
tokens in a row: a run of the same whitespace token is drawn as one box with its count.
"""

from __future__ import annotations

import time

import streamlit as st

from ui.draw import token_strip

MIN_RUN = 4  # a run of this many identical whitespace tokens becomes one box "↵ ×N"


def collapse_runs(pieces, min_run: int = MIN_RUN) -> tuple[list, list]:
    """(pieces, counts): each run of `min_run` or more identical whitespace-only tokens kept once, with "×N" as its count (else None)."""
    kept, counts = [], []
    n = 0
    while n < len(pieces):
        end = n + 1
        while end < len(pieces) and pieces[end][0] == pieces[n][0]:
            end += 1
        run = end - n
        if run >= min_run and not pieces[n][1].strip():
            kept.append(pieces[n])
            counts.append(f"×{run}")
        else:
            kept.extend(pieces[n:end])
            counts.extend([None] * run)
        n = end
    return kept, counts


class TokenStream:
    """A strip that grows as tokens arrive (`add`, the on_step callback), then is drawn once in full (`finish`)."""

    def __init__(self, every: float = 0.1, is_special=None):
        self.slot = st.empty()  # where the row of batches, and then the full strip, go
        self.row = None
        self.every = every
        self.is_special = is_special or (lambda token_id: False)
        self.pieces: list[tuple[int, str]] = []
        self.sent = 0  # tokens already in the browser
        self.last = time.monotonic()

    def add(self, step) -> None:
        self.pieces.append((step.id, step.token))
        if time.monotonic() - self.last >= self.every:
            self.flush()

    def flush(self) -> None:
        """Send the tokens that arrived since the last batch, as one small strip appended to the row."""
        if self.sent == len(self.pieces):
            return
        if self.row is None:
            self.row = self.slot.container(horizontal=True, gap=None)
        self.row.markdown(
            self.strip(self.pieces[self.sent :], first=self.sent), unsafe_allow_html=True, width="content"
        )
        self.sent = len(self.pieces)
        self.last = time.monotonic()

    def finish(self) -> None:
        """Replace the batches with one full strip (whitespace runs collapsed); nothing if no token came."""
        if self.pieces:
            self.slot.markdown(self.strip(self.pieces), unsafe_allow_html=True)
        else:
            self.slot.empty()

    def clear(self) -> None:
        self.slot.empty()

    def strip(self, pieces, first: int = 0) -> str:
        return strip_html(pieces, self.is_special, first)


def strip_html(pieces, is_special, first: int = 0) -> str:
    """A token strip of (id, text) pieces with whitespace runs collapsed; `is_special(id)` marks special tokens."""
    kept, counts = collapse_runs(pieces)
    return token_strip(kept, extra=counts, special=[is_special(p[0]) for p in kept], first=first, collapse=False)
