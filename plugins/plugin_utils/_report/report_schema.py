# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""report.json checked against docs/report.schema.json with the standard library alone.

The collection ships the schema (docs/ is part of the build); this validator knows the JSON Schema keywords that schema
uses (type, enum, const, required, properties, additionalProperties, items, $ref, pattern, minItems, maxItems, minimum,
minLength, if/then/else, allOf, anyOf) and refuses a schema with any other, so a keyword added to the schema cannot be
silently ignored here. ``schema_errors`` returns the first problems as ``"<json path>: <what is wrong>"``.
"""

import json
import os
import re

SCHEMA_PATH = os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs", "report.schema.json")
KNOWN_KEYWORDS = {
    "$schema", "$id", "$defs", "$ref", "title", "description", "deprecated", "type", "enum", "const", "required",
    "properties", "additionalProperties", "items", "pattern", "minItems", "maxItems", "minimum", "minLength", "if",
    "then", "else", "allOf", "anyOf",
}
_TYPES = {
    "object": lambda value: isinstance(value, dict),
    "array": lambda value: isinstance(value, list),
    "string": lambda value: isinstance(value, str),
    "integer": lambda value: isinstance(value, int) and not isinstance(value, bool),
    "number": lambda value: isinstance(value, (int, float)) and not isinstance(value, bool),
    "boolean": lambda value: isinstance(value, bool),
    "null": lambda value: value is None,
}
MAX_ERRORS = 5


def load_report_schema(path=SCHEMA_PATH):
    with open(path, encoding="utf-8") as handle:
        schema = json.load(handle)
    _check_keywords(schema, "#")
    return schema


def _check_keywords(schema, where):
    if not isinstance(schema, dict):
        return
    unknown = set(schema) - KNOWN_KEYWORDS
    if unknown:
        raise ValueError(f"report schema keyword(s) {sorted(unknown)} at {where} are not checked by report_schema.py")
    for key in ("properties", "$defs"):
        for name, sub in (schema.get(key) or {}).items():
            _check_keywords(sub, f"{where}/{key}/{name}")
    for key in ("additionalProperties", "items", "if", "then", "else"):
        _check_keywords(schema.get(key), f"{where}/{key}")
    for key in ("allOf", "anyOf"):
        for index, sub in enumerate(schema.get(key) or ()):
            _check_keywords(sub, f"{where}/{key}/{index}")


def schema_errors(document, schema):
    """The first problems (at most MAX_ERRORS) of ``document`` against ``schema``; [] when it conforms."""
    errors = []
    _validate(document, schema, schema, "$", errors)
    return errors[:MAX_ERRORS]


def _validate(value, schema, root, where, errors):
    if len(errors) >= MAX_ERRORS or schema is True:
        return
    if "$ref" in schema:
        target = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            target = target[part]
        _validate(value, target, root, where, errors)
    types = schema.get("type")
    if types is not None:
        types = [types] if isinstance(types, str) else types
        if not any(_TYPES[name](value) for name in types):
            errors.append(f"{where}: is {_json_type(value)}, not {' or '.join(types)}")
            return
    if "const" in schema and not _same(value, schema["const"]):
        errors.append(f"{where}: must be {json.dumps(schema['const'])}")
    if "enum" in schema and not any(_same(value, option) for option in schema["enum"]):
        errors.append(f"{where}: must be one of {json.dumps(schema['enum'])}")
    if isinstance(value, str):
        if "pattern" in schema and not re.search(_python_pattern(schema["pattern"]), value):
            errors.append(f"{where}: does not match {schema['pattern']}")
        if len(value) < schema.get("minLength", 0):
            errors.append(f"{where}: is shorter than {schema['minLength']}")
    if _TYPES["number"](value) and "minimum" in schema and value < schema["minimum"]:
        errors.append(f"{where}: is below {schema['minimum']}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            errors.append(f"{where}: has fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{where}: has more than {schema['maxItems']} items")
        if "items" in schema:
            for index, item in enumerate(value):
                _validate(item, schema["items"], root, f"{where}[{index}]", errors)
    if isinstance(value, dict):
        for name in schema.get("required", ()):
            if name not in value:
                errors.append(f"{where}: lacks the required field '{name}'")
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for name, item in value.items():
            if name in properties:
                _validate(item, properties[name], root, f"{where}.{name}", errors)
            elif extra is False:
                errors.append(f"{where}: has the unexpected field {json.dumps(name)[:80]}")
            elif isinstance(extra, dict):
                _validate(item, extra, root, f"{where}[{json.dumps(name)[:80]}]", errors)
    for sub in schema.get("allOf", ()):
        _validate(value, sub, root, where, errors)
    if "anyOf" in schema and not any(not schema_errors(value, dict(sub, **{"$defs": root.get("$defs", {})}))
                                     for sub in schema["anyOf"]):
        errors.append(f"{where}: matches none of the allowed shapes")
    if "if" in schema:
        branch = schema.get("then") if not schema_errors(value, dict(schema["if"], **{"$defs": root.get("$defs", {})})) \
            else schema.get("else")
        if branch is not None:
            _validate(value, branch, root, where, errors)


def _same(value, expected):
    return type(value) is type(expected) and value == expected  # noqa: E721 -- 1 is not true, 0 is not false


def _json_type(value):
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _TYPES[name](value):
            return name
    return type(value).__name__


def _python_pattern(pattern):
    """An ECMA-262 pattern as Python's ``re`` reads it: a final ``$`` ends the string (``\\Z``); Python's also matches
    before a final newline, so ``"run\\n"`` would pass a pattern JSON Schema refuses it by."""
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        return pattern[:-1] + "\\Z"
    return pattern
