"""Runs as the step view takes them: the engine's steps (a generation, a run of the harness, a grammar walk)
turned into ViewSteps. Figures are the engine's; only their wording happens here."""

from __future__ import annotations

from ui.draw import show_token
from ui.views.step_view import Bar, Bars, StepRun, ViewStep


def percent(p: float) -> str:
    """A probability as the step view words it: 12.3%, or 4.56e-06 below a tenth of a percent."""
    return f"{p:.1%}" if p >= 0.001 else f"{p:.2e}"


def token_run(rows, is_special, start: int = 1, marks=(), caption: str = "") -> StepRun:
    """Lesson 3: rows of (id, token, p, top) from a generation, a trace or a pack (p None: no model made them)."""
    steps = []
    for token_id, token, p, top in rows:
        shown = show_token(token)
        facts, bars = [], []
        if p is not None:
            facts.append(("Its probability", percent(p)))
            bars.append(Bars(f"Top {len(top)} candidates (red: the one chosen)",
                             [Bar(show_token(a.token) or "(empty)", a.p, percent(a.p) + (" (chosen)" if a.id == token_id else ""),
                                  a.id == token_id) for a in top]))
        steps.append(ViewStep(chip=shown, sub=str(token_id), kind="sp" if is_special(token_id) else "", title=shown or "(empty)",
                              caption=f"id {token_id}" + (f" · {caption}" if caption and p is not None else ""),
                              facts=facts, bars=bars))
    return StepRun("Token", steps, start=start, marks=list(marks))
