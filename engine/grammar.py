"""The grammar of a tool call over a request's tools, compiled with xgrammar.

Follows Qwen's call format as the Qwen3 chat template writes it,

    <tool_call>\\n{"name": <name>, "arguments": <object fitting that tool's parameters>}\\n</tool_call>

with the template's JSON (`", "` and `": "` separators, no other whitespace), so a constrained
call is byte for byte what the template would render for the same call. The JSON part is
xgrammar's JSON-schema grammar of an `anyOf` over the tools (one branch per tool: its name as
a `const`, its parameters as the arguments), so the union accepts exactly what the one-tool
grammars accept between them (seed 003). `<tool_call>` and `</tool_call>` are matched as the
single special tokens the model writes (xgrammar's structural-tag `TokenFormat`).

Two shapes are compiled, each once per distinct tool set (the cache key is the canonical JSON
of the tools' names and parameters; descriptions do not change the grammar):

    "body"   what follows an opener the model wrote itself: \\n{...}\\n</tool_call>   (auto)
    "calls"  one call or more from the first token, then <|im_end|>            (required)
    "call"   exactly one call from the first token, then <|im_end|>            (a named tool)

(as vLLM does: `required` may call several tools in a turn, a named tool_choice calls that tool once)

A schema xgrammar cannot compile, or that uses a keyword it would silently ignore, is reported
as a `SchemaUnsupported` naming the tool, where in its parameters, and the keyword.
"""

from __future__ import annotations

import functools
import json
import re
import threading
from dataclasses import dataclass

import numpy as np
import torch

from .tokenizer import MODEL_VOCAB, REAL_VOCAB, TOOL_CALL, TOOL_CALL_END, load_hf_tokenizer
from .tools import tool_name

SEPARATORS = (", ", ": ")  # the chat template's json.dumps separators

# keywords xgrammar 0.2.9 accepts but does not enforce (its grammar is the same without them);
# a schema using one would let a constrained call through that the schema check then rejects
UNENFORCED = ("not", "if", "then", "else", "uniqueItems", "contains", "minContains", "maxContains",
              "dependentSchemas", "propertyNames", "unevaluatedProperties", "unevaluatedItems")

# where sub-schemas live, so a property *named* "not" is not mistaken for the keyword
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
               "unevaluatedProperties", "unevaluatedItems", "additionalItems")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")


class SchemaUnsupported(Exception):
    """A tool's parameters that the grammar cannot hold; `reason` is one line a page can show."""

    def __init__(self, tool: str, reason: str):
        super().__init__(f"tool {tool!r}: {reason}")
        self.tool = tool
        self.reason = str(self)


def tool_parameters(tool: dict) -> dict:
    params = tool.get("function", tool).get("parameters")
    return params if isinstance(params, dict) and params else {"type": "object", "properties": {}}


def canonical(tools: list[dict]) -> str:
    """The cache key of a tool set: names and parameters as compact JSON.

    Keys are not sorted: the grammar keeps the schema's property order (as the template writes
    the arguments), so two orders are two grammars."""
    return json.dumps([[tool_name(t), tool_parameters(t)] for t in tools], separators=(",", ":"))


# -- the tokenizer side, built once ---------------------------------------------------------
# a page and the start-up warm-up (engine/warmup.py) may ask at the same moment: build once, not twice
_build_lock = threading.RLock()


@functools.lru_cache(maxsize=1)
def _tokenizer_info():
    import xgrammar as xgr

    return xgr.TokenizerInfo.from_huggingface(load_hf_tokenizer(), vocab_size=MODEL_VOCAB)


def tokenizer_info():
    """xgrammar's view of the Qwen3 vocabulary, sized to the model (151,936; 0.9 s, so cached)."""
    with _build_lock:
        return _tokenizer_info()


@functools.lru_cache(maxsize=1)
def _compiler():
    import xgrammar as xgr

    return xgr.GrammarCompiler(tokenizer_info(), max_threads=2)


def compiler():
    with _build_lock:
        return _compiler()


