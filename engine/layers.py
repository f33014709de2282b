"""The order of engine's packages, lowest first: a module imports its own layer and the layers below it, never above.

tests/test_layout.py reads this and fails on any engine import that runs up, at a module's top, inside a
function or by name (importlib.import_module). Pages (app_pages/) and their parts (ui/) sit above every
layer: the engine never imports them, nor streamlit.
"""

from __future__ import annotations

LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "settings", "layers", "heavy"),  # what every layer may raise and read; torch and co. imported once
    ("core",),  # tokenizer, prompt rendering, the call formats, parsing: no torch
    ("constrain",),  # grammars over a request's tools, masks (xgrammar)
    ("model",),  # running a model: weights, loading, decoding, a remote server (torch)
    ("sandbox",),  # the workspace the tools act on, and the confined run of its tests (no torch)
    ("harness",),  # the loop, the ledger, the tools the model calls
    ("wire",),  # one call in each API's wire format
    ("train",),  # the shipped model's data, training and measure
    ("teaching",),  # each lesson's figures, panels and questions
    ("packs",),  # recording and reading lesson packs, and choosing between a pack and the model
    ("startup",),  # what a server process does once at its start: the warm-up loads pieces of every layer below
    ("cli",),  # the command line: a module per command, each importing what its command needs from below
    ("__main__",),  # `python -m engine`, which only calls the command line
)


def layer_of(module: str) -> int:
    """The layer of an engine module named as `core.parse`, `cli.tokens` or `__main__` (its top package decides)."""
    top = module.split(".")[0]
    if not top:  # engine/__init__.py, which imports nothing
        return 0
    for index, packages in enumerate(LAYERS):
        if top in packages:
            return index
    raise KeyError(f"engine/{top} is in no layer: add it to LAYERS in engine/layers.py")
