"""The grammar of a tool call over a request's tools, compiled with xgrammar.

Follows Qwen's call format as the Qwen3 chat template writes it,

    <tool_call>\\n{"name": <name>, "arguments": <object fitting that tool's parameters>}\\n</tool_call>

with the template's JSON (`", "` and `": "` separators, no other whitespace, the properties in
the schema's order), so a constrained call is byte for byte what the template would render for
the same call. The JSON part is xgrammar's JSON-schema grammar of an `anyOf` over the tools
(one branch per tool: its name as a `const`, its parameters as the arguments), so the union
accepts exactly what the one-tool grammars accept between them ([[tool-calls-cant-come-out-malformed]]). `<tool_call>` and
`</tool_call>` are matched as the single special tokens the model writes (xgrammar's
structural-tag `TokenFormat`).

Three shapes are compiled, each once per distinct tool set (the cache key is the canonical JSON
of the tools' names and parameters; descriptions do not change the grammar):

    "body"   what follows an opener the model wrote itself: \\n{...}\\n</tool_call>   (auto)
    "calls"  one call or more from the first token, then <|im_end|>            (required)
    "call"   exactly one call from the first token, then <|im_end|>            (a named tool)

(as vLLM does: `required` may call several tools in a turn, a named tool_choice calls that tool
once). With thinking on (`enable_thinking`), "calls" and "call" may start with one reasoning
block, `<think>` ... `</think>` and the template's blank line, before the call; the reasoning
may hold any token but the two think tags (a `<tool_call>` written there is text, not a call).

Where the grammar and the schema check (engine/core/parse.py) could disagree, the grammar is not
used: a keyword the grammar would ignore (`not`, `dependentRequired`, a `oneOf` whose branches
may overlap, `multipleOf` on a number, ...) would let through calls the check refuses; others
would forbid values the schema allows: `pattern` and `patternProperties` (xgrammar matches a
pattern against the whole string, and no escape inside it; JSON Schema's pattern is a search),
`minLength`/`maxLength` (a bounded string holds no escape, so "a\\nb" is refused) and bounds on
a number (at most 6 decimals and no exponent, so 1.5703125 and 1e-05 are refused). Such a
schema is reported as a `SchemaUnsupported` naming the tool, where in its parameters, and the
keyword, and the turn is decoded unconstrained (a named tool_choice is refused).
`format` and `contentEncoding` are annotations in JSON Schema 2020-12 and the check does not
assert them, so they are left out of the grammar rather than enforced by it alone.
Local references (`$ref: "#/$defs/X"`, `"#"`, what pydantic writes) are rewritten to point
into the call schema, where the parameters sit under `arguments`, so each keeps its target.

What stays different on purpose: the grammar fixes the template's form (its whitespace, the
schema's property order, an integer written without a fraction, as 1 and not 1.0 or -0), while
the check reads any valid JSON; and a number too large for a float (1e400) fits the grammar's
number syntax but the parser refuses it. tests/test_grammar_agreement.py checks that the two
agree on calls written in the template's form, for generated schemas.

xgrammar 0.2.9 ships its own Qwen3 tag (`get_model_structural_tag("qwen_3", ...)`). It differs
from this grammar in two ways, both kept here: it lets the arguments hold any whitespace (its
JSONSchemaFormat has no separators option), and under `required` it allows free text after and
between the calls (a TriggeredTagsFormat with at_least_one). The template writes neither, and a
learner's mask should show the one form the template writes. On calls in the template's form
the two accept the same (tests/test_grammar_agreement.py).

Cost limits: every tool is checked against engine/harness/tools.py's size limits before it is
compiled, and a compile runs on a worker thread for at most COMPILE_SECONDS; one that takes
longer is reported as a `SchemaUnsupported` (the turn is then unconstrained, as for any schema
the grammar cannot hold), and its result, when it comes, is cached for the next turn.
"""

from __future__ import annotations

import concurrent.futures
import functools
import json
import re
import threading
from dataclasses import dataclass

import numpy as np
import torch

from ..core.tokenizer import MODEL_VOCAB, REAL_VOCAB, THINK, THINK_END, TOOL_CALL, TOOL_CALL_END, load_hf_tokenizer
from ..core.tooldefs import find_cost_problem, tool_name

SEPARATORS = (", ", ": ")  # the chat template's json.dumps separators
THINK_SUFFIX = "\n\n"  # what the template writes between </think> and the answer
COMPILE_SECONDS = 10.0  # the longest a page waits for a compile before decoding unconstrained

