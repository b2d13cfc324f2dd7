# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Which runtime a new preset runtime starts from, and its table as the node's files load it. Controller side, pure.

``nvidia-ctk runtime configure`` (NVIDIA/nvidia-container-toolkit ``pkg/config/engine/containerd/config.go``,
``AddRuntime``; ``pkg/config/engine/api.go``, ``GetLowLevelRuntimes``) copies the whole table of the first of: the
configured default runtime (unless its name starts with ``nvidia``), ``runc``, ``crun`` that the file defines, into each
new runtime, then sets ``options.BinaryName``; it does so on every config version. The role does the same, so that
runc's ``SystemdCgroup = true`` (and every other key of its table) carries over to nvidia, nvidia-cdi and nvidia-legacy
on 1.x and 2.x alike. Keys the inputs name win over the inherited ones.
"""

import copy

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.containerd_config import (
    CRI_PLUGIN_V2,
    CRI_RUNTIME_PLUGIN_V3,
)

# GetLowLevelRuntimes: the default runtime first (never an nvidia* one), then these.
LOW_LEVEL_RUNTIMES = ("runc", "crun")


def inherit_source(defined_runtimes, default_runtime):
    """The runtime name a new runtime copies (nvidia-ctk's order), or None when the files define none of them."""
    candidates = ([default_runtime] if default_runtime and not default_runtime.startswith("nvidia") else [])
    for name in candidates + list(LOW_LEVEL_RUNTIMES):
        if isinstance(defined_runtimes.get(name), dict):
            return name
    return None


def _runtimes_of(document):
    """The runtime tables a file declares, whichever CRI key its version uses (2: grpc.v1.cri; 3+: cri.v1.runtime)."""
    plugins = document.get("plugins") if isinstance(document, dict) else None
    if not isinstance(plugins, dict):
        return {}
    key = CRI_PLUGIN_V2 if (document.get("version") or 1) <= 2 else CRI_RUNTIME_PLUGIN_V3
    table = plugins.get(key)
    containerd = table.get("containerd") if isinstance(table, dict) else None
    runtimes = containerd.get("runtimes") if isinstance(containerd, dict) else None
    return runtimes if isinstance(runtimes, dict) else {}


def merged_file_runtimes(order, documents):
    """``{name: table}`` of the runtimes the files in load ``order`` define, merged as containerd 2.x merges them
    (tables key by key, a later file's value wins, arrays replaced)."""
    merged = {}
    for path in order:
        for name, table in _runtimes_of(documents.get(path)).items():
            if isinstance(table, dict):
                merged[name] = deep_merge(merged.get(name) if isinstance(merged.get(name), dict) else {}, table)
    return merged


def with_inherited(requested, defined_runtimes, *, inherits, default_runtime):
    """``requested`` with each new inheriting runtime started from a copy of its source's table.

    ``inherits``: the names of requested runtimes that inherit (the preset's); a runtime the files already define keeps
    its own table (containerd merges the drop-in into it). Returns ``(tables, {name: source})``.
    """
    source = inherit_source(defined_runtimes, default_runtime)
    tables, sources = {}, {}
    for name, table in requested.items():
        if name in inherits and source and source != name and not isinstance(defined_runtimes.get(name), dict):
            tables[name] = deep_merge(copy.deepcopy(defined_runtimes[source]), table)
            sources[name] = source
        else:
            tables[name] = table
    return tables, sources


def deep_merge(into, table):
    """``into`` updated with ``table``'s keys, nested tables merged (copies; ``into`` is returned)."""
    into = copy.deepcopy(into)
    for key, value in table.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            into[key] = deep_merge(into[key], value)
        else:
            into[key] = copy.deepcopy(value)
    return into
