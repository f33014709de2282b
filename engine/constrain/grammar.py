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

Which tool schemas the grammar can hold as the schema check does, and how each is rewritten for it,
is engine/constrain/schemas.py's; a schema it cannot hold is a `SchemaUnsupported` there, and the
turn is decoded unconstrained (a named tool_choice is refused). The masks a compiled grammar fills
are engine/constrain/packed_mask.py's words.

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

Cost limits: every tool is checked against engine/core/tooldefs.py's size limits before it is
compiled, and a compile runs on a worker thread for at most COMPILE_SECONDS; one that takes
longer is reported as a `SchemaUnsupported` (the turn is then unconstrained, as for any schema
the grammar cannot hold), and its result, when it comes, is cached for the next turn.
"""

from __future__ import annotations

import concurrent.futures
import functools
import json
import threading

from ..core.tokenizer import MODEL_VOCAB, THINK, THINK_END, TOOL_CALL, TOOL_CALL_END, load_hf_tokenizer
from ..core.tooldefs import find_cost_problem, tool_name
from .schemas import SchemaUnsupported, check_tool, grammar_schema, json_schema_ebnf, tool_parameters, xgrammar_message

THINK_SUFFIX = "\n\n"  # what the template writes between </think> and the answer
COMPILE_SECONDS = 10.0  # the longest a page waits for a compile before decoding unconstrained


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
            names, f"the grammar engine (xgrammar) cannot compile the call: {xgrammar_message(error)}"
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
