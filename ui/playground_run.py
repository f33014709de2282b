"""The playground's episode: run on a fresh copy of the visitor's workspace (scripted, live, or replayed from a
lesson pack), its progress in a status box, and what it did kept as a PlaygroundResult for the scenes below."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from engine.errors import EngineError
from engine.harness.grounding import unseen_values
from engine.harness.loop import ModelCall, Run, Scenario, iterate_episode
from engine.harness.playground import Departure, fresh_workspace, play_script, snapshot
from engine.teaching.panels import Panel
from ui.confinement import visitor_id
from ui.literal import plural
from ui.models import tokenizer
from ui.packs import replay_episode_here
from ui.stream import TokenStream


@dataclass
class PlaygroundResult:
    """What one episode did, kept in session state for the calls, the ledger and the files after it."""

    calls: list[ModelCall]  # each model call, its turn, checks and tool results
    unseen: list[list]  # each call's one-line values found nowhere in what the model had read (beyond the schema)
    files_before: dict[str, str]  # the workspace it started from
    files_after: dict[str, str]  # the workspace when it stopped
    left_out: int  # the files left out for a problem
    style: str  # the call format the turns were written in
    answer: str | None  # the final answer, if the run reached one
    stop: str  # why the run stopped
    model: str  # who wrote the turns: "scripted", a lesson pack, or the model's label
    tiny: bool  # written by a model with random weights (its turns are noise)
    departure: Departure | None  # where a script met a workspace it did not expect


def run_episode(
    scenario: Scenario,
    question: str,
    chosen_style: str,
    files: dict[str, str],
    left_out: int,
    panel: Panel,
    engine=None,
    replay=None,
    written_by: str = "scripted",
) -> PlaygroundResult | None:
    """Run the episode on a fresh copy of `files`, its progress in a status box; None when a pack's run could not
    be replayed. Scripted unless an `engine` writes the turns or a pack's `replay` plays them back."""
    messages = [*scenario.messages[:-1], {"role": "user", "content": question}]
    run, departures = Run(chosen_style, "per-block"), []
    with (
        st.status("Running the episode…", expanded=True) as status,
        fresh_workspace(files, visitor=visitor_id()) as workspace,
    ):
        streams = [TokenStream(is_special=tokenizer().is_special)]
        if engine is None and replay is None:
            episode = play_script(scenario, chosen_style, workspace, run, panel.max_turns, departures)
        elif replay is None:
            from engine.model.live import LiveModel

            # each turn streams into the status box as the model writes it
            model = LiveModel(
                engine, panel.generation_for(engine.info.random_weights), on_step=lambda token: streams[-1].add(token)
            )
            episode = iterate_episode(
                model,
                messages,
                scenario.tools,
                style=chosen_style,
                workspace=workspace,
                max_turns=panel.max_turns,
                run=run,
            )
        try:
            if replay is not None:
                run = replay_episode_here(replay, panel, messages, scenario.tools, workspace)
            else:
                for call in episode:
                    streams[-1].clear()
                    status.write(
                        f"Call {len(run.calls)}: {call.cost.input_tokens:,} tokens in, {call.cost.output_tokens:,} out"
                    )
                    streams.append(TokenStream(is_special=tokenizer().is_special))
        except EngineError as error:
            run.stop_reason = f"the model failed: {error}"
        files_after = snapshot(workspace)
        # (the loop picture under this box plays the run: the box closes to one line)
        status.update(
            label=f"Done: {plural(len(run.calls), 'call')}, played in the loop below" if run else "Not replayed",
            state="complete",
            expanded=run is None,
        )
    if run is None:
        return None
    return PlaygroundResult(
        calls=run.calls,
        unseen=[unseen_values(call, run.messages) for call in run.calls],
        files_before=dict(files),
        files_after=files_after,
        left_out=left_out,
        style=chosen_style,
        answer=run.answer,
        stop=run.stop_reason,
        model=written_by,
        tiny=engine is not None and engine.info.random_weights,
        departure=departures[0] if departures else None,
    )
