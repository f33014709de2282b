"""One tool call, written in every wire format: Qwen3's text, ReAct's text, and public APIs' JSON; one file per format behind a registry.

A call (a name, its arguments, and the result that goes back) becomes each format's request,
the model's reply and the returned result. Each format is one module of this package that
defines `FORMAT` (a `base.WireFormat`): its writer, its `tool_choice` words and its answers to
the questions of `base.ASPECTS`. Every such module is imported and registered when the package
loads (as vLLM's `ToolParserManager` keeps a dict of name → parser, one parser per file), so a
new format is one new file here and its test; the tables a page draws are built from the
registry. `FORMATS`, `TITLES`, `TOOL_CHOICES` and `DIFFERENCES` are read from it when asked.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.plugins import register_package_plugins
from ...core.styles import get_style
from ...errors import BadInput
from ...harness.loop import load_scenario, run_scenario
from .base import ASPECTS, NAME, WireCall, WireExchange, WireFormat, make_id

REGISTRY: dict[str, WireFormat] = {}  # key -> format; listed in each format's order


def register_format(fmt: WireFormat) -> WireFormat:
    """Add a format to the registry, after checking it answers every question of ASPECTS."""
    if not fmt.key or not fmt.title:
        raise BadInput(f"{type(fmt).__name__} needs a key and a title")
    missing = [a for a in ASPECTS if a not in fmt.differences]
    if missing:
        raise BadInput(f"format {fmt.key!r} says nothing about: {', '.join(missing)} (fill its `differences`)")
    REGISTRY[fmt.key] = fmt
    return fmt


def load_formats() -> None:
    """Import every module of this package and register the FORMAT each one defines."""
    register_package_plugins(__name__, __path__, "FORMAT", WireFormat, register_format)


def list_formats() -> list[WireFormat]:
    """The registered formats, in order."""
    return sorted(REGISTRY.values(), key=lambda f: (f.order, f.key))


def format_names() -> tuple[str, ...]:
    return tuple(f.key for f in list_formats())


def get_format(key: str) -> WireFormat:
    """The format called `key`, or an error that lists the formats there are."""
    if key not in REGISTRY:
        raise BadInput(f"unknown format {key!r}; the formats are {', '.join(format_names())}")
    return REGISTRY[key]


def text_format_for(style: str) -> WireFormat | None:
    """The text format whose prompt is this style's (qwen3 for native, react for ReAct); None if there is none."""
    return next((f for f in list_formats() if f.style == style), None)


def tool_choice_formats() -> list[WireFormat]:
    """The formats that have a tool_choice field."""
    return [f for f in list_formats() if f.tool_choice is not None]


def call_id(fmt: str, index: int) -> str:
    """The id of call `index` as the format writes it (Responses shares OpenAI's call_ form)."""
    return get_format(fmt).call_id(index)


def tool_choice_for(fmt: str, choice: str = "auto") -> object:
    """Our tool_choice (auto, required, none, or a tool's name) in an API's words."""
    if fmt not in REGISTRY or REGISTRY[fmt].tool_choice is None:
        names = ", ".join(f.key for f in tool_choice_formats())
        raise BadInput(f"{fmt} has no tool_choice field; the APIs with one are {names}")
    return REGISTRY[fmt].tool_choice_for(choice)


def differences() -> list[dict]:
    """What differs: one row per question of ASPECTS, one column per format."""
    return [{"aspect": aspect, **{f.key: f.differences[aspect] for f in list_formats()}} for aspect in ASPECTS]


def write_call(
    fmt: str, calls: list[WireCall], tools: list[dict], messages: list[dict], choice: str = "auto", answer: str | None = None
) -> WireExchange:
    """One format's exchange for these calls (or, with no calls, for a final `answer`)."""
    return get_format(fmt).write(calls, tools, messages, choice, answer)


def write_all(
    calls: list[WireCall], tools: list[dict], messages: list[dict], choice: str = "auto", answer: str | None = None
) -> list[WireExchange]:
    """The same calls (or the same final answer) in every format, in order."""
    return [f.write(calls, tools, messages, choice, answer) for f in list_formats()]


def __getattr__(name: str):
    # the old tables, read from the registry whenever they are asked for
    tables = {
        "FORMATS": format_names,
        "TITLES": lambda: {f.key: f.title for f in list_formats()},
        "TOOL_CHOICES": lambda: {f.key: f.tool_choice for f in tool_choice_formats()},
        "DIFFERENCES": differences,
    }
    if name in tables:
        return tables[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- calls from a scripted run -------------------------------------------------------------------
def calls_of_step(step) -> list[WireCall]:
    """The calls of one harness step that an API could carry: each block that wrote a name and arguments.

    A block that is not valid JSON has no name or arguments to write, so no API form; a call
    that failed a later check (an unknown name, a wrong type) still has one, and its error goes
    back as its result.
    """
    style = get_style(step.parse.style)
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
            written.append(StepExchanges(index, [], write_all([], scenario.tools, scenario.messages, choice, answer), answer))
    return written


load_formats()

__all__ = [
    "ASPECTS", "NAME", "REGISTRY", "StepExchanges", "WireCall", "WireExchange", "WireFormat", "call_id", "calls_of_step",
    "differences", "format_names", "get_format", "list_formats", "make_id", "register_format", "scenario_exchanges",
    "text_format_for", "tool_choice_for", "tool_choice_formats", "write_all", "write_call",
]
