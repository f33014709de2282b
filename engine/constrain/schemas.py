"""A tool's parameters as the call grammar holds them: whether it can hold them as the schema check does, and
their grammar as EBNF text in the chat template's JSON form.

Where the grammar and the schema check (engine/core/parse.py) could disagree, the grammar is not
used: a keyword the grammar would ignore (`not`, `dependentRequired`, a `oneOf` whose branches
may overlap, `multipleOf` on a number, ...) would let through calls the check refuses; others
would forbid values the schema allows: `pattern` and `patternProperties` (xgrammar matches a
pattern against the whole string, and no escape inside it; JSON Schema's pattern is a search),
`minLength`/`maxLength` (a bounded string holds no escape, so "a\\nb" is refused) and bounds on
a number (at most 6 decimals and no exponent, so 1.5703125 and 1e-05 are refused). Such a
schema is reported as a `SchemaUnsupported` naming the tool, where in its parameters, and the
keyword, and the turn is decoded unconstrained (a named tool_choice is refused).
`format` and `contentEncoding` are annotations in JSON Schema 2020-12 and the check does not
assert them, so they are left out of the grammar rather than enforced by it alone.
Local references (`$ref: "#/$defs/X"`, `"#"`, what pydantic writes) are rewritten to point
into the call schema, where the parameters sit under `arguments`, so each keeps its target.
"""

from __future__ import annotations

import functools
import json
import re

from ..core.tooldefs import find_cost_problem, tool_name

SEPARATORS = (", ", ": ")  # the chat template's json.dumps separators

# keywords xgrammar 0.2.9 accepts but does not enforce (its grammar is the same without them);
# a schema using one would let a constrained call through that the schema check then rejects
UNENFORCED = (
    "not",
    "if",
    "then",
    "else",
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains",
    "dependentSchemas",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "dependentRequired",
)
# keywords the grammar would hold differently from the check: a pattern is a search in JSON
# Schema and a whole-string match (without escapes) in xgrammar; an $id or anchor moves where
# references point, which the rewriting of local references does not follow
UNFAITHFUL = ("pattern", "patternProperties", "$id", "$anchor", "$dynamicRef", "$dynamicAnchor", "$recursiveRef")
# annotations the check does not assert (2020-12): left out of the grammar so it does not assert them either
ANNOTATIONS = ("format", "contentEncoding", "contentMediaType", "contentSchema")
_REF_SIBLINGS_OK = {
    "$ref",
    "description",
    "title",
    "default",
    "examples",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
}

# where sub-schemas live, so a property *named* "not" is not mistaken for the keyword
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_ONE = (
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
)
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_VALUES = ("enum", "const", "default", "examples", "required", "dependentRequired")  # data, not schemas


class SchemaUnsupported(Exception):
    """A tool's parameters that the grammar cannot hold; `reason` is one line a page can show."""

    def __init__(self, tool: str | None, reason: str):
        super().__init__(f"tool {tool!r}: {reason}" if tool is not None else reason)
        self.tool = tool
        self.reason = str(self)


def tool_parameters(tool: dict) -> dict:
    params = tool.get("function", tool).get("parameters")
    return params if isinstance(params, dict) and params else {"type": "object", "properties": {}}


def _types(schema: dict) -> set[str] | None:
    kind = schema.get("type")
    if isinstance(kind, str):
        kinds = {kind}
    elif isinstance(kind, list) and kind and all(isinstance(k, str) for k in kind):
        kinds = set(kind)
    else:
        return None
    return kinds | {"number"} if "integer" in kinds else kinds | ({"integer"} if "number" in kinds else set())


def _discriminator(schema: dict) -> dict[str, object]:
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    required = schema.get("required") if isinstance(schema.get("required"), list) else []
    return {
        k: json.dumps(v["const"]) for k, v in props.items() if isinstance(v, dict) and "const" in v and k in required
    }


def overlapping_one_of(branches: list) -> bool:
    """Whether two branches of a oneOf might accept the same value: the grammar (an anyOf) would
    then allow a value that matches both, which oneOf forbids. Disjoint only when provably so:
    no two branches share a type (integer and number overlap), or every branch is an object
    with a required property whose const differs from branch to branch."""
    if len(branches) < 2 or not all(isinstance(b, dict) for b in branches):
        return len(branches) >= 2
    kinds = [_types(b) for b in branches]
    if all(k is not None for k in kinds):
        if all(not (kinds[i] & kinds[j]) for i in range(len(kinds)) for j in range(i + 1, len(kinds))):
            return False
    tags = [_discriminator(b) for b in branches]
    shared = set.intersection(*(set(t) for t in tags))
    return not any(len({t[key] for t in tags}) == len(tags) for key in shared)


