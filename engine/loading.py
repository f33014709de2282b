"""Load the live model once per process: from a local folder, the Hugging Face cache, or the hub.

Follows the order DESIGN.md sets: the local cache first; a download with a visible progress
callback when the hub answers quickly; otherwise one ModelUnavailable error that says what
was tried and how to get the weights. The tiny model (`tiny`) is a Qwen3ForCausalLM with the
real vocabulary size and random weights from a fixed seed: it runs every code path the real
model runs, in milliseconds, and its outputs mean nothing except as mechanics.

Progress callbacks are called as `progress(done_bytes, total_bytes, desc)`, always on the
thread that called `load_engine` / `download_weights` (the download itself runs in a worker
thread), so a Streamlit page can update a progress bar from inside the callback. A call with
`total_bytes == 0` announces a stage that has no byte count ("loading weights into memory").
"""

from __future__ import annotations

import os
import queue
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import torch

from .errors import BadInput, ModelUnavailable, TokenizerUnavailable
from .settings import VENDORED_TOKENIZER, load_settings
from .tokenizer import END_OF_TEXT, IM_END, QwenTokenizer, load_tokenizer

Progress = Callable[[int, int, str], None]

TINY = "tiny"
TINY_NOTE = "random weights; outputs mean nothing except as mechanics"
MODEL_VOCAB = 151936  # rows of every Qwen3 embedding matrix; ids >= 151669 are padding, not tokens
# the files a causal LM needs; the hub repos also hold README/LICENSE and sometimes other formats
WEIGHT_PATTERNS = ["*.json", "*.safetensors", "*.txt", "*.jinja"]
HUB_PROBE_SECONDS = 3.0  # how long to wait for the hub to answer before calling it unreachable
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
SHORT_DTYPE = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


@dataclass(frozen=True)
class ModelInfo:
    """What was loaded, from where, and how: enough to label a panel or a recorded trace."""

    name: str  # what was asked for: "tiny", a hub id or a folder
    source: str  # "built in memory", "local folder", "local cache" or "downloaded"
    path: str | None  # the folder the weights came from (None for tiny)
    revision: str | None  # the hub commit hash of a cached snapshot, when known
    dtype: str  # "float32", "bfloat16" or "float16"
    device: str  # "cpu", "cuda" or "mps"
    parameters: int  # number of weights
    random_weights: bool = False  # True for the tiny model
    note: str | None = None  # for tiny: TINY_NOTE

    def label(self) -> str:
        """A short name for a panel: 'Qwen/Qwen3-1.7B (bf16, cuda)'."""
        short = SHORT_DTYPE.get(self.dtype, self.dtype)
        tail = f"; {self.note}" if self.note else ""
        return f"{self.name} ({short}, {self.device}{tail})"

    def as_json(self) -> dict:
        return asdict(self)


@dataclass
class Engine:
    """A loaded model with its tokenizer, shared by every user of the process."""

    model: torch.nn.Module
    tokenizer: QwenTokenizer
    info: ModelInfo
    # one forward pass at a time on the shared model (each generation keeps its own cache and RNG)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def device(self) -> torch.device:
        return torch.device(self.info.device)


# -- device and dtype ---------------------------------------------------------------------
def choose_device(requested: str | None = None) -> str:
    """'cuda' when present, else Apple 'mps', else 'cpu'; `requested` (or QWEN_DEVICE) overrides."""
    requested = requested or os.environ.get("QWEN_DEVICE") or "auto"
    if requested == "auto":
        if torch.cuda.is_available():
            return "cuda"
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return "mps"
        return "cpu"
    if requested not in ("cpu", "cuda", "mps") and not requested.startswith("cuda:"):
        raise BadInput(f"device must be auto, cpu, cuda or mps, not {requested!r}")
    if requested.startswith("cuda") and not torch.cuda.is_available():
        raise BadInput("device 'cuda' was asked for but torch sees no CUDA GPU; use --device auto or cpu")
    return requested


def choose_dtype(device: str, requested: str | None = None) -> str:
    """bfloat16 on a GPU, float32 on a CPU (bf16 matmuls are slow there); `requested` (or QWEN_DTYPE) overrides."""
    requested = requested or os.environ.get("QWEN_DTYPE") or "auto"
    if requested == "auto":
        return "bfloat16" if device.startswith("cuda") else ("float16" if device == "mps" else "float32")
    if requested not in DTYPES:
        raise BadInput(f"dtype must be auto, float32, bfloat16 or float16, not {requested!r}")
    return requested


