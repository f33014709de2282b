"""The tool-calling explainer: the router. Page config, navigation from lessons/index.json, the shared sidebar."""

from engine.constrain.warmup import start_warmup
from ui.chrome import route
from ui.shipped_model import start_builtin_load

start_warmup()  # once per process, in the background: the tokenizer, the grammar engine, the shipped grammars
start_builtin_load()  # the shipped model too, when it is where sessions start: no page waits for it unless it draws it
route()
