"""The grammar of a required or named tool call as text a model server applies: xgrammar's EBNF for vLLM, GBNF for llama.cpp.

The local engine applies grammar.py's compiled structural tag while it decodes. A server decodes
on its own, but it takes a grammar with the raw completions request that carries our exact
prompt (engine/model/remote.py): vLLM as `"structured_outputs": {"grammar": EBNF}` (its
default backend compiles it with xgrammar, `Grammar.from_ebnf`), llama.cpp's servers as a GBNF
`"grammar"` (llama-cpp-python's CreateCompletionRequest, llama-server's /completion and
/v1/completions). This module writes that text from the same parts as grammar.py:

    root       ::= [think] call_block more_calls        (required: one call or more)
    root       ::= [think] call_block                   (a named tool: exactly one call)
    call_block ::= "<tool_call>" "\\n" call_json "\\n" "</tool_call>"
    more_calls ::= ("\\n" call_block)*
    call_json  ::= xgrammar's JSON-schema grammar of grammar.call_schema(tools), the template's separators

What differs from the local grammar, and why: the tags are text literals, not token ids (a GBNF
has no portable token reference, and vLLM's xgrammar may predate `Token(id)` in EBNF), so the
server may also spell `<tool_call>` in pieces; the parser reads that as the same call. With
thinking on, the reasoning may hold any text without "</" (the local grammar forbids only the two
think tags; text cannot say "not this word" more simply). After root, both servers allow only
the end of the turn (their end-of-generation tokens, <|im_end|> for Qwen3).

GBNF (llama.cpp's grammars/README.md) lacks three of the constructs xgrammar prints: lookahead
`(= ...)` (dropped: it only prunes early, the rule after it decides the same), `_` in rule names
(written `-`), and escapes other than \\x \\u \\U \\t \\n \\r \\\\ \\" \\[ \\] (`\\0`, `\\-`, `\\/`
are rewritten as code points). `{m, -1}` becomes `{m,}`.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Literal

from ..core.tooldefs import tool_name
from .grammar import THINK_SUFFIX, call_schema
from .schemas import check_tool, json_schema_ebnf, tool_parameters

DIALECTS = ("xgrammar", "gbnf")  # vLLM's structured outputs; llama.cpp's grammar field
THINK_TEXT = '([^<] | "<" [^/])*'  # reasoning without "</": it cannot close itself early

_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f", "v": "\v", "a": "\a", "e": "\x1b", "0": "\0"}
_HEX = {"x": 2, "u": 4, "U": 8}
# the escapes GBNF reads by name (its others: \\x, \\u, \\U); xgrammar reads them all
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", '"': '\\"', "\\": "\\\\", "[": "\\[", "]": "\\]"}
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class ServerGrammar:
    """What a request carries so that the server applies a tool_choice's grammar."""

    dialect: str  # "xgrammar" (vLLM's EBNF) or "gbnf" (llama.cpp)
    text: str  # the grammar itself
    tool_choice: str  # "required" or the named tool
    tools: tuple[str, ...]  # the tools it allows


# -- reading xgrammar's EBNF ----------------------------------------------------------------
@dataclass(frozen=True)
class _Piece:
    kind: Literal["string", "class", "name", "other"]  # other: one character of syntax or space
    value: object  # a string's code points as str; a class's (negated, [(lo, hi), ...]); a name or the character


def _read_escape(text: str, i: int) -> tuple[str, int]:
    """The character an escape at text[i] (just after the backslash) stands for, and where the escape ends."""
    c = text[i]
    if c in _HEX:
        digits = re.match(f"[0-9A-Fa-f]{{1,{_HEX[c]}}}", text[i + 1 :])
        if not digits:
            raise ValueError(f"a \\{c} escape without hex digits at {i}")
        return chr(int(digits.group(), 16)), i + 1 + len(digits.group())
    return _ESCAPES.get(c, c), i + 1


def read_ebnf(text: str) -> list[_Piece]:
    """xgrammar's EBNF as pieces: string literals and character classes decoded to code points, names, syntax."""
    pieces, i = [], 0
    while i < len(text):
        c = text[i]
        if c == '"':
            chars, i = [], i + 1
            while text[i] != '"':
                if text[i] == "\\":
                    char, i = _read_escape(text, i + 1)
                else:
                    char, i = text[i], i + 1
                chars.append(char)
            pieces.append(_Piece("string", "".join(chars)))
            i += 1
        elif c == "[":
            i += 1
            negated = text[i] == "^"
            i += negated
            chars = []
            while text[i] != "]":
                if text[i] == "\\":
                    char, i = _read_escape(text, i + 1)
                    chars.append((char, True))
                else:
                    chars.append((text[i], False))
                    i += 1
            i += 1
            ranges, k = [], 0
            # an unescaped "-" between two characters is a range
            while k < len(chars):
                if k + 2 < len(chars) and chars[k + 1] == ("-", False):
                    ranges.append((chars[k][0], chars[k + 2][0]))
                    k += 3
                else:
                    ranges.append((chars[k][0], chars[k][0]))
                    k += 1
            pieces.append(_Piece("class", (negated, ranges)))
        elif c.isalpha() or c == "_":
            name = _IDENT.match(text, i).group()
            pieces.append(_Piece("name", name))
            i += len(name)
        else:
            pieces.append(_Piece("other", c))
            i += 1
    return pieces


