"""Lesson packs: every run a model panel can show, recorded once with a real model, replayed anywhere.

A pack is a folder (or a .zip of one) holding `manifest.json` and one JSON file per run in
`runs/`. The manifest says which model made the pack (name, revision, dtype, device,
parameter count), when, with which version of this project, and lists every run: its panel,
its settings, the sha256 of the prompt's token ids and the sha256 of the run's file. A run's id
is its panel's (engine/teaching/panels.py), and engine/packs/panel_source.py shows it only
while its settings are the panel's and the prompt the page computes now hashes to the recorded
one, so a pack never passes off figures for settings or a prompt that have since changed.
`engine/packs/prepare.py` writes packs; this module reads and checks them, and never imports torch.
A run reads into the types the live model gives (`PackRun.generation()` a core `Generation`, `mask_rows()`
engine/model/results.py's `MaskRow`s, and so on), so a page draws one type whatever made the figures.

Everything in a pack is untrusted (a teacher may upload one to a shared server): a zip's
size, file count and uncompressed total are capped before anything is read, a name that
leaves the pack or is not JSON is refused, every run's file must match the manifest's
hash, and a file the manifest does not list is refused. What the files hold is bounded by
bytes as well as by count before any of it is kept: JSON values across the whole pack, and
every string's length (a field by what `prepare` writes there, any other string by a turn's
longest text). Each refusal is a `PackError`
whose message says what is wrong and how to make a good pack. The reference for the zip
checks is Python's own zipfile documentation ("Decompression pitfalls"): a member's stated
size can lie, so reads are bounded too.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import stat
import zipfile
import zlib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ..core.generation import SHORT_DTYPE, Alternative, DecodeStep, Generation, GenerationSettings, ModelInfo
from ..core.json_input import InputProblem, check_depth, json_strings, refuse_constant
from ..core.tokenizer import TOOL_CALL
from ..errors import BadInput, EngineError
from ..harness.loop import Run, ScriptedModel, Turn, iterate_episode
from ..harness.workspace import Workspace
from ..model.results import FirstToken, MaskRow, SideBySide
from ..settings import ROOT
from ..teaching.panels import KINDS, PanelKind

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


# -- reading a pack: files first, then what they say ---------------------------------------------
def _safe_name(name: str) -> str:
    """A member's path as a plain relative POSIX path; PackError for one that could leave the pack."""
    if "\\" in name or name.startswith("/") or re.match(r"^[A-Za-z]:", name) or "\x00" in name:
        raise PackError(f"the pack holds {name!r}, a path outside the pack: a pack holds only relative paths")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if not parts or any(p == ".." for p in parts):
        raise PackError(f"the pack holds {name!r}, a path outside the pack: a pack holds only relative paths")
    return "/".join(parts)


def _admit(files: dict[str, bytes], name: str, size: int, total: int) -> None:
    """Refuse before reading what would break a limit."""
    if not name.endswith(".json"):
        raise PackError(f"the pack holds {name}, which is not JSON: a pack holds only manifest.json and runs/*.json")
    if len(files) >= MAX_FILES:
        raise PackError(
            f"the pack holds more than {MAX_FILES} files: a pack made by `python -m engine prepare` holds about 40"
        )
    if size > MAX_FILE_BYTES:
        raise PackError(f"{name} is {size:,} bytes uncompressed; a pack file may hold up to {MAX_FILE_BYTES:,}")
    if total + size > MAX_TOTAL_BYTES:
        raise PackError(f"the pack unpacks to more than {MAX_TOTAL_BYTES:,} bytes; a real pack is a few MB")


def _zip_files(data: bytes) -> dict[str, bytes]:
    """The JSON files of a zipped pack, read into memory with every limit checked (nothing is extracted)."""
    if len(data) > MAX_UPLOAD_BYTES:
        raise PackError(f"the file is {megabytes(len(data))}; a pack may be up to {megabytes(MAX_UPLOAD_BYTES)}")
    files: dict[str, bytes] = {}
    total = 0
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
            if len(members) > MAX_FILES * 2:
                raise PackError(f"the zip holds {len(members):,} entries; a pack holds about 40 files")
            for info in members:
                if info.is_dir() or JUNK.search(info.filename):
                    continue
                name = _safe_name(info.filename)
                if stat.S_ISLNK(info.external_attr >> 16):
                    raise PackError(f"{name} is a symbolic link: a pack holds only plain JSON files")
                _admit(files, name, info.file_size, total)
                # the stated size can lie: read one byte past it and refuse what is longer
                with archive.open(info) as member:
                    body = member.read(info.file_size + 1)
                if len(body) != info.file_size:
                    raise PackError(f"{name} is not the size its zip entry states: the zip is damaged; make it again")
                files[name] = body
                total += len(body)
    except zipfile.BadZipFile as error:
        raise PackError(
            f"the file is not a readable zip ({error}): it may be truncated; zip the pack folder again"
        ) from error
    except (zlib.error, EOFError) as error:
        raise PackError(
            f"the zip is damaged or truncated ({type(error).__name__}); zip the pack folder again"
        ) from error
    except (NotImplementedError, RuntimeError) as error:
        raise PackError(f"the zip cannot be read ({error}): use plain deflate, without a password") from error
    except PackError:
        raise
    except Exception as error:  # a damaged directory: "negative seek value", struct errors, bad offsets...
        raise PackError(
            f"the zip is damaged ({type(error).__name__}: {str(error)[:120]}); zip the pack folder again"
        ) from error
    return files