# -- the tiny model -----------------------------------------------------------------------
def build_tiny_model(seed: int = 0) -> torch.nn.Module:
    """A 2-layer Qwen3 with the real vocabulary size and random weights drawn from `seed`."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    config = Qwen3Config(
        vocab_size=MODEL_VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, tie_word_embeddings=True,
        # the config defaults are None, and then nothing would ever stop a turn
        eos_token_id=IM_END, pad_token_id=END_OF_TEXT,
    )
    # a private generator keeps the weights the same whatever else has drawn from torch's RNG
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        model = Qwen3ForCausalLM(config)
    finally:
        torch.random.set_rng_state(state)
    return model.eval()


def build_tiny_engine(seed: int = 0) -> Engine:
    """The tiny model with the vendored tokenizer, labelled as random weights."""
    model = build_tiny_model(seed)
    info = ModelInfo(
        name=TINY, source="built in memory", path=None, revision=f"random init, seed {seed}",
        dtype="float32", device="cpu", parameters=sum(p.numel() for p in model.parameters()),
        random_weights=True, note=TINY_NOTE,
    )
    return Engine(model, load_tokenizer(str(VENDORED_TOKENIZER)), info)


# -- finding and fetching weights ---------------------------------------------------------
def has_weights(folder: Path) -> bool:
    return (folder / "config.json").is_file() and any(folder.glob("*.safetensors"))


def find_cached_weights(model_id: str) -> Path | None:
    """The cached snapshot folder of `model_id` when it holds a config and weights, else None; never uses the network."""
    from huggingface_hub import snapshot_download

    try:
        folder = Path(snapshot_download(model_id, local_files_only=True, allow_patterns=WEIGHT_PATTERNS))
    except Exception:  # not cached, or not a valid id: both mean "not here"
        return None
    return folder if has_weights(folder) else None


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


def _progress_tqdm(events: queue.Queue, desc: str):
    """A tqdm class for snapshot_download that posts (done, total, desc) of the bytes written."""
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
                events.put((int(self.n), int(self.total), desc))
            return shown

    return ReportingTqdm


def download_weights(model_id: str, progress: Progress | None = None) -> Path:
    """Fetch `model_id` into the Hugging Face cache and return its snapshot folder.

    Raises ModelUnavailable at once when the hub cannot be reached, and when it refuses.
    """
    from huggingface_hub import snapshot_download

    if not hub_reachable():
        raise ModelUnavailable(_advice(model_id, "the Hugging Face hub cannot be reached from this machine (offline)"))
    events: queue.Queue = queue.Queue()
    outcome: dict = {}

    def work():
        try:
            outcome["path"] = snapshot_download(
                model_id, allow_patterns=WEIGHT_PATTERNS, tqdm_class=_progress_tqdm(events, f"downloading {model_id}")
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
        raise ModelUnavailable(_advice(model_id, f"the download failed: {type(error).__name__}: {_first_line(error)}")) from error
    folder = Path(outcome["path"])
    if not has_weights(folder):
        raise ModelUnavailable(_advice(model_id, f"the hub's copy of {model_id} has no config.json and .safetensors weights"))
    return folder


def locate_weights(name: str, progress: Progress | None = None) -> tuple[Path, str]:
    """The folder holding `name`'s weights and how it was found: local folder, local cache, or downloaded."""
    path = Path(name).expanduser()
    if path.is_dir():
        if not has_weights(path):
            raise ModelUnavailable(
                f"the folder {path} has no config.json and .safetensors weights. Point QWEN_MODEL at a folder made by "
                f"`python -m engine download --model <id>` (look under ~/.cache/huggingface/hub/models--*/snapshots/)."
            )
        return path, "local folder"
    if name.startswith((".", "/", "~")) or name.count("/") > 1:
        raise ModelUnavailable(f"there is no folder {path}. Set QWEN_MODEL to a folder that holds the weights, or to a hub id.")
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


def _advice(model_id: str, what_failed: str) -> str:
    return (
        f"cannot load the model {model_id!r}. Tried: a local folder of that name (none), the Hugging Face cache "
        f"(not there), and the hub ({what_failed}). {how_to_get(model_id)} Lessons that need no live model still work."
    )


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else ""