# -- writing GBNF ---------------------------------------------------------------------------
def _gbnf_char(char: str, special: str) -> str:
    point = ord(char)
    if char in _NAMED and (char in special or point < 0x20):
        return _NAMED[char]
    if point < 0x20 or point == 0x7F or char in special:
        # \u with its four digits: xgrammar reads \x greedily (see schemas.ebnf_text); llama.cpp reads both
        return f"\\u{point:04X}"
    return char


def _gbnf_piece(piece: _Piece) -> str:
    if piece.kind == "string":
        return '"' + "".join(_gbnf_char(c, '"\\') for c in piece.value) + '"'
    if piece.kind == "class":
        negated, ranges = piece.value
        special = "\\]-^["
        body = "".join(
            _gbnf_char(lo, special) if lo == hi else f"{_gbnf_char(lo, special)}-{_gbnf_char(hi, special)}"
            for lo, hi in ranges
        )
        return "[" + ("^" if negated else "") + body + "]"
    if piece.kind == "name":
        return piece.value.replace("_", "-")
    return piece.value


def to_gbnf(ebnf: str) -> str:
    """xgrammar's EBNF as llama.cpp's GBNF: lookaheads dropped, names with "-", escapes as code points, {m,}."""
    pieces, out, i = read_ebnf(ebnf), [], 0
    while i < len(pieces):
        piece = pieces[i]
        if (
            piece.kind == "other"
            and piece.value == "("
            and i + 1 < len(pieces)
            and pieces[i + 1].value == "="
            and pieces[i + 1].kind == "other"
        ):
            # a lookahead (= ...): skip to its closing parenthesis (literals are pieces of their own)
            depth, i = 1, i + 2
            while depth:
                if pieces[i].kind == "other":
                    depth += {"(": 1, ")": -1}.get(pieces[i].value, 0)
                i += 1
            continue
        out.append(_gbnf_piece(piece))
        i += 1
    text = "".join(out)
    # repetition bounds: "{0, -1}" -> "{0,}", "{1, 3}" -> "{1,3}"
    text = re.sub(r"\{(\d+),\s*-1\}", r"{\1,}", text)
    return re.sub(r"\{(\d+),\s*(\d+)\}", r"{\1,\2}", text)


def _rename_root(ebnf: str, name: str) -> str:
    """The same EBNF with its rule `root` called `name` (names only, never inside a literal)."""
    out = []
    for piece in read_ebnf(ebnf):
        if piece.kind == "name" and piece.value == "root":
            out.append(name)
        elif piece.kind in ("string", "class"):
            # GBNF's escapes are a subset of xgrammar's, so literals written for GBNF read the same in xgrammar
            out.append(_gbnf_piece(piece))
        else:
            out.append(piece.value)
    return "".join(out)


# -- the call's grammar -----------------------------------------------------------------------
@functools.lru_cache(maxsize=64)
def _call_ebnf(key: str, several: bool, thinking: bool) -> str:

    tools = [{"type": "function", "function": {"name": n, "parameters": p}} for n, p in json.loads(key)]
    for tool in tools:
        check_tool(tool)
    json_ebnf = json_schema_ebnf(call_schema(tools))
    think = (
        f'think_block ::= ("<think>" think_text "</think>" {json.dumps(THINK_SUFFIX)})?\nthink_text ::= {THINK_TEXT}\n'
    )
    rules = [
        f"root ::= {'think_block ' if thinking else ''}call_block{' more_calls' if several else ''}",
        'call_block ::= "<tool_call>" "\\n" call_json "\\n" "</tool_call>"',
        *(['more_calls ::= ("\\n" call_block)*'] if several else []),
    ]
    return "\n".join(rules) + "\n" + (think if thinking else "") + _rename_root(json_ebnf, "call_json")


def build_server_grammar(tools: list[dict], tool_choice: str, dialect: str, thinking: bool = False) -> ServerGrammar:
    """The grammar a server applies for tool_choice "required" (any of `tools`, one call or more) or a tool's name
    (that tool, once), in `dialect`. SchemaUnsupported for a schema the grammar cannot hold, as locally."""
    if dialect not in DIALECTS:
        raise ValueError(f"dialect must be one of {DIALECTS}, not {dialect!r}")
    subset = tools if tool_choice == "required" else [t for t in tools if tool_name(t) == tool_choice]
    if not subset:
        raise ValueError(f"tool_choice {tool_choice!r} names no tool of the request")
    key = json.dumps([[tool_name(t), tool_parameters(t)] for t in subset], separators=(",", ":"))
    ebnf = _call_ebnf(key, tool_choice == "required", bool(thinking))
    text = ebnf if dialect == "xgrammar" else to_gbnf(ebnf)
    return ServerGrammar(dialect, text, tool_choice, tuple(tool_name(t) for t in subset))
