"""Record a live run to a JSON trace (`python -m engine generate --record PATH`) and read it back.

A trace is one run of the command line, kept to be read or compared; the pages show recorded
runs from lesson packs (engine/packs/pack.py), which hold every panel's run at once. A trace
holds what DESIGN.md's "honest figures" rule asks of a recording: which model (id, commit
hash when known, dtype, device), the settings, the prompt and the request it came from, the
date, and every step with its top-k. `load_trace(path).steps` are the same DecodeStep dataclasses
the live loop yields, and `Trace.source` says what recorded them and when.
"""

from __future__ import annotations

import json
import os
import platform
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

from ..core.generation import DecodeStep, Generation, GenerationSettings, ModelInfo
from ..core.json_input import file_kind
from ..core.out_paths import NAME_BYTES, PATH_BYTES, check_flag_like
from ..errors import BadInput

TRACE_FORMAT = "tool-calling-explainer trace"
TRACE_VERSION = 1


@dataclass
class Trace:
    """A recorded run: the same steps a live run yields, plus where they came from."""

    model: ModelInfo
    settings: GenerationSettings
    recorded_at: str  # ISO 8601, UTC
    text: str
    finish: str
    steps: list[DecodeStep]
    prompt_text: str | None
    prompt_tokens: int
    messages: list[dict] = field(default_factory=list)
    tools: list[dict] = field(default_factory=list)
    style: str = "native"
    tool_choice: str | None = None
    software: dict = field(default_factory=dict)  # versions of torch and transformers that ran it
    path: str | None = None  # the file it was read from

    @property
    def source(self) -> str:
        """What recorded it and when: 'recorded with Qwen/Qwen3-1.7B (bf16, cuda) on 2026-05-09 14:03 UTC'."""
        when = self.recorded_at
        try:
            when = datetime.fromisoformat(self.recorded_at).strftime("%Y-%m-%d %H:%M UTC")
        except ValueError:
            pass
        revision = (
            f", revision {self.model.revision[:12]}" if self.model.revision and not self.model.random_weights else ""
        )
        return f"recorded with {self.model.label()}{revision} on {when}"

    def replay(self) -> Iterator[DecodeStep]:
        """The steps one by one, as `stream_steps` yields them live."""
        yield from self.steps

    def as_generation(self) -> Generation:
        """The trace as the Generation a live run returns, for code that draws a whole turn."""
        return Generation(
            text=self.text,
            finish=self.finish,
            steps=list(self.steps),
            prompt_tokens=self.prompt_tokens,
            model=self.model,
            settings=self.settings,
            prompt_text=self.prompt_text,
            extra={"source": self.source},
        )


def trace_json(generation: Generation, request=None, tool_choice: str | None = None) -> dict:
    """The JSON object a trace file holds."""
    return {
        "format": TRACE_FORMAT,
        "version": TRACE_VERSION,
        "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "model": generation.model.as_json(),
        "settings": generation.settings.as_json(),
        "software": {
            "torch": version("torch"),
            "transformers": version("transformers"),
            "python": platform.python_version(),
        },
        "request": None
        if request is None
        else {
            "messages": request.messages,
            "tools": request.tools,
            "style": request.style,
            "enable_thinking": request.enable_thinking,
            "tool_choice": tool_choice,
        },
        "prompt": {"text": generation.prompt_text, "tokens": generation.prompt_tokens},
        "text": generation.text,
        "finish": generation.finish,
        "seconds": round(generation.seconds, 4),
        "steps": [step.as_json() for step in generation.steps],
    }


