"""Record a lesson pack: every model panel of the site, through the page's own engine calls.

`python -m engine prepare --model MODEL --out DIR` records each panel of the registry
(engine/teaching/panels.py) with the panel's own request and settings, one run per panel,
under the panel's id:

    generation     generate_turn, every token with its top-k (lesson 1 without tools, lesson 3's call)
    episode        the live model in the harness, each turn with the prompt it answered (lesson 1 with
                   tools, the playground)
    first_token    peek.first_token: P(<tool_call>) and the top-k of the first token (lesson 5)
    masks          at every masked step of a reply under a tool_choice, the model's logits after the reply
                   so far through constrain.inspect_mask: the allowed count, the forbidden mass, the top-k
                   before and after (lesson 6)
    side_by_side   live.side_by_side's free and constrained decodes (lesson 6)

`prepare --engine-url URL` records from an OpenAI-compatible server instead (engine/model/remote.py),
labelled with the model the server says it serves: the runs a server can give (generations, episodes,
a first token whose watched id is among its 20 alternatives) are recorded; a run that needs what no
server returns (the whole distribution for the masks, this process's grammar for side by side) is
skipped with the reason, on stderr and under "skipped" in the summary, and its panel says the pack
holds no recording for it.

Each run goes to DIR/runs/<id>.json the moment it is done, and DIR/manifest.json is rewritten
after each, so an interrupted pack is resumed by running the same command again: a run whose
file is there, intact, and made by the same model for the same prompt and settings is kept.
engine/packs/out_folder.py checks DIR before the model loads and writes each file without following a link.
The figures are the engine's own; engine/packs/reader.py reads them back for the pages, and
engine/packs/panel_source.py shows a run only while its settings are still the panel's.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..constrain.masks import inspect_mask, walk
from ..core.generation import Generation
from ..core.tokenizer import TOOL_CALL
from ..errors import BadInput, EngineError
from ..harness.loop import Run, iterate_episode, load_scenario
from ..harness.playground import check_files, fresh_workspace
from ..model.live import LiveModel, generate_turn, side_by_side
from ..model.loading import LoadedModel
from ..model.peek import first_token, next_logits
from ..model.remote import ServerCannot
from ..model.results import MaskRow
from ..teaching.panels import Panel, PanelKind, list_panels
from .out_folder import check_out_folder, regular_file, write_atomically
from .pack import MANIFEST, PACK_FORMAT, PACK_VERSION, RUNS, file_hash, project_version, prompt_hash


@dataclass
class PlannedRun:
    """One run to record: what the manifest will say of it, and how to make its data."""

    id: str
    panel: str
    lesson: str
    kind: PanelKind
    settings: dict
    prompt_ids: list[int]
    record: Callable[[], dict]


def _generation(generation: Generation) -> dict:
    data = generation.as_json()
    # the manifest names the model once, and the run's settings are its own
    data.pop("model", None)
    data.pop("settings", None)
    return data


def _episode(engine: LoadedModel, panel: Panel) -> dict:
    """An episode with the live model, as the turns it wrote and the prompt each turn answered."""
    request = panel.request
    model = LiveModel(engine, panel.generation_for(engine.info.random_weights))
    run = Run(request.style, "per-block")
    turns = []

    def play(workspace) -> None:
        for call in iterate_episode(
            model,
            request.messages,
            request.tools,
            style=request.style,
            workspace=workspace,
            max_turns=panel.max_turns,
            run=run,
        ):
            turns.append(
                {
                    "text": call.turn.text,
                    "finish": call.turn.finish,
                    "output_tokens": call.cost.output_tokens,
                    "prompt_sha256": prompt_hash(call.prompt.ids),
                    "steps": [s.as_json() for s in call.turn.steps or []],
                }
            )

    try:
        if panel.workspace is None:
            play(None)
        else:
            files, _ = check_files(list(load_scenario(panel.workspace).files.items()))
            with fresh_workspace(files) as workspace:
                play(workspace)
    except EngineError as error:
        run.stop_reason = f"the model failed: {error}"
    return {"turns": turns, "stop": run.stop_reason, "answer": run.answer}


def _recorder(engine: LoadedModel, panel: Panel, ids: list[int], logits_at: dict) -> Callable[[], dict]:
    """How to make a panel's run data with the model, by the panel's kind."""
    tok = engine.tokenizer
    random_weights = engine.info.random_weights
    if panel.kind == "generation":
        return lambda: _generation(generate_turn(engine, panel.request, panel.generation_for(random_weights)))
    if panel.kind == "episode":
        return lambda: _episode(engine, panel)
    if panel.kind == "first_token":

        def first() -> dict:
            found = first_token(engine, ids, top_k=panel.top_k)
            return {
                "p_tool_call": found.p[TOOL_CALL],
                "prompt_tokens": found.prompt_tokens,
                "top": [{"id": a.id, "token": a.token, "p": a.p} for a in found.top],
            }

        return first
    if panel.kind == "side_by_side":

        def pair() -> dict:
            both = side_by_side(
                engine, panel.request, panel.options["tool_choice"], panel.generation_for(random_weights)
            )
            return {
                "constrained": _generation(both.constrained),
                "unconstrained": _generation(both.unconstrained),
                "reason": both.reason,
                "first_difference": both.first_difference,
            }

        return pair
    if panel.kind == "masks":
        tools, mode, turn = panel.request.tools, panel.options["tool_choice"], panel.options["turn"]
        reply = tok.encode(panel.reply)
        base = ids[: len(ids) - len(reply)]

        def masks() -> dict:
            rows = []
            for number, step in enumerate(walk(tools, panel.reply, mode), start=1):
                if mode == "none" or step.allowed is None:
                    rows.append(MaskRow(number, None))
                    continue
                # the logits do not depend on the mode: one forward pass per reply and step, for every mode
                key = (turn, number)
                if key not in logits_at:
                    logits_at[key] = next_logits(engine, base + reply[: number - 1])
                view = inspect_mask(
                    tools, tok.decode(reply[: number - 1]), mode, logits=logits_at[key], top_k=panel.top_k
                )
                rows.append(MaskRow.from_view(number, view))
            return {"turn": turn, "mode": mode, "steps": [row.as_json() for row in rows]}

        return masks
    raise BadInput(f"panel {panel.id} has kind {panel.kind!r}, which prepare cannot record")


def plan_runs(engine: LoadedModel) -> list[PlannedRun]:
    """Every recorded panel of the registry, in its order, as a run to record."""
    logits_at: dict[tuple[str, int], object] = {}
    planned = []
    for panel in list_panels():
        if not panel.packed:
            continue
        ids = panel.prompt_ids(engine.tokenizer)
        planned.append(
            PlannedRun(
                panel.id,
                panel.id,
                panel.lesson,
                panel.kind,
                panel.recorded_settings(engine.info.random_weights),
                ids,
                _recorder(engine, panel, ids, logits_at),
            )
        )
    return planned


# -- writing the pack ----------------------------------------------------------------------------
def model_identity(engine: LoadedModel) -> dict:
    """What the manifest says of the model; a resumed pack keeps only runs made by the same one."""
    info = engine.info
    return {
        "name": info.name,
        "revision": info.revision,
        "dtype": info.dtype,
        "device": info.device,
        "parameters": info.parameters,
        "random_weights": info.random_weights,
        "source": info.source,
    }


def _kept(path: Path, planned: PlannedRun, identity: dict) -> bytes | None:
    """The run file's bytes if it is intact and was made for this model, prompt and settings."""
    # a link (to /dev/zero, or another pack's run) is not a run this pack recorded
    if not regular_file(path):
        return None
    try:
        body = path.read_bytes()
        data = json.loads(body.decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    same = (
        isinstance(data, dict)
        and data.get("id") == planned.id
        and data.get("kind") == planned.kind
        and data.get("model") == identity
        and data.get("settings") == planned.settings
        and data.get("prompt_sha256") == prompt_hash(planned.prompt_ids)
        and data.get("complete") is True
    )
    return body if same else None


def write_pack(engine: LoadedModel, out: Path, log: Callable[[str], None] = lambda line: None) -> dict:
    """Record every planned run into `out` (skipping those already there and intact); the stdout summary."""
    started = time.perf_counter()
    out = check_out_folder(out)
    (out / RUNS).mkdir(parents=True, exist_ok=True)
    # what an interrupted write left behind
    for stale in [*out.glob(".*.partial"), *(out / RUNS).glob(".*.partial")]:
        stale.unlink()
    identity = model_identity(engine)
    planned = plan_runs(engine)
    entries, skipped = [], []
    recorded = kept = 0

    def manifest(complete: bool) -> dict:
        return {
            "format": PACK_FORMAT,
            "version": PACK_VERSION,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "project_version": project_version(),
            "model": identity,
            "complete": complete,
            "runs": entries,
        }

    for number, run in enumerate(planned, start=1):
        path = out / RUNS / f"{run.id}.json"
        body = _kept(path, run, identity)
        if body is not None:
            kept += 1
            log(f"[{number}/{len(planned)}] {run.id}: already recorded, kept")
        else:
            began = time.perf_counter()
            try:
                data = run.record()
            except ServerCannot as error:  # a server's limit, not a failure: the panel says the pack lacks it
                skipped.append({"id": run.id, "why": str(error)})
                log(f"[{number}/{len(planned)}] {run.id}: skipped, {error}")
                continue
            body = write_atomically(
                path,
                {
                    "id": run.id,
                    "panel": run.panel,
                    "lesson": run.lesson,
                    "kind": run.kind,
                    "settings": run.settings,
                    "prompt_sha256": prompt_hash(run.prompt_ids),
                    "prompt_tokens": len(run.prompt_ids),
                    "model": identity,
                    "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
                    **data,
                    "complete": True,
                },
            )
            recorded += 1
            log(f"[{number}/{len(planned)}] {run.id}: recorded in {time.perf_counter() - began:.1f} s")
        entries.append(
            {
                "id": run.id,
                "panel": run.panel,
                "lesson": run.lesson,
                "kind": run.kind,
                "settings": run.settings,
                "prompt_sha256": prompt_hash(run.prompt_ids),
                "file": f"{RUNS}/{run.id}.json",
                "sha256": file_hash(body),
            }
        )
        write_atomically(out / MANIFEST, manifest(False))
    write_atomically(out / MANIFEST, manifest(True))
    # runs of an older plan that this one no longer makes would be foreign files: remove them
    wanted = {entry["file"].split("/")[-1] for entry in entries}
    for leftover in (out / RUNS).glob("*.json"):
        if leftover.name not in wanted:
            leftover.unlink()
    summary = {
        "out": str(out),
        "runs": len(entries),
        "recorded": recorded,
        "kept": kept,
        "model": identity,
        "seconds": round(time.perf_counter() - started, 2),
    }
    if skipped:
        summary["skipped"] = skipped
    return summary


def stderr_log(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
