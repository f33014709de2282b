"""Load the live model into memory once per process: a folder, a cached hub id, a download, or the tiny model.

Where the weights come from is engine/model/weights.py; this module turns them into a `LoadedModel`
(the network, its tokenizer and a label) that every page and user of the process shares. The
tiny model (`tiny`) is a Qwen3ForCausalLM with the real vocabulary size and random weights from
a fixed seed: it runs every code path the real model runs, in milliseconds, and its outputs
mean nothing except as mechanics.

torch is imported inside the functions that need it, so the registry's questions (`find_loaded`,
`is_loading`) and engine/model/availability.py's `check_model` (the sidebar's status line) never
import it. A load in a background thread that pages watch is engine/model/load_jobs.py's.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.generation import ModelInfo
from ..core.model_files import check_folder_files, read_folder_text
from ..core.tokenizer import QwenTokenizer, load_tokenizer
from ..errors import BadInput, ModelFolderRefused, ModelUnavailable, TokenizerUnavailable
from ..settings import BUILTIN, VENDORED_TOKENIZER, load_settings
from .network import TINY_SHAPE, build_qwen3
from .quant import QuantChoice, choose_quant
from .weights import (
    Progress,
    check_model_name,
    first_line,
    locate_weights,
    revision_of,
    stored_dtype,
)

if TYPE_CHECKING:
    import torch

TINY = "tiny"
TINY_NOTE = "random weights; outputs mean nothing except as mechanics"
RANDOM_FOLDER_NOTE = "random weights (its config.json says so); outputs mean nothing except as mechanics"
DTYPES = ("float32", "bfloat16", "float16")


def builtin_note(parameters: int) -> str:
    """What the shipped model is, in the words every panel labels it with."""
    return f"a {parameters / 1e6:.0f} M-parameter model trained by this site to write these lessons' calls; not Qwen3"


@dataclass
class LoadedModel:
    """A loaded model with its tokenizer, shared by every user of the process."""

    model: torch.nn.Module
    tokenizer: QwenTokenizer
    info: ModelInfo
    # why the weights are int8 or not and why so many threads, in words, for the sidebar: {"quant": ..., "threads": ...}
    reasons: dict = field(default_factory=dict, repr=False)
    # one forward pass at a time on the shared model (each generation keeps its own cache and RNG)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def device(self) -> torch.device:
        import torch

        return torch.device(self.info.device)


# -- device and dtype ---------------------------------------------------------------------
def choose_device(requested: str | None = None) -> str:
    """'cuda' when present, else Apple 'mps', else 'cpu'; `requested` (or QWEN_DEVICE) overrides."""
    import torch

    requested = requested or load_settings().device
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
    """bfloat16 on a GPU; on a CPU, bfloat16 where a matmul timing shows the processor runs it natively,
    else float32 (engine/model/cpu_speed.py, measured once per process); `requested` (or QWEN_DTYPE) overrides."""
    requested = requested or load_settings().dtype
    if requested == "auto":
        if device == "cpu":
            from .cpu_speed import cpu_dtype

            return cpu_dtype().dtype
        return "bfloat16" if device.startswith("cuda") else "float16"
    if requested not in DTYPES:
        raise BadInput(f"dtype must be auto, float32, bfloat16 or float16, not {requested!r}")
    return requested


# -- the tiny model -----------------------------------------------------------------------
def build_tiny_network(seed: int = 0) -> torch.nn.Module:
    """A 2-layer Qwen3 with the real vocabulary size and random weights drawn from `seed`."""
    return build_qwen3(TINY_SHAPE, seed).eval()


def build_tiny(seed: int = 0) -> LoadedModel:
    """The tiny model with the vendored tokenizer, labelled as random weights."""
    model = build_tiny_network(seed)
    info = ModelInfo(
        name=TINY,
        source="built in memory",
        path=None,
        revision=f"random init, seed {seed}",
        dtype="float32",
        device="cpu",
        parameters=sum(p.numel() for p in model.parameters()),
        random_weights=True,
        note=TINY_NOTE,
    )
    return LoadedModel(model, load_tokenizer(str(VENDORED_TOKENIZER)), info)


# -- loading ------------------------------------------------------------------------------
def load_weights(
    name: str,
    device: str | None = None,
    dtype: str | None = None,
    progress: Progress | None = None,
    quant: QuantChoice | None = None,
) -> LoadedModel:
    """Load `name` (a hub id or folder), a plain Qwen3 on a CPU without transformers (engine/model/lean.py), else with
    AutoModelForCausalLM, without memoising it; int8 and threads per `quant`
    (default: chosen for the device, engine/model/quant.py and threads.py)."""
    import torch

    device = choose_device(device)
    quant = quant or choose_quant(device, dtype or load_settings().dtype)
    # int8 quantizes fp32 Linear layers; the norms stay fp32, the embedding fp32 or its checkpoint's 16 bits
    dtype = "float32" if quant.quant == "int8" else choose_dtype(device, dtype)
    folder, source = locate_weights(name, progress)
    # transformers reads config.json, generation_config.json and the rest by path: each is size-checked first
    check_folder_files(folder)
    # int8 reads the checkpoint in its own 16-bit dtype and widens a slice of one Linear at a time as it
    # quantizes (quant.quantize_weight): the same int8 values as an fp32 load, without an fp32 copy of the model
    read_as = (stored_dtype(folder) or dtype) if quant.quant == "int8" else dtype
    if progress is not None:
        progress(0, 0, f"loading {name} into memory ({read_as}, {device})")
    # an int8 model on a CPU is read tensor by tensor where the checkpoint's layout allows (engine/model/int8_load.py)
    model = None
    if quant.quant == "int8" and device == "cpu":
        # weights prepared once and mapped (engine/model/int8_prepared.py), else read and quantized as they are read
        model = read_prepared_if_plain(folder, progress) or read_int8_if_plain(folder, progress)
    quantized = model is not None
    if model is None and device == "cpu":
        # a plain Qwen3 on a CPU is built without transformers' modeling code (engine/model/lean.py)
        model = read_lean_if_plain(folder, getattr(torch, read_as), progress)
    try:
        if model is None:
            from transformers import AutoModelForCausalLM

            model = AutoModelForCausalLM.from_pretrained(
                str(folder), dtype=getattr(torch, read_as), local_files_only=True
            )
            model = model.to(device).eval()
    except Exception as error:
        raise ModelUnavailable(
            f"the weights in {folder} could not be loaded: {type(error).__name__}: {first_line(error)}"
        ) from error
    try:
        tokenizer = load_tokenizer(str(folder))
    except TokenizerUnavailable:
        # every Qwen3 size shares one tokenizer; a folder without its files uses the vendored copy
        tokenizer = load_tokenizer(str(VENDORED_TOKENIZER))
    # a folder's own template is tried once here, so the Set-up page can say it is unusable (every render is limited)
    tokenizer.check_template()
    random_weights = declares_random_weights(folder)
    # int8 products hold no torch parameters: a prepared network knows its count from its config
    parameters = getattr(model, "stored_parameters", None) or sum(p.numel() for p in model.parameters())
    note = RANDOM_FOLDER_NOTE if random_weights else builtin_note(parameters) if name == BUILTIN else None
    info = ModelInfo(
        name=name,
        source=source,
        path=str(folder),
        revision=revision_of(folder),
        dtype=dtype,
        device=device,
        parameters=parameters,
        random_weights=random_weights,
        note=note,
    )
    return tune_for_cpu(LoadedModel(model, tokenizer, info), quant, progress, quantized=quantized)


def read_prepared_if_plain(folder: Path, progress: Progress | None = None):
    """The folder's Qwen3 over int8 weights prepared once and mapped, or None where that path does not cover it."""
    from .int8_prepared import read_prepared_int8
    from .lean import NotLean

    model = _read_or_none(
        lambda: read_prepared_int8(folder, progress), folder, progress, NotLean, "reading the checkpoint into int8"
    )
    if model is not None and progress is not None:
        progress(0, 0, model.prepared_reason)
    return model


