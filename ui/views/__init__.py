"""Views drawn in the browser: a run is sent once as data and stepped, played and hovered there, no rerun per step.

Each view is a Streamlit components-v2 component (inline HTML, CSS and JS read from the files beside
its module, no build step); the figures in its data come from the engine, the view only draws them.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent


def read_asset(name: str) -> str:
    """The text of a view's .js/.css/.html file, read once when its module is imported."""
    return (HERE / name).read_text(encoding="utf-8")