# keywords xgrammar 0.2.9 accepts but does not enforce (its grammar is the same without them);
# a schema using one would let a constrained call through that the schema check then rejects
UNENFORCED = (
    "not",
    "if",
    "then",
    "else",
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains",
    "dependentSchemas",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "dependentRequired",
)
# keywords the grammar would hold differently from the check: a pattern is a search in JSON
# Schema and a whole-string match (without escapes) in xgrammar; an $id or anchor moves where
# references point, which the rewriting of local references does not follow
UNFAITHFUL = ("pattern", "patternProperties", "$id", "$anchor", "$dynamicRef", "$dynamicAnchor", "$recursiveRef")
# annotations the check does not assert (2020-12): left out of the grammar so it does not assert them either
ANNOTATIONS = ("format", "contentEncoding", "contentMediaType", "contentSchema")
_REF_SIBLINGS_OK = {
    "$ref",
    "description",
    "title",
    "default",
    "examples",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
}

# where sub-schemas live, so a property *named* "not" is not mistaken for the keyword
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_ONE = (
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
)
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_VALUES = ("enum", "const", "default", "examples", "required", "dependentRequired")  # data, not schemas


class SchemaUnsupported(Exception):
    """A tool's parameters that the grammar cannot hold; `reason` is one line a page can show."""

    def __init__(self, tool: str | None, reason: str):
        super().__init__(f"tool {tool!r}: {reason}" if tool is not None else reason)
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
# a page and the start-up warm-up (engine/startup/warmup.py) may ask at the same moment: build once, not twice
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
def _types(schema: dict) -> set[str] | None:
    kind = schema.get("type")
    if isinstance(kind, str):
        kinds = {kind}
    elif isinstance(kind, list) and kind and all(isinstance(k, str) for k in kind):
        kinds = set(kind)
    else:
        return None
    return kinds | {"number"} if "integer" in kinds else kinds | ({"integer"} if "number" in kinds else set())


def _discriminator(schema: dict) -> dict[str, object]:
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    required = schema.get("required") if isinstance(schema.get("required"), list) else []
    return {
        k: json.dumps(v["const"]) for k, v in props.items() if isinstance(v, dict) and "const" in v and k in required
    }


def overlapping_one_of(branches: list) -> bool:
    """Whether two branches of a oneOf might accept the same value: the grammar (an anyOf) would
    then allow a value that matches both, which oneOf forbids. Disjoint only when provably so:
    no two branches share a type (integer and number overlap), or every branch is an object
    with a required property whose const differs from branch to branch."""
    if len(branches) < 2 or not all(isinstance(b, dict) for b in branches):
        return len(branches) >= 2
    kinds = [_types(b) for b in branches]
    if all(k is not None for k in kinds):
        if all(not (kinds[i] & kinds[j]) for i in range(len(kinds)) for j in range(i + 1, len(kinds))):
            return False
    tags = [_discriminator(b) for b in branches]
    shared = set.intersection(*(set(t) for t in tags))
    return not any(len({t[key] for t in tags}) == len(tags) for key in shared)


