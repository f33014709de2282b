"""A finished model's held-out figures set beside the shipped model's: does it measure at least as well on every one?

A run's copy replaces assets/builtin-model only when no figure, in either style, falls below the shipped
model's (docs/shipped-model.md). The figures are shares ("8 of 20"); where two models were asked different
numbers of prompts (the turns that called, for `well_formed`), their rates are compared, not their counts.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

# every figure heldout.Figures keeps as style -> [right, of]
FIGURES = (
    "count_exact",
    "tool_exact",
    "well_formed",
    "no_call",
    "first_piece",
    "count_training_phrasings",
    "no_tools",
    "lesson_calls",
)


@dataclass(frozen=True)
class Row:
    """One figure in one style: the new model's [right, of] and the shipped model's."""

    figure: str
    style: str
    new: tuple[int, int]
    shipped: tuple[int, int]

    @property
    def below(self) -> bool:
        # a rate times the other's count, so that 24 of 39 and 25 of 37 compare without rounding
        (right, of), (right_was, of_was) = self.new, self.shipped
        return right * of_was < right_was * of


@dataclass
class Against:
    """The figures side by side and the verdict: ships when none is below the shipped model's."""

    rows: list[Row] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # figure/style the shipped model has and the new one lacks

    @property
    def ships(self) -> bool:
        return not self.missing and not any(row.below for row in self.rows)

    def as_json(self) -> dict:
        return {
            "ships": self.ships,
            "below": [
                f"{r.figure} {r.style}: {r.new[0]} of {r.new[1]} < {r.shipped[0]} of {r.shipped[1]}"
                for r in self.rows
                if r.below
            ],
            "missing": self.missing,
            "rows": [asdict(row) for row in self.rows],
        }


def against(new: dict, shipped: dict) -> Against:
    """Every figure both measured, style by style; one the shipped model has and the new one lacks counts against it."""
    found = Against()
    for figure in FIGURES:
        for style, was in sorted(shipped.get(figure, {}).items()):
            now = new.get(figure, {}).get(style)
            if now is None:
                found.missing.append(f"{figure} {style}")
                continue
            found.rows.append(Row(figure, style, (int(now[0]), int(now[1])), (int(was[0]), int(was[1]))))
    return found


def against_folder(new: dict, shipped_folder: Path) -> Against | None:
    """`against` the figures in `shipped_folder`'s heldout.json; None where it has none (nothing to compare)."""
    path = shipped_folder / "heldout.json"
    if not path.is_file():
        return None
    return against(new, json.loads(path.read_text(encoding="utf-8")))
