"""Ways a call goes wrong (each reported against a real server, or built to show the failure), measured on the gallery's scripted scenarios.

Each function returns its work as data for a page: what a naive parser does with a turn
(only the first block, cut at the first closing tag), where a block was cut, what the tool
schemas cost when `tool_choice` is none and they stay in the prompt (engine.core.prompt, the
real tokenizer), where the token limit cut a call, and what a retry loop costs with and
without the harness's retry budget (engine.harness.loop's ledger).

The naive parser is the one many quick harnesses write: `re.search` for the first
`<tool_call>(.*?)</tool_call>` and `json.loads` of it. Ours (engine.core.parse) reads every block
with vLLM's regex and checks each one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal

from ..core.call_formats import get_format, parse_turn
from ..core.parse import BLOCK_PATTERN, POLICIES
from ..core.prompt import Request, render
from ..core.tokenizer import load_tokenizer
from ..harness.loop import Scenario, run_scenario

CLOSED_BLOCK = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
CLOSE_TAG = "</tool_call>"


@dataclass(frozen=True)
class NaiveParse:
    """What a first-block-only parser makes of a turn."""

    name: str | None  # the one call it found, if its JSON loaded
    arguments: object
    error: str | None  # why it found no call
    blocks_seen: int  # blocks vLLM's regex finds in the same turn
    dropped: int  # blocks after the first, never looked at


def parse_first_block(text: str) -> NaiveParse:
    """The naive parser: the first closed block only, with plain json.loads."""
    seen = len(BLOCK_PATTERN.findall(text))
    found = CLOSED_BLOCK.search(text)
    if found is None:
        return NaiveParse(None, None, "no closed <tool_call> block", seen, 0)
    dropped = max(seen - 1, 0)
    try:
        value = json.loads(found.group(1))
    except (json.JSONDecodeError, RecursionError):
        return NaiveParse(None, None, "the first block is not valid JSON", seen, dropped)
    if not isinstance(value, dict):
        return NaiveParse(None, None, "the first block is not a JSON object", seen, dropped)
    return NaiveParse(value.get("name"), value.get("arguments"), None, seen, dropped)


@dataclass(frozen=True)
class BlockCut:
    """Where the non-greedy regex ended a block, and whether that was inside a JSON string."""

    start: int  # offsets into the turn text: the block as the regex matched it
    end: int
    cut_at: int  # where the closing tag the regex stopped at begins
    inside_string: bool  # that tag sits inside an open JSON string
    left_over: str  # the turn's text after the cut that no block holds


def find_block_cut(text: str) -> BlockCut | None:
    """The first block's end as the regex sees it; None when the turn has no closed block."""
    found = CLOSED_BLOCK.search(text)
    if found is None:
        return None
    inner = found.group(1)
    # walk the JSON text up to the tag: an odd number of unescaped quotes means a string is open
    open_string = False
    escaped = False
    for char in inner:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            open_string = not open_string
    following = BLOCK_PATTERN.search(text, found.end())
    rest = text[found.end() : following.start() if following else len(text)]
    return BlockCut(found.start(), found.end(), found.end() - len(CLOSE_TAG), open_string, rest)


@dataclass(frozen=True)
class SchemaCost:
    """The tool definitions' tokens in a run whose calls may not use them."""

    scenario: str
    style: str
    tool_choice: str
    calls: int  # model calls in the run
    with_tools: list[int]  # each call's prompt tokens with the tools left in
    without_tools: list[int]  # the same prompts with the tools taken out

    @property
    def tools_tokens(self) -> list[int]:
        return [a - b for a, b in zip(self.with_tools, self.without_tools)]

    @property
    def wasted(self) -> int:
        return sum(self.tools_tokens)


def measure_schema_cost(scenario: Scenario, style: str = "native") -> SchemaCost:
    """Each call of the run rendered with and without the tools, by the real tokenizer."""
    tok = load_tokenizer()
    run = run_scenario(scenario, style)
    with_tools, without = [], []
    for call in run.calls:
        messages = run.messages[: call.message_index]
        with_tools.append(call.prompt.count)
        without.append(render(Request(messages, [], style), tok).count)
    return SchemaCost(scenario.name, style, scenario.tool_choice, len(run.calls), with_tools, without)


@dataclass(frozen=True)
class LengthCut:
    """A turn the token limit stopped, and the run of tokens that never ended."""

    limit: int | None  # the scenario's max_new_tokens
    output_tokens: int  # what the turn wrote (no <|im_end|>: it never stopped)
    finish: str
    tail: list[str]  # the last tokens, as text
    repeated: int  # how many tokens at the end are the same kind (digits, or whitespace)
    kind: Literal["digits", "whitespace", ""]  # what the repeated tokens at the end are ("": neither)


def find_length_cut(scenario: Scenario, style: str = "native") -> LengthCut:
    """The scenario's first turn that stopped at the token limit, token by token."""
    tok = load_tokenizer()
    turn = next(t for t in scenario.script(style) if t.finish == "length")
    pieces = tok.encode_and_show_work(turn.text)
    spans = [turn.text[p.start : p.end] for p in pieces]
    kind = "digits" if spans and spans[-1].isdigit() else ("whitespace" if spans and not spans[-1].strip() else "")
    same = str.isdigit if kind == "digits" else (lambda s: not s.strip())
    repeated = 0
    for span in reversed(spans):
        if not kind or not same(span):
            break
        repeated += 1
    return LengthCut(scenario.max_new_tokens, len(pieces), turn.finish, spans[-8:], repeated, kind)


