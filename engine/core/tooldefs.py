"""Tool definitions (OpenAI-style JSON, shipped in lessons/tools/): loading, naming and checking them.

The strawberry pair (`count_letter`, `tokenize`, [[tool-calling-step-by-step]]), the five
harness tools of [[reading-tool-calls]] (`read_file`, `list_files`, `grep`, `write_file`,
`run_tests`), and a 12-tool coding-agent set ([[tool-calls-cant-come-out-malformed]], without
`git_commit`) whose extra tools are definitions only. The checks bound
what a pasted definition may cost; implementations are in engine/harness/tools.py.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from ..errors import BadInput
from ..settings import LESSONS
from .parse import re2_search

TOOL_SETS = ("strawberry", "harness", "coding-agent")
# matched whole (fullmatch): "$" alone lets a name end in a newline
NAME_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")

# cost limits on pasted definitions: one server serves a class, and every prompt carries the
# tools while every constrained turn compiles them. Measured with xgrammar 0.2.9 on 2 cores:
# a 1,000-value enum compiles in 0.06 s, 128 optional properties in 0.5 s and 256 in 2 s (it
# grows faster than linearly), and a 2 MB description took about a minute per page rerun.
MAX_TOOLS = 64  # tools in one request
MAX_DEFINITIONS_BYTES = 65_536  # all tools together, as compact JSON
MAX_DESCRIPTION_CHARS = 4_000  # any one description (of a tool or of an argument)
MAX_ENUM_VALUES = 1_000  # values of any one enum (the same figure as OpenAI's strict mode)
MAX_PROPERTIES = 100  # properties of one tool's parameters, every level counted
MAX_DEPTH = 16  # nesting of one tool's definition


@lru_cache(maxsize=8)
def _load_tool_set_text(name: str) -> str:
    if name not in TOOL_SETS:
        raise BadInput(f"unknown tool set {name!r}; the sets are {', '.join(TOOL_SETS)}")
    return (LESSONS / "tools" / f"{name}.json").read_text(encoding="utf-8")


def load_tool_set(name: str) -> list[dict]:
    """A fresh copy of a shipped tool set."""
    return json.loads(_load_tool_set_text(name))


def bfcl_name(name: str) -> str:
    """A dotted function name as BFCL hands it to an OpenAI-style model: each "." an "_" (math.factorial -> math_factorial)."""
    return name.replace(".", "_")


def tool_name(tool: object) -> str:
    """A definition's name ({"type": "function", "function": {"name": ...}} or the bare function object); "" if none."""
    function = tool.get("function", tool) if isinstance(tool, dict) else None
    return str(function.get("name", "")) if isinstance(function, dict) else ""


def _where(path: str) -> str:
    """Where in a definition, as a message says it: " of parameters.properties.x" (its last 60 characters)."""
    path = path.removeprefix("function.")
    return f" of {path[-60:]}" if path else ""


def find_cost_problem(tool: object) -> str | None:
    """The first size limit a definition passes, as a sentence that says the limit and what to do;
    None within every limit. Linear in the definition's size, so it runs before anything costly."""
    stack: list[tuple[object, int, str]] = [(tool, 0, "")]
    properties = 0
    while stack:
        node, depth, path = stack.pop()
        if depth > MAX_DEPTH:
            return f"it nests deeper than {MAX_DEPTH} levels; flatten the parameters"
        if isinstance(node, list):
            stack.extend((item, depth + 1, path) for item in node)
            continue
        if not isinstance(node, dict):
            continue
        description = node.get("description")
        if isinstance(description, str) and len(description) > MAX_DESCRIPTION_CHARS:
            what = "the tool's description" if path == "function" else f"the description{_where(path)}"
            return (
                f"{what} is {len(description):,} characters; the limit is "
                f"{MAX_DESCRIPTION_CHARS:,}: shorten it (the model reads it in every prompt)"
            )
        enum = node.get("enum")
        if isinstance(enum, list) and len(enum) > MAX_ENUM_VALUES:
            return (
                f"the enum{_where(path)} has {len(enum):,} values; the limit is {MAX_ENUM_VALUES:,}: "
                "take a plain string and let the tool check the value"
            )
        if isinstance(node.get("properties"), dict):
            properties += len(node["properties"])
            if properties > MAX_PROPERTIES:
                return (
                    f"its parameters have more than {MAX_PROPERTIES} properties; split it into smaller tools, "
                    "each with the arguments it needs"
                )
        for key, value in node.items():
            # values that are data, not schemas, are not walked (a property may be *named* "enum")
            if key not in ("enum", "description", "const", "default", "examples") or isinstance(value, dict):
                stack.append((value, depth + 1, f"{path}.{key}" if path else str(key)))
    size = len(json.dumps(tool, separators=(",", ":")))
    if size > MAX_DEFINITIONS_BYTES:
        return f"the definition is {size:,} bytes of JSON; the limit is {MAX_DEFINITIONS_BYTES:,}: shorten its descriptions or split it"
    return None


