"""A workspace a learner edits by hand: check every file first, then write the good ones into a fresh folder.

The harness playground lets a learner type file names and contents. Those are untrusted in
the same way a model's calls are, so each file is checked with the sandbox's own rules
(`Workspace.resolve`: no absolute path, no `~`, no `..` that climbs out) and the same size
limits the tools use (`Limits`) before anything is written. A bad file gets one short
message and is left out; the others still make a workspace. Every run gets a new temporary
folder, removed afterwards, so one run never sees another's writes.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from .harness import make_workspace
from .workspace import Limits, ToolRefusal, Workspace


@dataclass(frozen=True)
class FileProblem:
    index: int  # position of the file in what the learner typed, from 0
    path: str
    message: str  # one sentence: what is wrong and what to do


def _plain(message: str) -> str:
    return message.removeprefix("error: ")


def check_files(entries: list[tuple[str, str]], limits: Limits | None = None) -> tuple[dict[str, str], list[FileProblem]]:
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
def fresh_workspace(files: dict[str, str], limits: Limits | None = None) -> Iterator[Workspace]:
    """A new temporary workspace holding `files` (already checked), removed when the block ends."""
    with tempfile.TemporaryDirectory(prefix="playground-") as folder:
        workspace = make_workspace(files, folder)
        workspace.limits = limits or workspace.limits
        yield workspace


def snapshot(workspace: Workspace, max_bytes: int = 16 * 1024) -> dict[str, str]:
    """Every regular file in the workspace (relative path -> text), to show what a run left behind.

    Caches (__pycache__) are skipped; a file that is not UTF-8 text, or is larger than
    `max_bytes`, is shown as a one-line note instead of its content."""
    found: dict[str, str] = {}
    for path in sorted(workspace.root.rglob("*")):
        if "__pycache__" in path.parts or path.is_symlink() or not path.is_file():
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
