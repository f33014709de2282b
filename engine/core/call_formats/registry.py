"""One registry class for plug-ins found by folder: a name → an object, kept in each object's order.

Call formats (engine/core/call_formats/) and API wire formats (engine/wire/formats/) register
this way, as vLLM's tool parsers do by module: every module of the package that defines the
named attribute is imported and registered when the package loads, so a new one is a new file
in the folder and no table elsewhere is edited.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from ...errors import BadInput

T = TypeVar("T")


class Registry(Generic[T]):
    """Objects of one kind by name, in order (`order`, then name); `get` teaches the names there are."""

    def __init__(self, noun: str, key: Callable[[T], str], check: Callable[[T], None] | None = None):
        self.noun = noun  # what an error calls an entry: "call format", "wire format"
        self.key = key  # an entry's name
        self.check = check  # refuses an entry that is incomplete (raises BadInput)
        self._entries: dict[str, T] = {}

    def register(self, entry: T) -> T:
        """Add an entry (a second one under the same name replaces the first)."""
        name = self.key(entry)
        if not name:
            raise BadInput(
                f"{type(entry).__name__} has no name: set the class's key to the name a command line will take"
            )
        if self.check is not None:
            self.check(entry)
        self._entries[name] = entry
        ordered = sorted(self._entries.values(), key=lambda e: (getattr(e, "order", 100), self.key(e)))
        self._entries = {self.key(e): e for e in ordered}
        return entry

    def unregister(self, name: str) -> None:
        """Remove an entry (a test's own format, after the test)."""
        self._entries.pop(name, None)

    def load(self, package: str, path, attribute: str, kind: type) -> None:
        """Import every module of `package` (at `path`) and register the `attribute` each defines as a `kind`."""
        for module in pkgutil.iter_modules(path):
            found = getattr(importlib.import_module(f"{package}.{module.name}"), attribute, None)
            if isinstance(found, kind):
                self.register(found)

    def get(self, name: str) -> T:
        """The entry called `name`, or an error that lists the names there are."""
        if name not in self._entries:
            raise BadInput(f"unknown {self.noun} {name!r}; the {self.noun}s are {', '.join(self._entries)}")
        return self._entries[name]

    def names(self) -> tuple[str, ...]:
        return tuple(self._entries)

    def values(self) -> list[T]:
        return list(self._entries.values())

    def where(self, test: Callable[[T], bool]) -> list[T]:
        """The entries for which `test` holds, in order: what a page or command lists by a flag."""
        return [e for e in self._entries.values() if test(e)]

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __getitem__(self, name: str) -> T:
        return self.get(name)
