"""Where a model panel's figures come from: the loaded model, else a lesson pack's run, else nothing (and why).

Every page asks `choose_source` and draws what it returns. A pack's run is used only when it is
this very panel's: recorded under the panel's id, for the same kind of run, with the settings the
panel uses today (engine/teaching/panels.py), and, for a run of one prompt, for the prompt the
panel renders now (an episode's prompts are checked call by call when it is replayed,
engine/packs/replay.py `replay_episode`). Otherwise the panel shows nothing of the pack, and the
reason says what to do. Torch-free: the model is passed in, already loaded, or None.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..core.tokenizer import QwenTokenizer
from ..teaching.panels import Panel
from .pack import Pack, PackRun

PREPARE = "python -m engine prepare --model MODEL --out DIR"


@dataclass(frozen=True)
class PanelSource:
    """What a panel shows: which source, the model or the recorded run, its label, and why when nothing."""

    kind: Literal["live", "random", "pack", "none"]  # live: real weights; random: random weights
    panel: Panel
    engine: object | None = None  # the loaded model, for "live" and "random"
    run: PackRun | None = None  # the recorded run, for "pack"
    label: str = ""  # what made the figures: the model's label, or the pack's (model and date)
    # why nothing is shown: "" when a source was found; "no-source" (no model, no pack), "not-in-pack",
    # "other-settings" or "other-prompt" (the pack's run is not this panel's now)
    why: str = ""
    reason: str = ""  # the same, as a sentence that says what to do

    @property
    def computes(self) -> bool:
        """Whether the page computes the figures now, with a model."""
        return self.engine is not None


_MISSING = object()


def _show(value) -> str:
    return "(not recorded)" if value is _MISSING else (str(value).lower() if isinstance(value, bool) else str(value))


def describe_difference(recorded: dict, wanted: dict) -> str | None:
    """'max_new_tokens 80' vs '40' for each setting that differs; None when they are the same."""
    keys = [*wanted, *(k for k in recorded if k not in wanted)]
    differ = [k for k in keys if recorded.get(k, _MISSING) != wanted.get(k, _MISSING)]
    if not differ:
        return None
    then = ", ".join(f"{k} {_show(recorded.get(k, _MISSING))}" for k in differ)
    now = ", ".join(f"{k} {_show(wanted.get(k, _MISSING))}" for k in differ)
    return f"recorded with {then}; the panel now uses {now}"


def check_run(panel: Panel, run: PackRun, random_weights: bool, tok: QwenTokenizer | None = None) -> tuple[str, str]:
    """("", "") when the recorded run is this panel's as it is today, else (why, reason)."""
    if run.kind != panel.kind:
        return "other-settings", (
            f"The lesson pack's run {panel.id} is a {run.kind} run; the panel now makes a "
            f"{panel.kind} run, so it is not shown. The pack was recorded by an older version "
            f"of the site: record it again with `{PREPARE}`."
        )
    difference = describe_difference(run.settings, panel.recorded_settings(random_weights))
    if difference is not None:
        return "other-settings", (
            f"The lesson pack's run for this panel was {difference}, so its figures are not "
            f"this panel's and are not shown: record the pack again with `{PREPARE}`."
        )
    if panel.kind != "episode" and not run.recorded_for(panel.prompt_ids(tok)):
        return "other-prompt", other_prompt_reason(panel)
    return "", ""


def other_prompt_reason(panel: Panel) -> str:
    """Why a recorded run is not shown when the page's prompt has changed since (an episode says it as it replays)."""
    return (
        f"This lesson pack was recorded for a different prompt ({panel.shows}): its figures would not belong to "
        f"what this page asks now, so they are not shown. Make the pack again with `{PREPARE}`, or load a model "
        "to compute them live."
    )


def choose_source(panel: Panel, engine=None, pack: Pack | None = None, tok: QwenTokenizer | None = None) -> PanelSource:
    """The loaded model if there is one, else the pack's run if it is this panel's today, else nothing with the reason."""
    if engine is not None:
        info = engine.info
        return PanelSource("random" if info.random_weights else "live", panel, engine=engine, label=info.label())
    if pack is None:
        return PanelSource(
            "none",
            panel,
            why="no-source",
            reason="No model is loaded and no lesson pack is in use: load the model in the sidebar, "
            f"or bring a pack recorded with `{PREPARE}`.",
        )
    run = pack.run(panel.id)
    if run is None and not panel.packed:
        return PanelSource(
            "none",
            panel,
            why="not-in-pack",
            label=pack.label(),
            reason=f"Lesson packs do not record this panel ({panel.id}): load a model to run it.",
        )
    if run is None:
        return PanelSource(
            "none",
            panel,
            why="not-in-pack",
            label=pack.label(),
            reason=f"The lesson pack ({pack.label()}) holds no recording for this panel ({panel.id}): "
            "it was recorded by an older version of the site, or without this panel. "
            f"Record it again with `{PREPARE}`.",
        )
    why, reason = check_run(panel, run, pack.model.random_weights, tok)
    if why:
        return PanelSource("none", panel, why=why, reason=reason, label=pack.label())
    return PanelSource("pack", panel, run=run, label=pack.label())