def read_int8_if_plain(folder: Path, progress: Progress | None = None):
    """The folder's model in int8 read tensor by tensor, or None where its checkpoint is not a plain layout."""
    from .int8_load import NotPlainLayout, read_int8_model

    model = _read_or_none(lambda: read_int8_model(folder, progress), folder, progress, NotPlainLayout)
    if model is not None and progress is not None:
        progress(0, 0, "quantized the weights to int8 as they were read")
    return model


def read_lean_if_plain(folder: Path, dtype, progress: Progress | None = None):
    """The folder's Qwen3 read without transformers, or None where it is not a plain Qwen3 or the compact forward
    is off (QWEN_FAST_DECODE=0): then transformers loads it."""
    from .lean import NotLean, read_lean

    if not load_settings().fast_decode:
        return None
    return _read_or_none(lambda: read_lean(folder, dtype), folder, progress, NotLean)


def _read_or_none(
    read, folder: Path, progress: Progress | None, refused: type, instead: str = "loading through transformers"
):
    """`read()`'s model; None where it refuses the folder (`refused`, or an OSError), said in the load's progress as
    what happens `instead`; a tensor torch cannot allocate fails the load in one line."""
    try:
        return read()
    except (refused, OSError) as why:
        if progress is not None:
            progress(0, 0, f"{instead} ({why})")
        return None
    except (RuntimeError, MemoryError) as error:  # torch could not allocate a tensor the checkpoint declares
        raise ModelUnavailable(
            f"the weights in {folder} could not be loaded: {type(error).__name__}: {first_line(error)}"
        ) from error


