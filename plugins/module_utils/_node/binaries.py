# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The runtime binaries a node's containerd configuration names (``BinaryName``, shims, ``runc``), stat'ed.

Runs on nodes: standard library only, Python 3.8 syntax. No judgement here.
"""

from __future__ import absolute_import, division, print_function

import json
import os
import re
import shutil

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.gather import (
    host_path,
    is_node_root,
    node_path_of,
)

__metaclass__ = type

# The PATH containerd's systemd unit gives the daemon and its shims (containerd.service @v1.6.20): where a bare
# BinaryName or shim name is searched under a host_root other than `/`.
NODE_PATH_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")

# What to stat is chosen by a regex over the dump's lines (and the daemon's JSON), not a TOML parse:
# the node has no tomllib. It only picks candidates; the controller decides which runtime uses which.
_BINARY_NAME_IN_TOML = re.compile(r"""^[ \t]*BinaryName[ \t]*=[ \t]*(?:"([^"\n]*)"|'([^'\n]*)')""", re.MULTILINE)

_RUNTIME_TYPE_IN_TOML = re.compile(r"""^[ \t]*runtime_type[ \t]*=[ \t]*(?:"([^"\n]*)"|'([^'\n]*)')""", re.MULTILINE)

_BINARY_NAME_IN_JSON = re.compile(r'"BinaryName"\s*:\s*"((?:[^"\\]|\\.)*)"')

_RUNTIME_TYPE_IN_JSON = re.compile(r'"runtimeType"\s*:\s*"((?:[^"\\]|\\.)*)"')

_JSON_PATTERNS = (_BINARY_NAME_IN_JSON, _RUNTIME_TYPE_IN_JSON)


def shim_binary_name(runtime_type):
    """containerd's shim binary for a runtime type: io.containerd.runc.v2 -> containerd-shim-runc-v2.

    ``BinaryName`` in runtime/v2/shim/util.go (@v1.6.20): the last two dot-separated parts; an absolute
    path (2.x) is used as is; fewer than two parts names no shim.
    """
    if os.path.isabs(runtime_type):
        return runtime_type
    parts = runtime_type.split(".")
    if len(parts) < 2 or not all(parts[-2:]):
        return None
    return "containerd-shim-%s-%s" % (parts[-2], parts[-1])


def _resolve(name, containerd_dir, host_root="/"):
    """This machine's path of the binary the node would run for ``name``, or None."""
    if not is_node_root(host_root):
        # containerd's own binary is not the node's here, so only the node's standard PATH is searched.
        candidates = [name] if os.path.isabs(name) else [os.path.join(directory, name) for directory in NODE_PATH_DIRS]
        for candidate in candidates:
            real = host_path(host_root, candidate)
            if os.path.isfile(real) and (os.path.isabs(name) or os.access(real, os.X_OK)):
                return real
        return host_path(host_root, name) if os.path.isabs(name) and os.path.lexists(host_path(host_root, name)) else None
    if os.path.isabs(name):
        return name if os.path.lexists(name) else None
    found = shutil.which(name)
    if found:
        return found
    # containerd also runs a shim lying beside its own binary (shim.Command, runtime/v2/shim/util.go).
    if containerd_dir:
        beside = os.path.join(containerd_dir, name)
        if os.path.lexists(beside):
            return beside
    return None


def stat_binary(name, kind, containerd_dir=None, host_root="/"):
    """``{kind, exists, executable, resolved (a node path), runtime_types}`` of one binary name."""
    resolved = _resolve(name, containerd_dir, host_root)
    exists = bool(resolved) and os.path.isfile(resolved)
    if resolved and not is_node_root(host_root):
        real = node_path_of(host_root, resolved)
    else:
        real = os.path.realpath(resolved) if resolved else None
    return {"kind": kind, "exists": exists, "executable": exists and os.access(resolved, os.X_OK),
            "resolved": real, "runtime_types": []}


def _matched_values(pattern, text):
    values = []
    for found in pattern.finditer(text or ""):
        value = next(group for group in found.groups() if group is not None)
        if pattern in _JSON_PATTERNS:
            try:
                value = json.loads('"%s"' % value)
            except ValueError:
                continue
        if value and value not in values:
            values.append(value)
    return values


def runtime_binaries(dump_text, daemon_text, containerd_bin, host_root="/"):
    """Stat of every ``BinaryName`` and implied shim found in the dump and the daemon's JSON, under ``host_root``.

    Keyed by the name as written. ``runc`` is included whenever a runc.v2 runtime appears: a runc
    runtime without ``BinaryName`` runs ``runc`` from the shim's PATH.
    """
    binary_names = _matched_values(_BINARY_NAME_IN_TOML, dump_text) + _matched_values(_BINARY_NAME_IN_JSON, daemon_text)
    runtime_types = _matched_values(_RUNTIME_TYPE_IN_TOML, dump_text) + _matched_values(_RUNTIME_TYPE_IN_JSON, daemon_text)
    containerd_path = _resolve(containerd_bin, None) if containerd_bin and is_node_root(host_root) else None
    containerd_dir = os.path.dirname(os.path.realpath(containerd_path)) if containerd_path else None
    binaries = {}
    for name in binary_names:
        binaries.setdefault(name, stat_binary(name, "BinaryName", containerd_dir, host_root))
    for runtime_type in runtime_types:
        shim = shim_binary_name(runtime_type)
        if shim:
            binaries.setdefault(shim, stat_binary(shim, "shim", containerd_dir, host_root))
            if runtime_type not in binaries[shim]["runtime_types"]:
                binaries[shim]["runtime_types"].append(runtime_type)
        if runtime_type == "io.containerd.runc.v2":
            binaries.setdefault("runc", stat_binary("runc", "default_runc", containerd_dir, host_root))
    return binaries
