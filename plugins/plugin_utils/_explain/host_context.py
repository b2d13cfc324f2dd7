"""What every host rule reads: the facts, the verdict so far, the parsed files and the containerd version.

Also small helpers the rule modules share (``_explain/rules_config``, ``_explain/host_rules``); findings are made by
``_finding_codes.make_finding``.
"""

import os

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.config_files import CRI_SHORT_ID
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.containerd_config import (
    BUILTIN_DEFAULT_RUNTIME,
    CRI_PLUGIN_V2,
    CRI_RUNTIME_PLUGIN_V3,
)
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.node_facts import node_facts
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._explain.finding_codes import ERROR, WARNING
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.containerd_release import (
    parse_version,
    relative_globs_from_cwd,
)


def import_globs(facts):
    """The ``import_globs`` evidence with every field of the expected type ([] when absent or unusable)."""
    globs = facts.get("import_globs")
    normalised = []
    for expansion in globs if isinstance(globs, list) else ():
        if not isinstance(expansion, dict) or not isinstance(expansion.get("pattern"), str) or not expansion["pattern"]:
            continue
        declared_in = _text_or_none(expansion.get("declared_in"))
        resolved = _text_or_none(expansion.get("resolved_pattern")) or expansion["pattern"]
        if not os.path.isabs(resolved) and declared_in:
            resolved = os.path.normpath(os.path.join(os.path.dirname(declared_in), resolved))
        from_cwd = expansion.get("matches_from_cwd")
        normalised.append({
            "pattern": expansion["pattern"],
            "declared_in": declared_in,
            "absolute": expansion.get("absolute") is True or os.path.isabs(expansion["pattern"]),
            "resolved_pattern": resolved,
            "matches": _texts(expansion.get("matches")),
            "matches_from_cwd": _texts(from_cwd) if isinstance(from_cwd, list) else None,
            "cwd": _text_or_none(expansion.get("cwd")),
            "error": expansion.get("error"),
        })
    return normalised


def _text_or_none(value):
    return value if isinstance(value, str) and value else None


def _texts(value):
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


