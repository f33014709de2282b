"""`python -m engine train-builtin`: train the shipped model, measure it on held-out prompts, write its provenance.

A run can be spread over many sittings: `--checkpoint-dir DIR` saves all it needs at intervals and
when stopped (Ctrl-C, SIGTERM, `--minutes`, `--stop-at`); `--resume DIR` continues it bit for bit;
`--resume DIR --finish --out M` finishes a copy of it with the short final decay into M and measures
that, leaving the run itself to go on later; `--init-from FOLDER` starts a new run from a saved
model's weights. Everything is checked before the first step: a folder that cannot be written, or a
number out of range, is refused in one line rather than found out after hours of training.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

from ..errors import BadInput
from .training import TrainConfig


def writable_folder(path: Path, flag: str) -> Path:
    """`path` as a folder this run may create or write: refused in one line if a file is in the way, or it can't be.

    The name is taken whole (`.` is the folder it names, never an empty name a checkpoint would start with '-').
    """
    path = Path(os.path.abspath(path))
    if path.name.startswith("-"):
        raise BadInput(f"{flag} {path.name}: a name that starts with '-' reads as a flag; name the folder otherwise")
    if path.exists() and not path.is_dir():
        raise BadInput(f"{flag} {path} is a file; give a folder")
    ancestor = path
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise BadInput(f"{flag} {path} lies under {ancestor}, which is a file: the folder can never be made")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise BadInput(f"{flag} {path}: {ancestor} is not writable, so the folder cannot be made or written")
    return path


def in_range(value, low, high, flag: str, what: str = ""):
    if value is not None and not low <= value <= high:
        raise BadInput(f"{flag} must be between {low:,} and {high:,}{what}, not {value}")
    return value


def new_config(args) -> TrainConfig:
    """The settings of a new run from the flags, each checked before anything is built."""
    config = TrainConfig(
        seed=args.seed, checkpoint_every=max(0, args.checkpoint_every), rotate_places=args.rotate_places
    )
    if args.threads is not None:
        config.threads = in_range(args.threads, 1, 256, "--threads")
    if getattr(args, "autocast", None):
        config.autocast = args.autocast
    if args.composed_share is not None:
        if not 0.0 <= args.composed_share <= 1.0:
            raise BadInput(
                f"--composed-share is a share of the count questions, from 0 to 1, not {args.composed_share}"
            )
        config.composed_share = args.composed_share
    for flag in ("pieces_share", "copy_share", "made_up_share"):
        value = getattr(args, flag, None)
        if value is not None:
            what = " (a share of the words)" if flag == "made_up_share" else " (a share of the samples)"
            setattr(config, flag, in_range(value, 0.0, 1.0, f"--{flag.replace('_', '-')}", what))
    if config.drill_share + config.copy_share + config.pieces_share > 1.0:
        raise BadInput(
            f"the drills' shares add up to more than every sample: spelling {config.drill_share}, copy "
            f"{config.copy_share}, pieces {config.pieces_share}; lower --copy-share or --pieces-share"
        )
    for flag, value in (("kv_heads", args.kv_heads), ("head_dim", args.head_dim)):
        if value is not None:
            in_range(value, 1, 1024, f"--{flag.replace('_', '-')}")
            setattr(config, flag, value)
    if config.heads % config.kv_heads:
        raise BadInput(f"--kv-heads must divide the {config.heads} attention heads, not {config.kv_heads}")
    if args.steps is not None:
        in_range(args.steps, 1, 1_000_000, "--steps")
        config.steps = args.steps
        config.warmup = min(config.warmup, max(1, args.steps // 10))
    lr = getattr(args, "lr", None)
    if lr is not None:
        if not 0 < lr <= 1:
            raise BadInput(f"--lr is a learning rate above 0 and at most 1, not {lr}")
        config.lr = lr
    if getattr(args, "warmup", None) is not None:
        config.warmup = in_range(args.warmup, 1, 1_000_000, "--warmup")
    if args.decay_steps is not None:
        config.decay_steps = in_range(args.decay_steps, 0, 1_000_000, "--decay-steps")
    config.decay_steps = min(config.decay_steps, max(0, config.steps - config.warmup))
    return config


def checked_args(args) -> None:
    """The numbers every kind of run shares, checked before anything loads."""
    in_range(getattr(args, "save_every", None), 1, 1_000_000, "--save-every")
    in_range(getattr(args, "stop_at", None), 1, 10_000_000, "--stop-at")
    minutes = getattr(args, "minutes", None)
    if minutes is not None and not 0 < minutes <= 60 * 24 * 30:
        raise BadInput(f"--minutes must be above 0 and at most 43,200 (thirty days), not {minutes}")
    if getattr(args, "finish", False) and not getattr(args, "resume", None):
        raise BadInput("--finish finishes a saved run: give --resume DIR with it")
    if getattr(args, "resume", None) and getattr(args, "init_from", None):
        raise BadInput("--resume continues a run that has its own weights; --init-from starts a new one: give one")
    stops = [flag for flag, name in (("--minutes", "minutes"), ("--stop-at", "stop_at")) if getattr(args, name, None)]
    if stops and not (getattr(args, "checkpoint_dir", None) or getattr(args, "resume", None)):
        raise BadInput(f"{stops[0]} stops a run part-way, and only a checkpoint keeps it: give --checkpoint-dir DIR")
    if stops and getattr(args, "finish", False):
        raise BadInput(f"{stops[0]}: --finish runs the short final decay whole; leave {stops[0]} out")


class Stopper:
    """Says when a part of a run should stop: Ctrl-C or SIGTERM (after the step in hand), its minutes, or a step."""

    def __init__(self, minutes: float | None, stop_at: int | None):
        self.deadline = None if minutes is None else time.monotonic() + 60 * minutes
        self.stop_at, self.asked = stop_at, False
        self.run = None

    def ask(self, *_):
        self.asked = True

    def __call__(self) -> bool:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return True
        return self.asked or (self.stop_at is not None and self.run is not None and self.run.step >= self.stop_at)


def train_builtin(args) -> dict:
    checked_args(args)
    resume = getattr(args, "resume", None)
    checkpoint_dir = getattr(args, "checkpoint_dir", None)
    finishing = getattr(args, "finish", False)
    out = writable_folder(Path(args.out), "--out") if args.out else None
    if checkpoint_dir:
        checkpoint_dir = writable_folder(Path(checkpoint_dir), "--checkpoint-dir")
    if out is None and not (checkpoint_dir or resume) or (finishing and out is None):
        raise BadInput(
            "--out names the folder the model is written to; give it (or --checkpoint-dir to train in parts)"
        )

    from ..core.tokenizer import load_tokenizer
    from .checkpoint import load_run, read_record, save_run
    from .training import advance, finish, start_run

    tok = load_tokenizer()
    if resume:
        resume = Path(resume)
        record = read_record(resume)
        if args.threads is not None and args.threads != record["config"]["threads"]:
            raise BadInput(
                f"--threads {args.threads}: this run trains on {record['config']['threads']} (kept for the whole run, "
                "so that it stays bit for bit); leave --threads out"
            )
        run = load_run(resume, tok)
        checkpoint_dir = None if finishing else (checkpoint_dir or resume)
    else:
        config = new_config(args)
        init_from = Path(args.init_from) if getattr(args, "init_from", None) else None
        if init_from is not None:
            from .warm_start import saved_shape

            for field_name, value in saved_shape(init_from).items():
                flag = {"kv_heads": args.kv_heads, "head_dim": args.head_dim}.get(field_name)
                if flag is not None and flag != value:
                    raise BadInput(f"--{field_name.replace('_', '-')} {flag}: --init-from {init_from} has {value}")
                setattr(config, field_name, value)
        run = start_run(config, tok, init_from)
    if finishing:
        # the copy decays from where the run stands over its short final stretch (--decay-steps: another length for
        # this copy alone); the checkpoint is left as it was
        if getattr(args, "decay_steps", None) is not None:
            run.config.decay_steps = in_range(args.decay_steps, 1, 1_000_000, "--decay-steps")
        run.config.steps = run.step + run.config.decay_steps
    stopper = Stopper(getattr(args, "minutes", None), getattr(args, "stop_at", None))
    stopper.run = run
    # with a checkpoint, Ctrl-C and SIGTERM stop after the step in hand and save; without one they stop at once
    signals = (signal.SIGINT, signal.SIGTERM) if checkpoint_dir else ()
    previous = {sig: signal.signal(sig, stopper.ask) for sig in signals}

    def report(point: dict) -> None:
        print(json.dumps(point), file=sys.stderr, flush=True)

    try:
        advance(
            run,
            tok,
            run.config.steps,
            report,
            should_stop=stopper if checkpoint_dir else None,
            save=(lambda r: save_run(r, checkpoint_dir)) if checkpoint_dir else None,
            save_every=getattr(args, "save_every", None) or 50,
            out=out,
        )
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    answer = {"steps": run.step, "seconds": round(run.seconds, 1), "parameters": None, "loss": None}
    if run.curve:
        answer["loss"] = run.curve[-1]["loss"]
    if checkpoint_dir:
        answer["checkpoint"] = str(checkpoint_dir)
    if run.step < run.config.steps:
        # stopped part-way: the checkpoint holds the run; nothing is written to --out
        answer["stopped_at"] = run.step
        answer["parameters"] = sum(p.numel() for p in run.network.parameters())
        return answer
    if out is None:
        return answer
    result = finish(run, out)
    answer.update(out=args.out, parameters=result.parameters)
    if not args.no_measure:
        answer["heldout"] = measure_folder(out)
        from ..settings import BUILTIN_FOLDER
        from .against import against_folder

        # beside the shipped model's figures: the copy replaces it only where none falls below (docs/shipped-model.md)
        verdict = against_folder(answer["heldout"], BUILTIN_FOLDER)
        if verdict is not None and out.resolve() != BUILTIN_FOLDER.resolve():
            answer["against_shipped"] = verdict.as_json()
        from .provenance import write_provenance

        answer["provenance"] = str(write_provenance(out, command_line(args, run.config)))
    return answer


def command_line(args, config: TrainConfig) -> str:
    """The command that makes this run again, for its provenance (a run in parts names its first part's flags)."""
    command = f"python -m engine train-builtin --out {args.out} --seed {config.seed} --threads {config.threads}"
    command += f" --steps {config.steps} --warmup {config.warmup} --decay-steps {config.decay_steps} --lr {config.lr}"
    if config.init_from:
        command += f" --init-from {config.init_from}"
    if config.rotate_places:
        command += " --rotate-places"
    command += f" --composed-share {config.composed_share}"
    for flag, value, default in (
        ("pieces-share", config.pieces_share, TrainConfig.pieces_share),
        ("copy-share", config.copy_share, TrainConfig.copy_share),
        ("made-up-share", config.made_up_share, TrainConfig.made_up_share),
    ):
        if value != default:
            command += f" --{flag} {value}"
    for flag, value in (("kv-heads", args.kv_heads), ("head-dim", args.head_dim)):
        if value is not None:
            command += f" --{flag} {value}"
    return command


def measure_folder(folder: Path) -> dict:
    """The held-out figures of the model in `folder`, loaded as the site loads a folder; also written to heldout.json."""
    from ..model.loading import load_weights
    from ..model.quant import QuantChoice
    from .heldout import measure

    # fp32 on the CPU, as the site loads the shipped model (engine/model/loading.py)
    engine = load_weights(
        str(folder), "cpu", "float32", quant=QuantChoice("none", "fp32, as the site loads the shipped model", {})
    )
    figures = measure(engine).as_json()
    (folder / "heldout.json").write_text(json.dumps(figures, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return {key: value for key, value in figures.items() if key != "mistakes"}
