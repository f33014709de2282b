"""Lesson packs: every run a model panel can show, recorded once with a real model, replayed anywhere.

A pack is a folder (or a .zip of one) holding `manifest.json` and one JSON file per run in
`runs/`. The manifest says which model made the pack (name, revision, dtype, device,
parameter count), when, with which version of this project, and lists every run: its panel,
its settings, the sha256 of the prompt's token ids and the sha256 of the run's file. A run's id
is its panel's (engine/teaching/panels.py), and engine/packs/panel_source.py shows it only
while its settings are the panel's and the prompt the page computes now hashes to the recorded
one, so a pack never passes off figures for settings or a prompt that have since changed.

This module holds what a pack is once read (`Pack`, `PackRun`, `PackModel`) and its limits; the
rooms around it: `prepare.py` writes packs, `reader.py` reads a folder or a .zip under the
limits, `checks.py` checks what the files say, `replay.py` plays a recorded episode again. None
imports torch. A run reads into the types the live model gives (`PackRun.generation()` a core
`Generation`, `mask_rows()` engine/model/results.py's `MaskRow`s, and so on), so a page draws one
type whatever made the figures.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import datetime

from ..core.generation import SHORT_DTYPE, Alternative, DecodeStep, Generation, GenerationSettings, ModelInfo
from ..core.tokenizer import TOOL_CALL
from ..errors import BadInput
from ..harness.loop import Turn
from ..model.results import FirstToken, MaskRow, SideBySide
from ..settings import ROOT
from ..teaching.panels import PanelKind

PACK_FORMAT = "tool-calling-explainer lesson pack"
PACK_VERSION = 1
MANIFEST = "manifest.json"
RUNS = "runs"

# what a pack may hold, whoever made it
MAX_UPLOAD_BYTES = 50 * 1024 * 1024  # a .zip as uploaded
MAX_TOTAL_BYTES = 32 * 1024 * 1024  # every file uncompressed, all together (a pack of the tiny model is 0.8 MB)
MAX_FILE_BYTES = 8 * 1024 * 1024  # one file uncompressed (the largest, an episode, is about 0.2 MB)
MAX_FILES = 400  # files in a pack (a full pack holds about 40)
# the longest string `prepare` writes in each kind of field (a 181 KiB zip can unpack nine 19 MB strings)
SHORT_CHARS = 200  # a dtype, a device, a date, a version, a panel's id, a finish reason
NAME_CHARS = 1_024  # a model's name: a hub id (at most 96) or a folder's path
TOKEN_CHARS = 1_024  # one token as shown (Qwen3's longest is 128 characters)
TEXT_CHARS = 65_536  # a turn's text (256 tokens of at most 128 characters), and any string not named above
# what an unzipping tool leaves beside the real files; skipped without being read
JUNK = re.compile(r"(^|/)(__MACOSX/.*|\.DS_Store)$")
# a panel's id (engine/teaching/panels.py): "the-model-writes-a-call.call.native"
RUN_ID = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,100}$")
SHA256 = re.compile(r"^[0-9a-f]{64}$")


class PackError(BadInput):
    """A pack that cannot be used; the message says why and what to do."""


def prompt_hash(ids: list[int]) -> str:
    """The sha256 of a prompt's token ids, written as decimal numbers joined by commas."""
    return hashlib.sha256(",".join(str(int(i)) for i in ids).encode("ascii")).hexdigest()


def megabytes(size: int) -> str:
    """A size for people, in MB of 2**20 bytes: '50 MB', '0.3 MB'."""
    value = size / 2**20
    return f"{value:,.0f} MB" if value >= 10 or value == int(value) else f"{value:,.1f} MB"


