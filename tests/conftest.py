"""Shared pytest fixtures. Tests never need model weights: the live engine's tests use `tiny_engine`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session")
def tiny_engine():
    """The tiny random-weights Qwen3 with the real tokenizer, built once per test session (imports torch)."""
    from engine.model import TINY, load_engine

    return load_engine(TINY)
