"""What the server loads before it answers: `streamlit run app.py` serves router.py as an st.App whose lifespan
loads what Home needs and waits for the warm-up (ui/server_start.py); a step that fails never keeps it from starting."""

from __future__ import annotations

import pytest
from helpers import ROOT, free_port, run_python, start_streamlit, stop_server, wait_healthy
from streamlit.web.server.app_discovery import discover_asgi_app

from ui import server_start

PRELOAD = """
import json, sys
sys.path.insert(0, {root!r})
from ui.server_start import preload, ui_modules
report = preload()
print(json.dumps({{"errors": report.errors, "steps": list(report.seconds),
                   "loaded": all(m in sys.modules for m in ui_modules()),
                   "pandas": "pandas" in sys.modules and "pyarrow" in sys.modules}}))
"""


def test_streamlit_run_app_py_serves_the_router_as_an_app_with_a_lifespan():
    found = discover_asgi_app(ROOT / "app.py")
    assert found.is_asgi_app and found.import_string == "app:app"
    source = (ROOT / "app.py").read_text(encoding="utf-8")
    assert 'st.App("router.py", lifespan=lifespan)' in source
    # router.py is what each page runs; app.py itself draws nothing
    assert "route()" in (ROOT / "router.py").read_text(encoding="utf-8")


def test_the_preload_imports_every_ui_module_pandas_and_the_tokenizer_in_a_fresh_process():
    result = run_python(PRELOAD.format(root=str(ROOT)))
    assert result["errors"] == {}
    assert result["loaded"] and result["pandas"]
    assert result["steps"][-1] == "tokenizer"
    assert {"import pandas", "import pyarrow", "import ui.chrome", "import ui.views.loop_view"} <= set(result["steps"])


def test_a_step_that_fails_is_recorded_and_the_rest_still_run(monkeypatch):
    ran = []

    def broken():
        raise ModuleNotFoundError("No module named 'not_installed'")

    monkeypatch.setattr(
        server_start,
        "preload_steps",
        lambda: [("first", lambda: ran.append("first")), ("broken", broken), ("last", lambda: ran.append("last"))],
    )
    report = server_start.preload()
    assert ran == ["first", "last"]
    assert report.errors == {"broken": "ModuleNotFoundError: No module named 'not_installed'"}
    assert set(report.seconds) == {"first", "broken", "last"}


@pytest.mark.slow
def test_a_fresh_server_answers_only_once_what_home_needs_is_loaded_and_the_warm_up_is_done(tmp_path):
    log = open(tmp_path / "server.log", "w")  # noqa: SIM115 - the server writes it until it stops
    port = free_port()
    server = start_streamlit(port, log=log)
    try:
        assert wait_healthy(f"http://127.0.0.1:{port}", server, 180)
        # the lifespan's line is written before the server takes its first request
        said = (tmp_path / "server.log").read_text(encoding="utf-8")
        assert "Loaded what Home needs in" in said and "failed" not in said
        # and the warm-up finished before it too: a first visit finds the shared pieces built
        assert "The shared pieces warmed up in" in said
    finally:
        stop_server(server)
        log.close()
