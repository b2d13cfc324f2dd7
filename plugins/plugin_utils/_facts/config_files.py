"""The config files a node showed, parsed: versions, CRI runtime tables, and the line of any key.

Controller side (``tomllib``). Input is the ``config_files`` evidence of ``containerd_facts``
(``[{path, role, imported_by, pattern, text, error, ...}]``, root first, in the loader's queue order).
"""

import functools
import os
import re

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.containerd_config import (
    CRI_PLUGIN_V2,
    CRI_RUNTIME_PLUGIN_V3,
    load_config_text,
)

# Where each config version keeps CRI runtimes (docs/containerd-loading.md §3): v1 files use the short ID, v2 the
# grpc URI, v3/v4 the runtime plugin split out in 2.0 (PR #9141).
CRI_SHORT_ID = "cri"
CRI_PLUGIN_KEYS = (CRI_SHORT_ID, CRI_PLUGIN_V2, CRI_RUNTIME_PLUGIN_V3)
LOADED_ROLES = ("root", "import")

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


class ConfigFile:
    """One file: its path, role, raw text and parsed document (None when unreadable or invalid), parsed once on first
    use (``load_config_text``); ``parse_error`` says why a text is no document."""

    def __init__(self, entry):
        self.path = entry.get("path")
        self.role = entry.get("role")
        self.imported_by = entry.get("imported_by")
        self.text = entry.get("text") if isinstance(entry.get("text"), str) else None

    @functools.cached_property
    def parsed(self):
        """``(document, parse_error)``."""
        return load_config_text(self.text) if self.text is not None else (None, None)

    @property
    def document(self):
        return self.parsed[0]

    @property
    def parse_error(self):
        return self.parsed[1]

    @property
    def loaded(self):
        return self.role in LOADED_ROLES and self.document is not None

    @property
    def version(self):
        """The file's own ``version`` (0 when unversioned, as containerd's GetVersion says)."""
        version = (self.document or {}).get("version", 0)
        return version if isinstance(version, int) and not isinstance(version, bool) else 0

    def plugin_table(self, plugin_key):
        plugins = (self.document or {}).get("plugins")
        table = plugins.get(plugin_key) if isinstance(plugins, dict) else None
        return table if isinstance(table, dict) else None

    def runtimes(self, plugin_key):
        """``{name: table}`` under ``plugins.<plugin_key>.containerd.runtimes`` ({} when absent)."""
        containerd_table = (self.plugin_table(plugin_key) or {}).get("containerd")
        runtimes = containerd_table.get("runtimes") if isinstance(containerd_table, dict) else None
        if not isinstance(runtimes, dict):
            return {}
        return {name: table for name, table in runtimes.items() if isinstance(table, dict)}

    def all_runtime_names(self):
        return {name for key in CRI_PLUGIN_KEYS for name in self.runtimes(key)}

    def default_runtime_name(self, plugin_key):
        containerd_table = (self.plugin_table(plugin_key) or {}).get("containerd")
        value = containerd_table.get("default_runtime_name") if isinstance(containerd_table, dict) else None
        return value if isinstance(value, str) else None

    def line_of(self, *path):
        """1-based line where the key or table ``path`` is first written, or None."""
        return line_of(self.text, path)

    def display(self):
        return self.path


def config_files(facts):
    """Every file of the ``config_files`` evidence (of ``facts``, or of the evidence itself), root first, or None when
    the node sent none (older facts)."""
    entries = facts.get("config_files")
    if not isinstance(entries, list):
        return None
    return [ConfigFile(entry) for entry in entries if isinstance(entry, dict) and isinstance(entry.get("path"), str) and entry["path"]]


def unloaded_dropins(facts):
    """``(files, suffixes)`` from the ``dropin_dirs`` evidence: the drop-in files no import reached whose text the
    node sent (``{path: ConfigFile}``, role ``unloaded``; document None when unreadable or not TOML), and per listed
    directory the suffixes whose unloaded files carry text (``{directory: (".toml", ".conf")}``; absent in older facts).
    """
    files, suffixes = {}, {}
    listings = facts.get("dropin_dirs")
    for listing in listings if isinstance(listings, list) else ():
        directory = listing.get("path") if isinstance(listing, dict) else None
        if not isinstance(directory, str) or not isinstance(listing.get("texts_for"), list):
            continue
        suffixes[directory] = tuple(suffix for suffix in listing["texts_for"] if isinstance(suffix, str) and suffix)
        for entry in listing.get("entries") if isinstance(listing.get("entries"), list) else ():
            if isinstance(entry, dict) and "text" in entry and isinstance(entry.get("name"), str) and entry["name"]:
                path = os.path.join(directory, entry["name"])
                files[path] = ConfigFile({"path": path, "role": "unloaded", "text": entry["text"]})
    return files, suffixes


def line_of(text, path):
    """The first line whose table header or key path starts with ``path`` (a tuple of keys)."""
    if not text:
        return None
    wanted = tuple(path)
    current = ()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            header = line.strip("[").split("]", 1)[0] if not line.startswith("[[") else line[2:].split("]]", 1)[0]
            current = _split_key(header)
            full = current
        else:
            key, separator, _value = _split_assignment(line)
            if not separator:
                continue
            full = current + _split_key(key)
        if full[: len(wanted)] == wanted:
            return number
    return None


def _split_assignment(line):
    """Split ``key = value`` at the first ``=`` outside quotes."""
    quote = None
    for index, char in enumerate(line):
        if quote:
            if char == quote:
                quote = None
        elif char in "\"'":
            quote = char
        elif char == "=":
            return line[:index], "=", line[index + 1:]
    return line, "", ""


def _split_key(text):
    """``plugins."io.containerd.grpc.v1.cri".containerd`` → ``("plugins", "io.containerd.grpc.v1.cri", "containerd")``."""
    parts, index, text = [], 0, text.strip()
    while index < len(text):
        char = text[index]
        if char in " \t.":
            index += 1
        elif char in "\"'":
            end = text.find(char, index + 1)
            end = len(text) if end < 0 else end
            parts.append(text[index + 1:end])
            index = end + 1
        else:
            match = _BARE_KEY.match(text, index)
            if not match:
                index += 1
                continue
            parts.append(match.group(0))
            index = match.end()
    return tuple(parts)


def directory_of(pattern):
    return os.path.dirname(pattern.rstrip("/")) or "/"
