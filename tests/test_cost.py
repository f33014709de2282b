"""The malformed call's cost, measured from two runs, equals C_bad + (a_bad + e) * n_later."""

from __future__ import annotations

import pytest

from engine.harness.ledger import CallCost, Ledger
from engine.harness.loop import list_scenarios, load_scenario
from engine.teaching.cost import measure_malformed_cost

MALFORMED = [
    (n, s) for n in list_scenarios() for s in load_scenario(n).styles if load_scenario(n).malformed_turn is not None
]


@pytest.mark.parametrize("name, style", MALFORMED)
def test_measured_equals_formula(name, style):
    cost = measure_malformed_cost(load_scenario(name), style)
    assert cost.measured_in == cost.formula_in
    assert cost.agrees and cost.formula_text.endswith(f"= {cost.measured_in}")
    assert cost.measured_out == cost.a_bad_output > 0
    assert cost.n_later == cost.with_bad["calls"] - cost.bad_call


def test_seed_001_run_figures():
    # the shape of tool-calling-explainer's run: turn 2 is broken and 5 calls come after it
    cost = measure_malformed_cost(load_scenario("missing-brace"), "native")
    assert (cost.bad_call, cost.n_later) == (2, 5)
    assert (cost.c_bad, cost.a_bad, cost.e) == (579, 25, 21)
    assert cost.formula_text == "579 + (25 + 21) × 5 = 809"
    assert cost.with_bad["input_tokens"] - cost.without_bad["input_tokens"] == 809


def test_a_bad_block_in_a_good_turn_costs_no_extra_call():
    cost = measure_malformed_cost(load_scenario("mixed-turn"), "native")
    assert cost.c_bad == 0 and cost.with_bad["calls"] == cost.without_bad["calls"]
    assert cost.formula_text == f"0 + ({cost.a_bad} + {cost.e}) × 2 = {cost.measured_in}"


def test_scenario_without_malformed_turn_is_refused():
    from engine.errors import BadInput

    with pytest.raises(BadInput, match="no malformed turn"):
        measure_malformed_cost(load_scenario("strawberry"))


def test_ledger_totals():
    ledger = Ledger()
    ledger.record(CallCost(100, 10, [{"name": "a", "arguments": {}}], []))
    ledger.record(CallCost(130, 5, [], ["error: x"]))
    assert ledger.totals() == {
        "calls": 2,
        "input_tokens": 230,
        "output_tokens": 15,
        "tokens": 245,
        "tool_calls": 1,
        "errors": 1,
    }
    assert ledger.as_json()["calls"][1] == {
        "input_tokens": 130,
        "output_tokens": 5,
        "tool_calls": [],
        "errors": ["error: x"],
    }
