"""`python -m engine train-builtin`: train the shipped model, measure it on held-out prompts, write its provenance."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import BadInput
from .training import TrainConfig, train


def train_builtin(args) -> dict:
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise BadInput(f"--out {out} is a file; give a folder for the model")
    config = TrainConfig(
        seed=args.seed,
        threads=args.threads,
        checkpoint_every=max(0, args.checkpoint_every),
        rotate_places=args.rotate_places,
    )
    if not 0.0 <= args.composed_share <= 1.0:
        raise BadInput(f"--composed-share is a share of the count questions, from 0 to 1, not {args.composed_share}")
    config.composed_share = args.composed_share
    for flag, value in (("kv_heads", args.kv_heads), ("head_dim", args.head_dim)):
        if value is not None:
            if not 1 <= value <= 1024:
                raise BadInput(f"--{flag.replace('_', '-')} must be between 1 and 1,024, not {value}")
            setattr(config, flag, value)
    if config.heads % config.kv_heads:
        raise BadInput(f"--kv-heads must divide the {config.heads} attention heads, not {config.kv_heads}")
    if args.steps is not None:
        if not 1 <= args.steps <= 1_000_000:
            raise BadInput(f"--steps must be between 1 and 1,000,000, not {args.steps}")
        config.steps = args.steps
        config.warmup = min(config.warmup, max(1, args.steps // 10))
    if not 1 <= args.threads <= 256:
        raise BadInput(f"--threads must be between 1 and 256, not {args.threads}")

    def report(point: dict) -> None:
        print(json.dumps(point), file=sys.stderr, flush=True)

    result = train(config, out, progress=report)
    answer = {
        "out": str(out),
        "steps": result.steps,
        "seconds": result.seconds,
        "parameters": result.parameters,
        "loss": result.curve[-1]["loss"] if result.curve else None,
    }
    if not args.no_measure:
        answer["heldout"] = measure_folder(out)
        command = f"python -m engine train-builtin --out {args.out} --seed {args.seed} --threads {args.threads}"
        if args.steps is not None:
            command += f" --steps {args.steps}"
        if config.rotate_places:
            command += " --rotate-places"
        if config.composed_share:
            command += f" --composed-share {config.composed_share}"
        for flag, value in (("kv-heads", args.kv_heads), ("head-dim", args.head_dim)):
            if value is not None:
                command += f" --{flag} {value}"
        from .provenance import write_provenance

        answer["provenance"] = str(write_provenance(out, command))
    return answer


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
