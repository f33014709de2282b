"""torch, transformers and xgrammar: imported once per process, by one thread, while any other that needs them waits.

They take several seconds to import, so a server imports them in the background (the warm-up)
while its first page draws without them. Two threads importing transformers' lazy modules at the
same time can hand one of them a half-initialised module ("cannot import name
'PreTrainedTokenizerBase' from 'transformers'"): Python breaks a cycle of import locks that way.
`guard_imports()` wraps Python's `__import__` until they are imported: a thread about to import
one of them calls `import_heavy()` first, which imports all three under one lock (or waits for the
thread that holds it). So no call site needs to remember the rule, and a page that needs none of
them never waits.
"""

from __future__ import annotations

import builtins
import importlib
import threading
import time

# the packages, and the modules outside them that import torch while they load (a thread holding one of those
# locks while it waits for torch, and the importing thread needing it, would be the cycle again)
HEAVY = ("torch", "transformers", "xgrammar")
IMPORTS_TORCH = ("safetensors.torch",)

_lock = threading.Lock()
_owner: int | None = None  # the thread importing them now
_done = threading.Event()
_seconds: dict[str, float] = {}
_errors: dict[str, str] = {}


def import_heavy(timeout: float | None = None) -> dict[str, float]:
    """Import HEAVY in this thread unless done (another thread importing them meanwhile: wait for it, up to
    `timeout` seconds); seconds each. A package that fails to import is recorded, not raised: the import that needs it
    raises its own error."""
    global _owner
    if _done.is_set() or _owner == threading.get_ident():
        return dict(_seconds)
    if not _lock.acquire(timeout=-1 if timeout is None else timeout):
        return dict(_seconds)
    try:
        _owner = threading.get_ident()
        for name in HEAVY:
            if _done.is_set() or name in _seconds:
                continue
            started = time.perf_counter()
            try:
                importlib.import_module(name)
            except Exception as error:
                _errors[name] = f"{type(error).__name__}: {str(error)[:200]}"
            _seconds[name] = round(time.perf_counter() - started, 3)
        _done.set()
        _unguard()
    finally:
        _owner = None
        _lock.release()
    return dict(_seconds)


def heavy_errors() -> dict[str, str]:
    """The packages of HEAVY that failed to import, with their errors."""
    return dict(_errors)


def _is_heavy(name: str) -> bool:
    return name.split(".", 1)[0] in HEAVY or name in IMPORTS_TORCH


# an import statement that waits for another thread's import_heavy() gives up after this long and goes on
WAIT_LIMIT_S = 300.0
_original_import = builtins.__import__


def _waiting_import(name, globals=None, locals=None, fromlist=(), level=0):
    # before the import takes any of Python's module locks: waiting while holding one that the importing thread
    # needs would deadlock (a finder on sys.meta_path runs too late for that)
    if level == 0 and not _done.is_set() and _owner != threading.get_ident() and _is_heavy(name):
        import_heavy(WAIT_LIMIT_S)
    return _original_import(name, globals, locals, fromlist, level)


def guard_imports() -> None:
    """Make every import statement of HEAVY's modules go through import_heavy() until they are imported (then the
    plain import comes back, costing nothing). Once per process; a thread's own imports inside torch go on as usual."""
    if not _done.is_set() and builtins.__import__ is _original_import:
        builtins.__import__ = _waiting_import


def _unguard() -> None:
    if builtins.__import__ is _waiting_import:
        builtins.__import__ = _original_import
