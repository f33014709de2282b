"""Settings shared by the engine, read once from the environment, in one dataclass."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "assets"
LESSONS = ROOT / "lessons"
VENDORED_TOKENIZER = ASSETS / "qwen3-tokenizer"
DEFAULT_MODEL = "Qwen/Qwen3-1.7B"


@dataclass(frozen=True)
class Settings:
    # hub id or local folder of the live model; QWEN_MODEL overrides the default
    model: str = field(default_factory=lambda: os.environ.get("QWEN_MODEL", DEFAULT_MODEL))
    # where the tokenizer comes from: the vendored copy unless QWEN_TOKENIZER names another id or folder
    tokenizer: str = field(default_factory=lambda: os.environ.get("QWEN_TOKENIZER", str(VENDORED_TOKENIZER)))
    # Qwen3's thinking switch, off by default as in the lessons (seed 002: "thinking off")
    enable_thinking: bool = False
    # run_tests without bubblewrap or Landlock (the audit hook alone): only on a single-user machine,
    # since a test could then read any file the server can; QWEN_SANDBOX_WEAK=1 allows it
    sandbox_weak: bool = field(default_factory=lambda: os.environ.get("QWEN_SANDBOX_WEAK", "") == "1")


def load_settings() -> Settings:
    """The settings in force now (environment read at call time)."""
    return Settings()
