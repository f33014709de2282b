"""The tool-calling explainer: the router. Page config, navigation from lessons/index.json, the shared sidebar."""

from engine.constrain.warmup import start_warmup
from ui.chrome import route

start_warmup()  # once per process, in the background: the tokenizer, the grammar engine, the shipped grammars
route()
