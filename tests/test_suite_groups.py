"""The suite's own scheduling: under pytest-xdist, the tests conftest.py groups reach the workers grouped."""

from __future__ import annotations

import os

import pytest


def test_tests_that_share_a_costly_fixture_carry_their_group_to_the_worker(request):
    # pytest-xdist keeps a group on one worker only when a test's id ends in "@group" as the worker collects it:
    # conftest.py marks the groups (a browser file, a shared server, llama.cpp's fixtures) before that happens
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.skip("only pytest-xdist's workers schedule by group")
    marked = [i for i in request.session.items if i.get_closest_marker("xdist_group")]
    if not marked:
        pytest.skip("no test this run selected is grouped")
    assert all("@" in i.nodeid for i in marked), [i.nodeid for i in marked if "@" not in i.nodeid][:5]
