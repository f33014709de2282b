"""What a malformed call costs ([[tool-calling-explainer]]): measured from two runs, and by the formula.

Every model call re-sends the whole context (engine/harness/ledger.py), so a run's input cost is the sum of its
prompts. A malformed call costs, over the rest of the run,

    Δ_in = C_bad + (a_bad + e) · n_later,    Δ_out = a_bad's output tokens

where C_bad is the context the bad call was sent with (0 when the bad block shared a turn
with good calls, so no extra call was made), a_bad the tokens its text adds to every later
prompt, e the tokens its error adds, and n_later the number of calls after it ([[tool-calling-explainer]]:
561 + (32 + 22) × 5 = 831). `measure_malformed_cost` runs the scripted conversation with
and without the bad turn and reports the measured difference beside the formula.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass

from ..core.tokenizer import IM_END
from ..errors import BadInput
from ..harness.loop import load_scenario, run_scenario


@dataclass(frozen=True)
class MalformedCost:
    """A malformed call's cost, measured from two runs and by the formula."""

    scenario: str
    style: str
    bad_call: int  # 1-based number of the call that went wrong
    c_bad: int  # context of the bad call (0 if it was not an extra call)
    a_bad: int  # tokens the bad text adds to each later prompt
    e: int  # tokens the error adds to each later prompt
    n_later: int  # calls after the bad one
    a_bad_output: int  # tokens the model wrote for the bad text
    a_bad_template: tuple[str, ...]  # the rest of a_bad: the chat template's tokens around the re-sent turn
    measured_in: int  # Σ input with the bad call − Σ input without
    measured_out: int
    with_bad: dict  # ledger totals of both runs
    without_bad: dict

    @property
    def formula_in(self) -> int:
        return self.c_bad + (self.a_bad + self.e) * self.n_later

    @property
    def formula_text(self) -> str:
        return f"{self.c_bad} + ({self.a_bad} + {self.e}) × {self.n_later} = {self.formula_in}"

    @property
    def agrees(self) -> bool:
        return self.formula_in == self.measured_in


def template_tokens(prompt, call) -> tuple[str, ...]:
    """The tokens a turn takes when a later prompt re-sends it, beyond those the model wrote for it (the ledger's
    output, its closing <|im_end|> included when it stopped there): the chat template's own markers around it."""
    span = prompt.message_spans([call.message_index])[0]
    text = prompt.span_text(span)
    at = span.start + text.find(call.turn.text)
    written = range(at, at + len(call.turn.text))
    pieces = [p for p, k in zip(prompt.pieces, prompt.token_spans) if prompt.spans[k] is span]
    outside = [p for p in pieces if p.start not in written]
    # the <|im_end|> the model wrote to stop is its own output (counted by the ledger), re-sent as written
    stopped = call.cost.output_tokens > len(pieces) - len(outside)
    ended = next((p for p in outside if p.id == IM_END), None)
    return tuple(p.text for p in outside if not (stopped and p is ended))


def measure_malformed_cost(scenario, style: str = "native") -> MalformedCost:
    """Run `scenario` with and without its malformed turn and compare with the formula."""
    bad = run_scenario(scenario, style, "per-block")
    clean = run_scenario(scenario, style, "per-block", clean=True)
    index = scenario.malformed_turn
    if index is None:
        raise BadInput(f"scenario {scenario.name!r} has no malformed turn to measure")
    dropped = scenario.clean_turn(style) is None
    n_later = len(bad.calls) - index - 1
    # the tokens the bad turn and its errors occupy in the next prompt, read off its spans
    bad_next = bad.calls[index + 1].prompt
    turn_message = bad.calls[index].message_index
    a_bad = bad_next.message_tokens([turn_message])
    e = bad_next.message_tokens(bad.calls[index].result_indices)
    c_bad = bad.calls[index].prompt.count if dropped else 0
    if not dropped:
        clean_next = clean.calls[index + 1].prompt
        clean_step = clean.calls[index]
        a_bad -= clean_next.message_tokens([clean_step.message_index])
        e -= clean_next.message_tokens(clean_step.result_indices)
    return MalformedCost(
        scenario=scenario.name,
        style=style,
        bad_call=index + 1,
        c_bad=c_bad,
        a_bad=a_bad,
        e=e,
        n_later=n_later,
        a_bad_output=bad.ledger.calls[index].output_tokens
        - (0 if dropped else clean.ledger.calls[index].output_tokens),
        a_bad_template=template_tokens(bad_next, bad.calls[index]) if dropped else (),
        measured_in=bad.ledger.input_tokens - clean.ledger.input_tokens,
        measured_out=bad.ledger.output_tokens - clean.ledger.output_tokens,
        with_bad=bad.ledger.totals(),
        without_bad=clean.ledger.totals(),
    )


def malformed_cost_of(name: str, style: str = "native") -> MalformedCost:
    """`measure_malformed_cost` of the scenario called `name`, once per process: it runs the scripted tools in the
    sandbox (about a second), and lesson 4, its quiz and the gallery all show the same figures. A page that asks
    while the warm-up measures it waits for that measure rather than running the tools a second time."""
    with _measuring:
        return _malformed_cost_of(name, style)


_measuring = threading.Lock()


@functools.lru_cache(maxsize=64)
def _malformed_cost_of(name: str, style: str) -> MalformedCost:
    return measure_malformed_cost(load_scenario(name), style)
