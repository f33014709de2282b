"""`python -m engine download`: fetch a model into the Hugging Face cache with progress on stderr, to prepare a
classroom; the cache is checked writable before a byte is fetched."""

from __future__ import annotations

from pathlib import Path

from ..core.out_paths import check_writable_folder
from ..errors import BadInput
from ..model.loading import TINY
from ..model.weights import locate_weights, revision_of
from ..settings import BUILTIN, load_settings
from .common import print_progress


def add_parser(sub) -> None:
    p = sub.add_parser("download", help="fetch a model into the local cache, with progress (prepare a classroom)")
    p.add_argument("--model", default=None, help="hub id (default: QWEN_MODEL or Qwen/Qwen3-1.7B)")
    p.set_defaults(handler=cmd_download)


def cmd_download(args) -> dict:
    """Fetch a model into the Hugging Face cache, progress on stderr."""
    name = args.model or load_settings().model
    if name == TINY:
        raise BadInput("the tiny model is built in memory from a seed; there is nothing to download")
    if name == BUILTIN:
        raise BadInput(
            "the shipped model is in the site's own folder (assets/builtin-model); there is nothing to download"
        )
    check_download_cache(name)
    folder, source = locate_weights(name, print_progress)
    files = sorted(p.name for p in Path(folder).iterdir() if p.is_file())
    size = sum((Path(folder) / f).stat().st_size for f in files)
    return {
        "model": name,
        "path": str(folder),
        "source": source,
        "revision": revision_of(folder),
        "files": files,
        "bytes": size,
    }


def check_download_cache(name: str) -> None:
    """Before a download: the Hugging Face cache it writes into can be made and written (a model already here writes
    nothing). The cache may be a link its user made, so a link there is followed."""
    from huggingface_hub import constants

    from ..model.weights import find_cached_weights

    try:
        here = Path(name).expanduser().is_dir()
    except (OSError, ValueError):  # a name no folder can have: locate_weights says what is wrong with it
        return
    if here or find_cached_weights(name) is not None:
        return
    check_writable_folder(constants.HF_HUB_CACHE, "the Hugging Face cache (HF_HUB_CACHE)", follow_link=True)
