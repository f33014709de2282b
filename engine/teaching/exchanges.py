"""The calls of a scripted lesson run, in every wire format: what the page of other APIs steps through.

Each step of a scenario's run (engine.harness.loop) that wrote a call an API could carry, and
its final answer, written by every format of engine.wire.formats side by side.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.call_formats import get_format
from ..harness.loop import load_scenario, run_scenario
from ..wire.formats import WireCall, WireExchange, write_all


def calls_of_step(step) -> list[WireCall]:
    """The calls of one harness step that an API could carry: each block that wrote a name and arguments.

    A block that is not valid JSON has no name or arguments to write, so no API form; a call
    that failed a later check (an unknown name, a wrong type) still has one, and its error goes
    back as its result.
    """
    style = get_format(step.parse.style)
    calls = []
    for result, block in zip(step.results, step.parse.blocks):
        if result.ok:
            calls.append(WireCall(result.name, result.arguments, result.text))
            continue
        written = style.written_call(block, step.turn.text)
        if written is not None:
            calls.append(WireCall(*written, result.text, True))
    return calls


@dataclass(frozen=True)
class StepExchanges:
    """The calls of one step of a scripted run, in every format."""

    step: int  # 0-based index of the model call in the run
    calls: list[WireCall]  # [] for the final answer
    exchanges: list[WireExchange]  # in the formats' order
    answer: str | None = None  # the final answer's text, for the step that ends the run


def scenario_exchanges(name: str, style: str = "native", choice: str | None = None) -> list[StepExchanges]:
    """Every step of a scripted scenario that has a call an API could carry, and its final answer, in every format.

    Each request carries the scenario's opening messages, so the formats stay side by side
    and short; the earlier calls of the run are not replayed in each API's history form.
    """
    scenario = load_scenario(name)
    choice = choice or scenario.tool_choice
    run = run_scenario(scenario, style)
    written = []
    for index, step in enumerate(run.calls):
        calls = calls_of_step(step)
        if calls:
            written.append(StepExchanges(index, calls, write_all(calls, scenario.tools, scenario.messages, choice)))
        elif step.parse.final and not step.parse.returned_as_text and step.parse.answer:
            answer = step.parse.answer
            written.append(
                StepExchanges(index, [], write_all([], scenario.tools, scenario.messages, choice, answer), answer)
            )
    return written