# -- checking a schema ----------------------------------------------------------------------
def _unenforced(schema: object, path: str) -> tuple[str, str] | None:
    """The first keyword xgrammar would ignore, and where, walking only through sub-schemas."""
    if not isinstance(schema, dict):
        return None
    for key in UNENFORCED:
        if key in schema:
            return key, path
    if isinstance(schema.get("allOf"), list) and len(schema["allOf"]) > 1:
        return "allOf", path
    for key in _SCHEMA_MAPS:
        if isinstance(schema.get(key), dict):
            for name, sub in schema[key].items():
                found = _unenforced(sub, f"{path}.{key}.{name}")
                if found:
                    return found
    for key in _SCHEMA_ONE:
        found = _unenforced(schema.get(key), f"{path}.{key}")
        if found:
            return found
    for key in _SCHEMA_LISTS:
        if isinstance(schema.get(key), list):
            for i, sub in enumerate(schema[key]):
                found = _unenforced(sub, f"{path}.{key}[{i}]")
                if found:
                    return found
    return None


def _xgrammar_message(error: Exception) -> str:
    # "[15:41:20] /project/cpp/json_schema_converter.cc:5082: Unsupported type "foo"" -> the last part
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return re.sub(r"^\[[\d:]+\]\s+\S+:\d+:\s*", "", text)


@functools.lru_cache(maxsize=256)
def _arguments_ebnf(params_json: str) -> str:
    import xgrammar as xgr

    return str(xgr.Grammar.from_json_schema(params_json, any_whitespace=False, separators=SEPARATORS))


def check_tool(tool: dict) -> None:
    """Raise SchemaUnsupported if this tool's parameters cannot be turned into a grammar."""
    name, params = tool_name(tool), tool_parameters(tool)
    found = _unenforced(params, "parameters")
    if found:
        keyword, where = found
        raise SchemaUnsupported(name, f"{where} uses {keyword!r}, which the grammar engine (xgrammar) does not enforce")
    try:
        _arguments_ebnf(json.dumps(params))
    except Exception as error:  # xgrammar raises RuntimeError / ValueError with the C++ message
        raise SchemaUnsupported(name, f"the grammar engine (xgrammar) cannot compile its parameters: {_xgrammar_message(error)}") from error


# -- compiling ------------------------------------------------------------------------------
def call_schema(tools: list[dict]) -> dict:
    """The JSON between the tags, as one schema: anyOf over the tools, name first, then arguments."""
    branches = [
        {
            "type": "object",
            "properties": {"name": {"const": tool_name(t)}, "arguments": tool_parameters(t)},
            "required": ["name", "arguments"],
            "additionalProperties": False,
        }
        for t in tools
    ]
    return branches[0] if len(branches) == 1 else {"anyOf": branches}


def _structural_tag(tools: list[dict], shape: str):
    import xgrammar as xgr
    from xgrammar.structural_tag import (
        ConstStringFormat,
        GrammarFormat,
        SequenceFormat,
        StarFormat,
        StructuralTag,
        TokenFormat,
    )

    json_ebnf = str(xgr.Grammar.from_json_schema(call_schema(tools), any_whitespace=False, separators=SEPARATORS))

    def body():
        return [ConstStringFormat(value="\n"), GrammarFormat(grammar=json_ebnf), ConstStringFormat(value="\n"),
                TokenFormat(token=TOOL_CALL_END)]

    if shape == "body":
        return StructuralTag(format=SequenceFormat(elements=body()))
    if shape == "call":
        return StructuralTag(format=SequenceFormat(elements=[TokenFormat(token=TOOL_CALL), *body()]))
    # a further call follows the template's "\n" between calls
    more = StarFormat(content=SequenceFormat(elements=[ConstStringFormat(value="\n"), TokenFormat(token=TOOL_CALL), *body()]))
    return StructuralTag(format=SequenceFormat(elements=[TokenFormat(token=TOOL_CALL), *body(), more]))


@functools.lru_cache(maxsize=64)
def _compile(key: str, shape: str):
    tools = [{"type": "function", "function": {"name": n, "parameters": p}} for n, p in json.loads(key)]
    for tool in tools:
        check_tool(tool)
    return compiler().compile_structural_tag(_structural_tag(tools, shape))


def compile_calls(tools: list[dict], shape: str):
    """The compiled grammar of a call over these tools ("body", "call" or "calls"), from the cache when it can.

    Raises SchemaUnsupported for the first tool whose parameters cannot be held."""
    if shape not in ("body", "call", "calls"):
        raise ValueError(f"shape must be 'body', 'call' or 'calls', not {shape!r}")
    return _compile(canonical(tools), shape)


