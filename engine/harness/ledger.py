"""The token ledger of a run: what each model call was sent and what it wrote.

A leaf module: the harness records into it, the cost lesson and the calculator read it.
Every model call re-sends the whole context, so a run's input cost is the sum of its prompts.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class CallCost:
    """One model call: what it was sent and what it wrote."""

    input_tokens: int  # the whole prompt, re-sent at every call
    output_tokens: int  # the turn's tokens, with <|im_end|> when it stopped there
    tool_calls: list[dict] = field(default_factory=list)  # {"name", "arguments"} of each call run
    errors: list[str] = field(default_factory=list)  # the error sent back for each malformed block


@dataclass
class Ledger:
    calls: list[CallCost] = field(default_factory=list)

    def record(self, cost: CallCost) -> None:
        self.calls.append(cost)

    @property
    def input_tokens(self) -> int:
        return sum(c.input_tokens for c in self.calls)

    @property
    def output_tokens(self) -> int:
        return sum(c.output_tokens for c in self.calls)

    def token_totals(self) -> dict:
        """Calls and tokens over the run (any call record with input_tokens and output_tokens)."""
        return {
            "calls": len(self.calls),
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "tokens": self.input_tokens + self.output_tokens,
        }

    def totals(self) -> dict:
        return {
            **self.token_totals(),
            "tool_calls": sum(len(c.tool_calls) for c in self.calls),
            "errors": sum(len(c.errors) for c in self.calls),
        }

    def as_json(self) -> dict:
        return {
            "calls": [
                {
                    "input_tokens": c.input_tokens,
                    "output_tokens": c.output_tokens,
                    "tool_calls": c.tool_calls,
                    "errors": c.errors,
                }
                for c in self.calls
            ],
            "totals": self.totals(),
        }
