"""Where a model's weights are, and fetching them: a local folder, the Hugging Face cache, or the hub.

Torch-free, so a page can say whether weights are on this machine without importing torch.
Follows the order DESIGN.md sets: a local folder, then the local cache, then a download with a
visible progress callback when the hub answers quickly; otherwise one ModelUnavailable error that
says what was tried and how to get the weights.

Progress callbacks are called as `progress(done_bytes, total_bytes, desc)`, always on the thread
that called `download_weights` (the download itself runs in a worker thread), so a Streamlit page
can update a progress bar from inside the callback. A call with `total_bytes == 0` announces a
stage that has no byte count.
"""

from __future__ import annotations

import json
import os
import queue
import socket
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlparse

from ..core.model_files import model_path
from ..errors import ModelUnavailable
from ..settings import BUILTIN, BUILTIN_FOLDER

Progress = Callable[[int, int, str], None]

# the files a causal LM needs; the hub repos also hold README/LICENSE and sometimes other formats
WEIGHT_PATTERNS = ["*.json", "*.safetensors", "*.txt", "*.jinja"]
HUB_PROBE_SECONDS = 3.0  # how long to wait for the hub to answer before calling it unreachable


def has_weights(folder: Path) -> bool:
    return (folder / "config.json").is_file() and any(folder.glob("*.safetensors"))


def find_cached_weights(model_id: str) -> Path | None:
    """The cached snapshot folder of `model_id` when it holds a config and weights, else None; never uses the network."""
    # no folder for it in the cache: not cached, known without importing huggingface_hub (about a second on Home)
    if not (hub_cache_folder() / f"models--{model_id.replace('/', '--')}").is_dir():
        return None
    from huggingface_hub import snapshot_download

    try:
        folder = Path(snapshot_download(model_id, local_files_only=True, allow_patterns=WEIGHT_PATTERNS))
    except Exception:  # not cached, or not a valid id: both mean "not here"
        return None
    return folder if has_weights(folder) else None


