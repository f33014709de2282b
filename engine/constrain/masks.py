"""Constrained decoding over a request's tools: tool_choice modes, and masks a learner can see.

The grammar (engine/constrain/grammar.py, xgrammar) holds a call to Qwen's format; this module decides
when it applies, as [[tool-calls-cant-come-out-malformed]] describes the modes:

    none       no constraint and no call (make_constraint returns None)
    auto       nothing is restricted until the model writes its own opener <tool_call>; from
               there the call is constrained, and each further call in the turn on its own.
               Before the opener next_mask() is None, so prose decodes exactly as unconstrained.
    required   a call to one of the tools, constrained from the first token (further calls may follow)
    NAME       one call to that tool only ({"type": "function", "function": {"name": NAME}} too);
               a name that is not in the request is a BadInput

A tool schema the grammar cannot hold leaves auto and required unconstrained, with the reason
in `StepConstraint.unconstrained_reason`, and refuses a named tool_choice with BadInput.

Reasoning (Qwen3 with thinking on): under auto, a `<tool_call>` written between `<think>` and
`</think>` starts nothing, as Qwen3's reasoning parser runs no call from the reasoning; with
`thinking=True`, required and named grammars allow one `<think>...</think>` block first.

For pages: `inspect_mask` shows the mask at any point of a turn (how many of the 151,669
tokens survive, which ones, and the model's probabilities before and after), and `walk`
steps through a whole text, token by token, with the allowed count at each step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ..core.generation import Alternative
from ..core.tokenizer import MODEL_VOCAB, REAL_VOCAB, THINK, THINK_END, TOOL_CALL, QwenTokenizer, load_tokenizer
from ..core.tooldefs import tool_name
from ..errors import BadInput
from .grammar import compile_calls
from .packed_mask import PackedMask, bitmask_to_bool, new_bitmask, pack_words
from .schemas import SchemaUnsupported

MODES = ("none", "auto", "required")
OPENER_TEXT = "<tool_call>"


class TokenRejected(BadInput):
    """A token the grammar does not allow at that point (a prefix or a text that leaves the grammar)."""


def normalize_tool_choice(tool_choice: str | dict | None, tools: list[dict]) -> tuple[str, str | None]:
    """("none"|"auto"|"required"|"named", tool name or None); BadInput for a name not in the request."""
    names = [tool_name(t) for t in tools]
    if tool_choice is None:
        tool_choice = "auto"
    if isinstance(tool_choice, dict):
        function = tool_choice.get("function") if isinstance(tool_choice.get("function"), dict) else tool_choice
        name = function.get("name")
        if not isinstance(name, str):
            raise BadInput('tool_choice as an object needs {"type": "function", "function": {"name": ...}}')
    elif isinstance(tool_choice, str):
        if tool_choice in MODES:
            if tool_choice != "none" and tool_choice != "auto" and not tools:
                raise BadInput(f"tool_choice {tool_choice!r} needs at least one tool in the request")
            return tool_choice, None
        name = tool_choice
    else:
        raise BadInput(f"tool_choice must be auto, required, none or a tool name, not {tool_choice!r}")
    if name not in names:
        offered = ", ".join(names) or "none"
        raise BadInput(f"tool_choice names {name!r}, which is not one of the request's tools ({offered})")
    return "named", name


class StepConstraint:
    """The decode loop's hook: `next_packed()` (or `next_mask()`, unpacked) before each step, `accept(id)` after it.

    `state` is where the turn stands ("free" text, "call" being written, "done"); `reason` says
    in words what the constraint does now; `allowed` is the last mask's count of real tokens.
    """

    def __init__(
        self,
        tools: list[dict],
        mode: str,
        name: str | None = None,
        tokenizer: QwenTokenizer | None = None,
        thinking: bool | int = False,
    ):
        self.tools = tools
        self.mode = mode  # "auto" | "required" | "named"
        self.tool = name  # the named tool, for mode "named"
        self.thinking = thinking  # Qwen3's enable_thinking: a <think> block may come first (a number: its token budget)
        self.in_reasoning = False  # auto: between <think> and </think>, where no opener counts
        self.unconstrained_reason: str | None = None
        self.calls = 0  # calls completed under the grammar in this turn
        self.allowed: int | None = None
        self._tokenizer = tokenizer if isinstance(tokenizer, QwenTokenizer) else None
        self._tail = ""  # the end of the free text, to see an opener spelled in pieces
        self._matcher = None
        self._bitmask = None
        subset = [t for t in tools if tool_name(t) == name] if mode == "named" else tools
        try:
            grammar = compile_calls(subset, {"auto": "body", "required": "calls", "named": "call"}[mode], thinking)
        except SchemaUnsupported as error:
            if mode == "named":
                raise BadInput(
                    f"tool_choice names {name!r}, but its schema cannot be constrained: {error.reason}"
                ) from error
            self.unconstrained_reason = f"unconstrained: {error.reason}"
            self.state = "unconstrained"
            return
        import xgrammar as xgr

        self._matcher = xgr.GrammarMatcher(grammar)
        self._bitmask = new_bitmask()
        self._words = self._bitmask[0].numpy()  # the same memory, viewed once
        self.state = "free" if mode == "auto" else "call"

    @property
    def names(self) -> list[str]:
        return [self.tool] if self.mode == "named" else [tool_name(t) for t in self.tools]

    @property
    def reason(self) -> str:
        """One line for the page: why this step is (or is not) restricted."""
        if self.unconstrained_reason:
            return self.unconstrained_reason
        if self.state == "free" and self.in_reasoning:
            return "auto: inside the reasoning (<think>); a <tool_call> written here starts no call"
        if self.state == "free":
            return "auto: nothing is restricted until the model writes <tool_call>"
        if self.state == "done":
            return "the turn has ended"
        who = f"the tool {self.tool}" if self.mode == "named" else "one of: " + ", ".join(self.names)
        return f"{self.mode}: writing a call to {who}; only tokens that keep the call valid are allowed"

    def next_packed(self) -> PackedMask | None:
        """The mask as xgrammar's packed words with its allowed count (fill + popcount, no unpacking);
        None when nothing is restricted. What the decode loop uses: the words are valid until the next call."""
        if self.state in ("free", "unconstrained", "done"):
            self.allowed = None
            return None
        self._matcher.fill_next_token_bitmask(self._bitmask)
        packed = pack_words(self._words)
        self.allowed = packed.allowed
        return packed

    def next_mask(self) -> torch.Tensor | None:
        """Bool over the model's 151,936 ids, True = allowed; None when nothing is restricted.

        Unpacks the words: for a page that lists the allowed tokens (next_packed is the fast path)."""
        if self.next_packed() is None:
            return None
        mask, _ = bitmask_to_bool(self._bitmask)
        return mask

    def accept(self, token_id: int) -> None:
        """Move on by the chosen token. TokenRejected if the grammar does not allow it here."""
        token_id = int(token_id)
        if self.state in ("unconstrained", "done"):
            return
        if self.state == "free":
            # the reasoning is the model's scratch space: an opener there is text, as the parser reads it
            if token_id in (THINK, THINK_END):
                self.in_reasoning = token_id == THINK
                self._tail = ""
                return
            if self.in_reasoning:
                return
            if token_id == TOOL_CALL or self._opener_spelled(token_id):
                self._matcher.reset()
                self.state = "call"
            return
        if not self._matcher.accept_token(token_id):
            raise TokenRejected(f"the grammar does not allow {self._text(token_id)!r} here ({self.reason})")
        if self.mode == "auto" and self._matcher.is_completed():
            # the call is closed: back to free text until the next opener
            self.calls += 1
            self._tail = ""
            self.state = "free"
        elif self._matcher.is_terminated():
            self.state = "done"

    def _text(self, token_id: int) -> str:
        if self._tokenizer is None:
            self._tokenizer = load_tokenizer()
        return self._tokenizer.token_text(token_id)

    def _opener_spelled(self, token_id: int) -> bool:
        # the opener written as ordinary text in pieces ("<tool" + "_call>") is a call to the parser too
        self._tail = (self._tail + self._text(token_id))[-len(OPENER_TEXT) :]
        return self._tail == OPENER_TEXT


def make_constraint(
    tools: list[dict], tool_choice: str | dict | None, tokenizer=None, thinking: bool | int = False
) -> StepConstraint | None:
    """The constraint for one turn of a request, or None under "none" (or auto with no tools).

    `tokenizer` may be the engine's QwenTokenizer (used for token text); the grammar itself
    always uses the vendored Qwen3 vocabulary, which every Qwen3 size shares. `thinking`: the
    request's enable_thinking (required and named calls may follow a <think> block; a number
    bounds the reasoning to that many tokens, as a server's thinking budget)."""
    mode, name = normalize_tool_choice(tool_choice, tools)
    if mode == "none" or (mode == "auto" and not tools):
        return None
    return StepConstraint(tools, mode, name, tokenizer, thinking)


