"""What the commands that run a model share: their --model, --engine-url, --device and --dtype flags, and
opening the model they name (a server at --engine-url, else a local load, progress on stderr)."""

from __future__ import annotations

import argparse

from ..errors import BadInput
from ..model.loading import load_model
from .common import print_progress

# the commands that load a model: they run in a temporary folder of their own, which takes torch's compile cache
LOADING_COMMANDS = ("generate", "eval", "prepare", "train-builtin")


def add_model_flags(p: argparse.ArgumentParser, engine_url_help: str) -> None:
    """--model and --engine-url, the two ways to name the model a command runs."""
    p.add_argument(
        "--model",
        default=None,
        help="builtin (the shipped model), tiny, a hub id or a local folder (with --engine-url: the server's model)",
    )
    p.add_argument("--engine-url", default=None, metavar="URL", help=engine_url_help)


def add_device_flags(p: argparse.ArgumentParser) -> None:
    """--device and --dtype, where a local model runs and in which precision."""
    p.add_argument("--device", default=None, help="auto (default), cpu, cuda or mps")
    p.add_argument(
        "--dtype", default=None, help="auto (default: bfloat16 on a GPU, float32 on a CPU), float32, bfloat16, float16"
    )


def open_engine(args):
    """The model a command runs: the server at --engine-url (its --model, if given, must be one it serves), else a local load."""
    if args.engine_url:
        from ..model.remote import connect

        return connect(args.engine_url, args.model)
    if not args.model:
        raise BadInput(
            "--model is required (builtin, tiny, a hub id or a local folder), or --engine-url URL for a server"
        )
    return load_model(args.model, args.device, args.dtype, print_progress)