def find_tool_problems(data: object) -> list[str]:
    """Every problem with tool definitions a user pasted, one sentence each; [] when they are usable."""
    if not isinstance(data, list):
        return ['tools must be a JSON list of definitions: [{"type": "function", "function": {...}}, ...]']
    if len(data) > MAX_TOOLS:
        return [f"there are {len(data):,} tools; the limit is {MAX_TOOLS}: offer only the tools this task needs"]
    problems: list[str] = []
    seen: set[str] = set()
    total = 0
    for i, tool in enumerate(data, start=1):
        where = f"tool {i}"
        if not isinstance(tool, dict) or not isinstance(tool.get("function"), dict):
            problems.append(
                f'{where}: write it as {{"type": "function", "function": {{"name": ..., "parameters": ...}}}}'
            )
            continue
        if tool.get("type", "function") != "function":
            problems.append(f'{where}: "type" must be "function"')
        fn = tool["function"]
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            problems.append(f"{where}: it has no name")
        elif "." in name and NAME_PATTERN.fullmatch(bfcl_name(name)):
            # BFCL's own tools (math.factorial) reach an OpenAI-style model as math_factorial, and its calls are
            # mapped back: the same name with underscores is what such an API takes
            problems.append(
                f"{where}: the name {name!r} has a dot, which OpenAI-style tool APIs refuse; "
                f"name it {bfcl_name(name)!r}, as BFCL renames its dotted tools for these models"
            )
        elif not NAME_PATTERN.fullmatch(name):
            shown = repr(name) if len(name) <= 64 else f"{name[:40]!r}... ({len(name):,} characters)"
            problems.append(f"{where}: the name {shown} may use only letters, digits, _ and -, up to 64 characters")
        elif name in seen:
            problems.append(f"{where}: the name {name!r} is used twice")
        else:
            seen.add(name)
            where = f"tool {name!r}"
        if "description" in fn and not isinstance(fn["description"], str):
            problems.append(f"{where}: the description must be a string")
        too_big = find_cost_problem(tool)
        if too_big:
            problems.append(f"{where}: {too_big}")
            continue
        total += len(json.dumps(tool, separators=(",", ":")))
        if total > MAX_DEFINITIONS_BYTES:
            problems.append(
                f"the tools up to {where} are {total:,} bytes of JSON; the limit for all of them is "
                f"{MAX_DEFINITIONS_BYTES:,}: remove tools or shorten their descriptions"
            )
            break
        params = fn.get("parameters", {"type": "object", "properties": {}})
        if not isinstance(params, dict):
            problems.append(f"{where}: parameters must be a JSON Schema object")
            continue
        try:
            Draft202012Validator.check_schema(params)
        except SchemaError as error:
            problems.append(f"{where}: parameters is not a valid JSON Schema: {error.message}")
            continue
        except RecursionError:
            problems.append(f"{where}: parameters is nested too deeply to check")
            continue
        unusable = _schema_references_problem(params)
        if unusable:
            problems.append(f"{where}: {unusable}")
            continue
        if params.get("type") != "object":
            problems.append(f'{where}: parameters must have "type": "object"')
        if "properties" in params and not isinstance(params["properties"], dict):
            problems.append(f"{where}: properties must be an object")
    return problems


def _schema_references_problem(params: dict) -> str | None:
    """A $ref the checker cannot follow, or a pattern RE2 cannot run (parse.py checks arguments with RE2)."""
    from referencing import Registry
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import DRAFT202012

    resolver = Registry().with_resource("urn:tool", DRAFT202012.create_resource(params)).resolver("urn:tool")
    stack: list[object] = [params]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        stack.extend(node.values())
        ref = node.get("$ref")
        if isinstance(ref, str):
            if not ref.startswith("#"):
                return f"$ref {ref!r} points to another document; write that schema inline"
            try:
                resolver.lookup(ref)
            except Unresolvable:
                return f"$ref {ref!r} points to nothing in this schema"
        patterns = [node["pattern"]] if isinstance(node.get("pattern"), str) else []
        if isinstance(node.get("patternProperties"), dict):
            patterns += list(node["patternProperties"])
        for pattern in patterns:
            try:
                re2_search(pattern, "")
            except Exception:
                return f"the pattern {pattern[:80]!r} uses syntax RE2 cannot run (lookaround or a backreference)"
    return None


def check_tool_definitions(data: object) -> list[dict]:
    """The definitions, if usable; else BadInput listing what to fix."""
    problems = find_tool_problems(data)
    if problems:
        raise BadInput("; ".join(problems))
    return data  # type: ignore[return-value]


# the tool a learner adds with "Add a tool": a small, valid definition to lengthen or change
NEW_TOOL = {
    "type": "function",
    "function": {
        "name": "new_tool",
        "description": "Describe what the tool does.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "What to look up."}},
            "required": ["query"],
        },
    },
}


def add_example_tool(tools: list[dict]) -> list[dict]:
    """The definitions with one more example tool, named new_tool_N so no name repeats."""
    names = {t.get("function", {}).get("name") for t in tools}
    number = 1
    while f"new_tool_{number}" in names:
        number += 1
    tool = json.loads(json.dumps(NEW_TOOL))
    tool["function"]["name"] = f"new_tool_{number}"
    return [*tools, tool]
