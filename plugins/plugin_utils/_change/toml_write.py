# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""A small deterministic TOML writer for the containerd files the role renders, and the one textual
edit the role makes to a root file it does not own: adding an entry to the top-level ``imports``.

Controller side. The writer emits only what containerd's decoders read the same way on every line
(go-toml v1 on 1.x, go-toml v2 on 2.x): ``key = value`` pairs, standard ``[a."b".c]`` table headers,
basic strings, and inline tables only inside arrays. Keys keep the order they have in the dict, so the
caller decides the layout and the output is byte-identical for equal input (idempotent runs).
"""

import datetime
import math
import re
import tomllib

# fullmatch: "$" also matches before a trailing newline, which would write "key\n = ..." bare and break the file.
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


class TomlWriteError(ValueError):
    """A value TOML cannot carry (None, a non-finite float, an unknown type)."""


def quote_key(key):
    return key if _BARE_KEY.fullmatch(key) else basic_string(key)


def basic_string(text):
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append("\\u%04X" % ord(char))
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def value_text(value, where="value"):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TomlWriteError(f"{where} is {value!r}: containerd cannot read a non-finite number")
        return repr(value)
    if isinstance(value, str):
        return basic_string(value)
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(value_text(item, where) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{quote_key(str(k))} = {value_text(v, where)}" for k, v in value.items()) + "}"
    raise TomlWriteError(f"{where} is {type(value).__name__}, which TOML cannot hold")


def dumps(document):
    """TOML text for ``document`` (a dict): scalars first, then each sub-table under its full header.

    A blank line separates tables and two spaces indent each nesting level, as containerd's own
    ``config dump`` prints 1.x files; headers are written only for tables holding a scalar or for
    empty tables (so ``[plugins]`` alone is never printed).
    """
    lines = []
    _write_table(document, (), lines, 0)
    return "\n".join(lines).strip("\n") + "\n"


def _write_table(table, path, lines, depth):
    scalars = [(key, value) for key, value in table.items() if not isinstance(value, dict)]
    tables = [(key, value) for key, value in table.items() if isinstance(value, dict)]
    indent = "  " * max(depth, 0)
    if path and (scalars or not tables):
        if lines:
            lines.append("")
        lines.append(indent + "[" + ".".join(quote_key(part) for part in path) + "]")
    else:
        depth -= 1
    for key, value in scalars:
        if value is None:
            raise TomlWriteError(f"{'.'.join(path + (key,))} is null, which TOML cannot hold")
        where = ".".join(path + (key,))
        lines.append(f"{indent}{'  ' if path else ''}{quote_key(key)} = {value_text(value, where)}")
    for key, value in tables:
        _write_table(value, path + (key,), lines, depth + 1)


# --- the one edit of a root file the role does not own ------------------------------------------------

_TOP_LEVEL_IMPORTS = re.compile(r"^[ \t]*imports[ \t]*=", re.MULTILINE)
_TABLE_HEADER = re.compile(r"^[ \t]*\[", re.MULTILINE)


def add_import(root_text, entry):
    """``root_text`` with ``entry`` appended to its top-level ``imports`` array (created when absent).

    A textual edit, so comments, key order and every unknown key survive. The result is re-parsed
    with ``tomllib`` and must equal the original document except for the one added entry; anything
    else (an ``imports`` written in a form this edit cannot place safely) raises TomlWriteError.
    """
    original = tomllib.loads(root_text)
    imports = original.get("imports")
    if imports is not None and not isinstance(imports, list):
        raise TomlWriteError("the root config's top-level imports is not an array")
    header = _TABLE_HEADER.search(root_text)
    top_end = header.start() if header else len(root_text)
    top = root_text[:top_end]
    found = list(_TOP_LEVEL_IMPORTS.finditer(top))
    if imports is None:
        addition = f"imports = [{basic_string(entry)}]\n"
        edited = _insert_at_top(root_text, top_end, addition)
    else:
        if len(found) != 1:
            raise TomlWriteError("cannot find the single top-level `imports = [...]` line to extend")
        start = found[0].end()
        close = _array_end(root_text, start)
        before = root_text[:close].rstrip()
        separator = "" if before.endswith("[") else ", "
        if before.endswith(","):
            separator = " "
        edited = before + separator + basic_string(entry) + root_text[close:]
    expected = dict(original)
    expected["imports"] = list(imports or []) + [entry]
    try:
        reparsed = tomllib.loads(edited)
    except tomllib.TOMLDecodeError as error:
        raise TomlWriteError(f"adding the import would break the root config's TOML: {error}") from None
    if reparsed != expected:
        raise TomlWriteError("adding the import would change more than the imports array; edit the root config by hand")
    return edited


def set_imports(root_text, entries):
    """``root_text`` with its top-level ``imports`` array replaced by ``entries`` (for the candidate copy
    the role validates in a temp dir); re-parsed, nothing else may differ."""
    original = tomllib.loads(root_text)
    header = _TABLE_HEADER.search(root_text)
    top_end = header.start() if header else len(root_text)
    found = list(_TOP_LEVEL_IMPORTS.finditer(root_text[:top_end]))
    new_array = "imports = [" + ", ".join(basic_string(entry) for entry in entries) + "]"
    if "imports" not in original:
        edited = _insert_at_top(root_text, top_end, new_array + "\n")
    elif len(found) == 1:
        close = _array_end(root_text, found[0].end())
        edited = root_text[:found[0].start()] + new_array + root_text[close + 1:]
    else:
        raise TomlWriteError("cannot find the single top-level `imports = [...]` line")
    expected = dict(original, imports=list(entries))
    if tomllib.loads(edited) != expected:
        raise TomlWriteError("rewriting the imports would change more than the imports array")
    return edited


def _insert_at_top(text, top_end, addition):
    """Place a new top-level key after the leading top-level pairs, before the first table header."""
    head = text[:top_end]
    if head and not head.endswith("\n"):
        head += "\n"
    tail = text[top_end:]
    # Keep a blank line between the top-level keys and the first table, as written before.
    stripped = head.rstrip("\n")
    gap = head[len(stripped):]
    return stripped + ("\n" if stripped else "") + addition + (gap[1:] if gap else "") + tail


def _array_end(text, start):
    """Index of the ``]`` closing the array whose ``[`` follows ``start`` (strings and comments skipped)."""
    depth = 0
    index = start
    while index < len(text):
        char = text[index]
        if char == "#":
            newline = text.find("\n", index)
            index = len(text) if newline < 0 else newline
            continue
        if char in "\"'":
            triple = text[index:index + 3] == char * 3
            quote = char * 3 if triple else char
            index += len(quote)
            while index < len(text) and text[index:index + len(quote)] != quote:
                index += 2 if (char == '"' and text[index] == "\\") else 1
            index += len(quote)
            continue
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth == 0:
                return index
        index += 1
    raise TomlWriteError("the top-level imports array is not closed")