def _unenforced(schema: object, path: str) -> tuple[str, str] | None:
    """The first keyword the grammar would not hold as the check does, and where, walking only through sub-schemas."""
    if not isinstance(schema, dict):
        return None
    for key in (*UNENFORCED, *UNFAITHFUL):
        if key in schema:
            return key, path
    if isinstance(schema.get("allOf"), list) and len(schema["allOf"]) > 1:
        return "allOf", path
    if isinstance(schema.get("oneOf"), list) and overlapping_one_of(schema["oneOf"]):
        return "oneOf (branches that may overlap)", path
    if "multipleOf" in schema and schema.get("type") != "integer":
        return "multipleOf (on a number that is not an integer)", path
    bounds = [k for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum") if k in schema]
    if bounds and schema.get("type") != "integer":
        # xgrammar's bounded numbers take at most 6 decimals and no exponent: 1.5703125 and 1e-05 fit the schema, not it
        return f"{bounds[0]} on a number (the grammar's bounded numbers take at most 6 decimals and no exponent)", path
    lengths = [k for k in ("minLength", "maxLength") if k in schema]
    if lengths:
        # xgrammar's bounded strings hold no escape: "a\n" or 'say "hi"' fit the schema, not it
        return f"{lengths[0]} (the grammar's bounded strings cannot hold an escape such as \\n or \\\")", path
    ref = schema.get("$ref")
    if ref is not None:
        if not isinstance(ref, str) or not (ref == "#" or ref.startswith("#/")):
            return (
                f"$ref {str(ref)[:60]!r} (only references into the same schema, '#' or '#/...', can be followed)",
                path,
            )
        if set(schema) - _REF_SIBLINGS_OK:
            return "$ref beside other keywords", path
    for key in _SCHEMA_MAPS:
        if isinstance(schema.get(key), dict):
            for name, sub in schema[key].items():
                found = _unenforced(sub, f"{path}.{key}.{name}")
                if found:
                    return found
    for key in _SCHEMA_ONE:
        found = _unenforced(schema.get(key), f"{path}.{key}")
        if found:
            return found
    for key in _SCHEMA_LISTS:
        if isinstance(schema.get(key), list):
            for i, sub in enumerate(schema[key]):
                found = _unenforced(sub, f"{path}.{key}[{i}]")
                if found:
                    return found
    return None


def grammar_schema(schema: object, root: str = "#") -> object:
    """A tool's parameters as the grammar holds them: annotations left out, and every local
    $ref rewritten to point from `root`, where the parameters sit inside the call schema."""
    if isinstance(schema, list):
        return [grammar_schema(s, root) for s in schema]
    if not isinstance(schema, dict):
        return schema
    copy = {}
    for key, value in schema.items():
        if key in ANNOTATIONS:
            continue
        if key in _VALUES:
            copy[key] = value
        elif key == "$ref" and isinstance(value, str) and value.startswith("#"):
            copy[key] = root + value[1:]
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            copy[key] = {k: grammar_schema(v, root) for k, v in value.items()}
        else:
            copy[key] = grammar_schema(value, root)
    return copy


def xgrammar_message(error: Exception) -> str:
    # "[15:41:20] /project/cpp/json_schema_converter.cc:5082: Unsupported type "foo"" -> the last part
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return re.sub(r"^\[[\d:]+\]\s+\S+:\d+:\s*", "", text)[:300]


# xgrammar prints a character below 256 as \xHH but reads \x greedily, as many hex digits as follow: "éa" prints
# as "\xe9a" and reads back as U+0E9A, so an enum or const with such a character before a letter a-f or a digit
# could never be written. Its \u takes exactly four digits: every \xHH is rewritten so (a "\\" pair is skipped).
_PRINTED_ESCAPE = re.compile(r"(\\\\)|\\x([0-9A-Fa-f]{2})")


def ebnf_text(grammar) -> str:
    """An xgrammar Grammar as EBNF text that xgrammar (and llama.cpp) read back as the same grammar."""
    return _PRINTED_ESCAPE.sub(lambda m: m.group(1) or "\\u00" + m.group(2), str(grammar))


def json_schema_ebnf(schema: dict) -> str:
    """A JSON schema's grammar, written as the chat template writes JSON (its separators, no other whitespace)."""
    import xgrammar as xgr

    return ebnf_text(xgr.Grammar.from_json_schema(json.dumps(schema), any_whitespace=False, separators=SEPARATORS))


@functools.lru_cache(maxsize=256)
def _arguments_ebnf(params_json: str) -> str:
    return json_schema_ebnf(json.loads(params_json))


def check_tool(tool: dict) -> None:
    """Raise SchemaUnsupported if this tool's parameters cannot be turned into a faithful grammar."""
    name, params = tool_name(tool), tool_parameters(tool)
    too_big = find_cost_problem(tool)
    if too_big:
        raise SchemaUnsupported(name, too_big)
    found = _unenforced(params, "parameters")
    if found:
        keyword, where = found
        if keyword in UNENFORCED or keyword == "allOf":
            raise SchemaUnsupported(
                name, f"{where} uses {keyword!r}, which the grammar engine (xgrammar) does not enforce"
            )
        if keyword in UNFAITHFUL:
            keyword = repr(keyword)
        raise SchemaUnsupported(
            name, f"{where} uses {keyword}, which the grammar (xgrammar) cannot hold as the schema check does"
        )
    try:
        _arguments_ebnf(json.dumps(grammar_schema(params)))
    except Exception as error:  # xgrammar raises RuntimeError / ValueError with the C++ message
        raise SchemaUnsupported(
            name, f"the grammar engine (xgrammar) cannot compile its parameters: {xgrammar_message(error)}"
        ) from error
