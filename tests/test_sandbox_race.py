"""A check-then-use race: another process swaps a folder for a symlink to outside while the tools run.

`Workspace.resolve` checks a path, and a folder on it can be swapped for a symlink before the
file is opened. The tools open by descriptor, one folder at a time with O_NOFOLLOW, so such a
swap makes the call fail ("changed while it was being opened", or "leaves the workspace")
instead of reading or writing outside. A few thousand tries, bounded in time: no escape, and
the swap must have been seen to bite (some calls refused), so that the test has teeth.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

from engine.harness.tools import run_tool
from engine.sandbox.workspace import Workspace

TRIES = 3000
SECONDS = 20.0  # the loop stops early past this, whatever the count

SWAPPER = textwrap.dedent("""
    import os, shutil, sys
    ws, out = sys.argv[1], sys.argv[2]
    race, held = os.path.join(ws, "race"), os.path.join(ws, "race_held")
    while True:
        for step in (lambda: os.rename(race, held), lambda: os.symlink(out, race), lambda: os.unlink(race)):
            try:
                step()
            except OSError:
                pass
        try:
            os.rename(held, race)
        except OSError:
            # write_file made a fresh `race` folder while the real one was held: drop it, keep swapping
            if os.path.isdir(race) and not os.path.islink(race):
                shutil.rmtree(race, ignore_errors=True)
""")


@pytest.fixture
def swapping(tmp_path):
    """A workspace whose folder `race` another process keeps swapping for a symlink to `outside`."""
    ws, out = tmp_path / "ws", tmp_path / "outside"
    (ws / "race").mkdir(parents=True)
    out.mkdir()
    (ws / "race" / "f.txt").write_text("inside\n")
    (out / "f.txt").write_text("OUTSIDE\n")
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(ws), str(out)])
    time.sleep(0.2)
    yield Workspace(ws), out
    swapper.kill()
    swapper.wait()


def test_no_read_or_write_escapes_while_a_folder_is_swapped(swapping):
    ws, out = swapping
    escapes = refused = tries = 0
    deadline = time.monotonic() + SECONDS
    while tries < TRIES and time.monotonic() < deadline:
        tries += 1
        read = run_tool("read_file", {"path": "race/f.txt"}, ws)
        if read.result is not None and "OUTSIDE" in read.result:
            escapes += 1
        refused += read.error is not None
        wrote = run_tool("write_file", {"path": "race/w.txt", "content": "x"}, ws)
        refused += wrote.error is not None
        if (out / "w.txt").exists():
            escapes += 1
            (out / "w.txt").unlink()
    assert tries >= 200, f"only {tries} tries in {SECONDS} s"
    assert escapes == 0, f"{escapes} escapes in {tries} tries"
    # the swap did happen under the tools' feet
    assert refused > 0
    assert (out / "f.txt").read_text() == "OUTSIDE\n"
    print(f"tries={tries} refused={refused} escapes={escapes}")
