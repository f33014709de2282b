"""The sandbox: the workspace the tools act on, and where `run_tests` runs its tests, a confined child process
killed at its time limit.

`workspace.py` keeps every path a tool names inside the workspace and every size capped. A run of the
tests: `modes.py` chooses the mode, `slots.py` waits for a free slot, `child.py` starts the launcher in
a cgroup (`cgroup.py`) under bubblewrap (`bwrap.py`) or `unshare` and watches it, `report.py` says it all
in words for the set-up page. The programs run by path in a fresh interpreter (`programs.py` says where):
`launcher.py` (with `syscall_filter.py`) confines itself and execs `guard.py`, the audit hook and unittest.

The strongest confinement this machine offers is chosen once and kept, and
`describe_confinement` says which, and why a stronger one was not:
- `bwrap` (bubblewrap, https://github.com/containers/bubblewrap): new mount, PID, network,
  IPC and UTS namespaces; the filesystem holds Python's own folders read-only and a tmpfs of a
  fixed size and number of files, noexec, holding a copy of the workspace; no /proc of the host,
  no other process to see, signal or trace.
- `landlock`: new PID, IPC, mount, network and UTS namespaces made by `unshare` (where the
  machine allows it), the whole filesystem read-only but for the copy on a sized tmpfs, and
  Landlock rules that allow reads of Python's files and the copy only, writes to the copy only.
- `weak`: the same namespaces where `unshare` can make them, without Landlock. It is refused
  unless the settings allow it (`QWEN_SANDBOX_WEAK=1`, for a single-user machine), since a test
  could then read any file the server can.
In every mode the test runs as an unprivileged user with no capabilities (a uid of its own
per slot when the server is root), under a seccomp filter, yielding the CPU to the server
(nice 10 on its own autogroup, nice 19 inside it), with its memory and processes capped for the whole
run (a cgroup where one is delegated, else per-process limits and a per-user process count),
behind the guard's audit hook (guard.py) in an interpreter that never loaded
ctypes. At most `sandbox_slots` runs go at once, and one visitor's runs at most half of them; the
others wait for a free slot, a bounded time (`Limits.slot_wait_seconds`), then are refused with a message. The whole
run is killed at the time limit, whatever the test did with its output. What the tests write
stays in the copy, which is dropped.
"""
