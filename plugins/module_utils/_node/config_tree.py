# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""What the change path reads on a node before it plans (containerd_runtime_config_probe, ``mode: gather``).

The version, the root config's text and its top-level ``imports``, their Go Glob expansion by the node's release
(``_node/imports.imports_loaded``, the rule the crosscheck's walk applies), the text of every file they match (bounded
reads, ``_node/gather.read_text_file``), the current ``config dump``, and what writing the planned files needs: modes,
owners, writability, real paths, the backup directory's entries, the runtime binaries. Raw evidence, no judgement.
With ``mode: daemon`` (``ask_daemon``): the running daemon's CRI status on a socket (``_node/cri_status``, as
containerd_facts asks it), for the edits it has not loaded; nothing else is read again.

Runs on nodes: standard library only, Python 3.8 syntax.
"""

from __future__ import absolute_import, division, print_function

import os

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.cri_status import daemon_status
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.containerd_release import (
    parse_containerd_version,
    parse_version,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.gather import find_executable, read_text_file, run_command
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.imports import imports_loaded
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.redaction import redact_evidence
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.toml_imports import read_top_level_imports

__metaclass__ = type

# The CRI client asked first, as containerd_facts' default crictl_bin (cri_status falls back to gRPC).
CRICTL = "crictl"
# The largest config file the change path reads (root or imported).
MAX_FILE_BYTES = 4 * 1024 * 1024


def read_config_text(path):
    """(text, error); text None when the file does not exist."""
    entry = read_text_file(path, MAX_FILE_BYTES)
    if entry["error"] == "does not exist":
        return None, None
    return entry["text"], entry["error"] and "%s %s" % (path, entry["error"])


def run_containerd(argv, timeout):
    """``{"rc", "stdout", "stderr"}`` of a containerd command (output bounded by ``run_command``)."""
    rc, stdout, stderr, error = run_command(argv, timeout)
    return {"rc": rc, "stdout": stdout.decode("utf-8", "replace"), "stderr": error or stderr}


def containerd_version(binary, timeout):
    """(``containerd --version`` result, the version as a tuple or None)."""
    version = run_containerd([binary, "--version"], timeout)
    return version, parse_version(parse_containerd_version(version["stdout"])) if version["rc"] == 0 else None


def why_not_writable(path):
    """None when ``path`` can be written (or created), else the reason. access() reports EROFS too."""
    target = path
    while not os.path.lexists(target):
        parent = os.path.dirname(target)
        if parent == target:
            break
        target = parent
    if os.path.exists(path) and os.path.isdir(path):
        target = path
    elif os.path.lexists(path):
        target = os.path.dirname(path) or "/"
    if not os.path.isdir(target):
        return "%s is not a directory" % target
    if not os.access(target, os.W_OK | os.X_OK):
        try:
            read_only = os.statvfs(target).f_flag & os.ST_RDONLY
        except OSError:
            read_only = False
        return "%s is %s" % (target, "on a read-only file system" if read_only else "not writable")
    return None


def file_status(path):
    """``{"mode": "0600", "uid", "gid"}`` of ``path``, or None when it does not exist: written files keep them."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    return {"mode": "%04o" % (status.st_mode & 0o7777), "uid": status.st_uid, "gid": status.st_gid}


def _entry_names(path):
    try:
        return sorted(os.listdir(path))
    except OSError:
        return None


def gather_config_tree(params, binary):
    """``(evidence, error)`` for the probe's ``mode: gather`` options ``params``; ``binary`` is the containerd found."""
    config_path = params["config_path"]
    version, version_tuple = containerd_version(binary, params["timeout"])
    root_text, root_error = read_config_text(config_path)
    if root_error:
        return None, "root config " + root_error
    root_imports, imports_error = (None, None) if root_text is None else read_top_level_imports(root_text)
    patterns = list(root_imports or []) + list(params["patterns"])
    globs, glob_errors = imports_loaded(patterns, config_path, version_tuple)
    if glob_errors:
        return None, "; ".join(glob_errors)
    texts = {}
    for paths in list(globs.values()) + [params["write_paths"]]:
        for path in paths:
            if path not in texts and os.path.isfile(path):
                text, error = read_config_text(path)
                if error:
                    return None, "imported file " + error
                texts[path] = text
    dump = None
    if root_text is not None:
        dump = run_containerd([binary, "--config", config_path, "config", "dump"], params["timeout"])
    stat_paths = [config_path] + list(texts) + list(params["write_paths"])
    stat_paths += [os.path.dirname(path) for path in params["write_paths"]] + list(params["list_dirs"])
    return {
        "stats": dict((path, file_status(path)) for path in stat_paths),
        "listings": dict((path, _entry_names(path)) for path in params["list_dirs"]),
        "version_text": version["stdout"].strip() if version["rc"] == 0 else None,
        "version_error": None if version["rc"] == 0 else version["stderr"] or "exit %s" % version["rc"],
        "root_text": root_text,
        "root_imports": root_imports,
        "root_imports_error": imports_error,
        "globs": globs,
        "texts": texts,
        "dump": dump,
        "writable": dict((path, why_not_writable(path)) for path in params["write_paths"]),
        # Symbolic links resolved: the controller confines every write to the root's real directory.
        "realpaths": dict((path, os.path.realpath(path)) for path in stat_paths + [os.path.dirname(config_path)]),
        "binaries": dict((name, None if find_executable(name) else "not an executable file on the node") for name in params["binaries"]),
    }, None


def ask_daemon(params, _binary=None):
    """``({"daemon": evidence}, None)``: the running daemon's CRI status on ``params["socket"]``, credentials redacted
    as containerd_facts redacts it (``_node/redaction.redact_evidence``)."""
    status = daemon_status(params["socket"], CRICTL, params["timeout"])
    return {"daemon": redact_evidence({"daemon": status})["daemon"]}, None
