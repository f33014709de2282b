"""Record a lesson pack: every run a model panel of the site shows, through the page's own engine calls.

`python -m engine prepare --model MODEL --out DIR` runs, for the shipped scenarios, exactly
what each model panel computes with a live model, with the same requests and settings:

    lesson 1     the strawberry question without tools (generate_turn), and with tools as an
                 episode of up to 3 calls (LiveModel in the harness), in both styles
    lesson 3     the strawberry call, token by token with the top 8, in both styles
    lesson 5     the first-token distribution (peek.first_token) for every question of
                 lessons/when-not-to-call.json
    lesson 6     for each reply and tool_choice mode, at every masked step, the model's logits
                 after the reply so far through constrain.inspect_mask: the allowed count, the
                 forbidden mass, the top 8 before and after; and side_by_side's free and
                 constrained decodes for each mode
    playground   the default scenario's episode with the live model (native style)

Each run goes to DIR/runs/<id>.json the moment it is done, and DIR/manifest.json is rewritten
after each, so an interrupted pack is resumed by running the same command again: a run whose
file is there, intact, and made by the same model for the same prompt and settings is kept.
The figures are the engine's own; engine/packs/pack.py reads them back for the pages.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..constrain.masks import inspect_mask, walk
from ..core.generation import Generation, GenerationSettings
from ..core.prompt import STYLES, Request, render
from ..core.tokenizer import TOOL_CALL
from ..core.tooldefs import load_tool_set
from ..errors import BadInput, EngineError
from ..harness.loop import Run, iterate_episode, load_scenario
from ..harness.playground import check_files, fresh_workspace
from ..model.live import LiveModel, generate_turn, side_by_side
from ..model.loading import LoadedModel
from ..model.peek import first_token, next_logits
from ..settings import LESSONS
from .pack import MANIFEST, PACK_FORMAT, PACK_VERSION, RUNS, file_hash, project_version, prompt_hash

# what the pages ask for (pages/1, 3, 5, 6 and the playground); a pack must match them exactly
LESSON6_MODES = ("auto", "required", "count_letter", "tokenize", "none")
PLAYGROUND_SCENARIO = "missing-brace"
PLAYGROUND_STYLE = "native"
PLAYGROUND_MAX_TURNS = 8
LESSON1_MAX_TURNS = 3


def lesson1_settings(with_tools: bool) -> GenerationSettings:
    return GenerationSettings(max_new_tokens=80 if with_tools else 160, top_k=0)


def lesson3_settings(random_weights: bool) -> GenerationSettings:
    return GenerationSettings(max_new_tokens=40 if random_weights else 80, top_k=8)


LESSON5_TOP_K = 8
LESSON6_TOP_K = 8
LESSON6_PAIR_SETTINGS = GenerationSettings(max_new_tokens=48, temperature=0.7, seed=0, top_k=0)
PLAYGROUND_SETTINGS = GenerationSettings(max_new_tokens=256)


def lesson6_data() -> dict:
    return json.loads((LESSONS / "constrained-decoding.json").read_text(encoding="utf-8"))


def lesson5_questions() -> list[dict]:
    return json.loads((LESSONS / "when-not-to-call.json").read_text(encoding="utf-8"))["questions"]


@dataclass
class PlannedRun:
    """One run to record: what the manifest will say of it, and how to make its data."""

    id: str
    panel: str
    kind: str
    settings: dict
    prompt_ids: list[int]
    record: Callable[[], dict]


def _generation(generation: Generation) -> dict:
    data = generation.as_json()
    # the manifest names the model once, and the run's settings are its own
    data.pop("model", None)
    data.pop("settings", None)
    return data


def _episode(engine: LoadedModel, messages: list[dict], tools: list[dict], style: str, settings: GenerationSettings,
             max_turns: int, files: dict[str, str] | None = None) -> dict:
    """An episode with the live model, as the turns it wrote and the prompt each turn answered."""
    model = LiveModel(engine, settings)
    run = Run(style, "per-block")
    turns = []

    def play(workspace) -> None:
        for call in iterate_episode(model, messages, tools, style=style, workspace=workspace, max_turns=max_turns, run=run):
            turns.append({"text": call.turn.text, "finish": call.turn.finish, "output_tokens": call.cost.output_tokens,
                          "prompt_sha256": prompt_hash(call.prompt.ids),
                          "steps": [s.as_json() for s in call.turn.steps or []]})

    try:
        if files is None:
            play(None)
        else:
            with fresh_workspace(files) as workspace:
                play(workspace)
    except EngineError as error:
        run.stop_reason = f"the model failed: {error}"
    return {"turns": turns, "stop": run.stop_reason, "answer": run.answer}


def plan_runs(engine: LoadedModel) -> list[PlannedRun]:
    """Every run the site's model panels show, in the order they are recorded."""
    tok = engine.tokenizer
    planned: list[PlannedRun] = []
    strawberry = load_scenario("strawberry")

    def add(run_id, panel, kind, settings, request_or_ids, record):
        ids = request_or_ids if isinstance(request_or_ids, list) else render(request_or_ids, tok).ids
        planned.append(PlannedRun(run_id, panel, kind, settings, ids, record))

    # lesson 1: the no-tools prompt is native in both styles (the page renders it so)
    bare = Request(strawberry.messages, [], "native")
    settings = lesson1_settings(False)
    add("lesson1-no-tools", "lesson1", "generation", {**settings.as_json(), "tools": False}, bare,
        lambda r=bare, s=settings: _generation(generate_turn(engine, r, s)))
    for style in STYLES:
        settings = lesson1_settings(True)
        request = Request(strawberry.messages, strawberry.tools, style)
        add(f"lesson1-tools-{style}", "lesson1", "episode",
            {**settings.as_json(), "tools": True, "style": style, "max_turns": LESSON1_MAX_TURNS}, request,
            lambda st=style, s=settings: _episode(engine, strawberry.messages, strawberry.tools, st, s, LESSON1_MAX_TURNS))

    # lesson 3: the call, token by token
    for style in STYLES:
        settings = lesson3_settings(engine.info.random_weights)
        request = Request(strawberry.messages, strawberry.tools, style)
        add(f"lesson3-{style}", "lesson3", "generation", {**settings.as_json(), "style": style}, request,
            lambda r=request, s=settings: _generation(generate_turn(engine, r, s)))

    # lesson 5: the first token, for each question (native: <tool_call> is a native token)
    for question in lesson5_questions():
        request = Request([{"role": "user", "content": question["content"]}], strawberry.tools, "native")
        ids = render(request, tok).ids

        def first(ids=ids) -> dict:
            found = first_token(engine, ids, top_k=LESSON5_TOP_K)
            return {"p_tool_call": found.p[TOOL_CALL], "prompt_tokens": found.prompt_tokens,
                    "top": [{"id": a.id, "token": a.token, "p": a.p} for a in found.top]}

        add(f"lesson5-{question['id']}", "lesson5", "first_token", {"question": question["id"], "top_k": LESSON5_TOP_K},
            ids, first)

    # lesson 6: the mask at each step of each reply, under each mode; logits do not depend on the mode
    data = lesson6_data()
    tools = load_tool_set("strawberry")
    question = strawberry.messages
    base = render(Request(question, tools, "native"), tok).ids
    logits_at: dict[tuple[str, int], object] = {}
    for turn in data["turns"]:
        reply = tok.encode(turn["text"])
        for mode in LESSON6_MODES:

            def masks(turn=turn, reply=reply, mode=mode) -> dict:
                rows = []
                for number, step in enumerate(walk(tools, turn["text"], mode), start=1):
                    if mode == "none" or step.allowed is None:
                        rows.append({"number": number, "allowed": None})
                        continue
                    key = (turn["id"], number)
                    if key not in logits_at:
                        logits_at[key] = next_logits(engine, base + reply[: number - 1])
                    view = inspect_mask(tools, tok.decode(reply[: number - 1]), mode, logits=logits_at[key], top_k=LESSON6_TOP_K)
                    rows.append({"number": number, "allowed": view.allowed, "forbidden_mass": view.forbidden_mass,
                                 "top_before": [{"id": t.id, "token": t.token, "p": t.p} for t in view.top_before],
                                 "top_after": [{"id": t.id, "token": t.token, "p": t.p} for t in view.top_after]})
                return {"turn": turn["id"], "mode": mode, "steps": rows}

            add(f"lesson6-mask-{turn['id']}-{mode}", "lesson6", "masks",
                {"turn": turn["id"], "tool_choice": mode, "top_k": LESSON6_TOP_K}, base + reply, masks)
    for mode in LESSON6_MODES:
        request = Request(question, tools, "native")

        def pair(request=request, mode=mode) -> dict:
            both = side_by_side(engine, request, mode, LESSON6_PAIR_SETTINGS)
            return {"constrained": _generation(both.constrained), "unconstrained": _generation(both.unconstrained),
                    "reason": both.reason, "first_difference": both.first_difference}

        add(f"lesson6-pair-{mode}", "lesson6", "side_by_side", {**LESSON6_PAIR_SETTINGS.as_json(), "tool_choice": mode},
            request, pair)

    # the playground: the default scenario, its files and question, with the live model
    scenario = load_scenario(PLAYGROUND_SCENARIO)
    files, _ = check_files(list(scenario.files.items()))
    # one episode, in the native style: a random model's ReAct episode runs all 8 turns of 256 tokens
    request = Request(scenario.messages, scenario.tools, PLAYGROUND_STYLE)
    add(f"playground-{PLAYGROUND_STYLE}", "playground", "episode",
        {**PLAYGROUND_SETTINGS.as_json(), "scenario": scenario.name, "style": PLAYGROUND_STYLE,
         "max_turns": PLAYGROUND_MAX_TURNS},
        request,
        lambda: _episode(engine, scenario.messages, scenario.tools, PLAYGROUND_STYLE, PLAYGROUND_SETTINGS,
                         PLAYGROUND_MAX_TURNS, files))
    return planned