def _folder_files(folder: Path) -> dict[str, bytes]:
    """The JSON files of a pack folder, with the same limits as a zip; symbolic links are refused."""
    files: dict[str, bytes] = {}
    total = 0
    for base, folders, names in os.walk(folder, followlinks=False):
        for child in list(folders):
            if (Path(base) / child).is_symlink():
                raise PackError(
                    f"{Path(base, child).relative_to(folder)} is a symbolic link: a pack holds only plain files"
                )
        for entry in sorted(names):
            path = Path(base) / entry
            name = path.relative_to(folder).as_posix()
            if JUNK.search(name):
                continue
            if path.is_symlink() or not path.is_file():
                raise PackError(f"{name} is not a plain file: a pack holds only plain JSON files")
            _admit(files, name, path.stat().st_size, total)
            with open(path, "rb") as handle:
                files[name] = handle.read(MAX_FILE_BYTES + 1)
            total += len(files[name])
    return files


def _strip_top_folder(files: dict[str, bytes]) -> dict[str, bytes]:
    """A zip of the pack's folder holds `NAME/manifest.json`: read it as if zipped from inside."""
    if MANIFEST in files or not files:
        return files
    tops = {name.split("/", 1)[0] for name in files}
    if len(tops) == 1 and all("/" in name for name in files):
        top = tops.pop() + "/"
        return {name[len(top) :]: body for name, body in files.items()}
    return files


# what one file may hold once parsed: a real run file has a few thousand values, a few levels deep;
# a 20 KiB zip of nested empty lists would otherwise unpack to hundreds of MB of Python objects
MAX_JSON_VALUES = 200_000
MAX_PACK_VALUES = 1_000_000  # all files together (a pack of the tiny model holds about 36,000)
MAX_JSON_DEPTH = 12


def _values(body: bytes) -> int:
    """JSON values in a file, counted on its bytes (an upper bound: commas and brackets in strings count too)."""
    return body.count(b"[") + body.count(b"{") + body.count(b",")


def _check_strings(value, name: str) -> None:
    """PackError for a string (a value or a key) longer than any `prepare` writes."""
    for item in json_strings(value):
        if len(item) > TEXT_CHARS:
            raise PackError(
                f"{name} holds a string of {len(item):,} characters; a file `python -m engine prepare` wrote holds "
                f"none over {TEXT_CHARS:,}: the pack was not made by this project; make it again"
            )


def _json(name: str, body: bytes):
    values = _values(body)
    if values > MAX_JSON_VALUES:
        raise PackError(
            f"{name} holds about {values:,} JSON values; a file `python -m engine prepare` wrote holds "
            f"far fewer (at most {MAX_JSON_VALUES:,} are read)"
        )
    try:
        value = json.loads(body.decode("utf-8"), parse_constant=refuse_constant)
        check_depth(value, MAX_JSON_DEPTH)
        _check_strings(value, name)
        return value
    except InputProblem as problem:
        raise PackError(f"{name} {problem}: it is not a file `python -m engine prepare` wrote") from None
    except UnicodeDecodeError as error:
        raise PackError(f"{name} is not UTF-8 text: it is not a file `python -m engine prepare` wrote") from error
    except json.JSONDecodeError as error:
        raise PackError(
            f"{name} is not valid JSON ({error.msg} at line {error.lineno}): it may be truncated"
        ) from error
    except ValueError as error:  # a number longer than Python reads
        raise PackError(
            f"{name} is not usable JSON ({str(error)[:80]}): it is not a file `python -m engine prepare` wrote"
        ) from error
    except RecursionError as error:
        raise PackError(f"{name} nests its JSON too deeply to be a file `python -m engine prepare` wrote") from error


