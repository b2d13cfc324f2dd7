# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The files a node's root config reaches through ``imports``, walked in containerd's order.

Runs on nodes: standard library only, Python 3.8 syntax. No judgement here.

containerd's import walk (docs/containerd-loading.md §1, ``LoadConfig``/``resolveImports`` @v1.6.20, @v2.2.0): a FIFO
queue starting at the root; each file's own ``imports`` are resolved and queued; a path is applied
once, deduplicated by its exact string; only entries containing ``*`` are globbed (Go
``filepath.Glob``); a relative non-glob entry is joined to the importing file's directory; a relative
glob is joined likewise on 1.6.29+/1.7.16+/2.x but passed unchanged (so resolved from the daemon's
working directory, ``/`` under systemd) on 1.6.0-1.6.28 and 1.7.0-1.7.15.
"""

from __future__ import absolute_import, division, print_function

import os
import re

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.goglob import (
    GlobLimitError,
    GlobPatternError,
    glob,
    has_meta,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.toml_imports import read_top_level_imports
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.containerd_release import relative_globs_from_cwd
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.gather import (
    host_path,
    is_node_root,
    read_text_file,
)

__metaclass__ = type

# containerd never stops walking imports, but a node with more files than this is not a config tree.
MAX_CONFIG_FILES = 200

# The working directory of a containerd started by systemd (WorkingDirectory= defaults to /).
DAEMON_WORKING_DIRECTORY = "/"


def _escape_glob(text):
    """``text`` with Go's magic characters escaped, so it matches only itself inside a pattern."""
    return re.sub(r"([*?\[\\])", r"\\\1", text)


def _join_to_importer(importer, entry):
    return os.path.normpath(os.path.join(os.path.dirname(importer), entry))


def non_magic_directory(pattern):
    """The leading directories of ``pattern`` without glob metacharacters ("/etc/containerd/conf.d")."""
    parts = pattern.split("/")
    kept = []
    for part in parts[:-1]:
        if has_meta(part):
            break
        kept.append(part)
    directory = "/".join(kept)
    if pattern.startswith("/") and not directory:
        return "/"
    return directory or "."


def _expand(pattern, host_root="/"):
    """Go ``filepath.Glob`` of a node pattern under ``host_root``: (node-path matches, error sentence or None).

    The pattern's leading directories without magic characters are mapped with ``host_path`` (so links in
    them stay inside ``host_root``) and escaped; the rest is globbed there, and each match is reported
    with those leading directories as written.
    """
    try:
        if is_node_root(host_root):
            return glob(pattern), None
        prefix = non_magic_directory(pattern)
        if not os.path.isabs(prefix):  # a relative pattern: containerd globs it from its working directory
            prefix, pattern = DAEMON_WORKING_DIRECTORY, os.path.join(DAEMON_WORKING_DIRECTORY, pattern)
        rest = pattern[len(prefix):].lstrip("/")
        real_prefix = host_path(host_root, prefix)
        matches = glob(os.path.join(_escape_glob(real_prefix), rest))
        node_matches = [os.path.normpath(os.path.join(prefix, match[len(real_prefix):].lstrip("/"))) for match in matches]
        # The glob walks this machine's file system: a directory link with an absolute target leads it out of host_root.
        # Only a match that exists with every component resolved inside host_root is the node's.
        return [match for match in node_matches if os.path.lexists(host_path(host_root, match))], None
    except (GlobPatternError, GlobLimitError) as error:
        return [], str(error)


def walk_imports(root_path, host_root="/"):
    """``(config_files, import_globs)``: every file reachable from the root, in containerd's order.

    ``root_path`` and every reported path are node paths; files are read under ``host_root``.
    """
    config_files = []
    import_globs = []
    queued = [(root_path, "root", None, None)]
    seen = {root_path}
    while queued and len(config_files) < MAX_CONFIG_FILES:
        path, role, imported_by, pattern = queued.pop(0)
        entry = {"path": path, "role": role, "imported_by": imported_by, "pattern": pattern}
        entry.update(read_text_file(host_path(host_root, path)))
        entry["imports"], entry["imports_error"] = (
            read_top_level_imports(entry["text"]) if entry["text"] is not None else (None, None))
        config_files.append(entry)
        for declared in entry["imports"] or []:
            expansion = expand_import(declared, path, host_root)
            import_globs.append(expansion)
            for match in expansion["matches"]:
                if match not in seen:
                    seen.add(match)
                    queued.append((match, "import", path, declared))
    if queued:
        config_files.append({"path": None, "role": "import", "imported_by": None, "pattern": None, "text": None,
                             "size": None, "mtime": None, "imports": None, "imports_error": None,
                             "error": "more than %d files are reachable through imports; the rest were not read"
                                      % MAX_CONFIG_FILES})
    return config_files, import_globs


def expand_import(declared, importer, host_root="/"):
    """One ``imports`` entry as containerd resolves it, plus what 1.6.0-1.6.28/1.7.0-1.7.15 would load."""
    absolute = os.path.isabs(declared)
    globbed = "*" in declared  # containerd globs only entries containing '*' (resolveImports)
    resolved = declared if absolute else _join_to_importer(importer, declared)
    expansion = {"pattern": declared, "declared_in": importer, "absolute": absolute, "glob": globbed,
                 "resolved_pattern": resolved, "matches": [], "matches_from_cwd": None,
                 "cwd": None, "error": None}
    if globbed:
        expansion["matches"], expansion["error"] = _expand(resolved, host_root)
        if not absolute:
            expansion["cwd"] = DAEMON_WORKING_DIRECTORY
            cwd_pattern = os.path.join(DAEMON_WORKING_DIRECTORY, declared)
            expansion["matches_from_cwd"] = _expand(cwd_pattern, host_root)[0]
    else:
        # A literal entry is applied as written (even with ? or [ in it); a missing one stops containerd.
        expansion["matches"] = [os.path.normpath(resolved)]
    return expansion


def import_matches(declared, importer, version, host_root="/"):
    """``(matches, error)``: the files one ``imports`` entry of ``importer`` loads on containerd ``version`` (a tuple).

    A relative glob resolves from the daemon's working directory on 1.6.0-1.6.28/1.7.0-1.7.15, from the importer's
    directory otherwise (also when the version is unknown); a literal entry counts only when it exists.
    """
    expansion = expand_import(declared, importer, host_root)
    if not expansion["glob"]:
        return [path for path in expansion["matches"] if os.path.lexists(host_path(host_root, path))], None
    if expansion["matches_from_cwd"] is not None and relative_globs_from_cwd(version):
        return expansion["matches_from_cwd"], expansion["error"]
    return expansion["matches"], expansion["error"]


def imports_loaded(patterns, importer, version, host_root="/"):
    """``(globs, errors)``: each pattern, as an ``imports`` entry of ``importer``, mapped to the files containerd
    ``version`` (a tuple, or None) loads for it (``import_matches``); a pattern Go's Glob refuses is left out and named
    in ``errors``. The role's probe asks this for the root's imports and the patterns it plans, now and in the
    candidate tree.
    """
    globs, errors = {}, []
    for pattern in patterns:
        if pattern in globs:
            continue
        matches, error = import_matches(pattern, importer, version, host_root)
        if error:
            errors.append("import pattern %r: %s" % (pattern, error))
        else:
            globs[pattern] = matches
    return globs, errors
