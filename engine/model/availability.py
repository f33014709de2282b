"""Whether a model can be had now, without loading it or importing torch: for the sidebar's status line and a
panel's "no model" note; and the model the site starts on.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.model_files import model_name_problem, model_path
from ..settings import BUILTIN, BUILTIN_FOLDER, DEFAULT_MODEL, load_settings
from .loading import TINY, TINY_NOTE, find_loaded
from .weights import explain_unavailable, find_cached_weights, has_weights, how_to_get, hub_reachable


@dataclass(frozen=True)
class ModelStatus:
    """Whether a model can be had now, without loading it: for a sidebar or a panel's "no model" note."""

    name: str
    state: str  # "loaded", "tiny", "shipped", "local folder", "cached", "downloadable" or "missing"
    path: str | None
    message: str  # one line for the page; for "missing", how to get the weights

    @property
    def available(self) -> bool:
        return self.state != "missing"


def check_model(name: str | None = None, probe_hub: bool = False) -> ModelStatus:
    """Where `name` (default QWEN_MODEL or Qwen/Qwen3-1.7B) would load from; probes the hub (up to 3 s) only if asked."""
    name = name or load_settings().model
    if find_loaded(name) is not None:
        return ModelStatus(name, "loaded", None, f"{name} is loaded")
    if name == TINY:
        return ModelStatus(name, "tiny", None, f"tiny: {TINY_NOTE}")
    if name == BUILTIN:
        if has_weights(BUILTIN_FOLDER):
            return ModelStatus(
                name, "shipped", str(BUILTIN_FOLDER), "the shipped model loads from the site's own folder"
            )
        return ModelStatus(
            name, "missing", str(BUILTIN_FOLDER), f"the shipped model's folder {BUILTIN_FOLDER} has no weights"
        )
    problem = model_name_problem(name)
    if problem:
        return ModelStatus(name, "missing", None, problem)
    path = model_path(name)
    try:
        is_folder = path.is_dir()
    except OSError as error:  # a folder above it that cannot be read, say
        return ModelStatus(name, "missing", str(path), f"cannot look at {path}: {error.strerror or error}")
    if is_folder:
        if has_weights(path):
            return ModelStatus(name, "local folder", str(path), f"{name} loads from the folder {path}")
        return ModelStatus(name, "missing", str(path), f"the folder {path} has no config.json and .safetensors weights")
    cached = find_cached_weights(name)
    if cached is not None:
        return ModelStatus(name, "cached", str(cached), f"{name} is in the local cache")
    if probe_hub and hub_reachable():
        return ModelStatus(
            name, "downloadable", None, f"{name} is not cached; loading it will download it from the Hugging Face hub"
        )
    if probe_hub:
        return ModelStatus(name, "missing", None, explain_unavailable(name, "unreachable"))
    return ModelStatus(name, "missing", None, f"{name} is not in the local cache. {how_to_get(name)}")


def starting_model() -> str:
    """The model the site starts on: QWEN_MODEL when set; else Qwen3-1.7B when this machine has its weights; else the
    shipped model, which needs no download. Never touches the network."""
    settings = load_settings()
    if settings.model_chosen:
        return settings.model
    return DEFAULT_MODEL if check_model(DEFAULT_MODEL).state in ("loaded", "cached") else BUILTIN
