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
    on-disk root configuration and every file its C(imports) reach, each once, as raw text.
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
extends_documentation_fragment:
  - gpufleet.runtime_gate._attributes
  - gpufleet.runtime_gate.containerd_node_options
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
  - The dump runs from C(/), the daemon's working directory under systemd, so a relative C(imports) glob resolves
    as the daemon resolves it (containerd 1.6.0-1.6.28 and 1.7.0-1.7.15 glob it from the working directory).
  - The running daemon's view (O(ask_daemon)) is what tells a stale daemon from its files; without crictl or grpcio on
    the node it is unknown, never assumed equal to the dump.
seealso:
  - module: gpufleet.runtime_gate.node_crosscheck
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

- name: From a container with the host's root mounted at /host, judge a dump captured on the host
  gpufleet.runtime_gate.containerd_facts:
    host_root: /host
    dump_file: /host/var/tmp/containerd-config-dump.toml
    socket: /host/run/containerd/containerd.sock

- name: From a container with the host's root at /host, run containerd on the host's files through a wrapper
  gpufleet.runtime_gate.containerd_facts:
    host_root: /host
    # A script such as: exec chroot "$RUNTIME_GATE_HOST_ROOT" containerd "$@"
    containerd_bin: /usr/local/bin/containerd-in-host-root
    socket: /host/run/containerd/containerd.sock

- name: A k3s node, whose containerd listens on its own socket
  gpufleet.runtime_gate.containerd_facts:
    config_path: /var/lib/rancher/k3s/agent/etc/containerd/config.toml
    socket: /run/k3s/containerd/containerd.sock

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
          description:
            - The exact release that printed the dump (from C(containerd --version) on the node, O(containerd_version) or the
              version file beside O(dump_file)), or null when only the release family is known (inferred from the dump).
          type: str
          sample: 1.6.20
        containerd_release:
          description:
            - The release range the rules use, C(low) and C(high) as C([major, minor, patch]) (equal when exact) and C(text),
              e.g. C(1.6.20) or C(2.0-2.2 (inferred from the dump's version = 3)).
          type: dict
        version_source:
          description: Where the version came from, in words (C(`containerd --version` on the node), C(the containerd_version option),
            C(version file '<path>'), C(inferred from the dump)).
          type: str
        files_examined:
          description: Whether the node's config files, drop-in and CDI dirs and binaries were read (false for a O(dump_file)
            judged without O(host_root)).
          type: bool
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
        cri_startup:
          description:
            - What the CRI plugin does with the loaded configuration. C(errors) are sentences why it does not start (then
              no runtime is served); C(notes) qualify it; C(undecided) (containerd 1.x) says why the dump alone cannot tell
              whether it starts, which makes the node UNKNOWN (null when the dump tells); C(default_runtime_empty) whether the dump's
              C(default_runtime_name) is the empty string.
            - A runtime the plugin creates from a deprecated 1.x table carries C(created_from_deprecated_table) in RV(ansible_facts.containerd.runtimes).
          type: dict
          sample: {errors: [], notes: [], undecided: null, default_runtime_empty: false}
        daemon_startup:
          description:
            - Whether containerd itself starts with the loaded configuration (docs/cri-startup.md). C(errors) are sentences
              why it exits at start (C(required_plugins), C(root) equal to C(state), C(timeouts)), then nothing is served;
              C(undecided) says what only the node can tell (a required plugin that loads only where the node supports it),
              which makes the node UNKNOWN unless a running daemon serving CRI decides it.
          type: dict
          sample: {errors: [], undecided: []}
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
        config_files:
          description:
            - The root file and every file its C(imports) reach, in containerd's load order, each with C(path), C(role)
              (C(root) or C(import)), C(imported_by), C(pattern), C(text) (null when unreadable or not TOML; registry credentials
              redacted on the node, see docs/security.md), C(size), C(mtime), C(error),
              C(imports) (the node's reading of the top-level array) and C(imports_error). See docs/daemon-view.md.
          type: list
          elements: dict
        import_globs:
          description:
            - Each C(imports) entry of each file with C(pattern), C(declared_in), C(absolute), C(glob), C(resolved_pattern),
              C(matches) (Go C(filepath.Glob)), C(matches_from_cwd) (relative globs resolved from C(/), as 1.6.0-1.6.28 and
              1.7.0-1.7.15 do) and C(error).
          type: list
          elements: dict
        dropin_dirs:
          description:
            - Listings (C(path), C(exists), C(error), C(truncated), C(listed_because), C(entries) of C(name), C(size), C(mtime),
              C(is_file)) of each glob's directory and of O(dropin_dirs).
            - C(texts_for) lists the suffixes (C(.toml), C(.conf)) whose unloaded files carry their text; each regular such file
              no import reached has C(text) (null when unreadable or not TOML) and C(text_error) in its entry.
          type: list
          elements: dict
        binaries:
          description: Each runtime binary (C(BinaryName), implied shim, C(runc)) by name, with C(kind), C(exists), C(executable) and C(resolved).
          type: dict
        base_runtime_specs:
          description:
            - Each C(base_runtime_spec) file the dump names, by path, with C(state) (C(ok), C(missing), C(invalid), C(unchecked))
              and C(detail); null when the node's files were not examined. A missing or invalid one stops the CRI plugin.
          type: dict
        cdi_dirs:
          description: Listings of O(cdi_spec_dirs), the shape of RV(ansible_facts.containerd.dropin_dirs) without C(listed_because), C(texts_for) and texts.
          type: list
          elements: dict
        daemon:
          description:
            - The running daemon's view; C(state) is C(serving), C(cri_unavailable) (the daemon answers but serves no CRI)
              or C(unknown) (with C(reason); always with O(dump_file), which may be another node's capture); when serving,
              C(runtimes), C(runtime_details), C(default_runtime), C(runtime_handlers) (2.x), C(cri_ready) and C(conditions);
              C(cri_plugin_errors) when the CRI plugin failed.
          type: dict
evidence:
  description: Raw text the node returned, before the controller parsed it. Removed by the action plugin.
  returned: never
  type: dict
"""

import os

from ansible.module_utils.basic import AnsibleModule

# gather and gather_surroundings stay importable from here too (tests).
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.evidence import (  # pylint: disable=unused-import
    gather,
    gather_node_evidence,
    gather_surroundings,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._specs.containerd_facts import get_containerd_facts_argument_spec


def main():
    module = AnsibleModule(**get_containerd_facts_argument_spec())
    host_root = module.params["host_root"]
    if host_root is not None and (not os.path.isabs(host_root) or not os.path.isdir(host_root)):
        module.fail_json(msg="host_root '%s' is not an existing directory given as an absolute path" % host_root)
    evidence, error = gather_node_evidence(module.params)
    if error:
        module.fail_json(msg=error)
    module.exit_json(changed=False, evidence=evidence)


if __name__ == "__main__":
    main()
