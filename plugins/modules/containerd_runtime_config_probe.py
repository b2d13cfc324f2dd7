#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)

DOCUMENTATION = r"""
---
module: containerd_runtime_config_probe
short_description: "Internal: node side of containerd_runtime_config (read the config tree, dump a candidate tree, ask the daemon)"
description:
  - Internal to the M(gpufleet.runtime_gate.containerd_runtime_config) action, not a module for playbooks; its options
    may change in any release.
  - With O(mode=gather), reads what the M(gpufleet.runtime_gate.containerd_runtime_config) action plans from
    C(containerd --version), the root configuration's text, the Go C(filepath.Glob) expansion of its top-level
    C(imports) (and of O(patterns)), the text of every file they match, the current C(config dump), and whether the
    directories that would be written are writable.
  - With O(mode=validate), writes O(files) into a fresh temporary directory (the placeholder C(@@CANDIDATE@@) in
    paths and texts is that directory), copies O(copy_files) there, runs the real
    C(<containerd_bin> --config <candidate root> config dump) from working directory C(/), expands O(patterns) in
    the candidate tree, returns the output and removes the directory. Nothing outside the temporary directory is
    written.
  - With O(mode=daemon), asks the running daemon on O(socket) for its CRI status (C(crictl info), else gRPC), as
    M(gpufleet.runtime_gate.containerd_facts) does with C(ask_daemon=true), credentials redacted.
  - Standard library only (Python 3.8 or later). Normally called by the action plugin, not from playbooks.
version_added: 0.2.0
author:
  - gpufleet platform team (@gpufleet)
extends_documentation_fragment:
  - gpufleet.runtime_gate._attributes
options:
  mode:
    description:
      - C(gather) reads the node; C(validate) dumps a candidate tree in a temporary directory; C(daemon) asks the
        running daemon.
    type: str
    choices: [gather, validate, daemon]
    required: true
  containerd_bin:
    description:
      - The containerd binary, a name looked up in E(PATH) or an absolute path.
    type: str
    default: containerd
  config_path:
    description:
      - The root configuration file (O(mode=gather)), or its path inside the candidate tree (O(mode=validate)).
    type: str
    default: /etc/containerd/config.toml
  patterns:
    description:
      - Further import patterns to expand with Go C(filepath.Glob) rules.
    type: list
    elements: str
    default: []
  write_paths:
    description:
      - Paths that would be written (O(mode=gather)); each is reported with whether it or its nearest existing
        parent directory is writable.
    type: list
    elements: str
    default: []
  binaries:
    description:
      - O(mode=gather) only. Runtime binaries (C(BinaryName)) to look for, absolute paths or names looked up in E(PATH).
    type: list
    elements: str
    default: []
  list_dirs:
    description:
      - O(mode=gather) only. Directories whose entry names are returned in RV(listings) (the role's backup directory).
    type: list
    elements: str
    default: []
  files:
    description:
      - O(mode=validate) only. Candidate files, path to text.
    type: dict
    default: {}
  copy_files:
    description:
      - O(mode=validate) only. Existing files to copy into the candidate tree, destination path to source path.
    type: dict
    default: {}
  socket:
    description:
      - O(mode=daemon) only. The socket the running containerd listens on.
    type: str
    default: /run/containerd/containerd.sock
  timeout:
    description:
      - Seconds each containerd command may take.
    type: int
    default: 60
attributes:
  check_mode:
    support: full
    description: Writes only a temporary directory that it removes again, so check mode runs it unchanged.
  diff_mode:
    support: none
    description: Changes nothing that could be diffed.
  idempotent:
    support: full
    description: Leaves the node as it found it.
notes:
  - Globs follow Go C(filepath.Glob) (sorted, C(*) never crosses C(/)), as containerd expands C(imports).
  - A relative import glob is resolved as the node's containerd does (C(containerd --version)), from C(/) on
    1.6.0-1.6.28 and 1.7.0-1.7.15, from the configuration file's directory otherwise.
seealso:
  - module: gpufleet.runtime_gate.containerd_runtime_config
"""

