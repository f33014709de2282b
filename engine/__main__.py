"""`python -m engine COMMAND ...`: the command line, which lives in engine/cli/ (a module per command)."""

from __future__ import annotations

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
