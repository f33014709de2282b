"""Which confinement this machine can give `run_tests`, strongest first, probed once and kept.

`bwrap` (bubblewrap) where it runs here; else `landlock` (Linux 5.13 or later), in namespaces made by
`unshare` where the machine allows them; else `weak` (the same namespaces without Landlock), only where
the settings allow it (`QWEN_SANDBOX_WEAK=1`); else a ToolRefusal. Each probe that fails says why, and
the chosen mode keeps those reasons for the set-up page.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

from ..settings import load_settings
from .bwrap import build_bwrap_argv
from .programs import resolved_python, running_as_root
from .workspace import ToolRefusal

LOG = logging.getLogger(__name__)
# the modes tried, strongest first (tests narrow this to check one mode on its own)
MODES = ("bwrap", "landlock", "weak")
# the machines the launcher's seccomp filter is written for (syscall_filter.SYSCALL_TABLES; a test keeps them equal)
SECCOMP_MACHINES = ("x86_64", "aarch64")
# the namespaces unshare makes for the landlock and weak modes (its own /proc, the mounts private)
UNSHARE = (
    "unshare",
    "--pid",
    "--fork",
    "--kill-child",
    "--ipc",
    "--mount",
    "--net",
    "--uts",
    "--mount-proc",
    "--propagation",
    "private",
)


@dataclass(frozen=True)
class Confinement:
    mode: str  # "bwrap", "landlock" or "weak"
    network_prefix: tuple[str, ...] = ()  # the unshare command that makes the namespaces (landlock, weak), () if none
    why_not: tuple[str, ...] = ()  # for each stronger mode, why it was not chosen


def _last_line(data: bytes) -> str:
    lines = data.decode("utf-8", "replace").strip().splitlines()
    return lines[-1][:300] if lines else "no message"


def probe_bwrap() -> str | None:
    """None when bubblewrap runs the resolved interpreter here; else why not, in a sentence."""
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (apt-get install bubblewrap)"
    with tempfile.TemporaryDirectory(prefix="bwrap-probe-") as folder:
        command = [*build_bwrap_argv(folder), resolved_python(), "-I", "-c", "print('ok')"]
        try:
            probe = subprocess.run(command, capture_output=True, timeout=20, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"bubblewrap could not be started ({error})"
    if probe.returncode == 0 and probe.stdout.strip() == b"ok":
        return None
    return f"bubblewrap failed here: {_last_line(probe.stderr or probe.stdout)}"


def bwrap_works() -> bool:
    """Whether bubblewrap is installed and can make its namespaces here (user namespaces, or root)."""
    return probe_bwrap() is None


def _network_isolation() -> tuple[str, ...]:
    """The unshare command that gives the child its own namespaces, when this system allows it."""
    return probe_unshare()[0]


_UNSHARE_PROBE: list[tuple[tuple[str, ...], str | None]] = []


def probe_unshare() -> tuple[tuple[str, ...], str | None]:
    """The unshare command that works here (with a user namespace when not root), and why none does."""
    if not _UNSHARE_PROBE:
        prefix = UNSHARE if running_as_root() else ("unshare", "--user", "--map-root-user", *UNSHARE[1:])
        try:
            probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
            reason = None if probe.returncode == 0 else f"unshare failed here: {_last_line(probe.stderr)}"
        except (OSError, subprocess.TimeoutExpired) as error:
            reason = f"unshare could not be started ({error})"
        _UNSHARE_PROBE.append((prefix if reason is None else (), reason))
    return _UNSHARE_PROBE[0]


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 when it has none (or refuses it)."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        return max(0, int(libc.syscall(444, None, 0, 1)))
    except (OSError, AttributeError):
        return 0


_CHOSEN: dict[tuple[str, ...], Confinement | None] = {}
_WHY_NOT: dict[tuple[str, ...], tuple[str, ...]] = {}

REFUSED = (
    "error: run_tests is switched off on this server: it has neither bubblewrap (install the "
    "'bubblewrap' package) nor Landlock (Linux 5.13 or later), so a test could read every file the "
    "server can. On a single-user machine, set QWEN_SANDBOX_WEAK=1 to run tests behind the audit hook alone."
)


def choose_confinement(modes: tuple[str, ...] | None = None, allow_weak: bool | None = None) -> Confinement:
    """The strongest mode of `modes` this machine can give, or a ToolRefusal saying why none can.

    A probe that fails is logged with its reason, once, and kept in the Confinement's `why_not`."""
    modes = MODES if modes is None else modes
    if modes not in _CHOSEN:
        found = None
        why_not: list[str] = []
        if "bwrap" in modes:
            reason = probe_bwrap()
            if reason is None:
                found = Confinement("bwrap")
            else:
                why_not.append(f"not bubblewrap: {reason}")
        if found is None and "landlock" in modes:
            abi = landlock_abi()
            if abi >= 1:
                found = Confinement("landlock", _network_isolation(), tuple(why_not))
            else:
                why_not.append(
                    "not Landlock: this kernel has none (Linux 5.13 or later, with landlock in its LSM list)"
                )
        for line in why_not:
            LOG.warning("run_tests: %s", line)
        _CHOSEN[modes] = found
        _WHY_NOT[modes] = tuple(why_not)
    chosen = _CHOSEN[modes]
    if chosen is not None:
        return chosen
    allow_weak = load_settings().sandbox_weak if allow_weak is None else allow_weak
    if "weak" in modes and allow_weak:
        return Confinement("weak", _network_isolation(), _WHY_NOT[modes])
    raise ToolRefusal(REFUSED)


def has_seccomp_filter() -> bool:
    """Whether this machine's architecture has a seccomp filter (elsewhere only the weak mode runs, without one)."""
    return os.uname().machine in SECCOMP_MACHINES


def why_not_stronger() -> tuple[str, ...]:
    """Why each mode stronger than the one chosen (of MODES) was not: empty before the first choice."""
    return _WHY_NOT.get(MODES, ())
