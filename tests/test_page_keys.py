"""Every widget and session key a page sets carries the page's name (its url_path) as a prefix.

Session state is shared by all pages of a browser session, so a key without its page's name can
collide with another page's; the sidebar's shared keys (model, style, present, the pack) are the
only exceptions. URL parameter names (the second argument of from_url) are not keys and keep
their short names: teachers have links.
"""

import ast
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LESSONS = json.loads((ROOT / "lessons" / "index.json").read_text())
SHARED = ("model", "style", "present")


def literal_start(node: ast.AST) -> str | None:
    """The text a key starts with: a plain string, or the literal head of an f-string."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        return node.values[0].value
    return None


def keys_of(source: str) -> list[str]:
    """Keys a page script names: key=..., from_url(KEY, ...), restore(KEY), tool_editor(PREFIX), session_state[KEY]."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            found += [literal_start(k.value) for k in node.keywords if k.arg == "key"]
            name = getattr(node.func, "id", getattr(node.func, "attr", ""))
            if name in ("from_url", "restore") and node.args:
                found.append(literal_start(node.args[0]))
            # the tool editor names its keys "<prefix>_json", "<prefix>_add", ...
            if name == "tool_editor" and node.args:
                found.append(f"{literal_start(node.args[0])}_")
            if name in ("get", "pop") and getattr(node.func.value, "attr", "") == "session_state" and node.args:
                found.append(literal_start(node.args[0]))
        elif isinstance(node, ast.Subscript) and getattr(node.value, "attr", "") == "session_state":
            found.append(literal_start(node.slice))
    return [k for k in found if k is not None]


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson["id"] for lesson in LESSONS])
def test_page_keys_carry_the_page_name(lesson):
    prefix = lesson["url_path"] + "_"
    keys = keys_of((ROOT / lesson["page"]).read_text())
    stray = [k for k in keys if not k.startswith(prefix) and k not in SHARED]
    assert not stray, f"{lesson['page']}: keys without the prefix {prefix!r}: {stray}"


def test_the_key_finder_sees_every_form():
    source = (
        'st.button("x", key="a_b"); from_url("c_d", "d", 1); st.session_state["e_f"] = 1\n'
        'st.session_state.get("g_h"); st.text_input("x", key=f"i_{n}"); restore("j_k")\n'
    )
    assert sorted(keys_of(source)) == ["a_b", "c_d", "e_f", "g_h", "i_", "j_k"]
