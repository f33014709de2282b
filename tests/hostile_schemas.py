"""Random tool sets with hostile names and strings, the same for a seed on every machine: for the server grammars' tests.

Property names, enum values and constants draw from an alphabet of what a grammar writer must
escape (quotes, backslashes, brackets, "-" and "^", control characters, line separators, a BOM,
characters outside the BMP); schemas nest objects, arrays, anyOf and type lists two deep, with
bounds on strings, numbers and arrays. Some are refused by the grammar (SchemaUnsupported), as a
visitor's would be.
"""

from __future__ import annotations

import random

ALPHABET = [
    *"abcXYZ019 _-\"\\[]^/{}()<>|*+?.,:;=#$%&'`~!@",
    "\t",
    "\n",
    "\r",
    "\x00",
    "\x01",
    "\x1f",
    "\x7f",
    "é",
    "ü",
    "✓",
    "中",
    "\u2028",
    "\ufeff",
    "\U0001f600",
]
SCALARS = ["string", "integer", "number", "boolean", "null", "enum", "const"]


def hostile_text(rng: random.Random, low: int = 0, high: int = 8) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(low, high)))


def hostile_schema(rng: random.Random, depth: int = 0) -> dict:
    kind = rng.choice(SCALARS + (["array", "object", "anyof", "typelist"] if depth < 2 else []))
    if kind == "string":
        schema = {"type": "string"}
        if rng.random() < 0.3:
            schema["maxLength"] = rng.randint(0, 5)
        return schema
    if kind == "integer":
        schema = {"type": "integer"}
        if rng.random() < 0.5:
            schema["minimum"] = rng.randint(-50, 5)
        if rng.random() < 0.5:
            schema["maximum"] = rng.randint(6, 1000)
        return schema
    if kind in ("number", "boolean", "null"):
        return {"type": kind}
    if kind == "enum":
        return {"type": "string", "enum": sorted({hostile_text(rng, 0, 6) for _ in range(rng.randint(1, 4))})}
    if kind == "const":
        return {"const": rng.choice([hostile_text(rng, 0, 5), rng.randint(-9, 9), True, None])}
    if kind == "array":
        schema = {"type": "array", "items": hostile_schema(rng, depth + 1)}
        if rng.random() < 0.5:
            schema["minItems"] = rng.randint(0, 2)
        if rng.random() < 0.5:
            schema["maxItems"] = rng.randint(2, 4)
        return schema
    if kind == "anyof":
        return {"anyOf": [hostile_schema(rng, depth + 1), hostile_schema(rng, depth + 1)]}
    if kind == "typelist":
        return {"type": rng.sample(["string", "integer", "boolean", "null", "number"], 2)}
    return hostile_object(rng, depth + 1)


def hostile_object(rng: random.Random, depth: int = 0) -> dict:
    names = sorted({hostile_text(rng, 1, 6) for _ in range(rng.randint(1, 4))})
    schema = {"type": "object", "properties": {name: hostile_schema(rng, depth) for name in names}}
    required = [name for name in names if rng.random() < 0.6]
    if required:
        schema["required"] = required
    if rng.random() < 0.2:
        schema["additionalProperties"] = False
    return schema


def hostile_tools(seed: int) -> list[dict]:
    """One to three tools, their names valid (as the site's tool check requires), their parameters hostile."""
    rng = random.Random(seed)
    tools = []
    for k in range(rng.randint(1, 3)):
        name = "f" + "".join(rng.choice("abcxyz_-0123") for _ in range(rng.randint(0, 9))) + str(k)
        tools.append(
            {
                "type": "function",
                "function": {"name": name, "description": hostile_text(rng), "parameters": hostile_object(rng)},
            }
        )
    return tools


def hostile_grammars(seeds: range, dialect: str) -> tuple[list[str], int]:
    """The server grammars (required, and the first tool by name; thinking on for odd seeds) of each seed's
    tool set in `dialect`, and how many the grammar refused."""
    from engine.constrain.schemas import SchemaUnsupported
    from engine.constrain.server_grammar import build_server_grammar
    from engine.core.tooldefs import tool_name

    grammars, refused = [], 0
    for seed in seeds:
        tools = hostile_tools(seed)
        for choice in ("required", tool_name(tools[0])):
            try:
                grammars.append(build_server_grammar(tools, choice, dialect, seed % 2 == 1).text)
            except SchemaUnsupported:
                refused += 1
    return grammars, refused
