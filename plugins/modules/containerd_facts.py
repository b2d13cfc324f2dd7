#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)

DOCUMENTATION = r"""
---
module: containerd_facts
short_description: Facts from the containerd configuration a node actually loads
description:
  - Runs C(<containerd_bin> --config <config_path> config dump) on the node (an argv list, no shell) and
    C(<containerd_bin> --version), or reads O(dump_file) instead of running the binary, and reads the
    on-disk root configuration's raw text.
  - The node side uses only the Python standard library (Python 3.8 or later) and returns raw text in
    one round trip; the action plugin parses it on the controller with C(tomllib) and sets
    C(ansible_facts.containerd).
  - Facts come from the I(loaded) configuration, because containerd drops runtime configuration
    silently (imports globs that match nothing, config version mismatches, 1.x drop-ins that replace
    the CRI table). The file can look right while the loaded configuration lacks a runtime.
  - Any failure to gather (binary missing, non-zero exit, empty output, malformed TOML, text that is
    not UTF-8, unreadable file) fails the task with a message naming the node, the command or file, and
    the cause.
version_added: 0.1.0
author:
  - gpufleet platform team (@gpufleet)
options:
  containerd_bin:
    description:
      - The containerd binary to run, a name looked up in E(PATH) or an absolute path.
    type: str
    default: containerd
  config_path:
    description:
      - The root configuration file passed as C(--config); its raw text is collected too.
    type: path
    default: /etc/containerd/config.toml
  dump_file:
    description:
      - A file on the node holding the output of C(containerd config dump) to judge instead of running the binary.
      - An empty string counts as unset.
    type: path
  timeout:
    description:
      - Seconds each containerd command may take before the gathering fails.
    type: int
    default: 60
attributes:
  check_mode:
    support: full
    description: Only reads; check mode runs it unchanged.
  diff_mode:
    support: none
    description: Reports nothing to diff; it never changes files.
  idempotent:
    support: full
    description: Never changes anything on the node.
  action:
    support: full
    description: An action plugin parses the node's raw text on the controller.
  facts:
    support: full
    description: Sets C(ansible_facts.containerd).
notes:
  - The dump starts from containerd's built-in defaults and re-reads the files, like a restart would; a
    daemon that was not restarted after an edit may still run an older configuration.
  - Paths inside the dump are the paths containerd resolved on the node.
seealso:
  - module: gpufleet.runtime_gate.handler_crosscheck
"""

EXAMPLES = r"""
- name: Read the loaded containerd configuration
  gpufleet.runtime_gate.containerd_facts:

- name: Judge a dump captured earlier instead of running containerd
  gpufleet.runtime_gate.containerd_facts:
    dump_file: /var/tmp/containerd-config-dump.toml

- name: A k3s node keeps its config elsewhere
  gpufleet.runtime_gate.containerd_facts:
    containerd_bin: /var/lib/rancher/k3s/data/current/bin/containerd
    config_path: /var/lib/rancher/k3s/agent/etc/containerd/config.toml

- name: Show the runtimes containerd loaded
  ansible.builtin.debug:
    msg: "{{ ansible_facts.containerd.runtimes.keys() | list }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts about the loaded containerd configuration.
  returned: success
  type: dict
  contains:
    containerd:
      description: The loaded configuration of this node's containerd.
      returned: success
      type: dict
      contains:
        containerd_version:
          description: Version from C(containerd --version), or null when unknown (a O(dump_file) without a binary).
          type: str
          sample: 1.6.20
        dump_version:
          description: The C(version) the dump prints (2 on containerd 1.x, 3 on 2.0-2.2, 4 on 2.3+).
          type: int
          sample: 2
        cri_runtime_plugin:
          description: The plugin key the runtimes were read from.
          type: str
          sample: io.containerd.grpc.v1.cri
        default_runtime_name:
          description: The runtime pods without C(runtimeClassName) use; null when the dump names none.
          type: str
          sample: runc
        runtimes:
          description: Loaded runtimes by name, each with C(runtime_type), C(binary_name) (C(options.BinaryName), null when unset) and C(options).
          type: dict
          sample:
            nvidia:
              runtime_type: io.containerd.runc.v2
              binary_name: /usr/bin/nvidia-container-runtime
              options: {BinaryName: /usr/bin/nvidia-container-runtime}
        ignored_runtimes:
          description: Runtimes written under the plugin key this config version ignores, by key.
          type: dict
          sample: {}
        disabled_plugins:
          description: The dump's C(disabled_plugins).
          type: list
          elements: str
        cri_disabled:
          description: Whether the CRI plugin is disabled, so no runtime is served.
          type: bool
        source:
          description: C(command) when containerd ran, C(file) when O(dump_file) was read.
          type: str
          sample: command
        source_name:
          description: The command or file the dump came from, as named in messages.
          type: str
        root_config:
          description: The on-disk root file (O(config_path)) with C(path), C(exists), its own C(version) and C(imports), and C(parse_error).
          type: dict
evidence:
  description: Raw text the node returned, before the controller parsed it. Removed by the action plugin.
  returned: never
  type: dict
"""