# -- masks a page can draw ------------------------------------------------------------------
@dataclass
class MaskView:
    """The mask at one point of a turn, and what it does to the model's choice there."""

    prefix: str  # what the assistant has written so far
    prefix_ids: list[int]  # that text as the model's tokens (<tool_call> is one id)
    tool_choice: str  # "auto", "required", "none" or the named tool
    state: str  # "free", "call", "done", "unconstrained" or "none"
    reason: str  # why this step is or is not restricted, in words
    unconstrained_reason: str | None  # set when a schema could not be compiled
    vocab: int  # 151,669 real tokens
    allowed: int  # how many of them may come next
    mask: torch.Tensor | None = field(default=None, repr=False)  # bool over 151,936; None = nothing restricted
    sample: list[str] = field(default_factory=list)  # up to 50 allowed tokens, lowest ids first
    forbidden_mass: float | None = None  # with logits: the probability the model put on forbidden tokens
    allowed_mass: float | None = (
        None  # with logits: what it put on the allowed ones (summed directly, so exact when tiny)
    )
    top_before: list[Alternative] = field(default_factory=list)  # with logits: raw softmax, top-k
    top_after: list[Alternative] = field(default_factory=list)  # with logits: renormalised over the allowed, top-k

    @property
    def constrained(self) -> bool:
        return self.mask is not None

    def allowed_ids(self) -> list[int]:
        """Every allowed id (all 151,669 when nothing is restricted)."""
        if self.mask is None:
            return list(range(REAL_VOCAB))
        return np.flatnonzero(self.mask.numpy()[:REAL_VOCAB]).tolist()

    def allowed_tokens(self) -> list[str]:
        tok = load_tokenizer()
        return [tok.token_text(i) for i in self.allowed_ids()]