def tune_for_cpu(
    loaded: LoadedModel,
    quant: QuantChoice,
    progress: Progress | None = None,
    choose_threads_now: bool = True,
    quantized: bool = False,
) -> LoadedModel:
    """`loaded` with int8 weights where `quant` says so, and torch's thread count chosen for it (CPU only).

    Threads are timed on the layer kind the model runs (engine/model/threads.py); with
    `choose_threads_now` False (the tiny model) only an explicit QWEN_THREADS applies. `quantized`:
    the weights were made int8 as they were read (engine/model/int8_load.py)."""
    from dataclasses import replace

    from .threads import apply_threads, choose_threads, requested_threads

    if loaded.info.device != "cpu":
        return loaded
    reasons = {"quant": quant.reason}
    info = loaded.info
    if quant.quant == "int8":
        if not quantized:
            if progress is not None:
                progress(0, 0, "quantizing the weights to int8")
            from .quant import quantize_network

            quantize_network(loaded.model)
        info = replace(info, quant="int8")
    if choose_threads_now or requested_threads() is not None:
        from .probe import decode_layer
        from .quant import quantize_network
        from .remembered import remembered_threads

        # the kind of product the model runs: torch's int8 Linear, int8 rows (prepared weights) or fp32
        rows8 = hasattr(loaded.model, "prepared_reason")
        kind = "int8-rows" if rows8 else quant.quant

        def timed():
            if progress is not None:
                progress(0, 0, "timing 1 and more threads")
            if rows8:
                from .rows8 import Rows8Module, rows8_of

                return choose_threads(Rows8Module(rows8_of(decode_layer()[0].weight)))
            return choose_threads(quantize_network(decode_layer()) if quant.quant == "int8" else None)

        # QWEN_THREADS decides at once; else this machine's remembered timing, or a timing now that is remembered
        threads = choose_threads() if requested_threads() is not None else remembered_threads(kind, timed)
        apply_threads(threads)
        reasons["threads"] = threads.reason
        info = replace(info, threads=threads.threads)
    tuned = LoadedModel(loaded.model, loaded.tokenizer, info, reasons)
    # the compact forward's fused products, built now rather than at the first step a learner waits for
    from .fast_build import fast_forward_for, forward_reason

    if progress is not None:
        progress(0, 0, "fusing the projections for the compact forward")
    fast = fast_forward_for(tuned)
    reasons["forward"] = forward_reason(tuned)
    if fast is not None:
        reasons["decode_step"] = fast.native_reason
        reasons["kv_cache"] = fast.cache_choice.reason
    return tuned


def load_words(loaded: LoadedModel) -> str:
    """How the load read the weights, in a sentence's words."""
    if loaded.info.path is None:
        return "built in memory from a fixed seed"
    prepared = getattr(loaded.model, "prepared_reason", None)
    if prepared:
        return f"{prepared} (engine/model/int8_prepared.py)"
    from .fast_build import is_lean

    if is_lean(loaded.model):
        return "read from its safetensors files without transformers' modeling code (engine/model/lean.py)"
    return "read through transformers' from_pretrained"