# the keys `python -m engine prepare` writes; any other is refused (it can only be there to take up room)
MANIFEST_KEYS = {"format", "version", "created", "project_version", "model", "complete", "runs"}
MODEL_KEYS = {"name", "revision", "dtype", "device", "parameters", "random_weights", "source"}
ENTRY_KEYS = {"id", "panel", "lesson", "kind", "settings", "prompt_sha256", "file", "sha256"}
RUN_KEYS = {
    "id",
    "panel",
    "lesson",
    "kind",
    "settings",
    "prompt_sha256",
    "prompt_tokens",
    "model",
    "recorded_at",
    "complete",
}
GENERATION_KEYS = {
    "text",
    "finish",
    "steps",
    "output_tokens",
    "prompt_tokens",
    "seconds",
    "first_token_seconds",
    "stop_ids",
    "model",
    "settings",
}
KIND_KEYS = {
    "generation": GENERATION_KEYS,
    "side_by_side": {"constrained", "unconstrained", "reason", "first_difference"},
    "first_token": {"p_tool_call", "prompt_tokens", "top"},
    "episode": {"turns", "answer", "stop"},
    "masks": {"turn", "mode", "steps"},
}
STEP_KEYS = {
    "index",
    "id",
    "token",
    "text",
    "p",
    "top",
    "allowed",
    "p_unmasked",
    "forbidden_mass",
    "top_unmasked",
    "finish",
}
TURN_KEYS = {"text", "finish", "output_tokens", "prompt_sha256", "steps"}
MASK_STEP_KEYS = {"number", "allowed", "forbidden_mass", "top_before", "top_after"}
CHOICE_KEYS = {"id", "token", "p"}


def _only(data: dict, allowed: set[str], where: str) -> None:
    extra = sorted(set(data) - allowed)
    if extra:
        raise PackError(
            f"{where} has a key {extra[0][:40]!r} that `python -m engine prepare` never writes: "
            "the pack was not made by this project; make it again"
        )


def _need(data, key: str, kind, where: str, most: int = SHORT_CHARS):
    """data[key], of type `kind` (a string at most `most` characters); PackError naming the file and the field otherwise."""
    if not isinstance(data, dict) or key not in data:
        raise PackError(f"{where} has no {key!r}: the file is damaged or from another program")
    value = data[key]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise PackError(
            f"{where}: {key!r} is a {type(value).__name__}, not the {getattr(kind, '__name__', kind)} it should be"
        )
    if isinstance(value, str) and len(value) > most:
        raise PackError(
            f"{where}: {key!r} is {len(value):,} characters long; `python -m engine prepare` writes at most {most:,} "
            "there: the pack was not made by this project; make it again"
        )
    return value


def _check_probability(value, where: str) -> None:
    if not (isinstance(value, int | float) and not isinstance(value, bool) and 0.0 <= float(value) <= 1.0):
        raise PackError(f"{where}: {value!r} is not a probability between 0 and 1")


def _check_choices(rows, where: str) -> None:
    for row in rows if isinstance(rows, list) else []:
        if isinstance(row, dict):
            _only(row, CHOICE_KEYS, where)
    if not isinstance(rows, list) or len(rows) > 100:
        raise PackError(f"{where} must be a list of at most 100 tokens")
    for n, row in enumerate(rows):
        _need(row, "id", int, f"{where}[{n}]")
        _need(row, "token", str, f"{where}[{n}]", TOKEN_CHARS)
        _check_probability(_need(row, "p", float, f"{where}[{n}]"), f"{where}[{n}]")


def _check_optional(data: dict, key: str, kind, where: str) -> None:
    """data[key] when it is there and not null: of type `kind` (a probability when `kind` is float)."""
    if data.get(key) is not None:
        value = _need(data, key, kind, where)
        if kind is float:
            _check_probability(value, f"{where} {key}")


def _check_generation(data: dict, where: str) -> None:
    _need(data, "text", str, where, TEXT_CHARS)
    _need(data, "finish", str, where)
    for key in ("prompt_tokens", "output_tokens"):
        _check_optional(data, key, int, where)
    for key in ("seconds", "first_token_seconds"):
        if data.get(key) is not None:
            _need(data, key, float, where)
    _check_steps(_need(data, "steps", list, where), where)


