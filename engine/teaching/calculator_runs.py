"""The three runs the token-cost calculator draws for one set of tools and settings: the run in the chosen style,
the same run in the other lesson style, and the run without its malformed calls (engine.teaching.calculator's
plan_run each), or why no run can be drawn."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..core.call_formats import other_lesson_format
from .calculator import RunCost, plan_run


@dataclass(frozen=True)
class CalculatorRuns:
    """What the calculator's figures compare."""

    run: RunCost  # the run as set: `calls` good calls, `bad` malformed ones, in the chosen style
    other: RunCost  # the same run in the other lesson style (native <-> ReAct)
    clean: RunCost  # the run without its malformed calls: what they cost is the difference


def why_no_run(tools: list[dict] | None, calls: int, bad: int) -> str | None:
    """Why no run can be drawn for these tools and settings (`tools` None: they do not read), or None."""
    if tools is None:
        return "Fix the tool definitions to see the costs; your text is kept as it is."
    if not tools and (calls or bad):
        return "Add at least one tool to make calls."
    return None


def plan_runs(tools: list[dict], style: str, calls: int, bad: int, place: Literal["start", "end"]) -> CalculatorRuns:
    """The run as set, the same run in the other style, and the run without its malformed calls."""
    return CalculatorRuns(
        run=plan_run(tools, style, calls=calls, malformed=bad, place=place),
        other=plan_run(tools, other_lesson_format(style), calls=calls, malformed=bad, place=place),
        clean=plan_run(tools, style, calls=calls, malformed=0),
    )
