"""A cgroup for one `run_tests` run: its memory and process count capped as a whole, and everything in it killed at the end.

cgroup v2 where this server's own cgroup delegates the memory and pids controllers to it
(https://docs.kernel.org/admin-guide/cgroup-v2.html), else the v1 memory and pids
hierarchies where they are writable (a server run as root on an older layout). Where neither
is, `open_run_cgroup` says why, and the run falls back to per-process limits and a per-user
process count (engine/sandbox/launcher.py). `cgroup_status` says once which it is, for every run.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

LOG = logging.getLogger(__name__)
CGROUP_ROOT = Path("/sys/fs/cgroup")
RUN_MEMORY_BYTES = 768 << 20  # the whole run's memory, where a cgroup caps it
RUN_PROCESSES = 32  # the whole run's processes and threads


@dataclass
class RunCgroup:
    """The folders of one run's cgroup (one per hierarchy) and how its limits were set."""

    folders: list[Path]
    version: int

    def add(self, pid: int) -> None:
        for folder in self.folders:
            (folder / "cgroup.procs").write_text(str(pid))

    def pids(self) -> set[int]:
        found: set[int] = set()
        for folder in self.folders:
            try:
                found |= {int(p) for p in (folder / "cgroup.procs").read_text().split()}
            except OSError:
                continue
        return found

    def memory_peak(self) -> int | None:
        """The most memory the run held at once, where the kernel reports it."""
        name = "memory.peak" if self.version == 2 else "memory.max_usage_in_bytes"
        for folder in self.folders:
            try:
                return int((folder / name).read_text())
            except (OSError, ValueError):
                continue
        return None

    def close(self) -> None:
        """Kill every process left in the cgroup, then remove it."""
        if self.version == 2:
            try:
                (self.folders[0] / "cgroup.kill").write_text("1")
            except OSError:
                pass
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            left = self.pids()
            if not left:
                break
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.02)
        for folder in self.folders:
            for _ in range(50):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # still emptying
                    time.sleep(0.02)


def own_cgroup_paths() -> dict[str, str]:
    """This process's cgroup per hierarchy: {"": v2 path, "memory": v1 path, ...}, from /proc/self/cgroup."""
    paths = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return paths
    for line in lines:
        _number, controllers, path = line.split(":", 2)
        for name in controllers.split(","):
            paths[name] = path
    return paths


def _make(folder: Path, limits: dict[str, str]) -> None:
    folder.mkdir()
    try:
        for name, value in limits.items():
            (folder / name).write_text(value)
    except OSError:
        folder.rmdir()
        raise


def open_run_cgroup(name: str, memory_bytes: int, processes: int) -> tuple[RunCgroup | None, str]:
    """A fresh cgroup named `name` with the run's limits, or None and why none could be made."""
    paths = own_cgroup_paths()
    # cgroup v2, mounted at /sys/fs/cgroup itself, delegating memory and pids to this server's cgroup
    if (CGROUP_ROOT / "cgroup.controllers").exists() and "" in paths:
        base = CGROUP_ROOT / paths[""].lstrip("/")
        try:
            delegated = (base / "cgroup.subtree_control").read_text().split()
        except OSError:
            delegated = []
        if {"memory", "pids"} <= set(delegated):
            try:
                folder = base / name
                _make(folder, {"memory.max": str(memory_bytes), "memory.swap.max": "0", "pids.max": str(processes)})
                return RunCgroup([folder], 2), "cgroup v2"
            except OSError as error:
                return None, f"cgroup v2 is delegated but not writable ({error.strerror})"
    # cgroup v1: one hierarchy per controller
    memory_base = CGROUP_ROOT / "memory" / paths.get("memory", "/").lstrip("/")
    pids_base = CGROUP_ROOT / "pids" / paths.get("pids", "/").lstrip("/")
    if (memory_base / "memory.limit_in_bytes").exists() and (pids_base / "cgroup.procs").exists():
        made: list[Path] = []
        try:
            _make(memory_base / name, {"memory.limit_in_bytes": str(memory_bytes)})
            made.append(memory_base / name)
            _make(pids_base / name, {"pids.max": str(processes)})
            made.append(pids_base / name)
            return RunCgroup(made, 1), "cgroup v1"
        except OSError as error:
            for folder in made:
                try:
                    folder.rmdir()
                except OSError:
                    pass
            return None, f"the cgroup v1 memory and pids hierarchies are not writable ({error.strerror})"
    return None, "no cgroup with the memory and pids controllers is delegated to this server"


_CGROUP_STATUS: list[str] = []


def cgroup_status() -> str:
    """Whether runs get a cgroup: "cgroup v1", "cgroup v2", or why not (checked once)."""
    if not _CGROUP_STATUS:
        group, reason = open_run_cgroup(f"run-tests-probe-{os.getpid()}", RUN_MEMORY_BYTES, RUN_PROCESSES)
        if group is not None:
            group.close()
        else:
            LOG.warning("run_tests: no cgroup for the runs: %s", reason)
        _CGROUP_STATUS.append(reason)
    return _CGROUP_STATUS[0]