def _unenforced(schema: object, path: str) -> tuple[str, str] | None:
    """The first keyword the grammar would not hold as the check does, and where, walking only through sub-schemas."""
    if not isinstance(schema, dict):
        return None
    for key in (*UNENFORCED, *UNFAITHFUL):
        if key in schema:
            return key, path
    if isinstance(schema.get("allOf"), list) and len(schema["allOf"]) > 1:
        return "allOf", path
    if isinstance(schema.get("oneOf"), list) and overlapping_one_of(schema["oneOf"]):
        return "oneOf (branches that may overlap)", path
    if "multipleOf" in schema and schema.get("type") != "integer":
        return "multipleOf (on a number that is not an integer)", path
    bounds = [k for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum") if k in schema]
    if bounds and schema.get("type") != "integer":
        # xgrammar's bounded numbers take at most 6 decimals and no exponent: 1.5703125 and 1e-05 fit the schema, not it
        return f"{bounds[0]} on a number (the grammar's bounded numbers take at most 6 decimals and no exponent)", path
    lengths = [k for k in ("minLength", "maxLength") if k in schema]
    if lengths:
        # xgrammar's bounded strings hold no escape: "a\n" or 'say "hi"' fit the schema, not it
        return f"{lengths[0]} (the grammar's bounded strings cannot hold an escape such as \\n or \\\")", path
    ref = schema.get("$ref")
    if ref is not None:
        if not isinstance(ref, str) or not (ref == "#" or ref.startswith("#/")):
            return (
                f"$ref {str(ref)[:60]!r} (only references into the same schema, '#' or '#/...', can be followed)",
                path,
            )
        if set(schema) - _REF_SIBLINGS_OK:
            return "$ref beside other keywords", path
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


def grammar_schema(schema: object, root: str = "#") -> object:
    """A tool's parameters as the grammar holds them: annotations left out, and every local
    $ref rewritten to point from `root`, where the parameters sit inside the call schema."""
    if isinstance(schema, list):
        return [grammar_schema(s, root) for s in schema]
    if not isinstance(schema, dict):
        return schema
    copy = {}
    for key, value in schema.items():
        if key in ANNOTATIONS:
            continue
        if key in _VALUES:
            copy[key] = value
        elif key == "$ref" and isinstance(value, str) and value.startswith("#"):
            copy[key] = root + value[1:]
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            copy[key] = {k: grammar_schema(v, root) for k, v in value.items()}
        else:
            copy[key] = grammar_schema(value, root)
    return copy


def _xgrammar_message(error: Exception) -> str:
    # "[15:41:20] /project/cpp/json_schema_converter.cc:5082: Unsupported type "foo"" -> the last part
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return re.sub(r"^\[[\d:]+\]\s+\S+:\d+:\s*", "", text)[:300]


# xgrammar prints a character below 256 as \xHH but reads \x greedily, as many hex digits as follow: "éa" prints
# as "\xe9a" and reads back as U+0E9A, so an enum or const with such a character before a letter a-f or a digit
# could never be written. Its \u takes exactly four digits: every \xHH is rewritten so (a "\\" pair is skipped).
_PRINTED_ESCAPE = re.compile(r"(\\\\)|\\x([0-9A-Fa-f]{2})")


def ebnf_text(grammar) -> str:
    """An xgrammar Grammar as EBNF text that xgrammar (and llama.cpp) read back as the same grammar."""
    return _PRINTED_ESCAPE.sub(lambda m: m.group(1) or "\\u00" + m.group(2), str(grammar))


def json_schema_ebnf(schema: dict) -> str:
    """A JSON schema's grammar, written as the chat template writes JSON (its separators, no other whitespace)."""
    import xgrammar as xgr

    return ebnf_text(xgr.Grammar.from_json_schema(json.dumps(schema), any_whitespace=False, separators=SEPARATORS))


@functools.lru_cache(maxsize=256)
def _arguments_ebnf(params_json: str) -> str:
    return json_schema_ebnf(json.loads(params_json))


def check_tool(tool: dict) -> None:
    """Raise SchemaUnsupported if this tool's parameters cannot be turned into a faithful grammar."""
    name, params = tool_name(tool), tool_parameters(tool)
    too_big = find_cost_problem(tool)
    if too_big:
        raise SchemaUnsupported(name, too_big)
    found = _unenforced(params, "parameters")
    if found:
        keyword, where = found
        if keyword in UNENFORCED or keyword == "allOf":
            raise SchemaUnsupported(
                name, f"{where} uses {keyword!r}, which the grammar engine (xgrammar) does not enforce"
            )
        if keyword in UNFAITHFUL:
            keyword = repr(keyword)
        raise SchemaUnsupported(
            name, f"{where} uses {keyword}, which the grammar (xgrammar) cannot hold as the schema check does"
        )
    try:
        _arguments_ebnf(json.dumps(grammar_schema(params)))
    except Exception as error:  # xgrammar raises RuntimeError / ValueError with the C++ message
        raise SchemaUnsupported(
            name, f"the grammar engine (xgrammar) cannot compile its parameters: {_xgrammar_message(error)}"
        ) from error


# -- compiling ------------------------------------------------------------------------------
def call_schema(tools: list[dict]) -> dict:
    """The JSON between the tags, as one schema: anyOf over the tools, name first, then arguments.

    Each tool's local references are rewritten to where its parameters now sit."""
    single = len(tools) == 1
    branches = [
        {
            "type": "object",
            "properties": {
                "name": {"const": tool_name(t)},
                "arguments": grammar_schema(
                    tool_parameters(t), "#/properties/arguments" if single else f"#/anyOf/{i}/properties/arguments"
                ),
            },
            "required": ["name", "arguments"],
            "additionalProperties": False,
        }
        for i, t in enumerate(tools)
    ]
    return branches[0] if single else {"anyOf": branches}


def reasoning_format(budget: int | None = None):
    """One optional <think> ... </think> block and the template's blank line, before the answer;
    `budget`: at most that many tokens of reasoning (then only </think> may follow), as a
    server's thinking budget does."""
    from xgrammar.structural_tag import (
        AnyTokensFormat,
        ConstStringFormat,
        OptionalFormat,
        SequenceFormat,
        TagFormat,
        TokenFormat,
    )

    block = TagFormat(
        begin=TokenFormat(token=THINK),
        content=AnyTokensFormat(exclude_tokens=[THINK, THINK_END], max_tokens=budget),
        end=TokenFormat(token=THINK_END),
    )
    return OptionalFormat(content=SequenceFormat(elements=[block, ConstStringFormat(value=THINK_SUFFIX)]))


def _structural_tag(tools: list[dict], shape: str, thinking: bool | int = False):
    from xgrammar.structural_tag import (
        ConstStringFormat,
        GrammarFormat,
        SequenceFormat,
        StarFormat,
        StructuralTag,
        TokenFormat,
    )

    json_ebnf = json_schema_ebnf(call_schema(tools))

    def body():
        return [
            ConstStringFormat(value="\n"),
            GrammarFormat(grammar=json_ebnf),
            ConstStringFormat(value="\n"),
            TokenFormat(token=TOOL_CALL_END),
        ]

    if shape == "body":
        return StructuralTag(format=SequenceFormat(elements=body()))
    # thinking may be a budget: True is unbounded, a number bounds the reasoning's tokens
    budget = None if thinking is True else thinking
    before = [reasoning_format(budget)] if thinking else []
    if shape == "call":
        return StructuralTag(format=SequenceFormat(elements=[*before, TokenFormat(token=TOOL_CALL), *body()]))
    # a further call follows the template's "\n" between calls
    more = StarFormat(
        content=SequenceFormat(elements=[ConstStringFormat(value="\n"), TokenFormat(token=TOOL_CALL), *body()])
    )
    return StructuralTag(format=SequenceFormat(elements=[*before, TokenFormat(token=TOOL_CALL), *body(), more]))


@functools.lru_cache(maxsize=64)
def _compile(key: str, shape: str, thinking: bool | int = False):
    tools = [{"type": "function", "function": {"name": n, "parameters": p}} for n, p in json.loads(key)]
    for tool in tools:
        check_tool(tool)
    try:
        return compiler().compile_structural_tag(_structural_tag(tools, shape, thinking))
    except Exception as error:  # a schema each tool's own check passed, that fails in the union
        names = ", ".join(tool_name(t) for t in tools)
        raise SchemaUnsupported(
            names, f"the grammar engine (xgrammar) cannot compile the call: {_xgrammar_message(error)}"
        ) from error


# compiles run here, off the caller's thread, so a page can stop waiting (xgrammar's C++ cannot be interrupted)
_WORKERS = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="grammar-compile")
_PENDING: dict[tuple, concurrent.futures.Future] = {}
_PENDING_LOCK = threading.Lock()