EXAMPLES = r"""
- name: Read a node's containerd config tree
  gpufleet.runtime_gate.containerd_runtime_config_probe:
    mode: gather
    patterns: ["/etc/containerd/conf.d/*.toml"]
"""

RETURN = r"""
version_text:
  description: Output of C(containerd --version); null when it failed (see RV(version_error)).
  returned: O(mode=gather)
  type: str
version_error:
  description: Why C(containerd --version) failed (its stderr, or its exit status); null when it succeeded.
  returned: O(mode=gather)
  type: str
root_text:
  description: Text of the root configuration; null when it does not exist.
  returned: O(mode=gather)
  type: str
root_imports:
  description: The root's top-level C(imports) as read on the node; null when absent or unreadable.
  returned: O(mode=gather)
  type: list
  elements: str
root_imports_error:
  description: Why the root's top-level C(imports) could not be read; null when it was read, absent or the root does not exist.
  returned: O(mode=gather)
  type: str
globs:
  description: Each expanded pattern mapped to its sorted matches.
  returned: O(mode=gather) or O(mode=validate)
  type: dict
glob_errors:
  description:
    - One message per pattern of the candidate tree that cannot be expanded as containerd would (O(mode=validate));
      empty when every pattern expanded. In O(mode=gather) such a pattern fails the task instead.
  returned: O(mode=validate)
  type: list
  elements: str
texts:
  description: Text of every file a pattern matched (O(mode=gather)).
  returned: O(mode=gather)
  type: dict
dump:
  description: C(rc), C(stdout), C(stderr) of the C(config dump) run; null when the root does not exist.
  returned: O(mode=gather) or O(mode=validate)
  type: dict
base_runtime_specs:
  description:
    - For each C(base_runtime_spec) the candidate's C(config dump) names, C(state) (C(ok), C(missing), C(invalid) or
      C(unchecked)) and C(detail). The CRI plugin opens and decodes each one when it starts.
  returned: O(mode=validate)
  type: dict
stats:
  description: C(mode) (octal string), C(uid) and C(gid) of the root, every matched file, every O(write_paths) entry and
    its directory; null for a path that does not exist.
  returned: O(mode=gather)
  type: dict
listings:
  description: For each of O(list_dirs), the sorted entry names; null when the directory does not exist.
  returned: O(mode=gather)
  type: dict
binaries:
  description: For each of O(binaries), null when it is an executable file, else why not.
  returned: O(mode=gather)
  type: dict
writable:
  description: For each of O(write_paths), null when writable, else why not.
  returned: O(mode=gather)
  type: dict
daemon:
  description:
    - The running daemon's CRI status as M(gpufleet.runtime_gate.containerd_facts) gathers it (C(source), C(socket),
      the answer or C(error)), credentials redacted; the controller reads it with C(_facts/daemon_view).
  returned: O(mode=daemon)
  type: dict
realpaths:
  description: Each path of RV(stats) and the root's directory with every symbolic link resolved (C(os.path.realpath)).
  returned: O(mode=gather)
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.candidate import dump_candidate
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.config_tree import ask_daemon, gather_config_tree
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.gather import find_executable
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._specs.containerd_runtime_config_probe import (
    get_containerd_runtime_config_probe_argument_spec,
)

MODES = {"gather": gather_config_tree, "validate": dump_candidate, "daemon": ask_daemon}


def main():
    module = AnsibleModule(**get_containerd_runtime_config_probe_argument_spec())
    binary = find_executable(module.params["containerd_bin"])
    if not binary:
        module.fail_json(msg="containerd binary '%s' was not found (not in PATH or not executable)" % module.params["containerd_bin"])
    evidence, error = MODES[module.params["mode"]](module.params, binary)
    if error:
        module.fail_json(msg=error)
    module.exit_json(changed=False, **evidence)


if __name__ == "__main__":
    main()