def file_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def project_version() -> str:
    """This project's version, from pyproject.toml ("unknown" if it cannot be read)."""
    import tomllib

    try:
        with open(ROOT / "pyproject.toml", "rb") as handle:
            return str(tomllib.load(handle)["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "unknown"


# -- what a page gets ------------------------------------------------------------------------
@dataclass(frozen=True)
class PackModel:
    """The model that recorded a pack, as its manifest says."""

    name: str
    revision: str | None
    dtype: str
    device: str
    parameters: int
    random_weights: bool

    def label(self) -> str:
        return f"{self.name} ({SHORT_DTYPE.get(self.dtype, self.dtype)}, {self.device})"

    def info(self) -> ModelInfo:
        """The model as a live run names it (a Generation's `model`), its source the pack."""
        return ModelInfo(
            self.name, "lesson pack", None, self.revision, self.dtype, self.device, self.parameters, self.random_weights
        )


@dataclass(frozen=True)
class Pack:
    """A checked pack: its model, its date and its runs by id."""

    where: str  # the folder or file it was read from, or the uploaded file's name
    model: PackModel
    created: str  # ISO 8601, UTC
    project_version: str
    runs: dict[str, PackRun] = field(default_factory=dict)

    @property
    def date(self) -> str:
        try:
            return datetime.fromisoformat(self.created).strftime("%Y-%m-%d %H:%M UTC")
        except ValueError:
            return self.created

    def label(self) -> str:
        """'Qwen/Qwen3-1.7B (bf16, cuda), recorded 2026-05-09 14:03 UTC' (+ a random-weights warning)."""
        tail = "; random weights: its words and probabilities mean nothing" if self.model.random_weights else ""
        return f"{self.model.label()}, recorded {self.date}{tail}"

    def run(self, run_id: str) -> PackRun | None:
        return self.runs.get(run_id)


@dataclass(frozen=True)
class PackRun:
    """One recorded run: what the manifest says of it, and the run's data as the live path's types.

    Each kind reads into what the live model gives for it, so a page draws one type whatever the source:
    `generation()` (a generation run), `side_by_side()`, `first_token()`, `mask_rows()` and `turns()` (an episode's).
    """

    id: str
    panel: str
    kind: PanelKind
    settings: dict
    prompt_sha256: str
    data: dict = field(repr=False)
    model: ModelInfo = field(repr=False)

    def recorded_for(self, ids: list[int]) -> bool:
        """Whether the run was recorded for exactly this prompt (the page's current one)."""
        return prompt_hash(ids) == self.prompt_sha256

    def _kind(self, *kinds: str) -> None:
        if self.kind not in kinds:
            raise BadInput(f"run {self.id} is a {self.kind} run, not a {' or '.join(kinds)} run")

    def _generation(self, data: dict) -> Generation:
        return Generation(
            text=data["text"],
            finish=data["finish"],
            steps=[DecodeStep.from_json(s) for s in data["steps"]],
            prompt_tokens=int(data.get("prompt_tokens") or self.data.get("prompt_tokens") or 0),
            model=self.model,
            settings=self._settings(),
            seconds=float(data.get("seconds") or 0.0),
            first_token_seconds=float(data.get("first_token_seconds") or 0.0),
        )

    def _settings(self) -> GenerationSettings:
        try:
            return GenerationSettings.from_json(self.settings)
        except (TypeError, ValueError) as error:
            raise PackError(
                f"run {self.id}'s settings are not generation settings ({error}): make the pack again"
            ) from None

    def generation(self) -> Generation:
        """A "generation" run: the turn as generate_turn returns it, every step with its top-k."""
        self._kind("generation")
        return self._generation(self.data)

    def side_by_side(self) -> SideBySide:
        """A "side_by_side" run: the reply decoded under the constraint and free, as live.side_by_side returns it."""
        self._kind("side_by_side")
        return SideBySide(
            self._generation(self.data["constrained"]),
            self._generation(self.data["unconstrained"]),
            self.data["reason"],
            self.data.get("first_difference"),
        )

    def first_token(self) -> FirstToken:
        """A "first_token" run: P(<tool_call>) and the top-k, as peek.first_token returns them."""
        self._kind("first_token")
        top = [Alternative(int(r["id"]), str(r["token"]), float(r["p"])) for r in self.data["top"]]
        return FirstToken(
            int(self.data["prompt_tokens"]),
            {TOOL_CALL: float(self.data["p_tool_call"])},
            top,
            self.model,
            ["<tool_call>"],
        )

    def mask_rows(self) -> list[MaskRow]:
        """A "masks" run: each step of the reply with the mask's effect on the model, one MaskRow a step."""
        self._kind("masks")
        return [MaskRow.from_json(row) for row in self.data["steps"]]

    def turns(self) -> list[Turn]:
        """An "episode" run: the turns the model wrote, as the live model hands them to the harness."""
        self._kind("episode")
        return [
            Turn(t["text"], t["finish"], t["output_tokens"], [DecodeStep.from_json(s) for s in t.get("steps") or []])
            for t in self.data["turns"]
        ]
