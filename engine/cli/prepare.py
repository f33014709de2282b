"""`python -m engine prepare`: record a lesson pack, every run the site's model panels show, with one model, to
replay without it; the --out folder is checked before the model loads."""

from __future__ import annotations

from ..errors import BadInput
from . import models


def add_parser(sub) -> None:
    p = sub.add_parser(
        "prepare", help="record a lesson pack: every run a model panel shows, to replay without the model"
    )
    models.add_model_flags(
        p, "record from an OpenAI-compatible server (http://host:8000/v1); the pack is labelled with its model"
    )
    p.add_argument("--out", required=True, help="the pack's folder (created; an interrupted pack there is resumed)")
    p.add_argument("--allow-random-weights", action="store_true", help="record a random-weights model (tests only)")
    models.add_device_flags(p)
    p.set_defaults(handler=cmd_prepare)


def cmd_prepare(args) -> dict:
    """A lesson pack: every run the site's model panels show, recorded with one model (progress on stderr)."""
    # refuse a wrong folder before a load that can take minutes, and before torch's import (seconds)
    from ..packs.out_folder import check_out_folder

    out = check_out_folder(args.out)
    # prepare imports torch: only the commands that need it pay for it
    from ..packs.prepare import stderr_log, write_pack

    model = models.open_engine(args)
    if model.info.random_weights and not args.allow_random_weights:
        raise BadInput(
            f"{args.model} has random weights: a pack of its figures would teach nothing. "
            "Give a real model (a hub id or a folder), or pass --allow-random-weights (for tests)"
        )
    stderr_log(f"recording a lesson pack with {model.info.label()} into {out}")
    return write_pack(model, out, stderr_log)