def _check_steps(steps: list, where: str) -> None:
    """Each generated step of a turn, as `DecodeStep.as_json` wrote it."""
    for n, step in enumerate(steps):
        at = f"{where} step {n}"
        if isinstance(step, dict):
            _only(step, STEP_KEYS, at)
        for key in ("index", "id"):
            _need(step, key, int, at)
        _need(step, "token", str, at, TOKEN_CHARS)
        if isinstance(step.get("text"), str) and len(step["text"]) > TOKEN_CHARS:
            raise PackError(
                f"{at}: its text is {len(step['text']):,} characters; one token adds at most {TOKEN_CHARS:,}"
            )
        _check_probability(_need(step, "p", float, at), at)
        _check_choices(step.get("top") or [], f"{at} top")
        _check_optional(step, "allowed", int, at)
        for key in ("p_unmasked", "forbidden_mass"):
            _check_optional(step, key, float, at)
        if step.get("top_unmasked") is not None:
            _check_choices(step["top_unmasked"], f"{at} top_unmasked")
        _check_optional(step, "finish", str, at)


def _check_run_data(kind: str, data: dict, where: str) -> None:
    """The fields each kind of run must have, of the right types, so a page never trips on them."""
    if kind == "generation":
        _check_generation(data, where)
    elif kind == "side_by_side":
        for side in ("constrained", "unconstrained"):
            _only(_need(data, side, dict, where), GENERATION_KEYS, f"{where} {side}")
            _check_generation(data[side], f"{where} {side}")
        _need(data, "reason", str, where, TEXT_CHARS)
        _check_optional(data, "first_difference", int, where)
    elif kind == "first_token":
        _check_probability(_need(data, "p_tool_call", float, where), where)
        _need(data, "prompt_tokens", int, where)
        _check_choices(_need(data, "top", list, where), f"{where} top")
    elif kind == "episode":
        for n, turn in enumerate(_need(data, "turns", list, where)):
            at = f"{where} turn {n + 1}"
            if isinstance(turn, dict):
                _only(turn, TURN_KEYS, at)
            _need(turn, "text", str, at, TEXT_CHARS)
            _need(turn, "finish", str, at)
            _need(turn, "output_tokens", int, at)
            if not SHA256.match(_need(turn, "prompt_sha256", str, at)):
                raise PackError(f"{at}: prompt_sha256 is not a sha256")
            if turn.get("steps") is not None:
                _check_steps(_need(turn, "steps", list, at), at)
    elif kind == "masks":
        for n, step in enumerate(_need(data, "steps", list, where)):
            at = f"{where} step {n + 1}"
            if isinstance(step, dict):
                _only(step, MASK_STEP_KEYS, at)
            _need(step, "number", int, at)
            if step.get("allowed") is not None:
                _need(step, "allowed", int, at)
                _check_probability(_need(step, "forbidden_mass", float, at), at)
                _check_choices(_need(step, "top_before", list, at), f"{at} top_before")
                _check_choices(_need(step, "top_after", list, at), f"{at} top_after")


def check_manifest(manifest, where: str = MANIFEST) -> tuple[PackModel, list[dict]]:
    """The manifest's model and run entries; PackError for anything missing or of the wrong type."""
    if not isinstance(manifest, dict) or manifest.get("format") != PACK_FORMAT:
        raise PackError(
            f"{where} is not a lesson pack's manifest: make a pack with "
            "`python -m engine prepare --model MODEL --out DIR`"
        )
    if manifest.get("version") != PACK_VERSION:
        raise PackError(
            f"the pack has format version {manifest.get('version')!r}; this site reads version {PACK_VERSION}: "
            "make it again with this version of the project"
        )
    _only(manifest, MANIFEST_KEYS, where)
    model = _need(manifest, "model", dict, where)
    _only(model, MODEL_KEYS, f"{where} model")
    revision = model.get("revision")
    if isinstance(revision, str) and len(revision) > NAME_CHARS:
        raise PackError(f"{where} model: its revision is {len(revision):,} characters; a revision is a commit or a tag")
    info = PackModel(
        name=_need(model, "name", str, f"{where} model", NAME_CHARS),
        revision=revision if isinstance(revision, str) else None,
        dtype=_need(model, "dtype", str, f"{where} model"),
        device=_need(model, "device", str, f"{where} model"),
        parameters=_need(model, "parameters", int, f"{where} model"),
        random_weights=_need(model, "random_weights", bool, f"{where} model"),
    )
    _need(manifest, "created", str, where)
    _need(manifest, "project_version", str, where)
    entries = _need(manifest, "runs", list, where)
    for n, entry in enumerate(entries):
        at = f"{where} run {n + 1}"
        if isinstance(entry, dict):
            _only(entry, ENTRY_KEYS, at)
        run_id = _need(entry, "id", str, at)
        if not RUN_ID.match(run_id):
            raise PackError(
                f"{at}: {run_id!r} is not a run id (lowercase letters, digits, dots, dashes and underscores)"
            )
        _need(entry, "panel", str, at)
        if _need(entry, "kind", str, at) not in KINDS:
            raise PackError(f"{at}: kind {entry['kind']!r} is not one of {', '.join(KINDS)}")
        _need(entry, "settings", dict, at)
        for key in ("prompt_sha256", "sha256"):
            if not SHA256.match(_need(entry, key, str, at)):
                raise PackError(f"{at}: {key} is not a sha256 (64 hexadecimal digits)")
        if _need(entry, "file", str, at) != f"{RUNS}/{run_id}.json":
            raise PackError(f"{at}: its file must be {RUNS}/{run_id}.json, not {entry['file']!r}")
    return info, entries


