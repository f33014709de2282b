"""What a model panel draws, as plain data whoever made it: the first token's distribution, the mask's effect at
each step of a reply, a reply decoded with and without its constraint.

The live model (engine/model/peek.py, engine/model/live.py), a model server (engine/model/remote.py) and a
lesson pack's recorded run (engine/packs/pack.py) all give these same types, beside core's `Generation`, so a
page draws one type whatever the source. Torch-free: a pack is read without loading torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.generation import Alternative, Generation, ModelInfo


@dataclass(frozen=True)
class FirstToken:
    """The model's distribution over the first token of its reply."""

    prompt_tokens: int
    p: dict[int, float]  # the probability of each watched id (plain softmax, temperature 1)
    top: list[Alternative]  # the most likely first tokens, most likely first
    model: ModelInfo
    watched: list[str] = field(default_factory=list)  # the watched ids as token text, same order


@dataclass(frozen=True)
class MaskRow:
    """One step of a reply under a grammar: how many tokens it allowed, and what that did to the model's choice."""

    number: int  # 1 for the reply's first token
    allowed: int | None  # how many real tokens the grammar allowed; None = nothing restricted at this step
    forbidden_mass: float | None = None  # the probability the model put on the forbidden tokens
    top_before: list[Alternative] = field(default_factory=list)  # the model's own top-k (raw softmax)
    top_after: list[Alternative] = field(default_factory=list)  # renormalised over the allowed tokens

    @classmethod
    def from_view(cls, number: int, view) -> MaskRow:
        """The row of constrain.masks.inspect_mask's view (made with logits) before token `number`."""
        return cls(number, view.allowed, view.forbidden_mass, list(view.top_before), list(view.top_after))

    def as_json(self) -> dict:
        """As a lesson pack stores it: an unrestricted step is its number and `allowed: null` alone."""
        if self.allowed is None:
            return {"number": self.number, "allowed": None}
        return {
            "number": self.number,
            "allowed": self.allowed,
            "forbidden_mass": self.forbidden_mass,
            "top_before": [_alternative_json(a) for a in self.top_before],
            "top_after": [_alternative_json(a) for a in self.top_after],
        }

    @classmethod
    def from_json(cls, data: dict) -> MaskRow:
        return cls(
            int(data["number"]),
            None if data.get("allowed") is None else int(data["allowed"]),
            data.get("forbidden_mass"),
            _alternatives_json(data.get("top_before") or []),
            _alternatives_json(data.get("top_after") or []),
        )


@dataclass
class SideBySide:
    """The same request, settings and seed, decoded with and without the constraint."""

    constrained: Generation
    unconstrained: Generation
    reason: str  # what the constraint does at the start of the turn (or why it cannot), in words
    first_difference: int | None  # the first step where the two chose differently; None = identical turns


def _alternatives_json(rows: list[dict]) -> list[Alternative]:
    return [Alternative(int(r["id"]), str(r["token"]), float(r["p"])) for r in rows]


def _alternative_json(alternative: Alternative) -> dict:
    return {"id": alternative.id, "token": alternative.token, "p": alternative.p}
