"""What a pack's files may say, checked before a page sees a figure.

Every run's file must match the manifest's hash, and a file the manifest does not list is
refused. What the files hold is bounded by bytes as well as by count before any of it is
kept: JSON values across the whole pack, and every string's length (a field by what
`prepare` writes there, any other string by a turn's longest text). Each refusal is a
`PackError` whose message says what is wrong and how to make a good pack.
"""

from __future__ import annotations

import json

from ..core.json_input import InputProblem, check_depth, json_strings, refuse_constant
from ..teaching.panels import KINDS
from .pack import (
    MANIFEST,
    NAME_CHARS,
    PACK_FORMAT,
    PACK_VERSION,
    RUN_ID,
    RUNS,
    SHA256,
    SHORT_CHARS,
    TEXT_CHARS,
    TOKEN_CHARS,
    Pack,
    PackError,
    PackModel,
    PackRun,
    file_hash,
)

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


def _strip_top_folder(files: dict[str, bytes]) -> dict[str, bytes]:
    """A zip of the pack's folder holds `NAME/manifest.json`: read it as if zipped from inside."""
    if MANIFEST in files or not files:
        return files
    tops = {name.split("/", 1)[0] for name in files}
    if len(tops) == 1 and all("/" in name for name in files):
        top = tops.pop() + "/"
        return {name[len(top) :]: body for name, body in files.items()}
    return files


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