def check_pack(files: dict[str, bytes], where: str, allow_random: bool = False) -> Pack:
    """A Pack from its files (relative name -> bytes); PackError for the first thing wrong."""
    files = _strip_top_folder(files)
    if MANIFEST not in files:
        raise PackError(
            f"{where} has no manifest.json: it is not a lesson pack. Make one with "
            "`python -m engine prepare --model MODEL --out DIR` and zip the folder DIR"
        )
    values = sum(_values(body) for body in files.values())
    if values > MAX_PACK_VALUES:
        raise PackError(
            f"the pack holds about {values:,} JSON values in all; a pack `python -m engine prepare` made holds "
            f"far fewer (at most {MAX_PACK_VALUES:,} are read): make the pack again"
        )
    manifest = _json(MANIFEST, files[MANIFEST])
    model, entries = check_manifest(manifest)
    if model.random_weights and not allow_random:
        raise PackError(
            f"{where} was recorded with random weights ({model.name}): its figures mean nothing, so the "
            "site refuses it. Record a pack with real weights (QWEN_ALLOW_RANDOM_PACKS=1 admits it, for tests)"
        )
    listed = {entry["file"] for entry in entries}
    foreign = sorted(set(files) - listed - {MANIFEST})
    if foreign:
        raise PackError(
            f"the pack holds {foreign[0]}, which its manifest does not list: a foreign file; "
            "remove it, or make the pack again"
        )
    runs: dict[str, PackRun] = {}
    for entry in entries:
        name = entry["file"]
        if name not in files:
            raise PackError(
                f"the manifest lists {name}, which the pack does not hold: the pack is incomplete; "
                "run `python -m engine prepare` again with the same --out to finish it"
            )
        if file_hash(files[name]) != entry["sha256"]:
            raise PackError(
                f"{name} was changed after the pack was made (its sha256 does not match the manifest): "
                "the file is tampered with or truncated; make the pack again"
            )
        data = _json(name, files[name])
        if not isinstance(data, dict) or data.get("id") != entry["id"] or data.get("kind") != entry["kind"]:
            raise PackError(f"{name} is not the run {entry['id']} that the manifest names")
        _only(data, RUN_KEYS | KIND_KEYS[entry["kind"]], name)
        _check_run_data(entry["kind"], data, name)
        runs[entry["id"]] = PackRun(
            entry["id"], entry["panel"], entry["kind"], entry["settings"], entry["prompt_sha256"], data, model.info()
        )
    return Pack(where, model, manifest["created"], manifest["project_version"], runs)


def read_pack(source: str | Path, allow_random: bool = False) -> Pack:
    """A pack from a folder or a .zip file on disk."""
    path = Path(source).expanduser()
    if path.is_dir():
        return check_pack(_folder_files(path), str(path), allow_random)
    if not path.is_file():
        raise PackError(f"no pack at {path}: give a pack folder or a .zip made from one")
    if path.stat().st_size > MAX_UPLOAD_BYTES:
        raise PackError(
            f"{path} is {megabytes(path.stat().st_size)}; a pack may be up to {megabytes(MAX_UPLOAD_BYTES)}"
        )
    return check_pack(_zip_files(path.read_bytes()), path.name, allow_random)


def read_pack_bytes(data: bytes, name: str, allow_random: bool = False) -> Pack:
    """A pack uploaded as a .zip (its bytes, never written to disk)."""
    return check_pack(_zip_files(data), name, allow_random)


def find_shipped_pack(folder: Path, allow_random: bool = False) -> Pack | None:
    """The first pack (a sub-folder or a .zip, by name) in `folder` (assets/packs/), or None when it holds none."""
    if not folder.is_dir():
        return None
    for candidate in sorted(folder.iterdir()):
        if (candidate.is_dir() and (candidate / MANIFEST).is_file()) or candidate.suffix == ".zip":
            return read_pack(candidate, allow_random)
    return None