def hub_cache_folder() -> Path:
    """Where huggingface_hub keeps downloaded models: its own setting once it is imported (it reads the environment
    then), else the same variables read in its order (HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE, HF_HOME, XDG_CACHE_HOME)."""
    constants = sys.modules.get("huggingface_hub.constants")
    if constants is not None:
        return Path(constants.HF_HUB_CACHE)
    home = os.getenv(
        "HF_HOME", os.path.join(os.getenv("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "huggingface")
    )
    home = os.path.expandvars(os.path.expanduser(home))
    hub = os.getenv("HF_HUB_CACHE", os.getenv("HUGGINGFACE_HUB_CACHE", os.path.join(home, "hub")))
    return Path(os.path.expandvars(os.path.expanduser(hub)))


def hub_reachable(timeout: float = HUB_PROBE_SECONDS) -> bool:
    """Whether the Hugging Face endpoint accepts a connection within `timeout` seconds.

    HF_HUB_OFFLINE=1 means no. The probe runs in a daemon thread, because a name lookup
    ignores socket timeouts and can hang for a minute on a machine with no network.
    """
    from huggingface_hub import constants

    # huggingface_hub reads HF_HUB_OFFLINE once at import; read it again for a value set since
    if constants.is_offline_mode() or os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        return False
    url = urlparse(constants.ENDPOINT)
    host, port = url.hostname or "huggingface.co", url.port or (443 if url.scheme == "https" else 80)
    answer: list[bool] = []

    def probe():
        try:
            with socket.create_connection((host, port), timeout=timeout):
                answer.append(True)
        except OSError:
            answer.append(False)

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(timeout)
    return bool(answer and answer[0])


def planned_bytes(model_id: str) -> int:
    """The bytes snapshot_download will fetch for `model_id` (the files WEIGHT_PATTERNS keeps, less those cached), from the hub's file list; 0 if unknown.

    snapshot_download's byte bar only learns a file's size when that file starts, so its total
    grows during a download and a bar drawn from it would run to 100 % and fall back. Asking
    for the list first gives the bar its real end from the first byte.
    """
    from huggingface_hub import HfApi, try_to_load_from_cache
    from huggingface_hub.utils import filter_repo_objects

    try:
        files = [f for f in HfApi().list_repo_tree(model_id, recursive=True) if getattr(f, "size", None) is not None]
        kept = set(filter_repo_objects([f.path for f in files], allow_patterns=WEIGHT_PATTERNS))
        # a file already in the cache (from an interrupted download) is not fetched again
        return sum(
            f.size for f in files if f.path in kept and not isinstance(try_to_load_from_cache(model_id, f.path), str)
        )
    except Exception:  # the download itself will say what is wrong with the hub
        return 0


def _progress_tqdm(events: queue.Queue, desc: str, planned: int = 0):
    """A tqdm class for snapshot_download that posts (done, total, desc) of the bytes written; `planned` is the whole, when known."""
    from tqdm.auto import tqdm

    class ReportingTqdm(tqdm):
        def __init__(self, *args, **kwargs):
            kwargs.pop("name", None)
            kwargs["file"] = open(os.devnull, "w")  # noqa: SIM115 - the page draws the bar, not tqdm
            super().__init__(*args, **kwargs)

        def update(self, n=1):
            shown = super().update(n)
            # "Downloading bytes" counts network bytes against a guessed total; the other byte bar
            # counts bytes written against the sum of the file sizes, which is what a bar should show
            if self.unit == "B" and self.total and not str(self.desc).startswith("Downloading bytes"):
                total = max(planned, int(self.total))
                events.put((min(int(self.n), total), total, desc))
            return shown

    return ReportingTqdm


def download_weights(model_id: str, progress: Progress | None = None) -> Path:
    """Fetch `model_id` into the Hugging Face cache and return its snapshot folder.

    Raises ModelUnavailable at once when the hub cannot be reached, and when it refuses.
    """
    from huggingface_hub import snapshot_download

    if not hub_reachable():
        raise ModelUnavailable(
            explain_unavailable(model_id, "the Hugging Face hub cannot be reached from this machine (offline)")
        )
    events: queue.Queue = queue.Queue()
    outcome: dict = {}

    def work():
        try:
            planned = planned_bytes(model_id)
            outcome["path"] = snapshot_download(
                model_id,
                allow_patterns=WEIGHT_PATTERNS,
                tqdm_class=_progress_tqdm(events, f"downloading {model_id}", planned),
            )
        except BaseException as error:  # handed back to the calling thread below
            outcome["error"] = error
        finally:
            events.put(None)

    worker = threading.Thread(target=work, daemon=True, name=f"download {model_id}")
    worker.start()
    # report on the caller's thread, so a page may touch its widgets from the callback
    while (event := events.get()) is not None:
        if progress is not None:
            progress(*event)
    worker.join()
    if "error" in outcome:
        error = outcome["error"]
        raise ModelUnavailable(
            explain_unavailable(model_id, f"the download failed: {type(error).__name__}: {first_line(error)}")
        ) from error
    folder = Path(outcome["path"])
    if not has_weights(folder):
        raise ModelUnavailable(
            explain_unavailable(model_id, f"the hub's copy of {model_id} has no config.json and .safetensors weights")
        )
    return folder


def check_model_name(name: str) -> None:
    """ModelFolderRefused (a ModelUnavailable), saying what to change, for a name no folder or hub id can have
    (too long, a NUL or another control character, ~someone for a user this machine does not have)."""
    model_path(name)


def locate_weights(name: str, progress: Progress | None = None) -> tuple[Path, str]:
    """The folder holding `name`'s weights and how it was found: shipped, local folder, local cache, or downloaded."""
    if name == BUILTIN:
        if not has_weights(BUILTIN_FOLDER):
            raise ModelUnavailable(
                f"the shipped model's folder {BUILTIN_FOLDER} has no config.json and .safetensors weights (a partial "
                "clone?). Train it again with `python -m engine train-builtin --out assets/builtin-model`."
            )
        return BUILTIN_FOLDER, "shipped with the site"
    path = model_path(name)
    try:
        is_folder = path.is_dir()
    except OSError as error:  # a folder above it that cannot be read, say
        raise ModelUnavailable(f"cannot look at {path}: {error.strerror or error}") from error
    if is_folder:
        if not has_weights(path):
            raise ModelUnavailable(
                f"the folder {path} has no config.json and .safetensors weights. Point QWEN_MODEL at a folder made by "
                f"`python -m engine download --model <id>` (look under ~/.cache/huggingface/hub/models--*/snapshots/)."
            )
        return path, "local folder"
    if name.startswith((".", "/", "~")) or name.count("/") > 1:
        raise ModelUnavailable(
            f"there is no folder {path}. Set QWEN_MODEL to a folder that holds the weights, or to a hub id."
        )
    cached = find_cached_weights(name)
    if cached is not None:
        return cached, "local cache"
    if progress is not None:
        progress(0, 0, f"{name} is not in the local cache; trying the Hugging Face hub")
    return download_weights(name, progress), "downloaded"


def how_to_get(model_id: str) -> str:
    """The sentence that tells a teacher how to get a model's weights onto this machine."""
    return (
        f"To get the weights, run `python -m engine download --model {model_id}` on a machine that is online (the cache "
        f"is ~/.cache/huggingface/hub), or copy a downloaded model folder here and set QWEN_MODEL=/path/to/folder."
    )


def explain_unavailable(model_id: str, what_failed: str) -> str:
    return (
        f"cannot load the model {model_id!r}. Tried: a local folder of that name (none), the Hugging Face cache "
        f"(not there), and the hub ({what_failed}). {how_to_get(model_id)} Lessons that need no live model still work."
    )


def first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else ""


# safetensors' names of the float dtypes a checkpoint is stored in; a header larger than this is not read
_FLOAT_DTYPES = {"BF16": "bfloat16", "F16": "float16", "F32": "float32"}
_HEADER_LIMIT = 64 * 1024 * 1024


def read_safetensors_header(file: Path) -> tuple[dict, int]:
    """A safetensors file's header (tensor name -> dtype, shape, data_offsets) and the byte offset its data starts at;
    ValueError for a header that is not one."""
    with open(file, "rb") as handle:
        return safetensors_header_of(handle, file.name)


def safetensors_header_of(handle, name: str, limit: int = _HEADER_LIMIT) -> tuple[dict, int]:
    """read_safetensors_header's answer from a binary file object (or a mapping) at the file's start, its header at
    most `limit` bytes; `name` names it in the errors."""
    size = int.from_bytes(handle.read(8), "little")
    if not 0 < size <= limit:
        raise ValueError(f"{name}: a safetensors header of {size} bytes")
    try:
        header = json.loads(handle.read(size))
    except ValueError as error:
        raise ValueError(f"{name}: its safetensors header is not JSON ({error})") from error
    if not isinstance(header, dict):
        raise ValueError(f"{name}: its safetensors header is not a JSON object")
    return header, 8 + size


def stored_dtype(folder: Path) -> str | None:
    """The one float dtype every floating tensor of the folder's safetensors files is stored in
    ("bfloat16", "float16" or "float32"), read from their headers; None when they mix dtypes, a
    header cannot be read, or there are no safetensors files."""
    found = set()
    files = sorted(Path(folder).glob("*.safetensors"))
    for file in files:
        try:
            header, _ = read_safetensors_header(file)
        except (OSError, ValueError):
            return None
        for name, entry in header.items():
            if (
                name != "__metadata__"
                and isinstance(entry, dict)
                and str(entry.get("dtype", "")).startswith(("F", "BF"))
            ):
                found.add(entry["dtype"])
    # one float dtype in all, and one torch loads as it is (not an 8-bit float)
    return _FLOAT_DTYPES.get(found.pop()) if files and len(found) == 1 else None


def revision_of(folder: Path) -> str | None:
    # a cache snapshot lives in .../snapshots/<commit hash>/
    return folder.name if folder.parent.name == "snapshots" else None
