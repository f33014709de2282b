"""A pack's recorded episode played again through the harness, each turn given only on the prompt it was written for."""

from __future__ import annotations

from ..errors import EngineError
from ..harness.loop import Run, ScriptedModel, Turn, iterate_episode
from ..sandbox.workspace import Workspace
from .pack import PackRun, prompt_hash


def replay_episode(
    run: PackRun,
    messages: list[dict],
    tools: list[dict],
    style: str,
    workspace: Workspace | None = None,
    max_turns: int = 8,
) -> tuple[Run, bool]:
    """An "episode" run played again through the harness: the recorded turns, in a fresh run.

    The harness is deterministic given the turns, so the tool results, costs and verdicts come
    out as they did live. The second value says whether every call's prompt hashed as it did
    when the model wrote the turn (False: the question, files or tools have changed since).
    """
    turns = run.turns()
    recorded = [t["prompt_sha256"] for t in run.data["turns"]]
    played = Run(style, "per-block")
    model = VerifiedTurns(turns, recorded)
    for _call in iterate_episode(
        model, messages, tools, style=style, workspace=workspace, max_turns=max_turns, run=played
    ):
        pass
    return played, not model.departed and model.position == len(recorded)


class VerifiedTurns(ScriptedModel):
    """A pack's recorded turns, each given only when the prompt in front of it hashes as it did when recorded.

    The check comes before the turn is handed over, so none of its calls (a run_tests among them)
    runs on a prompt the model never saw; at the first difference the episode stops there."""

    def __init__(self, turns: list[Turn], recorded: list[str]):
        super().__init__(turns)
        self.recorded = recorded
        self.departed = False

    def next_turn(self, request) -> Turn:
        from ..core.prompt import render

        if self.position < len(self.recorded) and prompt_hash(render(request).ids) != self.recorded[self.position]:
            self.departed = True
            raise EngineError("the prompt differs from the one the pack recorded")
        return super().next_turn(request)