class HostContext:
    """What every rule reads: the node's facts (``_facts.NodeFacts``: its files parsed there, once), the verdict so far
    and the version."""

    def __init__(self, facts, verdict):
        self.node = node_facts(facts)
        facts = self.facts = self.node.facts
        self.verdict = verdict
        release = facts.get("containerd_release") if isinstance(facts.get("containerd_release"), dict) else {}
        self.release_low = _version_tuple(release.get("low"))
        self.release_high = _version_tuple(release.get("high"))
        if self.release_low is None or self.release_high is None:
            # Facts from before the release was recorded: the exact version or nothing.
            self.release_low = self.release_high = parse_version(facts.get("containerd_version"))
        # The exact release when known; rules that need only the family use at_least() and major.
        self.version = self.release_low if self.release_low == self.release_high else None
        self.version_text = release.get("text") or facts.get("containerd_version")
        self.version_source = release.get("source") or facts.get("version_source")
        self.major = self.release_low[0] if self.release_low and self.release_low[0] == self.release_high[0] else None
        self.files = self.node.config_files
        self.unloaded, self.text_suffixes = self.node.unloaded_dropins, self.node.dropin_text_suffixes
        self.import_globs = import_globs(facts)
        skipped = self._skipped_by_cwd_globs()
        self.loaded_files = [item for item in self.files or () if item.loaded and item.path not in skipped]
        self.missing = list(verdict.get("missing_handlers") or ())
        self.runtimes = facts.get("runtimes") if isinstance(facts.get("runtimes"), dict) else {}
        self.default_runtime = facts.get("default_runtime_name") or BUILTIN_DEFAULT_RUNTIME
        self.mentioned = self._mentioned_handlers()

    def _skipped_by_cwd_globs(self):
        """Files the node walk reached through a relative glob that this containerd resolves from ``/`` instead."""
        if not relative_globs_from_cwd(self.version):
            return set()
        skipped = set()
        for expansion in self.import_globs:
            if "*" in expansion["pattern"] and not expansion["absolute"]:
                skipped |= set(expansion["matches"]) - set(expansion["matches_from_cwd"] or ())
        return skipped

    def _mentioned_handlers(self):
        names = set(self.runtimes)
        for plugin_names in (self.facts.get("ignored_runtimes") or {}).values():
            names.update(plugin_names or ())
        for config_file in list(self.files or ()) + list(self.unloaded.values()):
            names.update(config_file.all_runtime_names())
        return names

    def at_least(self, version):
        """True when every release this node may run is ``version`` or later, False when none is, None when unknown."""
        if self.release_low is None:
            return None
        if self.release_low >= version:
            return True
        if self.release_high < version:
            return False
        return None

    def evidence(self, **fields):
        """Evidence fields without the unknown ones, always with the containerd version and where it came from."""
        fields.setdefault("containerd_version", self.version_text)
        fields.setdefault("version_source", self.version_source)
        return {key: value for key, value in fields.items() if value is not None}

    def unmentioned_missing(self):
        """Missing handlers no file the node showed defines: an unread drop-in may hold them."""
        loaded_names = set(self.runtimes)
        for config_file in self.loaded_files:
            loaded_names.update(config_file.all_runtime_names())
        return [handler for handler in self.missing if handler not in loaded_names]

    def missing_in_unloaded(self, paths):
        """Missing handlers the drop-in files ``paths``, which no import loaded, may define.

        Exact when the node sent a file's text (``config_files``, or the ``dropin_dirs`` texts): the handlers that
        file defines. A file of a suffix the directory's listing sends no text for is no config file: none. Otherwise
        (older facts; an unreadable, oversized or invalid file) inferred: every missing handler no loaded file defines.
        """
        by_path = dict(self.unloaded, **{config_file.path: config_file for config_file in self.files or ()})
        handlers = set()
        for path in paths:
            config_file = by_path.get(path)
            suffixes = self.text_suffixes.get(os.path.dirname(path))
            if config_file is not None and config_file.document is not None:
                handlers.update(config_file.all_runtime_names())
            elif config_file is not None or suffixes is None or path.endswith(suffixes):
                handlers.update(self.unmentioned_missing())
        return [handler for handler in self.missing if handler in handlers]

    def missing_defined_in(self, paths):
        names = set()
        for config_file in self.files or ():
            if config_file.path in paths:
                names.update(config_file.all_runtime_names())
        return [handler for handler in self.missing if handler in names]

    def cri_broken(self):
        return self.default_runtime not in self.runtimes and not self.facts.get("cri_disabled")

    def last_file_setting(self, key_path):
        """(file, line) of the last loaded file that writes ``key_path``, else (None, None)."""
        found = (None, None)
        for config_file in self.loaded_files:
            line = config_file.line_of(*key_path)
            if line:
                found = (config_file.path, line)
        return found

    def runtime_location(self, name, *suffix):
        for plugin_key in (self.facts.get("cri_runtime_plugin"), CRI_PLUGIN_V2, CRI_RUNTIME_PLUGIN_V3, CRI_SHORT_ID):
            if plugin_key:
                found = self.last_file_setting(("plugins", plugin_key, "containerd", "runtimes", name) + suffix)
                if found[0]:
                    return found
        return None, None


def _version_tuple(value):
    if isinstance(value, (list, tuple)) and len(value) == 3 and all(isinstance(part, int) and not isinstance(part, bool) for part in value):
        return tuple(value)
    return None


def toml_key(*parts):
    """A dotted TOML key as written in a file: ``plugins."io.containerd.grpc.v1.cri".containerd``."""
    return ".".join(part if part and all(char.isalnum() or char in "_-" for char in part) else f'"{part}"' for part in parts)


def severity(handlers):
    return ERROR if handlers else WARNING


def listings(evidence):
    """``{directory: [entry, ...] or None}`` from directory listings (a list of ``list_directory`` results, or a
    mapping of directory to entries); entries are ``{"name", "size", "mtime", "is_file"}``; names alone are accepted."""
    if isinstance(evidence, dict):
        pairs = evidence.items()
    elif isinstance(evidence, list):
        pairs = [
            (listing["path"], listing.get("entries") if listing.get("exists") and not listing.get("error") else None)
            for listing in evidence if isinstance(listing, dict) and listing.get("path")
        ]
    else:
        return {}
    return {
        directory: [_entry(entry) for entry in entries if isinstance(entry, (dict, str)) and _entry(entry)["name"]]
        if isinstance(entries, list) else None
        for directory, entries in pairs if isinstance(directory, str)
    }


def _entry(entry):
    if isinstance(entry, str):
        return {"name": entry, "is_file": True}
    return dict(entry, name=entry.get("name") if isinstance(entry.get("name"), str) else "")
