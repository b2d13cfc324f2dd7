"""What the fuzz tests share: bounded, deterministic hypothesis settings and a small TOML writer.

The writer exists so generated dumps can be written in any table order (``tomllib`` only reads);
it emits nested tables as ``[a."b c".d]`` sections and values inside arrays as inline tables.
"""
import math
import os
import re

from hypothesis import HealthCheck, settings

BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


# `make check` runs the fuzzers on a fraction of their budget (RUNTIME_GATE_FUZZ_BUDGET, e.g. 0.1); `make test` on all of it.
BUDGET = float(os.environ.get("RUNTIME_GATE_FUZZ_BUDGET") or 1)


def budget(max_examples):
    """``max_examples`` scaled by the run's fuzz budget, at least 10 cases."""
    return max(10, round(max_examples * BUDGET)) if BUDGET < 1 else max_examples


def fuzz_settings(max_examples):
    """Same cases on every run (CI is deterministic), no per-example deadline, no example database."""
    return settings(max_examples=budget(max_examples), deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def toml_key(key):
    return key if BARE_KEY.fullmatch(key) else toml_string(key)


def toml_string(text):
    escaped = []
    for char in text:
        if char in ('"', "\\"):
            escaped.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            escaped.append(f"\\u{ord(char):04X}")
        else:
            escaped.append(char)
    return '"' + "".join(escaped) + '"'


def toml_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{toml_key(key)} = {toml_value(item)}" for key, item in value.items()) + "}"
    raise TypeError(f"no TOML for {type(value).__name__}")


def toml_dumps(document):
    """``document`` (nested dicts) as TOML text, keys in the dicts' own order."""
    lines = []
    _write_table(document, [], lines)
    return "\n".join(lines) + "\n"


def _write_table(table, path, lines):
    if path:
        lines.append("[" + ".".join(toml_key(key) for key in path) + "]")
    for key, value in table.items():
        if not isinstance(value, dict):
            lines.append(f"{toml_key(key)} = {toml_value(value)}")
    for key, value in table.items():
        if isinstance(value, dict):
            _write_table(value, path + [key], lines)
