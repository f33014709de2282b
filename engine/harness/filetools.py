"""The five harness tools of [[reading-tool-calls]], each confined to a `Workspace` and bounded in size and time.

Every file is opened by descriptor, one folder at a time with O_NOFOLLOW (`Workspace.open_beneath`),
so a folder swapped for a symlink during a call cannot lead outside. `grep` uses RE2 (linear
time, so no pattern can run for ever) and one time budget for walking and searching;
`run_tests` runs the workspace's unittest suite on a confined copy of the workspace
(engine/sandbox/child.py), killed at its time limit. File names that hold control characters, or a
colon in grep's output, are shown quoted, so that no name can pass for another line of output.
"""

from __future__ import annotations

import fnmatch
import json
import os
import stat
import sys
import sysconfig
import time
from collections.abc import Iterator

import re2

from ..sandbox.child import run_confined
from ..sandbox.workspace import ToolRefusal, Workspace


def show_name(name: str, colon: bool = False) -> str:
    """A file name as it can be printed on one line of output: quoted (JSON) when it holds a control character."""
    if not name.isprintable() or (colon and ":" in name) or name.startswith('"'):
        return json.dumps(name)
    return name


def _read_fd(fd: int, limit: int) -> bytes:
    chunks, size = [], 0
    while size <= limit:
        chunk = os.read(fd, min(65536, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def read_file(ws: Workspace, path: str) -> str:
    target = ws.resolve(path)
    if target.is_dir():
        raise ToolRefusal(f"error: {path} is a folder; use list_files")
    # O_NONBLOCK: a fifo swapped in must not make the open wait
    fd = ws.open_beneath(target, os.O_RDONLY | os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ToolRefusal(f"error: {path} is not a regular file or folder")
        if info.st_size > ws.limits.read_bytes:
            raise ToolRefusal(
                f"error: {path} is {info.st_size} bytes; read_file returns files up to {ws.limits.read_bytes} bytes"
            )
        data = _read_fd(fd, ws.limits.read_bytes)
    finally:
        os.close(fd)
    if len(data) > ws.limits.read_bytes:
        raise ToolRefusal(f"error: {path} grew past {ws.limits.read_bytes} bytes while it was read")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolRefusal(f"error: {path} is not a UTF-8 text file") from None


def list_files(ws: Workspace, dir: str = ".") -> str:
    target = ws.resolve(dir)
    if not target.is_dir():
        raise ToolRefusal(f"error: {dir} is a file, not a folder")
    fd = ws.open_folder(target)
    try:
        with os.scandir(fd) as listing:
            found = sorted((e.name, e.is_dir(follow_symlinks=False)) for e in listing)
    finally:
        os.close(fd)
    entries = [show_name(name) + ("/" if is_dir else "") for name, is_dir in found if name != "__pycache__"]
    if not entries:
        return "(empty folder)"
    shown = entries[: ws.limits.list_entries]
    more = len(entries) - len(shown)
    return "\n".join(shown) + (f"\n... and {more} more" if more else "")


def write_file(ws: Workspace, path: str, content: str) -> str:
    limits = ws.limits
    if not isinstance(content, str):
        raise ToolRefusal("error: content must be a string")
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolRefusal("error: content is not valid text (it holds a lone surrogate)") from None
    if len(data) > limits.write_bytes:
        raise ToolRefusal(f"error: content is {len(data)} bytes; write_file accepts up to {limits.write_bytes}")
    target = ws.resolve(path, must_exist=False)
    if not path.isprintable():
        raise ToolRefusal(
            "error: the path holds a control character (such as a newline or tab); "
            "give a file name of printable characters"
        )
    if target.is_dir():
        raise ToolRefusal(f"error: {path} is a folder")
    parts = target.relative_to(ws.root).parts
    if len(parts) - 1 > limits.path_depth:
        raise ToolRefusal(
            f"error: {path} is {len(parts) - 1} folders deep; write_file goes up to {limits.path_depth} folders down"
        )
    # what this write adds: the missing folders, the file if new, and its bytes
    missing = [p for p in (target.parents[i] for i in range(len(parts) - 1)) if not os.path.lexists(p)]
    new_file = not os.path.lexists(target)
    usage = ws.usage()
    old = target.stat().st_size if not new_file else 0
    if usage.entries + len(missing) + new_file > limits.workspace_entries:
        raise ToolRefusal(f"error: the workspace would hold more than {limits.workspace_entries} files and folders")
    from ..sandbox.workspace import FOLDER_BYTES

    if usage.bytes - old + len(data) + FOLDER_BYTES * len(missing) > limits.workspace_bytes:
        raise ToolRefusal(f"error: the workspace would grow past {limits.workspace_bytes} bytes")
    # opened without truncating: the checks below run on the very file that would be written
    fd = ws.open_beneath(target, os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK, 0o644, make_folders=len(missing))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ToolRefusal(f"error: {path} is not a regular file or folder")
        # a hard link shares its content with another name, perhaps outside the workspace
        if info.st_nlink > 1:
            raise ToolRefusal(
                f"error: {path} is a hard link ({info.st_nlink} names for one file); "
                "write_file will not change it, write to a new name instead"
            )
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    return f"wrote {len(data)} bytes to {ws.relative(target)}"


def grep(ws: Workspace, pattern: str, path: str = ".") -> str:
    limits = ws.limits
    # one budget for walking the folders and searching the files
    deadline = time.monotonic() + limits.grep_seconds
    stopped = f"... stopped after {limits.grep_seconds:g} s"
    if isinstance(pattern, str) and len(pattern) > limits.grep_pattern_chars:
        raise ToolRefusal(f"error: the pattern is longer than {limits.grep_pattern_chars} characters")
    options = re2.Options()
    options.log_errors = False
    try:
        regex = re2.compile(pattern, options)
    except re2.error:
        raise ToolRefusal(f"error: {pattern!r} is not a valid regular expression (RE2 syntax)") from None
    except Exception:
        raise ToolRefusal("error: the pattern could not be compiled") from None
    # RE2 is linear in the text, but each byte costs up to the program's size: bound both
    if regex.programsize > limits.grep_program_size:
        raise ToolRefusal(
            f"error: the pattern is too complex for grep (its RE2 program has {regex.programsize} steps; the limit is {limits.grep_program_size})"
        )
    start = ws.resolve(path)
    lines: list[str] = []
    size = 0
    for relative, data in _files_to_search(ws, start, deadline):
        if relative is None:
            lines.append(stopped)
            break
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if time.monotonic() > deadline:
                lines.append(stopped)
                return "\n".join(lines)
            if regex.search(line[: limits.grep_line_chars]):
                entry = f"{show_name(relative, colon=True)}:{number}: {line[:300]}"
                size += len(entry) + 1
                if len(lines) >= limits.grep_lines or size > limits.grep_bytes:
                    lines.append("... more matches not shown")
                    return "\n".join(lines)
                lines.append(entry)
    return "\n".join(lines) if lines else "(no matches)"


def _read_regular(fd: int, limit: int) -> bytes | None:
    """An open file's bytes; None if it is not a regular file or is larger than `limit`."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
        return None
    data = _read_fd(fd, limit)
    return data if len(data) <= limit else None


def _read_small(name: str, folder: int, limit: int) -> bytes | None:
    """A regular file's bytes, opened without following a symlink; None if it is anything else or too large."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
    except OSError:
        return None
    try:
        return _read_regular(fd, limit)
    finally:
        os.close(fd)


def _files_to_search(ws: Workspace, start, deadline: float) -> Iterator[tuple[str | None, bytes]]:
    """(relative path, bytes) of each file under `start`, in path order; (None, b"") when the time is up.

    Walks by descriptor (no symlink followed, hidden folders and caches skipped) and checks the
    clock at every entry, so a folder of 100,000 files cannot outlast the budget."""
    limit = ws.limits.grep_file_bytes
    if not start.is_dir():
        fd = ws.open_beneath(start, os.O_RDONLY | os.O_NONBLOCK)
        try:
            data = _read_regular(fd, limit)
        finally:
            os.close(fd)
        if data is not None:
            yield ws.relative(start), data
        return
    top = ws.open_folder(start)
    base = "" if start == ws.root else ws.relative(start) + "/"
    # a stack of (folder descriptor, its relative path, names left to visit in order)
    stack: list[tuple[int, str, list[tuple[str, bool]]]] = []
    try:
        stack.append((top, base, _sorted_entries(top, deadline)))
        while stack:
            if time.monotonic() > deadline:
                yield None, b""
                return
            folder, prefix, names = stack[-1]
            if not names:
                os.close(folder)
                stack.pop()
                continue
            name, is_dir = names.pop()
            if is_dir:
                if name == "__pycache__" or name.startswith("."):
                    continue
                try:
                    below = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
                except OSError:
                    continue
                stack.append((below, f"{prefix}{name}/", _sorted_entries(below, deadline)))
                continue
            data = _read_small(name, folder, limit)
            if data is not None:
                yield f"{prefix}{name}", data
    finally:
        for folder, _prefix, _names in stack:
            os.close(folder)


def _sorted_entries(folder: int, deadline: float) -> list[tuple[str, bool]]:
    """A folder's (name, is folder) entries, last first (the walk pops from the end); cut short at the deadline."""
    found = []
    with os.scandir(folder) as listing:
        for entry in listing:
            if time.monotonic() > deadline:
                break
            try:
                found.append((entry.name, entry.is_dir(follow_symlinks=False)))
            except OSError:
                continue
    return sorted(found, reverse=True)


def run_tests(ws: Workspace, pattern: str = "test_*.py") -> str:
    limits = ws.limits
    if not isinstance(pattern, str) or "/" in pattern or "\0" in pattern or len(pattern) > 100:
        raise ToolRefusal("error: pattern must be a file-name glob such as test_*.py")
    fd = ws.open_folder(ws.root)
    try:
        with os.scandir(fd) as listing:
            matching = any(fnmatch.fnmatch(e.name, pattern) and e.is_file(follow_symlinks=False) for e in listing)
    finally:
        os.close(fd)
    if not matching:
        return f"no test files match {pattern}"
    run = run_confined(ws, pattern)
    if run.stopped == "time":
        raise ToolRefusal(
            f"error: the tests did not finish within {limits.test_seconds:g} s and were killed "
            "(every process they started went with them)"
        )
    text = run.output.decode("utf-8", errors="replace")
    # keep the output the same on every machine and run: no folder names, no timings
    text = hide_server_paths(text.replace(str(ws.root) + os.sep, ""))
    text = re2.sub(r"Ran (\d+) (tests?) in [0-9.]+s", r"Ran \1 \2", text)
    # the tests' lines marked as theirs, then cut to the cap; the harness's notes come after them
    body = quote_output(text.strip())
    notes = []
    if run.stopped == "output" or len(body) > limits.test_output_bytes:
        body = body[: limits.test_output_bytes]
        notes.append(
            "... output cut" + ("; the tests were stopped for printing too much" if run.stopped == "output" else "")
        )
    elif any(
        words in text for words in ("No space left on device", "[Errno 27] File too large", "database or disk is full")
    ):
        notes.append(
            f"(run_tests gives the tests {limits.test_write_bytes:,} bytes of disk, "
            f"{limits.write_bytes:,} bytes per file, {limits.test_new_entries} new files and folders)"
        )
    return frame_test_output(body, None if run.stopped == "output" else run.returncode, run.waited, notes)


def hide_server_paths(text: str) -> str:
    """`text` with the server's Python installation (each of its real and given paths) written <python>."""
    paths = {
        sys.prefix,
        sys.base_prefix,
        os.path.realpath(sys.prefix),
        os.path.realpath(sys.base_prefix),
        os.path.dirname(os.path.realpath(sys.executable)),
        os.path.dirname(sys.executable),
    }
    paths |= {value for value in sysconfig.get_paths().values()} | {
        os.path.realpath(v) for v in sysconfig.get_paths().values()
    }
    # the longest first, so that a folder inside the prefix is not cut in two
    for path in sorted((p for p in paths if p and p != os.sep and len(p) > 4), key=len, reverse=True):
        text = text.replace(path, "<python>")
    return text


VERDICTS = {0: "passed", 1: "failed", 5: "no tests found"}


def quote_output(text: str) -> str:
    """The tests' output with every line marked "| ": nothing a test prints can pass for the harness's lines."""
    return "\n".join(f"| {line}" if line else "|" for line in text.splitlines())


def frame_test_output(body: str, returncode: int | None, waited: bool, notes: list[str] | tuple = ()) -> str:
    """The harness's verdict (the exit code, which the output cannot change) on the first line and the last;
    between them the tests' output as `quote_output` marked it ("Ran 3 tests OK" a test printed is among
    its own lines), then the harness's notes."""
    if returncode is None:  # killed for printing too much
        verdict = "stopped for printing too much"
    else:
        verdict = f"exit code {returncode} ({VERDICTS.get(returncode, 'ended abnormally')})"
    head = f"[run_tests: {verdict}" + (", after waiting for a free slot" if waited else "")
    if not body:
        return "\n".join([head + "; the tests printed nothing]", *notes])
    return "\n".join(
        [
            head + "; the tests' own output follows, each line marked '| ']",
            body,
            *notes,
            f"[run_tests: end of the tests' output; {verdict}]",
        ]
    )


FILE_TOOLS = {
    "read_file": read_file,
    "list_files": list_files,
    "grep": grep,
    "write_file": write_file,
    "run_tests": run_tests,
}
