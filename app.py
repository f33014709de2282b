"""The tool-calling explainer: the router. Page config, navigation from lessons/index.json, the shared sidebar."""

from pages.common.chrome import route

route()
