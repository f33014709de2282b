"""What a gallery case costs, measured the way its failure costs: the schemas a `tool_choice` of none still sends,
a retry loop with and without its budget, a call cut by the token limit, or a broken call's extra tokens.

A case shows one of these, chosen from its scenario (engine.harness.loop's Scenario); the measures are
engine.teaching.gallery's and engine.teaching.cost's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..harness.loop import Scenario
from .cost import MalformedCost, malformed_cost_of
from .gallery import LengthCut, RetryLoopCost, SchemaCost, find_length_cut, measure_retry_loop, measure_schema_cost

CostKind = Literal["schemas", "retries", "length", "malformed"]


@dataclass(frozen=True)
class CaseCost:
    """The one cost a case shows: which kind, and its figures."""

    kind: CostKind
    figures: SchemaCost | RetryLoopCost | LengthCut | MalformedCost


def measure_case_cost(scenario: Scenario, style: str) -> CaseCost | None:
    """The cost this case's failure has, or None for a case whose failure costs nothing to measure."""
    if scenario.tool_choice == "none":
        return CaseCost("schemas", measure_schema_cost(scenario, style))
    if scenario.retry_budget is not None:
        return CaseCost("retries", measure_retry_loop(scenario, style))
    if any(t.finish == "length" for t in scenario.script(style)):
        return CaseCost("length", find_length_cut(scenario, style))
    if scenario.malformed_turn is not None:
        return CaseCost("malformed", malformed_cost_of(scenario.name, style))
    return None
