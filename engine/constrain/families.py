"""The grammar of a call in another model family's format, over that family's own vocabulary (xgrammar).

A format with `constrained` (Qwen3 native) has engine/constrain/grammar.py's grammar. For the
formats with `tag_grammar` the call is held to xgrammar structural tags, one per tool: the
format's text before the arguments (its opener and the tool's name, `CallFormat.call_tag`), the
arguments as the tool's JSON schema (in JSON, or in the format's own `argument_style`: Qwen3-Coder's
XML parameters), then the family's closing text; the opener is the trigger, so under `auto` prose is free until the model writes it.
The vocabulary is the family's own, every id's bytes (`CallFormat.vocab_bytes`), given to xgrammar
as a RAW vocabulary. Only `auto` is offered here; `required` and a named tool are Qwen3's.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass

import numpy as np

from ..core.call_formats import get_format
from ..core.tooldefs import tool_name
from ..errors import BadInput

SAMPLE = 50  # the most allowed tokens a mask lists


@dataclass(frozen=True)
class FamilyMask:
    """What a family's grammar allows after a prefix of the assistant's turn."""

    family: str
    vocab: int  # ids in the family's vocabulary
    allowed: int  # how many of them the grammar allows next
    sample: list[str]  # up to SAMPLE allowed tokens, as text
    constrained: bool  # False: before the opener, every token is allowed
    opener: str | None  # the trigger the grammar switches on at


# one per family, never evicted: lesson 8 asks for each in turn, and a smaller cache would miss every time
@functools.lru_cache(maxsize=16)
def family_tokenizer_info(name: str):
    """xgrammar's TokenizerInfo over the family's vocabulary (built once per family: seconds)."""
    import xgrammar as xgr

    family = get_format(name)
    vocab = family.vocab_bytes()
    return xgr.TokenizerInfo(vocab, vocab_type=xgr.VocabType.RAW, vocab_size=len(vocab))


@functools.lru_cache(maxsize=16)
def _compiled(name: str, tools_json: str):
    import xgrammar as xgr

    family = get_format(name)
    tools = json.loads(tools_json)
    compiler = xgr.GrammarCompiler(family_tokenizer_info(name), max_threads=1)
    if family.argument_style != "json":
        return compiler.compile_structural_tag(_styled_tag(family, tools))
    tags = []
    for tool in tools:
        params = tool.get("function", {}).get("parameters") or {"type": "object", "properties": {}}
        for begin, end in family.call_tags(tool_name(tool)):
            tags.append(xgr.StructuralTagItem(begin=begin, schema=json.dumps(params), end=end))
    return compiler.compile_structural_tag(tags, family.triggers())


def _styled_tag(family, tools: list[dict]):
    """The structural tag of a format whose arguments are not JSON: xgrammar writes the schema in the
    format's own style (Qwen3-Coder's one `<parameter=NAME>` per argument, `style="qwen_xml"`)."""
    from xgrammar import structural_tag as tag

    tags = [
        tag.TagFormat(
            begin=begin,
            content=tag.JSONSchemaFormat(
                json_schema=tool.get("function", {}).get("parameters") or {"type": "object", "properties": {}},
                style=family.argument_style,
            ),
            end=end,
        )
        for tool in tools
        for begin, end in family.call_tags(tool_name(tool))
    ]
    return tag.StructuralTag(format=tag.TriggeredTagsFormat(triggers=family.triggers(), tags=tags))


def inspect_family_mask(name: str, tools: list[dict], prefix: str) -> FamilyMask:
    """The mask after `prefix` (what the assistant wrote so far), under tool_choice auto, in the family's format."""
    import xgrammar as xgr

    family = get_format(name)
    if not family.tag_grammar:
        raise BadInput(
            f"{family.label}'s calls are not held by a structural tag here"
            + ("; its masks are engine.constrain.masks.inspect_mask's" if family.constrained else "")
        )
    if not tools:
        raise BadInput("a grammar over the tools needs at least one tool")
    info = family_tokenizer_info(name)
    # never sort the keys: the grammar writes the properties in the schema's own order
    matcher = xgr.GrammarMatcher(_compiled(name, json.dumps(tools)))
    for token_id in family.encode(prefix):
        if not matcher.accept_token(token_id):
            raise BadInput(
                f"the grammar refuses {family.token_text(token_id)!r} in the prefix: it is not a call in "
                f"{family.label}'s format (its calls start {family.name_prefix!r})"
            )
    bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)
    matcher.fill_next_token_bitmask(bitmask)
    bits = np.unpackbits(bitmask.numpy().view(np.uint8), bitorder="little")[: info.vocab_size]
    allowed = np.nonzero(bits)[0]
    opener = " or ".join(family.triggers())
    constrained = len(allowed) < info.vocab_size
    return FamilyMask(
        family.family,
        info.vocab_size,
        int(len(allowed)),
        [family.token_text(int(i)) for i in allowed[:SAMPLE]],
        constrained,
        opener,
    )


def allowed_at_name(name: str, tools: list[dict]) -> FamilyMask:
    """The mask where the tool's name starts: after the family's call text up to the name (Qwen3: its own grammar's)."""
    family = get_format(name)
    if family.constrained:
        from .masks import inspect_mask

        view = inspect_mask(tools, family.name_prefix, "auto")
        return FamilyMask(
            family.family, view.vocab, view.allowed, list(view.sample)[:SAMPLE], view.constrained, family.opener.text
        )
    return inspect_family_mask(name, tools, family.name_prefix)
