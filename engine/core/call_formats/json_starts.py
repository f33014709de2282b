"""Where a JSON value starts in a turn, and where it ends: what a server's parser asks at every `{` and `[`.

vLLM's llama_tool_parser.py (and SGLang's llama32_detector.py) hand the reply to Python's
`json.JSONDecoder.raw_decode` at each place a call may start. Asked naively at every bracket of a
long reply that is quadratic, twice over: each failed start builds a `JSONDecodeError` whose line
and column are counted from the start of the whole text, and a run of `[` recurses about a
thousand levels deep from every one of its brackets before Python gives up (200,000 characters of
`[` took 32 s).

`JsonStarts` answers the same question, in time linear in the text: it reads a value with an
explicit stack of the brackets open, token by token (each token matched by a regex that follows
the grammar of CPython's `_json` scanner exactly: its strings with no raw control character, its
numbers, NaN and Infinity), and remembers the verdict of every bracket it read through. A bracket
open when the reading fails fails the same way on its own, so a later question about it is
answered at once; a value that closed is remembered with its end and depth, and skipped whole when
it is met again. A value that nests deeper than MAX_NESTING levels is no JSON here (Python's own
decoder gives up near 1,000 levels, at a depth that depends on its stack): the reading then
drops the outermost bracket, which fails, and reads on from the next, so a long run of `[` is read
once. Where it finds a value, the caller decodes that stretch with Python's decoder, which has the
last word.
"""

from __future__ import annotations

import re
import sys
from array import array
from collections import deque

MAX_NESTING = 128  # the deepest a value may nest, in brackets, to be read as JSON (a tool's schema nests 16)

# a string as the scanner reads it under strict=True: no raw control character, only JSON's escapes
STRING = r'"[^"\\\x00-\x1f]*+(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*+)*+"'
# the scanner's constants come before its numbers: "-Infinity" is a constant, "-1" a number
SCALAR = r"true|false|null|NaN|Infinity|-Infinity|-?(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?(?:[eE][-+]?[0-9]++)?"
# one token after JSON's whitespace, named by its kind
TOKEN = re.compile(
    rf"[ \t\n\r]*+(?:(?P<open>[\[{{])|(?P<close>[\]}}])|(?P<comma>,)|(?P<colon>:)|(?P<string>{STRING})|(?P<scalar>{SCALAR}))"
)
# how a value may begin: an object with its first key or nothing, an array with what a value starts with
BEGINS = re.compile(rf'\{{[ \t\n\r]*+(?:\}}|{STRING}[ \t\n\r]*+:)|\[[ \t\n\r]*+[\]"\-0-9tfnNI\[{{]')
INTEGER = re.compile(r"-?[0-9]+")
FAILED = -1
UNREAD = 0  # no reading has passed the bracket yet (a value's end is never 0)

# what a bracket waits for next
FIRST_VALUE, VALUE, FIRST_KEY, KEY, COLON, COMMA = range(6)
# a bracket open in a reading: [where it opened, whether it is an array, what it waits for, its depth so far]
START, ARRAY, EXPECT, DEPTH = range(4)