import os
import shutil
import subprocess

from ansible.module_utils.basic import AnsibleModule

# Refuse anything this large before reading it: a real dump is tens of kilobytes.
MAX_DUMP_BYTES = 50 * 1024 * 1024


def _decode(raw, what):
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as error:
        return None, "%s is not UTF-8 text (byte 0x%02x at offset %d)" % (what, raw[error.start], error.start)


def _read_file(path, what):
    """Return (text, error); text is None when the file does not exist."""
    try:
        size = os.path.getsize(path)
        if size > MAX_DUMP_BYTES:
            return None, "%s is %d bytes, larger than the %d byte limit" % (what, size, MAX_DUMP_BYTES)
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        return None, None
    except OSError as error:
        return None, "%s cannot be read: %s" % (what, error.strerror or error)
    return _decode(raw, what)


def _run(argv, timeout):
    """Return (rc, stdout bytes, stderr text, error)."""
    try:
        completed = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return None, b"", "", "`%s` did not finish within %d seconds" % (" ".join(argv), timeout)
    except OSError as error:
        return None, b"", "", "`%s` could not be started: %s" % (" ".join(argv), error.strerror or error)
    return completed.returncode, completed.stdout, completed.stderr.decode("utf-8", "replace").strip(), None


def _resolve_binary(containerd_bin):
    if os.sep in containerd_bin:
        return containerd_bin if os.access(containerd_bin, os.X_OK) and os.path.isfile(containerd_bin) else None
    return shutil.which(containerd_bin)


def gather(params):
    """Raw evidence for the controller, or (None, message) when the dump cannot be had."""
    containerd_bin, config_path, dump_file = params["containerd_bin"], params["config_path"], params["dump_file"]
    binary = _resolve_binary(containerd_bin)
    evidence = {"containerd_bin": containerd_bin, "config_path": config_path, "version_text": None}

    if binary:
        rc, stdout, _stderr, error = _run([binary, "--version"], params["timeout"])
        if rc == 0 and not error:
            evidence["version_text"] = stdout.decode("utf-8", "replace").strip()

    root_text, root_error = _read_file(config_path, "root config '%s'" % config_path)
    evidence["root_config_text"] = root_text
    evidence["root_config_error"] = root_error

    if dump_file:
        evidence["source"] = "file"
        evidence["source_name"] = "dump_file '%s'" % dump_file
        dump_text, error = _read_file(dump_file, evidence["source_name"])
        if error:
            return None, error
        if dump_text is None:
            return None, "%s does not exist" % evidence["source_name"]
        evidence["dump_text"] = dump_text
        return evidence, None

    argv = [binary or containerd_bin, "--config", config_path, "config", "dump"]
    evidence["source"] = "command"
    evidence["source_name"] = "`%s`" % " ".join(argv)
    if not binary:
        return None, "containerd binary '%s' was not found (not in PATH or not executable)" % containerd_bin
    rc, stdout, stderr, error = _run(argv, params["timeout"])
    if error:
        return None, error
    if rc != 0:
        return None, "%s exited %d: %s" % (evidence["source_name"], rc, stderr or "(no stderr)")
    if len(stdout) > MAX_DUMP_BYTES:
        return None, "%s printed %d bytes, larger than the %d byte limit" % (evidence["source_name"], len(stdout), MAX_DUMP_BYTES)
    dump_text, error = _decode(stdout, "the output of %s" % evidence["source_name"])
    if error:
        return None, error
    evidence["dump_text"] = dump_text
    evidence["dump_stderr"] = stderr
    return evidence, None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            containerd_bin=dict(type="str", default="containerd"),
            config_path=dict(type="path", default="/etc/containerd/config.toml"),
            dump_file=dict(type="path"),
            timeout=dict(type="int", default=60),
        ),
        supports_check_mode=True,
    )
    evidence, error = gather(module.params)
    if error:
        module.fail_json(msg=error)
    module.exit_json(changed=False, evidence=evidence)


if __name__ == "__main__":
    main()
