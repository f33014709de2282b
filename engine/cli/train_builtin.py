"""`python -m engine train-builtin`: the flags of a run that trains the shipped model, in parts if need be;
the training, its checks and its provenance are engine/train/cli.py's."""

from __future__ import annotations

import argparse


def add_parser(sub) -> None:
    p = sub.add_parser(
        "train-builtin",
        help="train the shipped model (hours on a 2-core CPU, in parts: --checkpoint-dir, --resume), measure it, "
        "write its provenance",
    )
    p.add_argument(
        "--out",
        default=None,
        help="the model's folder (assets/builtin-model is the one the site ships); "
        "optional while a run trains in parts into --checkpoint-dir",
    )
    p.add_argument("--steps", type=int, default=None, help="optimizer steps in the whole run, its decay included")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads (default 2; the run is deterministic for a given count, and keeps it when resumed)",
    )
    p.add_argument("--no-measure", action="store_true", help="skip the held-out measurement and the provenance")
    p.add_argument(
        "--checkpoint-every",
        type=int,
        default=0,
        help="every so many steps, save a loadable copy beside --out (OUT-step-N), to measure a long run part-way",
    )
    p.add_argument(
        "--checkpoint-dir",
        default=None,
        help="save all the run needs to continue (weights, optimizer, random states, data position) into this "
        "folder every --save-every steps and when stopped (Ctrl-C, SIGTERM, --minutes, --stop-at)",
    )
    p.add_argument("--save-every", type=int, default=None, help="steps between checkpoints (default 50)")
    p.add_argument("--resume", default=None, help="continue the run saved in this checkpoint folder, bit for bit")
    p.add_argument(
        "--finish",
        action="store_true",
        help="with --resume: finish a copy of the saved run with its short final decay into --out and measure it; "
        "the checkpoint is left as it was, so the run can go on",
    )
    p.add_argument(
        "--init-from",
        default=None,
        help="start a new run from a saved model's weights (e.g. assets/builtin-model), a fresh optimizer",
    )
    p.add_argument("--minutes", type=float, default=None, help="stop cleanly after this many minutes (saved)")
    p.add_argument("--stop-at", type=int, default=None, help="stop cleanly at this step (saved)")
    add_recipe_flags(p)
    p.set_defaults(handler=cmd_train_builtin)


def add_recipe_flags(p: argparse.ArgumentParser) -> None:
    """The schedule, the data's mix and the network's shape, each defaulting to the shipped model's."""
    p.add_argument(
        "--decay-steps",
        type=int,
        default=None,
        help="the final decay's length in steps (default 200); with --resume --finish, this copy's decay alone",
    )
    p.add_argument(
        "--warmup", type=int, default=None, help="warm-up steps (default 150, or a tenth of a shorter run's --steps)"
    )
    p.add_argument(
        "--lr",
        type=float,
        default=None,
        help="the flat learning rate (default 0.003; lower for a warm start from weights that decayed)",
    )
    p.add_argument(
        "--rotate-places",
        action="store_true",
        help="turn each later piece of a spelled word row by a fixed rotation of its own (engine/train/spelled.py)",
    )
    p.add_argument(
        "--composed-share",
        type=float,
        default=None,
        help="share of count questions phrased from parts rather than the fixed phrasings (default 0.5)",
    )
    p.add_argument(
        "--pieces-share",
        type=float,
        default=None,
        help="share of samples that are pieces drills, a made-up word copied into a call (default 0.2)",
    )
    p.add_argument(
        "--copy-share",
        type=float,
        default=None,
        help="share of samples that are copy drills, a count question and its call (default 0.25)",
    )
    p.add_argument(
        "--made-up-share",
        type=float,
        default=None,
        help="share of the words a conversation names that are made up of letter pieces (default 0)",
    )
    p.add_argument(
        "--autocast",
        choices=["auto", "bf16", "off"],
        default=None,
        help="bf16 autocast: auto (default) where the CPU runs bf16 natively (avx512_bf16, AMX), else fp32",
    )
    p.add_argument("--kv-heads", type=int, default=None, help="key/value heads (default: the shipped model's 2)")
    p.add_argument("--head-dim", type=int, default=None, help="each head's width (default: the shipped model's 32)")


def cmd_train_builtin(args) -> dict:
    """Train the shipped model into --out, measure it on held-out prompts, and write its provenance (progress on stderr)."""
    from ..train.cli import train_builtin

    return train_builtin(args)