@dataclass(frozen=True)
class RetryLoopCost:
    """A stuck model's run with the harness's retry budget and without one."""

    scenario: str
    style: str
    retry_budget: int | None
    with_budget: dict  # ledger totals
    without_budget: dict
    stop_with: str
    stop_without: str

    @property
    def saved_tokens(self) -> int:
        return self.without_budget["tokens"] - self.with_budget["tokens"]


def measure_retry_loop(scenario: Scenario, style: str = "native", policy: str = "per-block") -> RetryLoopCost:
    """Run the loop twice, from the ledger: with the scenario's retry budget, and with none."""
    bounded = run_scenario(scenario, style, policy)
    unbounded = run_scenario(scenario, style, policy, use_retry_budget=False)
    return RetryLoopCost(
        scenario.name,
        style,
        scenario.retry_budget,
        bounded.ledger.totals(),
        unbounded.ledger.totals(),
        bounded.stop_reason,
        unbounded.stop_reason,
    )


@dataclass(frozen=True)
class GalleryCase:
    """One gallery case at its failing turn: the turn, the naive parser, ours under each policy."""

    scenario: Scenario
    style: str
    turn_index: int  # the turn that shows the failure (the malformed one, else the first)
    text: str
    naive: NaiveParse | None  # native only: a first-block-only parser's reading
    ours: dict  # policy -> engine.core.parse.ParseResult
    cut: BlockCut | None  # where the regex ended the first block


def show_gallery_case(scenario: Scenario, style: str = "native") -> GalleryCase:
    """Everything a page draws for one case, computed from the scenario's own turn."""
    index = scenario.malformed_turn if scenario.malformed_turn is not None else 0
    text = scenario.script(style)[index].text
    ours = {policy: parse_turn(text, scenario.tools, style, policy) for policy in POLICIES}
    native = style == "native"
    return GalleryCase(
        scenario,
        style,
        index,
        text,
        parse_first_block(text) if native else None,
        ours,
        find_block_cut(text) if native else None,
    )


@dataclass(frozen=True)
class GrammarCheck:
    """Lesson 6's grammar over a case's failing turn: where it stops the turn, or what it lets through."""

    tool_choice: str
    steps: list  # engine.constrain.masks.MaskedToken, one per token walked
    at: int | None  # the step to show: the token the grammar refused, or the tag inside a string
    stopped: bool  # the grammar refused a token of the turn
    allowed: int | None  # tokens allowed at that step (None: nothing restricted)
    sample: list[str]  # some of them, lowest ids first
    tag_allowed: bool | None  # at a </tool_call> inside a string: whether the mask lets that one token through
    unbounded_steps: list | None = None  # the same turn under the tools with their number bounds removed


def drop_number_bounds(tools: list[dict]) -> list[dict]:
    """The tools with every minimum and maximum taken out of their schemas: what an unbounded number looks like."""

    def strip(value):
        if isinstance(value, dict):
            return {
                k: strip(v)
                for k, v in value.items()
                if k not in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
            }
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return [strip(tool) for tool in tools]


def check_grammar(scenario: Scenario, style: str = "native") -> GrammarCheck | None:
    """Walk the case's failing turn through today's grammar (engine.constrain.masks); None in ReAct, which has no grammar here."""
    from ..constrain.masks import inspect_mask, walk

    if not get_format(style).constrained:
        return None
    index = scenario.malformed_turn if scenario.malformed_turn is not None else 0
    text = scenario.script(style)[index].text
    steps = walk(scenario.tools, text, scenario.tool_choice)
    refused = next((s for s in steps if not s.ok), None)
    cut = find_block_cut(text)
    at, tag_allowed, prefix = None, None, None
    if refused is not None:
        at = refused.index
        prefix = "".join(s.token for s in steps[:at])
    elif cut is not None and cut.inside_string:
        # the first </tool_call> token of the turn is the one inside the string
        tok = load_tokenizer()
        tag = tok.token_id(CLOSE_TAG)
        at = next(s.index for s in steps if s.id == tag)
        prefix = text[: cut.cut_at]
    if at is None:
        return GrammarCheck(scenario.tool_choice, steps, None, False, None, [], None)
    view = inspect_mask(scenario.tools, prefix, scenario.tool_choice, sample_size=40)
    if refused is None:
        tag_allowed = bool(view.mask[load_tokenizer().token_id(CLOSE_TAG)]) if view.mask is not None else True
    unbounded = None
    if refused is not None and refused.token.strip().isdigit():
        # a digit refused: the schema's bound ended the number; without it the grammar allows it on
        unbounded = walk(drop_number_bounds(scenario.tools), text, scenario.tool_choice)
    allowed = None if view.mask is None else view.allowed
    return GrammarCheck(
        scenario.tool_choice, steps, at, refused is not None, allowed, view.sample, tag_allowed, unbounded
    )
