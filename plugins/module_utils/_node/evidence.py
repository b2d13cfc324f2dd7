# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""What the containerd_facts node module gathers: the root config and every file its imports reach (each read once), the
dump (or a dump file) and the version, then the listings, binaries and daemon status around them, redacted. Raw
evidence for the controller; no judgement here.

Runs on nodes: standard library only, Python 3.8 syntax. bin/rc-crosscheck imports it too (on the machine it runs on).
"""

from __future__ import absolute_import, division, print_function

import os

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.base_specs import base_runtime_specs
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.cri_status import daemon_status
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.binaries import runtime_binaries
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.gather import (
    deadline_in, find_executable, finish_command, is_node_root, read_text_file, run_command, start_command)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.imports import walk_imports
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.listings import dropin_listings, list_directory
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.redaction import redact_evidence, redact_message, secrets_in

__metaclass__ = type

DEFAULT_CONTAINERD = "containerd"
# Beside a captured dump: what `containerd --version` printed on the machine that took it (inventory/demo/nodes/*).
DUMP_VERSION_FILE = "containerd-version.txt"
# Refuse anything this large before reading it: a real dump is tens of kilobytes.
MAX_DUMP_BYTES = 50 * 1024 * 1024
# `containerd --version` prints one line.
MAX_VERSION_BYTES = 64 * 1024


def _decode(raw, what):
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as error:
        return None, "%s is not UTF-8 text (byte 0x%02x at offset %d)" % (what, raw[error.start], error.start)


def _read_file(path, what):
    """Return (text, error); text is None when the file does not exist."""
    entry = read_text_file(path, MAX_DUMP_BYTES)
    if entry["error"] == "does not exist":
        return None, None
    return entry["text"], entry["error"] and "%s %s" % (what, entry["error"])


def host_root_needs_wrapper(params):
    """Why containerd cannot be run for this ``host_root``, or None.

    containerd reads this machine's files, whatever ``host_root`` says (and dumps its built-in defaults silently
    when the config is absent): run bare, it would judge the wrong node. Only an explicit ``containerd_bin`` (a
    wrapper running containerd on the node's root) or a ``dump_file`` can stand for the node.
    """
    if params.get("dump_file") or is_node_root(params.get("host_root") or "/"):
        return None
    if params.get("containerd_bin"):
        binary = find_executable(params["containerd_bin"])
        if binary and _is_compiled_program(binary):
            # containerd itself ignores RUNTIME_GATE_HOST_ROOT and would dump this machine's configuration for the node.
            return ("containerd_bin '%s' is a compiled program (%s), not a wrapper: with host_root '%s' it would read this "
                    "machine's %s and judge it as the node's; give a wrapper script that runs containerd on the node's root "
                    "(chroot, nsenter; it gets RUNTIME_GATE_HOST_ROOT), or give dump_file"
                    % (params["containerd_bin"], binary, params["host_root"], params["config_path"]))
        return None
    return ("host_root is '%s' but neither dump_file nor containerd_bin is given: a bare containerd would read this "
            "machine's %s, not the node's; set containerd_bin to a wrapper that runs containerd on the node's root "
            "(chroot, nsenter; it gets RUNTIME_GATE_HOST_ROOT), or give dump_file" % (params["host_root"], params["config_path"]))


def files_examined(params):
    """Whether the node's files belong to this dump: always when containerd runs here; for a dump file only under an
    explicit host_root (a capture judged by itself may come from any machine, not from the one running this module)."""
    return not params.get("dump_file") or bool(params.get("host_root"))


def dump_file_version(params):
    """``(version_text, version_source)`` for a dump file: the option, else the version file beside it, else (None, None)."""
    if params.get("containerd_version"):
        return params["containerd_version"].strip(), "the containerd_version option"
    version_file = os.path.join(os.path.dirname(os.path.abspath(params["dump_file"])), DUMP_VERSION_FILE)
    text, error = _read_file(version_file, "version file '%s'" % version_file)
    if text and not error and text.strip():
        return text.strip(), "version file '%s'" % version_file
    return None, None


def _is_compiled_program(path):
    """True for an ELF executable (containerd is one); a wrapper is a script (``#!``)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(4) == b"\x7fELF"
    except OSError:
        return False


def config_secrets(evidence):
    """The credential values in the node's config files (the root and its imports, as ``gather`` read them): what no
    message may quote."""
    return secrets_in(entry.get("text") for entry in evidence.get("config_files") or ())


def gather_node_evidence(params):
    """``(evidence, None)`` for the controller, or ``(None, message)`` when the dump cannot be had: the whole node task
    (``config dump``, ``--version`` and the daemon's CRI status) under one deadline, ``timeout`` seconds from now."""
    deadline = deadline_in(params["timeout"])
    evidence, error = gather(params, deadline)
    if error:
        return None, error
    return gather_surroundings(params, evidence, deadline), None


def gather(params, deadline=None):
    """Raw evidence for the controller, or (None, message) when the dump cannot be had: the config files (when the
    node's files belong to the dump: ``files_examined``), the dump and the version.

    ``deadline``: the node task's (``gather_node_evidence``); None: ``timeout`` seconds from now."""
    refusal = host_root_needs_wrapper(params)
    if refusal:
        return None, refusal
    containerd_bin, config_path, dump_file = params["containerd_bin"] or DEFAULT_CONTAINERD, params["config_path"], params["dump_file"]
    evidence = {"containerd_bin": containerd_bin, "config_path": config_path, "version_text": None, "version_source": None,
                "files_examined": files_examined(params)}

    host_root = params.get("host_root") or "/"
    if evidence["files_examined"]:
        # The root and every file its imports reach, each read once, here: the root is config_files[0] (role root),
        # the one copy of its text the controller gets.
        evidence["config_files"], evidence["import_globs"] = walk_imports(config_path, host_root)

    if dump_file:
        # The binary here did not print this dump: its --version would describe another containerd.
        evidence["version_text"], evidence["version_source"] = dump_file_version(params)
        evidence["source"] = "file"
        evidence["source_name"] = "dump_file '%s'" % dump_file
        dump_text, error = _read_file(dump_file, evidence["source_name"])
        if error:
            return None, error
        if dump_text is None:
            return None, "%s does not exist" % evidence["source_name"]
        evidence["dump_text"] = dump_text
        return evidence, None

    binary = find_executable(containerd_bin)
    argv = [binary or containerd_bin, "--config", config_path, "config", "dump"]
    evidence["source"] = "command"
    evidence["source_name"] = "`%s`" % " ".join(argv)
    if not binary:
        return None, "containerd binary '%s' was not found (not in PATH or not executable)" % containerd_bin
    # Both at once: the version's second process then costs the node no wall time beside the dump (benchmarks/README.md).
    version_argv = [binary, "--version"]
    # One deadline for both commands: the node task ends within timeout seconds, not timeout per command.
    deadline = deadline if deadline is not None else deadline_in(params["timeout"])
    version_process = start_command(version_argv)
    # The node's files are elsewhere: a wrapper given as containerd_bin can run containerd on them.
    env = None if is_node_root(host_root) else dict(os.environ, RUNTIME_GATE_HOST_ROOT=host_root)
    rc, stdout, stderr, error = run_command(argv, params["timeout"], env, max_bytes=MAX_DUMP_BYTES, deadline=deadline)
    version_rc, version_stdout, _stderr, version_error = finish_command(version_process, version_argv, params["timeout"],
                                                                        max_bytes=MAX_VERSION_BYTES, deadline=deadline)
    if version_rc == 0 and not version_error:
        evidence["version_text"] = version_stdout.decode("utf-8", "replace").strip()
        evidence["version_source"] = "`%s --version` on the node" % containerd_bin
    if error:
        return None, error
    if rc != 0:
        # containerd's message can quote a config value, a credential too (1.x: "Can't convert 123456(int64) to string").
        stderr = redact_message(stderr, config_secrets(evidence)) if stderr else "(no stderr)"
        return None, "%s exited %d: %s" % (evidence["source_name"], rc, stderr)
    dump_text, error = _decode(stdout, "the output of %s" % evidence["source_name"])
    if error:
        return None, error
    evidence["dump_text"] = dump_text
    evidence["dump_stderr"] = stderr
    return evidence, None


def gather_surroundings(params, evidence, deadline=None):
    """The directories, binaries and daemon around the dump and the config files ``gather`` read: raw evidence for the
    findings.

    ``deadline``: the node task's, which the CRI status call (crictl or gRPC) shares with the dump."""
    if params.get("dump_file"):
        # The file may be another node's capture: this node's daemon says nothing about it (it is not even asked).
        evidence["daemon"] = {"source": None, "socket": params["socket"],
                              "error": "not asked: the dump was read from dump_file, maybe another node's capture, which "
                                       "this node's running daemon says nothing about"}
    elif params["ask_daemon"]:
        evidence["daemon"] = daemon_status(params["socket"], params["crictl_bin"], params["timeout"], deadline)
    else:
        evidence["daemon"] = {"source": None, "socket": params["socket"], "error": "not asked (ask_daemon: false)"}
    if not evidence["files_examined"]:
        return redact_evidence(evidence)
    host_root = params.get("host_root") or "/"
    reached = {entry["path"] for entry in evidence["config_files"] if entry["path"]}
    evidence["dropin_dirs"] = dropin_listings(evidence["import_globs"], params["dropin_dirs"], host_root, reached)
    evidence["cdi_dirs"] = [list_directory(os.path.normpath(path), host_root) for path in params["cdi_spec_dirs"]]
    daemon = evidence["daemon"]
    daemon_text = daemon.get("stdout") or ((daemon.get("response") or {}).get("info") or {}).get("config")
    evidence["binaries"] = runtime_binaries(evidence["dump_text"], daemon_text, params["containerd_bin"] or DEFAULT_CONTAINERD, host_root)
    # The CRI plugin opens each base_runtime_spec when it starts: a missing one stops it (docs/cri-startup.md).
    evidence["base_runtime_specs"] = base_runtime_specs(evidence["dump_text"], host_root)
    # Registry credentials never leave the node (docs/security.md).
    return redact_evidence(evidence)
