"""What `run_tests` does with a visitor's code on this server, in words a page can show as they are.

The mode in force and why no stronger one, and the whole run's limits: who the tests run as, the
seccomp filter, the slots, the memory and processes and where their caps come from.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .cgroup import RUN_MEMORY_BYTES, RUN_PROCESSES, cgroup_status
from .child import MEMORY_BYTES
from .modes import (
    REFUSED,
    SECCOMP_MACHINES,
    choose_confinement,
    has_seccomp_filter,
    probe_unshare,
    why_not_stronger,
)
from .programs import running_as_root
from .slots import slot_count, visitor_share
from .workspace import ToolRefusal


@dataclass(frozen=True)
class ConfinementReport:
    """What `run_tests` does with a visitor's code on this server, in words a page can show as they are."""

    mode: str  # "bwrap", "landlock", "weak" or "off"
    summary: str  # one sentence: the mode in force
    why_not: tuple[str, ...]  # why each stronger mode was not chosen
    limits: str  # the whole run's limits and where they come from


MODE_WORDS = {
    "bwrap": "bubblewrap: the tests see only Python's files and their copy of the workspace",
    "landlock": "Landlock: the tests may read only Python's files and write only their copy of the workspace",
    "weak": "the audit hook alone (QWEN_SANDBOX_WEAK=1): the tests can read any file the server can",
}


def describe_confinement() -> ConfinementReport:
    """Which mode run_tests uses here and why no stronger one, and the whole run's limits: for the pages to show."""
    try:
        chosen = choose_confinement()
    except ToolRefusal:
        return ConfinementReport(
            "off", "run_tests is switched off: " + REFUSED.split(": ", 2)[-1], why_not_stronger(), ""
        )
    why_not = list(chosen.why_not)
    if chosen.mode != "bwrap" and not chosen.network_prefix:
        why_not.append(f"no namespaces of its own: {probe_unshare()[1]}")
    cgroup_reason = cgroup_status()
    who = (
        "a uid of its own per slot"
        if running_as_root()
        else "an unprivileged user in a user namespace"
        if chosen.mode == "bwrap" or chosen.network_prefix
        else "the server's own user (no user namespace here)"
    )
    if not has_seccomp_filter():
        why_not.append(
            f"no seccomp filter: it is written for {' and '.join(SECCOMP_MACHINES)}, and this machine is "
            f"{os.uname().machine}"
            + (
                ""
                if chosen.mode == "weak"
                else "; every run is refused (QWEN_SANDBOX_WEAK=1 runs them without it, for trusted visitors only)"
            )
        )
    seccomp = "a seccomp filter" if has_seccomp_filter() else "no seccomp filter"
    limits = (
        f"Each run: {who}, no capabilities, {seccomp}, nice 10 on its own autogroup; at most {slot_count()} at once, "
        f"{visitor_share(slot_count())} per visitor; "
        + (
            f"memory {RUN_MEMORY_BYTES >> 20} MiB and {RUN_PROCESSES} processes for the whole run ({cgroup_reason})"
            if cgroup_reason.startswith("cgroup")
            else f"{MEMORY_BYTES >> 20} MiB per process and {RUN_PROCESSES} processes ({cgroup_reason})"
        )
    )
    return ConfinementReport(chosen.mode, "run_tests runs in " + MODE_WORDS[chosen.mode], tuple(why_not), limits)