def revision_of(folder: Path) -> str | None:
    # a cache snapshot lives in .../snapshots/<commit hash>/
    return folder.name if folder.parent.name == "snapshots" else None


# -- loading ------------------------------------------------------------------------------
def load_weights(name: str, device: str | None = None, dtype: str | None = None, progress: Progress | None = None) -> Engine:
    """Load `name` (a hub id or folder) with AutoModelForCausalLM, without memoising it."""
    from transformers import AutoModelForCausalLM

    device = choose_device(device)
    dtype = choose_dtype(device, dtype)
    folder, source = locate_weights(name, progress)
    if progress is not None:
        progress(0, 0, f"loading {name} into memory ({dtype}, {device})")
    try:
        model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=DTYPES[dtype], local_files_only=True)
        model = model.to(device).eval()
    except Exception as error:
        raise ModelUnavailable(f"the weights in {folder} could not be loaded: {type(error).__name__}: {_first_line(error)}") from error
    try:
        tokenizer = load_tokenizer(str(folder))
    except TokenizerUnavailable:
        # every Qwen3 size shares one tokenizer; a folder without its files uses the vendored copy
        tokenizer = load_tokenizer(str(VENDORED_TOKENIZER))
    info = ModelInfo(
        name=name, source=source, path=str(folder), revision=revision_of(folder), dtype=dtype, device=device,
        parameters=sum(p.numel() for p in model.parameters()),
    )
    return Engine(model, tokenizer, info)


_engines: dict[tuple, Engine] = {}
_engines_lock = threading.Lock()


def load_engine(
    name: str | None = None, device: str | None = None, dtype: str | None = None, progress: Progress | None = None
) -> Engine:
    """The engine for `name` ("tiny", a hub id or a folder; default QWEN_MODEL or Qwen/Qwen3-1.7B), loaded once per process.

    Concurrent first calls wait for one load. Raises ModelUnavailable, quickly when offline,
    with the way to get the weights.
    """
    name = name or load_settings().model
    if name != TINY:
        # "auto" and the resolved choice name the same load
        device = choose_device(device)
        dtype = choose_dtype(device, dtype)
    key = (name, device, dtype)
    with _engines_lock:
        if key not in _engines:
            started = time.perf_counter()
            _engines[key] = build_tiny_engine() if name == TINY else load_weights(name, device, dtype, progress)
            if progress is not None:
                progress(0, 0, f"{name} ready in {time.perf_counter() - started:.1f} s")
        return _engines[key]


@dataclass(frozen=True)
class ModelStatus:
    """Whether a model can be had now, without loading it: for a sidebar or a panel's "no model" note."""

    name: str
    state: str  # "loaded", "tiny", "local folder", "cached", "downloadable" or "missing"
    path: str | None
    message: str  # one line for the page; for "missing", how to get the weights

    @property
    def available(self) -> bool:
        return self.state != "missing"


def check_model(name: str | None = None, probe_hub: bool = False) -> ModelStatus:
    """Where `name` (default QWEN_MODEL or Qwen/Qwen3-1.7B) would load from; probes the hub (up to 3 s) only if asked."""
    name = name or load_settings().model
    if any(key[0] == name for key in _engines):
        return ModelStatus(name, "loaded", None, f"{name} is loaded")
    if name == TINY:
        return ModelStatus(name, "tiny", None, f"tiny: {TINY_NOTE}")
    path = Path(name).expanduser()
    if path.is_dir():
        if has_weights(path):
            return ModelStatus(name, "local folder", str(path), f"{name} loads from the folder {path}")
        return ModelStatus(name, "missing", str(path), f"the folder {path} has no config.json and .safetensors weights")
    cached = find_cached_weights(name)
    if cached is not None:
        return ModelStatus(name, "cached", str(cached), f"{name} is in the local cache")
    if probe_hub and hub_reachable():
        return ModelStatus(name, "downloadable", None, f"{name} is not cached; loading it will download it from the Hugging Face hub")
    if probe_hub:
        return ModelStatus(name, "missing", None, _advice(name, "unreachable"))
    return ModelStatus(name, "missing", None, f"{name} is not in the local cache. {how_to_get(name)}")


def forget_engines() -> None:
    """Drop every loaded engine (tests; freeing memory)."""
    with _engines_lock:
        _engines.clear()