# -- masks ----------------------------------------------------------------------------------
WORDS = (MODEL_VOCAB + 31) // 32  # 4,748 int32 words, one bit per id of the model's vocabulary
_LAST_REAL_WORD, _LAST_REAL_BITS = divmod(REAL_VOCAB, 32)  # id 151,669 = word 4,739, bit 21


# the words that hold real ids (up to 151,668) end at word 4,739: 4,740 int32 words = 2,370 uint64 words
_REAL_WORDS = _LAST_REAL_WORD + 1
assert _REAL_WORDS % 2 == 0  # so they view as uint64 words


@dataclass(frozen=True)
class PackedMask:
    """One step's mask as xgrammar writes it: 4,748 int32 words, bit i of word w = id 32*w + i allowed.

    `words` is a view of the constraint's own buffer: valid until its next fill. `allowed`
    counts the real ids (below 151,669) it allows. Nothing is unpacked: decode.py applies the
    words directly, and a page that lists tokens unpacks them with `bitmask_to_bool`.
    """

    words: np.ndarray  # int32, shape (4748,)
    allowed: int

    def allows(self, token_id: int) -> bool:
        """Whether one id is allowed: a single bit test, no unpacking."""
        token_id = int(token_id)
        if not 0 <= token_id < REAL_VOCAB:
            return False
        return bool((int(self.words[token_id >> 5]) >> (token_id & 31)) & 1)

    def allowed_ids(self) -> np.ndarray:
        """The allowed real ids, ascending (int64), unpacking only the 64-bit words that allow something:
        cheap when few are allowed. (Bytes are unpacked in memory order, the order xgrammar's bits follow.)"""
        wide = self.words[:_REAL_WORDS].view(np.uint64)
        nonzero = wide.nonzero()[0]
        bits = np.flatnonzero(np.unpackbits(wide[nonzero].view(np.uint8), bitorder="little"))
        ids = nonzero[bits >> 6] * 64 + (bits & 63)
        return ids[ids < REAL_VOCAB]

    def as_tensor(self) -> torch.Tensor:
        """The words as the (1, 4748) int32 tensor xgrammar's apply_token_bitmask_inplace takes (no copy)."""
        return torch.from_numpy(self.words).unsqueeze(0)


def new_bitmask() -> torch.Tensor:
    import xgrammar as xgr

    return xgr.allocate_token_bitmask(1, MODEL_VOCAB)


def pack_words(words: np.ndarray) -> PackedMask:
    """xgrammar's packed words (int32, 4,748) as a PackedMask with its count: a popcount of the 2,370
    64-bit words that hold real ids (about 4 us), less the padding ids that share the last of them."""
    allowed = int(np.bitwise_count(words[:_REAL_WORDS].view(np.uint64)).sum())
    allowed -= (int(words[_LAST_REAL_WORD].view(np.uint32)) >> _LAST_REAL_BITS).bit_count()
    return PackedMask(words, allowed)


def count_allowed(words: np.ndarray) -> int:
    """How many real ids the packed words allow (padding ids never count)."""
    return pack_words(words).allowed


def packed_ids(words: np.ndarray) -> np.ndarray:
    """The real ids whose bits are set, ascending: only the words that allow something are unpacked."""
    return pack_words(words).allowed_ids()


def bitmask_to_bool(bitmask: torch.Tensor) -> tuple[torch.Tensor, int]:
    """xgrammar's packed int32 bitmask (1, 4748) as a bool tensor over the 151,936 ids, and how
    many of the 151,669 real ids it allows (padding ids False). For a page that lists tokens;
    the decode loop uses the packed words (PackedMask) instead.

    numpy unpacks on one thread: a torch reduction over 151,936 entries goes to the
    thread pool, which on a busy 2-core machine was seen to wait 10 ms for its threads."""
    words = bitmask[0].numpy()
    bits = np.unpackbits(words.view(np.uint8), bitorder="little")[:MODEL_VOCAB].view(np.bool_)
    bits[REAL_VOCAB:] = False
    return torch.from_numpy(bits), count_allowed(words)
