"""The tool-calling explainer: the router, run for every page (app.py serves it). Page config, navigation from
lessons/index.json, the shared sidebar."""

from engine.startup.warmup import start_warmup
from ui.chrome import route
from ui.shipped_model import builtin_first, load_builtin_in_background

# once per process, in the background once the first page is drawn: torch and xgrammar, the shipped model when
# sessions start on it (no page waits for it unless it draws it), the tokenizer, the grammar engine, the shipped grammars
start_warmup(then=load_builtin_in_background if builtin_first() else None, after_page=True)
route()