def check_record_path(path) -> Path:
    """`path` as a place to write a trace: a new or regular file in a folder that exists and is writable.

    BadInput saying what to change otherwise. Nothing is created: a trace is written only where
    its folder already is (a mistyped path never leaves new folders behind)."""
    raw = os.fspath(path)
    if not raw or "\x00" in raw:
        raise BadInput("--record needs the path of a file to write, such as trace.json")
    size = len(os.fsencode(raw))
    if size > PATH_BYTES:
        raise BadInput(f"--record's path is {size:,} bytes; a path may be up to {PATH_BYTES:,}: give a shorter one")
    path = Path(raw)
    if not path.name or raw.endswith(os.sep):
        raise BadInput(f"--record {raw} names a folder; give a file in it, such as {raw.rstrip(os.sep)}/trace.json")
    if len(os.fsencode(path.name)) > NAME_BYTES:
        raise BadInput(
            f"--record's file name is {len(os.fsencode(path.name)):,} bytes; a name may be up to {NAME_BYTES}"
        )
    check_flag_like(path, "--record")
    folder = path.parent
    try:
        if not folder.is_dir():
            raise BadInput(f"--record {raw}: there is no folder {folder}; create it first (--record never creates one)")
    except OSError as error:
        raise BadInput(f"--record {raw}: cannot look at the folder {folder}: {error.strerror or error}") from error
    if not os.access(folder, os.W_OK | os.X_OK):
        raise BadInput(f"--record {raw}: the folder {folder} is not writable by you; record into another folder")
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return path
    except OSError as error:
        raise BadInput(f"--record {raw}: cannot look at it: {error.strerror or error}") from error
    if stat.S_ISLNK(mode):
        raise BadInput(f"--record {raw} is a symbolic link; give the path of the file itself")
    if not stat.S_ISREG(mode):
        raise BadInput(
            f"--record {raw} is {file_kind(mode)}; give the path of a new or regular file, such as trace.json"
        )
    return path


def record_trace(path, generation: Generation, request=None, tool_choice: str | None = None) -> Path:
    """Write `generation` (and the request it answered) to `path` as a JSON trace; returns the path.

    `path` is checked first (check_record_path), and opened without following a link or blocking on a FIFO."""
    path = check_record_path(path)
    body = json.dumps(trace_json(generation, request, tool_choice), ensure_ascii=False, indent=1).encode("utf-8")
    flags = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        with os.fdopen(os.open(path, flags, 0o644), "wb") as handle:
            mode = os.fstat(handle.fileno()).st_mode
            if not stat.S_ISREG(mode):
                raise BadInput(f"--record {path} is {file_kind(mode)}; give the path of a new or regular file")
            handle.truncate(0)
            handle.write(body)
    except OSError as error:
        raise BadInput(f"cannot write the trace {path}: {error.strerror or error}") from error
    return path


def load_trace(path) -> Trace:
    """Read a trace written by `record_trace`; a file that is not one gets a message saying so."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise BadInput(f"cannot read the trace {path}: {error.strerror or error}") from error
    except json.JSONDecodeError as error:
        raise BadInput(f"the trace {path} is not valid JSON: {error.msg} at line {error.lineno}") from error
    if not isinstance(data, dict) or data.get("format") != TRACE_FORMAT:
        raise BadInput(f"{path} is not a trace: record one with `python -m engine generate ... --record {path.name}`")
    if data.get("version") != TRACE_VERSION:
        raise BadInput(f"the trace {path} has version {data.get('version')}; this engine reads version {TRACE_VERSION}")
    try:
        request = data.get("request") or {}
        prompt = data.get("prompt") or {}
        return Trace(
            model=ModelInfo(**data["model"]),
            settings=GenerationSettings.from_json(data["settings"]),
            recorded_at=str(data["recorded_at"]),
            text=str(data["text"]),
            finish=str(data["finish"]),
            steps=[DecodeStep.from_json(s) for s in data["steps"]],
            prompt_text=prompt.get("text"),
            prompt_tokens=int(prompt.get("tokens", 0)),
            messages=request.get("messages") or [],
            tools=request.get("tools") or [],
            style=request.get("style", "native"),
            tool_choice=request.get("tool_choice"),
            software=data.get("software") or {},
            path=str(path),
        )
    except (KeyError, TypeError, ValueError) as error:
        raise BadInput(f"the trace {path} is incomplete or damaged ({type(error).__name__}: {error})") from error
