"""Plug-ins found by folder: every module of a package that defines a named object of a given kind.

Styles (engine/core/styles/) and wire formats (engine/wire/formats/) register this way, as vLLM's
tool parsers do by module: a new one is a new file in the folder, and no table elsewhere is edited.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable


def register_package_plugins(package: str, path, attribute: str, kind: type, register: Callable) -> None:
    """Import every module of `package` (at `path`) but `base`, and `register` the `attribute` each defines as a `kind`."""
    for module in pkgutil.iter_modules(path):
        if module.name == "base":
            continue
        found = getattr(importlib.import_module(f"{package}.{module.name}"), attribute, None)
        if isinstance(found, kind):
            register(found)
