# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The ``base_runtime_spec`` files a node's containerd configuration names: do they exist, and do they decode.

Runs on nodes: standard library only, Python 3.8 syntax. No judgement here: the controller decides which runtime uses
which file (docs/cri-startup.md). containerd's CRI plugin opens every runtime's ``base_runtime_spec`` when it starts and
decodes it as a JSON OCI spec (``loadBaseOCISpecs``, ``pkg/cri/server/service.go`` @v1.7.35,
``plugins/cri/runtime/plugin.go`` @v2.2.9); a file it cannot open or decode stops the CRI plugin.
"""

from __future__ import absolute_import, division, print_function

import json
import re

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.gather import host_path, read_text_file

__metaclass__ = type

# An OCI spec is a few kilobytes; a bigger file is not read (the controller then cannot decide: UNKNOWN).
MAX_BASE_SPEC_BYTES = 1024 * 1024
# At most this many distinct files are looked at; a dump naming more is not a real node's (the rest: not checked).
MAX_BASE_SPECS = 64

# What to check is chosen by a regex over the dump's lines, not a TOML parse (the node has no tomllib): the dump
# prints every runtime's base_runtime_spec as a basic string (Go's TOML encoder), "" when unset.
_BASE_SPEC_IN_TOML = re.compile(r"""^[ \t]*base_runtime_spec[ \t]*=[ \t]*(?:"((?:[^"\\\n]|\\.)*)"|'([^'\n]*)')""", re.MULTILINE)

OK = "ok"
MISSING = "missing"
INVALID = "invalid"
UNCHECKED = "unchecked"


def _named_paths(dump_text):
    """The distinct paths, in order, at most ``MAX_BASE_SPECS + 1`` of them (one more says "too many")."""
    paths = []
    for found in _BASE_SPEC_IN_TOML.finditer(dump_text or ""):
        if found.group(1) is not None:
            try:
                path = json.loads('"%s"' % found.group(1))
            except ValueError:
                continue
        else:
            path = found.group(2)
        if path and path not in paths:
            paths.append(path)
            if len(paths) > MAX_BASE_SPECS:
                break
    return paths


def check_base_spec(path, host_root="/"):
    """``{"state": ok|missing|invalid|unchecked, "detail": sentence or None}`` for one node path."""
    if "\x00" in path:
        # No file has such a name: Go's open fails ("invalid argument"), Python's raises before looking.
        return {"state": INVALID, "detail": "contains a NUL character, which no file name can"}
    entry = read_text_file(host_path(host_root, path), MAX_BASE_SPEC_BYTES)
    if entry["error"] == "does not exist":
        return {"state": MISSING, "detail": "does not exist"}
    if entry["text"] is None:
        if entry["error"] and entry["error"].startswith(("cannot be read", "is not a regular file", "is not UTF-8")):
            return {"state": INVALID, "detail": entry["error"]}
        return {"state": UNCHECKED, "detail": entry["error"]}
    # Go's json.Decoder reads the first JSON value into oci.Spec: an object (or null) decodes, anything else fails.
    text = entry["text"].lstrip(" \t\r\n")
    try:
        value, _end = json.JSONDecoder().raw_decode(text)
    except ValueError as error:
        return {"state": INVALID, "detail": "is not JSON (%s)" % str(error)[:120]}
    if value is not None and not isinstance(value, dict):
        return {"state": INVALID, "detail": "holds a JSON %s, not an OCI spec object" % type(value).__name__}
    return {"state": OK, "detail": None}


def base_runtime_specs(dump_text, host_root="/"):
    """``{node path: check_base_spec(...)}`` of every ``base_runtime_spec`` the dump names."""
    specs = {}
    for index, path in enumerate(_named_paths(dump_text)):
        if index >= MAX_BASE_SPECS:
            specs[path] = {"state": UNCHECKED, "detail": "not checked: the dump names more than %d base_runtime_spec files" % MAX_BASE_SPECS}
            continue
        # A relative path is opened from containerd's working directory, / under systemd (as run_command runs).
        specs[path] = check_base_spec(path if path.startswith("/") else "/" + path, host_root)
    return specs