class JsonStarts:
    """Python's verdict on a JSON value at each position of one text, asked at positions in any order."""

    def __init__(self, text: str, max_nesting: int = MAX_NESTING):
        self.text = text
        self.max_nesting = max_nesting
        self.digits = sys.get_int_max_str_digits()  # int() refuses longer integers (0: no limit)
        # per position, the end of the value its bracket opens, FAILED, or UNREAD; and how deep that value nests.
        # arrays, 9 bytes a position: a run of 8 MB of brackets remembers a verdict for each (a dict's entry is
        # several times that)
        self.ends = array("q", [UNREAD]) * len(text)
        self.depths = bytearray(len(text))  # a byte each: max_nesting stays under 256

    def end_of(self, start: int) -> int:
        """The end of the JSON value that starts at `start` (a `{` or `[`), or FAILED where none does."""
        if self.ends[start] == UNREAD:
            # most brackets of a long reply fail at their first token: said without a reading
            if BEGINS.match(self.text, start) is None:
                return FAILED
            self._read(start)
        return self.ends[start]

    # -- one reading ---------------------------------------------------------------------------------
    def _read(self, start: int) -> None:
        """Read from `start` until the outermost bracket still open closes or the reading fails."""
        text, stack = self.text, deque()
        pos = self._open(stack, start)
        while stack:
            token = TOKEN.match(text, pos)
            if token is None:
                pos = self._fail(stack)
                continue
            kind, top = token.lastgroup, stack[-1]
            expect = top[EXPECT]
            if expect == COMMA:
                pos = self._after_value(stack, token, kind)
            elif expect == COLON:
                top[EXPECT] = VALUE
                pos = token.end() if kind == "colon" else self._fail(stack)
            elif expect in (KEY, FIRST_KEY):
                top[EXPECT] = COLON
                if kind == "close" and expect == FIRST_KEY and token.group("close") == "}":
                    pos = self._close(stack, token.end())
                else:
                    pos = token.end() if kind == "string" else self._fail(stack)
            elif kind == "close" and expect == FIRST_VALUE and token.group("close") == "]":
                pos = self._close(stack, token.end())
            else:
                pos = self._value(stack, token, kind)

    def _after_value(self, stack: deque, token: re.Match, kind: str) -> int:
        """After a value: a comma and the next, or the bracket's own closer."""
        top = stack[-1]
        if kind == "comma":
            top[EXPECT] = VALUE if top[ARRAY] else KEY
            return token.end()
        if kind == "close" and token.group("close") == ("]" if top[ARRAY] else "}"):
            return self._close(stack, token.end())
        return self._fail(stack)

    def _value(self, stack: deque, token: re.Match, kind: str) -> int:
        """One value inside the innermost bracket: a bracket of its own, a string, a constant or a number."""
        top = stack[-1]
        if kind == "open":
            at = token.end() - 1
            known = self.ends[at]
            if known == FAILED:
                return self._fail(stack)
            if known != UNREAD and len(stack) + self.depths[at] <= self.max_nesting:
                # a value read before, whole: skipped, its depth counted
                top[EXPECT], top[DEPTH] = COMMA, max(top[DEPTH], self.depths[at] + 1)
                return known
            return self._open(stack, at)
        if kind == "string" or (kind == "scalar" and not self._too_many_digits(token.group())):
            top[EXPECT] = COMMA
            return token.end()
        return self._fail(stack)

    def _too_many_digits(self, scalar: str) -> bool:
        """Whether an integer is longer than int() reads (the scanner raises ValueError for it)."""
        if not self.digits or len(scalar) <= self.digits:
            return False
        return INTEGER.fullmatch(scalar) is not None and len(scalar.lstrip("-")) > self.digits

    def _open(self, stack: deque, at: int) -> int:
        """Enter the bracket at `at`; past the deepest nesting, the outermost bracket fails and the reading
        goes on as the reading from the next one (the run of `[` read once)."""
        if len(stack) == self.max_nesting:
            self.ends[stack.popleft()[START]] = FAILED
        array = self.text[at] == "["
        stack.append([at, array, FIRST_VALUE if array else FIRST_KEY, 1])
        return at + 1

    def _close(self, stack: deque, end: int) -> int:
        """The innermost bracket closes before `end`: its value is remembered, its parent waits for a comma."""
        done = stack.pop()
        self.ends[done[START]], self.depths[done[START]] = end, done[DEPTH]
        if stack:
            stack[-1][EXPECT] = COMMA
            stack[-1][DEPTH] = max(stack[-1][DEPTH], done[DEPTH] + 1)
        return end

    def _fail(self, stack: deque) -> int:
        """The reading fails: every bracket still open fails with it (each would fail here on its own)."""
        for bracket in stack:
            self.ends[bracket[START]] = FAILED
        stack.clear()
        return len(self.text)
