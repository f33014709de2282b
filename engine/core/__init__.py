"""The torch-free core: the Qwen3 tokenizer, the tool-call styles (one file each, in styles/), a request rendered as a prompt, tool definitions, parsing a turn, a generated turn as data.

Counting and parsing never import torch or xgrammar (tests/test_layout.py checks it).
"""
