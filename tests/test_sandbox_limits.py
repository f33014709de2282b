"""What a workspace may hold, and what walking a large one may cost.

The workspace's size counts every file and a block per folder, so new folders cannot pile
up unseen; `write_file` goes a bounded number of folders down and keeps the count of entries
under a cap; grep's time budget covers walking the folders as well as searching the files.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import replace

import pytest

from engine.harness.tools import run_tool
from engine.sandbox.workspace import FOLDER_BYTES, Limits, Usage, Workspace

LIMITS = Limits()


def count_folders(root) -> int:
    return sum(len(dirs) for _here, dirs, _files in os.walk(root))


def test_size_counts_folders_and_every_file(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "x.txt").write_text("12345")
    (tmp_path / "empty.txt").write_text("")
    os.symlink("a/b/x.txt", tmp_path / "link")
    ws = Workspace(tmp_path)
    assert ws.usage() == Usage(bytes=5 + 2 * FOLDER_BYTES + len("a/b/x.txt"), files=3, folders=2)
    assert ws.size() == 5 + 2 * FOLDER_BYTES + 9


@pytest.mark.parametrize(
    "depth, made",
    [
        pytest.param(LIMITS.path_depth, True, id="at-the-depth-limit"),
        pytest.param(LIMITS.path_depth + 1, False, id="one-past-it"),
        pytest.param(253, False, id="as-deep-as-a-512-character-path-allows"),
    ],
)
def test_write_file_depth(tmp_path, depth, made):
    outcome = run_tool("write_file", {"path": "d/" * depth + "f.txt", "content": "x"}, Workspace(tmp_path))
    assert (outcome.error is None) is made, outcome.text
    assert count_folders(tmp_path) == (depth if made else 0)


def test_forty_deep_writes_cannot_make_ten_thousand_folders(tmp_path):
    """40 calls with deep new paths (10,416 folders before) are refused; 80 at the depth limit stop at the entry cap."""
    ws = Workspace(tmp_path)
    outcomes = [
        run_tool("write_file", {"path": f"n{i}/" + "d/" * 250 + "f.txt", "content": "x"}, ws) for i in range(40)
    ]
    outcomes += [
        run_tool("write_file", {"path": f"m{i}/" + "d/" * 15 + "f.txt", "content": "x"}, ws) for i in range(80)
    ]
    usage = ws.usage()
    assert usage.folders == count_folders(tmp_path) <= LIMITS.workspace_bytes // FOLDER_BYTES
    assert usage.entries <= LIMITS.workspace_entries
    assert usage.bytes <= LIMITS.workspace_bytes
    refusals = {o.error for o in outcomes if o.error}
    assert refusals == {
        f"error: n{i}/{'d/' * 250}f.txt is 251 folders deep; write_file goes up to 16 folders down" for i in range(40)
    } | {f"error: the workspace would hold more than {LIMITS.workspace_entries} files and folders"}
    # 16 folders and a file per successful call, until the count of entries is reached
    written = sum(o.error is None for o in outcomes)
    assert usage.folders == 16 * written and written == LIMITS.workspace_entries // 17


@pytest.fixture(scope="module")
def hundred_thousand_files(tmp_path_factory):
    """100,000 small files in 100 folders (made once for the module)."""
    root = tmp_path_factory.mktemp("many")
    for folder in range(100):
        here = root / f"f{folder:03}"
        here.mkdir()
        for n in range(1000):
            fd = os.open(here / f"{n:04}.txt", os.O_WRONLY | os.O_CREAT, 0o644)
            os.write(fd, b"nothing\n")
            os.close(fd)
    yield root
    # removed here, not left to pytest: it deletes an old run's folders when a later run starts, and 100,000 files
    # left behind by each run held the next one's start for minutes
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.parametrize("budget", [0.2, 0.5])
def test_grep_time_budget_covers_walking_100000_files(hundred_thousand_files, budget):
    ws = Workspace(hundred_thousand_files, replace(LIMITS, grep_seconds=budget))
    started = time.monotonic()
    outcome = run_tool("grep", {"pattern": "needle"}, ws)
    seconds = time.monotonic() - started
    assert outcome.result == f"... stopped after {budget:g} s"
    assert seconds < budget + 0.5


@pytest.mark.parametrize(
    "files, shown, note",
    [
        pytest.param(
            {f"f{i:04}.txt": "x" for i in range(3000)},
            30,
            "2,970 more file(s) (2,970 bytes) not shown: the page shows up to 30 files and 65,536 bytes of text",
            id="3000-files",
        ),
        pytest.param(
            {f"f{i}.txt": "y" * 40_000 for i in range(3)},
            1,
            "2 more file(s) (80,000 bytes) not shown: the page shows up to 30 files and 65,536 bytes of text",
            id="too-many-bytes",
        ),
        pytest.param({"a.txt": "hello", "b/c.txt": "bye"}, 2, None, id="all-fit"),
    ],
)
def test_the_playground_caps_what_it_shows(files, shown, note):
    from engine.harness.playground import cap_for_display

    capped = cap_for_display(files)
    assert len(capped.files) == shown and capped.note == note
    assert list(capped.files) == sorted(files)[:shown]


def test_snapshot_stops_at_the_entry_cap(tmp_path):
    from engine.harness.playground import snapshot

    for i in range(50):
        (tmp_path / f"f{i:02}.txt").write_text(str(i))
    files = snapshot(Workspace(tmp_path, replace(LIMITS, workspace_entries=20)))
    assert list(files) == [f"f{i:02}.txt" for i in range(20)]
