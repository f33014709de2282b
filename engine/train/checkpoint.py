"""A training run's checkpoint: all it needs to continue bit for bit, saved at intervals and when stopped.

A checkpoint folder (`train-builtin --checkpoint-dir runs/NAME`, a folder the repository ignores)
holds two files, each replaced whole (written beside, then renamed over), so a run killed while
saving leaves the last checkpoint as it was:

- state.pt: the tensors (the network's weights, the spelled places, AdamW's moments, the scored
  rows' generator), read back with `weights_only=True`: no pickled code is ever run;
- run.json: the rest (the settings, the step, the data stream's random state and the batches left
  of its pool, the loss curve, and each part of the run: its steps, seconds, CPU seconds, machine).

Resumed on the same machine and thread count (the run keeps its own), a run ends on the same
weights as one that never stopped: tests/test_train_resume.py checks it.
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import asdict, fields
from pathlib import Path

import torch

from ..core.tokenizer import QwenTokenizer
from ..errors import BadInput
from .data import Sample
from .spelled import SpelledEmbedding, spelled_words
from .training import Run, TrainConfig, build_network, make_optimizer

FORMAT = 1  # run.json's layout; a checkpoint of another layout is refused, not misread
STATE, RECORD = "state.pt", "run.json"


def replace_file(folder: Path, name: str, write) -> None:
    """Write `name` in `folder` through a fresh file beside it, then rename it over: never through a planted link."""
    temporary = folder / f"{name}.partial"
    temporary.unlink(missing_ok=True)
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    with os.fdopen(descriptor, "wb") as handle:
        write(handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, folder / name)


def save_run(run: Run, folder: Path) -> None:
    """Save `run` into `folder` (created if need be): state.pt first, then run.json, which names its step."""
    folder.mkdir(parents=True, exist_ok=True)
    state = {
        "step": torch.tensor(run.step),
        "network": run.network.state_dict(),
        "spelled": run.spelled.state_dict() if run.spelled is not None else {},
        "optimizer": run.optimizer.state_dict(),
        "generator": run.generator.get_state(),
    }
    replace_file(folder, STATE, lambda handle: torch.save(state, handle))
    version, internal, gauss = run.rng.getstate()
    record = {
        "format": FORMAT,
        "step": run.step,
        "config": asdict(run.config),
        "rng": [version, list(internal), gauss],
        "queue": [[[s.kind, s.ids, s.targets] for s in batch] for batch in run.queue],
        "curve": run.curve,
        "window": run.window,
        "parts": run.parts,
    }
    replace_file(folder, RECORD, lambda handle: handle.write(json.dumps(record).encode("utf-8")))


def read_record(folder: Path) -> dict:
    """run.json of a checkpoint folder, checked; a one-line error for anything else."""
    path = folder / RECORD
    if not path.is_file() or not (folder / STATE).is_file():
        raise BadInput(
            f"--resume {folder}: no checkpoint there ({RECORD} and {STATE}); start one with --checkpoint-dir"
        )
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BadInput(f"--resume {folder}: {RECORD} is not JSON ({error})") from None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise BadInput(f"--resume {folder}: {RECORD} is not a checkpoint this version writes (format {FORMAT})")
    known = {f.name for f in fields(TrainConfig)}
    if not isinstance(record.get("config"), dict) or set(record["config"]) - known:
        raise BadInput(f"--resume {folder}: its settings name fields this version does not know")
    return record


def load_run(folder: Path, tok: QwenTokenizer) -> Run:
    """The run saved in `folder`, as it stood after its last saved step."""
    record = read_record(folder)
    config = TrainConfig(**record["config"])
    torch.set_num_threads(config.threads)
    network = build_network(config)
    spelled = None
    if config.spelled:
        spelled = SpelledEmbedding(
            network.model.embed_tokens.weight, spelled_words(tok), config.seed, config.rotate_places
        )
    state = torch.load(folder / STATE, weights_only=True)
    if int(state["step"]) != record["step"]:
        raise BadInput(f"--resume {folder}: {STATE} and {RECORD} are of different steps; the save was cut off")
    network.load_state_dict(state["network"])
    network.train()
    if spelled is not None:
        spelled.load_state_dict(state["spelled"])
    optimizer = make_optimizer(network, spelled, config)
    optimizer.load_state_dict(state["optimizer"])
    generator = torch.Generator()
    generator.set_state(state["generator"])
    rng = random.Random()
    version, internal, gauss = record["rng"]
    rng.setstate((version, tuple(internal), gauss))
    queue = [[Sample(kind, ids, targets) for kind, ids, targets in batch] for batch in record["queue"]]
    return Run(
        config,
        network,
        spelled,
        optimizer,
        rng,
        generator,
        queue,
        record["step"],
        record["curve"],
        record["window"],
        record["parts"],
    )