# -- writing the pack ----------------------------------------------------------------------------
def model_identity(engine: LoadedModel) -> dict:
    """What the manifest says of the model; a resumed pack keeps only runs made by the same one."""
    info = engine.info
    return {"name": info.name, "revision": info.revision, "dtype": info.dtype, "device": info.device,
            "parameters": info.parameters, "random_weights": info.random_weights, "source": info.source}


def _write_atomically(path: Path, data: dict) -> bytes:
    """Write JSON so that an interruption leaves the old file or the new one, never half of one."""
    body = json.dumps(data, ensure_ascii=False, indent=1).encode("utf-8")
    temporary = path.with_name(f".{path.name}.partial")
    temporary.write_bytes(body)
    os.replace(temporary, path)
    return body


def _kept(path: Path, planned: PlannedRun, identity: dict) -> bytes | None:
    """The run file's bytes if it is intact and was made for this model, prompt and settings."""
    try:
        body = path.read_bytes()
        data = json.loads(body.decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    same = (isinstance(data, dict) and data.get("id") == planned.id and data.get("kind") == planned.kind
            and data.get("model") == identity and data.get("settings") == planned.settings
            and data.get("prompt_sha256") == prompt_hash(planned.prompt_ids) and data.get("complete") is True)
    return body if same else None


def check_out_folder(out: Path) -> None:
    """Refuse to write a pack over a folder that holds something else."""
    if out.exists() and not out.is_dir():
        raise BadInput(f"--out {out} is a file; give a folder for the pack (it is created if missing)")
    if out.is_dir() and any(out.iterdir()):
        manifest = out / MANIFEST
        try:
            ours = json.loads(manifest.read_text(encoding="utf-8")).get("format") == PACK_FORMAT
        except (OSError, ValueError, AttributeError):
            ours = False
        if not ours:
            raise BadInput(f"--out {out} is not empty and holds no lesson pack; give an empty or new folder")


def write_pack(engine: LoadedModel, out: Path, log: Callable[[str], None] = lambda line: None) -> dict:
    """Record every planned run into `out` (skipping those already there and intact); the stdout summary."""
    started = time.perf_counter()
    check_out_folder(out)
    (out / RUNS).mkdir(parents=True, exist_ok=True)
    # what an interrupted write left behind
    for stale in [*out.glob(".*.partial"), *(out / RUNS).glob(".*.partial")]:
        stale.unlink()
    identity = model_identity(engine)
    planned = plan_runs(engine)
    entries = []
    recorded = kept = 0

    def manifest(complete: bool) -> dict:
        return {"format": PACK_FORMAT, "version": PACK_VERSION, "created": datetime.now(UTC).isoformat(timespec="seconds"),
                "project_version": project_version(), "model": identity, "complete": complete, "runs": entries}

    for number, run in enumerate(planned, start=1):
        path = out / RUNS / f"{run.id}.json"
        body = _kept(path, run, identity)
        if body is not None:
            kept += 1
            log(f"[{number}/{len(planned)}] {run.id}: already recorded, kept")
        else:
            began = time.perf_counter()
            data = run.record()
            body = _write_atomically(path, {
                "id": run.id, "panel": run.panel, "kind": run.kind, "settings": run.settings,
                "prompt_sha256": prompt_hash(run.prompt_ids), "prompt_tokens": len(run.prompt_ids),
                "model": identity, "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"), **data,
                "complete": True,
            })
            recorded += 1
            log(f"[{number}/{len(planned)}] {run.id}: recorded in {time.perf_counter() - began:.1f} s")
        entries.append({"id": run.id, "panel": run.panel, "kind": run.kind, "settings": run.settings,
                        "prompt_sha256": prompt_hash(run.prompt_ids), "file": f"{RUNS}/{run.id}.json",
                        "sha256": file_hash(body)})
        _write_atomically(out / MANIFEST, manifest(False))
    _write_atomically(out / MANIFEST, manifest(True))
    # runs of an older plan that this one no longer makes would be foreign files: remove them
    wanted = {f"{run.id}.json" for run in planned}
    for leftover in (out / RUNS).glob("*.json"):
        if leftover.name not in wanted:
            leftover.unlink()
    return {"out": str(out), "runs": len(entries), "recorded": recorded, "kept": kept,
            "model": identity, "seconds": round(time.perf_counter() - started, 2)}


def stderr_log(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
