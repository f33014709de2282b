"""A workspace a learner edits by hand: check every file first, then write the good ones into a fresh folder.

The harness playground lets a learner type file names and contents. Those are untrusted in
the same way a model's calls are, so each file is checked with the sandbox's own rules
(`Workspace.resolve`: no absolute path, no `~`, no `..` that climbs out) and the same size
limits the tools use (`Limits`) before anything is written. A bad file gets one short
message and is left out; the others still make a workspace. Every run gets a new temporary
folder, removed afterwards, so one run never sees another's writes.

A scripted episode replays turns written for the scenario's own files. On a workspace the
learner edited, a tool can answer differently from what the script was written against
(remove test_calc.py and `run_tests` finds no test file). `play_script` compares each real
result with the result the same call gives on the scenario's own files, and stops the run at
the first call where they differ, saying what the script assumed and what the workspace gave,
instead of letting the fixed turns carry on as if nothing had changed.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..sandbox.workspace import Limits, ToolRefusal, Workspace
from .loop import ModelCall, Run, Scenario, ScriptedModel, iterate_episode, make_workspace

STOP_DEPARTED = "the script stopped: a tool answered differently from what its turns were written for"


@dataclass(frozen=True)
class FileProblem:
    index: int  # position of the file in what the learner typed, from 0
    path: str
    message: str  # one sentence: what is wrong and what to do


def _plain(message: str) -> str:
    return message.removeprefix("error: ")


def check_files(
    entries: list[tuple[str, str]], limits: Limits | None = None
) -> tuple[dict[str, str], list[FileProblem]]:
    """The usable files (path -> text) and one problem for each file that is left out."""
    limits = limits or Limits()
    good: dict[str, str] = {}
    problems: list[FileProblem] = []
    total = 0
    with tempfile.TemporaryDirectory(prefix="check-") as scratch:
        sandbox = Workspace(scratch, limits)
        for index, (path, text) in enumerate(entries):
            path = path.strip()

            def refuse(message: str, index=index, path=path) -> None:
                problems.append(FileProblem(index, path, message))

            if not path:
                refuse("give the file a name, such as notes.txt")
                continue
            if not path.isprintable():
                refuse(f"{path!r} holds a control or invisible character; use letters, digits, '.', '_', '-' and '/'")
                continue
            try:
                target = sandbox.resolve(path, must_exist=False)
            except ToolRefusal as refusal:
                refuse(_plain(str(refusal)))
                continue
            if target == sandbox.root or path.endswith(("/", "\\")):
                refuse(f"{path!r} names a folder; give a file name, such as {path.rstrip('/')}/notes.txt")
                continue
            relative = sandbox.relative(target)
            if relative in good:
                refuse(f"{relative} appears twice; each file needs its own name")
                continue
            size = len(text.encode("utf-8"))
            if size > limits.write_bytes:
                refuse(f"{relative} is {size:,} bytes; a workspace file may hold up to {limits.write_bytes:,} bytes")
                continue
            if total + size > limits.workspace_bytes:
                refuse(f"the workspace would grow past {limits.workspace_bytes:,} bytes; {relative} is left out")
                continue
            # a file and a folder of the same name cannot both exist
            clash = next((p for p in good if p.startswith(relative + "/") or relative.startswith(p + "/")), None)
            if clash:
                refuse(f"{relative} and {clash} cannot both exist: one would be a folder of the other")
                continue
            good[relative] = text
            total += size
    return good, problems


@contextmanager
def fresh_workspace(
    files: dict[str, str], limits: Limits | None = None, visitor: str | None = None
) -> Iterator[Workspace]:
    """A new temporary workspace holding `files` (already checked), removed when the block ends.

    `visitor` names who runs it (a page session's id), so that their run_tests get a fair share of the slots."""
    with tempfile.TemporaryDirectory(prefix="playground-") as folder:
        workspace = make_workspace(files, folder)
        workspace.limits = limits or workspace.limits
        workspace.visitor = visitor
        yield workspace


def snapshot(workspace: Workspace, max_bytes: int = 16 * 1024) -> dict[str, str]:
    """Every regular file in the workspace (relative path -> text), to show what a run left behind.

    Caches (__pycache__) are skipped; a file that is not UTF-8 text, or is larger than
    `max_bytes`, is shown as a one-line note instead of its content. The walk stops at the
    workspace's cap on entries (`Limits.workspace_entries`)."""
    found: dict[str, str] = {}
    paths = []
    for here, dirs, names in os.walk(workspace.root, followlinks=False):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        paths += [Path(here) / name for name in names]
        if len(paths) > workspace.limits.workspace_entries:
            break
    for path in sorted(paths)[: workspace.limits.workspace_entries]:
        if path.is_symlink() or not path.is_file():
            continue
        relative = workspace.relative(path)
        size = path.stat().st_size
        if size > max_bytes:
            found[relative] = f"({size:,} bytes, not shown)"
            continue
        try:
            found[relative] = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            found[relative] = "(not a UTF-8 text file)"
    return found


@dataclass(frozen=True)
class Shown:
    """What the page draws of a run's files: at most so many files and bytes, and a line on the rest."""

    files: dict[str, str]
    note: str | None  # one line saying what was left out, None when nothing was


def cap_for_display(files: dict[str, str], max_files: int = 30, max_bytes: int = 64 * 1024) -> Shown:
    """The first files (in path order) that fit in `max_files` and `max_bytes` of text; a note on the others."""
    shown: dict[str, str] = {}
    used = 0
    for path in sorted(files):
        text = files[path]
        size = len(text.encode("utf-8"))
        if len(shown) >= max_files or used + size > max_bytes:
            break
        shown[path] = text
        used += size
    left = len(files) - len(shown)
    if not left:
        return Shown(shown, None)
    left_bytes = sum(len(files[p].encode("utf-8")) for p in files if p not in shown)
    return Shown(
        shown,
        f"{left:,} more file(s) ({left_bytes:,} bytes) not shown: the page shows up to "
        f"{max_files} files and {max_bytes:,} bytes of text",
    )


@dataclass
class Departure:
    """Where a scripted run stopped fitting the learner's workspace."""

    call: int  # the model call (1-based) whose tool results differ
    tool: str | None  # the tool that answered differently (None: an error for a malformed block)
    expected: str  # what that tool returned on the scenario's own files, which the script was written for
    actual: str  # what it returned on the learner's workspace


def expected_results(scenario: Scenario, style: str, max_turns: int) -> list[list[str]]:
    """The results each scripted call gets on the scenario's own files: what the script's turns assume."""
    with tempfile.TemporaryDirectory(prefix="expected-") as folder:
        workspace = make_workspace(scenario.files, folder)
        model = ScriptedModel(scenario.script(style))
        run = Run(style, "per-block")
        for _ in iterate_episode(
            model, scenario.messages, scenario.tools, style=style, workspace=workspace, max_turns=max_turns, run=run
        ):
            pass
    return [[r.text for r in call.results] for call in run.calls]


def play_script(
    scenario: Scenario, style: str, workspace: Workspace, run: Run, max_turns: int, departures: list[Departure]
) -> Iterator[ModelCall]:
    """Replay the scenario's scripted turns on `workspace`, yielding each call; stop where a result departs from the script.

    The first departure is appended to `departures` and the run's stop reason says so.
    """
    expected = expected_results(scenario, style, max_turns)
    model = ScriptedModel(scenario.script(style))
    for number, call in enumerate(
        iterate_episode(
            model, scenario.messages, scenario.tools, style=style, workspace=workspace, max_turns=max_turns, run=run
        ),
        start=1,
    ):
        yield call
        assumed = expected[number - 1] if number <= len(expected) else []
        for position, result in enumerate(call.results):
            wanted = assumed[position] if position < len(assumed) else ""
            if result.text != wanted:
                departures.append(Departure(number, result.name, wanted, result.text))
                run.stop_reason = STOP_DEPARTED
                run.answer = None
                return