def declares_random_weights(folder: Path) -> bool:
    """Whether the folder's config.json says its weights are random: a top-level `"random_weights": true`.

    bench/make_sized_model.py writes that key into the folders it builds (the real architecture
    with random weights, for load and speed measurements). Nothing else can tell random weights
    from trained ones honestly, so a folder without the key is taken at its word.
    """
    try:
        config = json.loads(read_folder_text(folder, "config.json"))  # size-checked before it is read
    except (OSError, ValueError, ModelFolderRefused):
        return False
    return isinstance(config, dict) and config.get("random_weights") is True


# The process-wide registry: every page, session and browser tab of one server shares these.
_loaded: dict[tuple, LoadedModel] = {}
_loaded_lock = threading.Lock()  # guards the two dicts, held only for a moment
_load_locks: dict[tuple, threading.Lock] = {}  # one per (name, device, dtype), held for the whole load


def load_model(
    name: str | None = None, device: str | None = None, dtype: str | None = None, progress: Progress | None = None
) -> LoadedModel:
    """The model for `name` ("tiny", a hub id or a folder; default QWEN_MODEL or Qwen/Qwen3-1.7B), loaded once per process.

    Concurrent first calls for the same model wait for one load (a later caller's `progress`
    hears that it waits); loads of different models do not wait for each other. Raises
    ModelUnavailable, quickly when offline, with the way to get the weights; a failed load
    leaves nothing behind, so the next call tries again.
    """
    name = name or load_settings().model
    if name not in (TINY, BUILTIN):
        # a name no folder or hub id can have is refused in one line before torch is imported
        check_model_name(name)
    quant = None
    if name == BUILTIN and device in (None, "auto", "cpu") and choose_device(device) == "cpu":
        # the shipped model's 20 M weights are fast in fp32 anywhere: under auto it loads in fp32 on every CPU, so its
        # turns are the same on every machine (QWEN_QUANT=int8 or QWEN_DTYPE still apply when set)
        device = "cpu"
        settings = load_settings()
        quant = choose_quant(device, dtype or settings.dtype, None if settings.quant != "auto" else "none")
        if quant.quant == "none" and settings.quant == "auto":
            quant = QuantChoice(
                "none", "the shipped model is small: fp32 on every CPU, so its turns are the same everywhere", {}
            )
        dtype = (
            "float32" if quant.quant == "int8" or (dtype or settings.dtype) == "auto" else choose_dtype(device, dtype)
        )
    elif name != TINY:
        # "auto" and the resolved choice name the same load
        device = choose_device(device)
        quant = choose_quant(device, dtype or load_settings().dtype)
        dtype = "float32" if quant.quant == "int8" else choose_dtype(device, dtype)
    elif load_settings().quant == "int8":
        # the tiny model stays as built unless QWEN_QUANT=int8 asks (its outputs are mechanics either way)
        quant = QuantChoice("int8", "QWEN_QUANT=int8", {})
    key = (name, device, dtype, quant.quant if quant else None)
    with _loaded_lock:
        if key in _loaded:
            return _loaded[key]
        load_lock = _load_locks.setdefault(key, threading.Lock())
    if load_lock.locked() and progress is not None:
        progress(0, 0, f"{name} is being loaded by another user of this site; waiting for it")
    with load_lock:
        if key in _loaded:  # loaded while this call waited
            return _loaded[key]
        started = time.perf_counter()
        if name == TINY:
            model = build_tiny()
            if quant is not None:
                model = tune_for_cpu(model, quant, progress, choose_threads_now=False)
        else:
            model = load_weights(name, device, dtype, progress, quant)
        # the load's time and how it read the weights, for the Set-up page
        seconds = time.perf_counter() - started
        model.reasons["load"] = (seconds, load_words(model))
        with _loaded_lock:
            _loaded[key] = model
        if progress is not None:
            progress(0, 0, f"{name} ready in {seconds:.1f} s")
        return model


def find_loaded(name: str | None = None) -> LoadedModel | None:
    """The model already loaded for `name` in this process (whatever its device and dtype), or None; never loads, never imports torch."""
    name = name or load_settings().model
    with _loaded_lock:
        return next((model for key, model in _loaded.items() if key[0] == name), None)


def is_loading(name: str | None = None) -> bool:
    """Whether some request of this process is loading `name` right now (another tab, another user)."""
    name = name or load_settings().model
    with _loaded_lock:
        return any(key[0] == name and lock.locked() and key not in _loaded for key, lock in _load_locks.items())