def advance(constraint: StepConstraint | None, ids: list[int], tok: QwenTokenizer) -> None:
    """Move `constraint` on over a prefix's ids, as if the model had written them; TokenRejected (a BadInput) at the
    first one its grammar does not allow there."""
    for position, token_id in enumerate(ids):
        if constraint is None:
            return
        constraint.next_packed()
        try:
            constraint.accept(token_id)
        except TokenRejected as error:
            before = tok.decode(ids[:position])
            raise TokenRejected(
                f"the prefix leaves the grammar at token {position + 1} "
                f"{tok.token_text(token_id)!r} after {before!r}: {error}"
            ) from None


def _top(probs: torch.Tensor, k: int, tok: QwenTokenizer) -> list[Alternative]:
    values, ids = probs.topk(k)
    return [Alternative(int(i), tok.token_text(int(i)), float(v)) for v, i in zip(values, ids, strict=True)]


def inspect_mask(
    tools: list[dict],
    prefix: str,
    tool_choice: str | dict | None = "auto",
    logits: torch.Tensor | None = None,
    top_k: int = 10,
    sample_size: int = 50,
    thinking: bool = False,
) -> MaskView:
    """The mask after `prefix` (the assistant's text so far), tokenized as the model writes it.

    With `logits` (the model's raw logits at that point, over 151,936 ids): the probability
    mass on forbidden tokens, and the top-k before (raw softmax) and after (renormalised)."""
    tok = load_tokenizer()
    mode, name = normalize_tool_choice(tool_choice, tools)
    constraint = make_constraint(tools, tool_choice, tok, thinking)
    ids = tok.encode(prefix)
    advance(constraint, ids, tok)
    mask = constraint.next_mask() if constraint is not None else None
    allowed = constraint.allowed if mask is not None else REAL_VOCAB
    sample_ids = (
        list(range(sample_size)) if mask is None else np.flatnonzero(mask.numpy()[:REAL_VOCAB])[:sample_size].tolist()
    )
    view = MaskView(
        prefix=prefix,
        prefix_ids=ids,
        tool_choice=name if mode == "named" else mode,
        state=constraint.state if constraint is not None else "none",
        reason=constraint.reason
        if constraint is not None
        else ("none: no constraint and no call" if mode == "none" else "auto with no tools: nothing to constrain"),
        unconstrained_reason=constraint.unconstrained_reason if constraint is not None else None,
        vocab=REAL_VOCAB,
        allowed=allowed,
        mask=mask,
        sample=[tok.token_text(i) for i in sample_ids],
    )
    if logits is not None:
        raw = logits.detach().float().flatten()[:MODEL_VOCAB].clone()
        raw[REAL_VOCAB:] = float("-inf")  # padding ids are never tokens
        before = torch.softmax(raw, -1)
        view.top_before = _top(before, top_k, tok)
        if mask is None:
            view.forbidden_mass, view.allowed_mass = 0.0, 1.0
            view.top_after = view.top_before
        else:
            view.forbidden_mass = float(before[~mask].sum())
            view.allowed_mass = float(before[mask].sum())
            after = torch.softmax(raw.masked_fill(~mask, float("-inf")), -1)
            view.top_after = _top(after, min(top_k, allowed), tok)
    return view


@dataclass(frozen=True)
class MaskedToken:
    """One token of a walked text and the mask it met."""

    index: int
    id: int
    token: str
    allowed: int | None  # real tokens allowed at this step; None = nothing restricted
    ok: bool  # whether the grammar allowed this token (the walk stops at the first that it did not)
    state: str  # the constraint's state before this token


def walk(
    tools: list[dict], text: str, tool_choice: str | dict | None = "auto", thinking: bool = False
) -> list[MaskedToken]:
    """Every token of `text` (an assistant turn) with the allowed count the grammar gave it.

    A token the grammar forbids is the last step, with ok=False: where a constrained run
    could never have gone."""
    tok = load_tokenizer()
    constraint = make_constraint(tools, tool_choice, tok, thinking)
    steps = []
    for index, token_id in enumerate(tok.encode(text)):
        state = constraint.state if constraint is not None else "none"
        # a bit test on the packed words: the walk never needs the whole mask unpacked
        packed = constraint.next_packed() if constraint is not None else None
        ok = True if packed is None else packed.allows(token_id)
        steps.append(
            MaskedToken(
                index, token_id, tok.token_text(token_id), None if packed is None else packed.allowed, ok, state
            )
        )
        if not ok:
            break
        if constraint is not None:
            constraint.accept(token_id)
    return steps