def compile_calls(tools: list[dict], shape: str, thinking: bool | int = False, timeout: float | None = None):
    """The compiled grammar of a call over these tools ("body", "call" or "calls"), from the cache when it can.

    `thinking`: "call" and "calls" allow one <think>...</think> block first (a number: at most
    that many tokens of reasoning). Raises
    SchemaUnsupported for the first tool whose parameters cannot be held, or when the compile
    takes longer than `timeout` seconds (COMPILE_SECONDS by default); a compile already under
    way for the same tools is waited on, not started again."""
    if shape not in ("body", "call", "calls"):
        raise ValueError(f"shape must be 'body', 'call' or 'calls', not {shape!r}")
    for tool in tools:
        # the size limits are checked here, before the key is even built
        too_big = find_cost_problem(tool)
        if too_big:
            raise SchemaUnsupported(tool_name(tool), too_big)
    args = (canonical(tools), shape, False if shape == "body" else thinking)
    # the vocabulary is loaded here, once per process (seconds with the imports): it is not the compile
    compiler()
    with _PENDING_LOCK:
        future = _PENDING.get(args)
        if future is None:
            future = _WORKERS.submit(_compile, *args)
            _PENDING[args] = future
            future.add_done_callback(lambda _, args=args: _PENDING.pop(args, None))
    limit = COMPILE_SECONDS if timeout is None else timeout
    try:
        return future.result(timeout=limit)
    except concurrent.futures.TimeoutError:
        raise SchemaUnsupported(
            None,
            f"the grammar took longer than {limit:g} s to compile; fewer or smaller tools "
            "compile faster (its result is kept for the next turn)",
        ) from None


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
