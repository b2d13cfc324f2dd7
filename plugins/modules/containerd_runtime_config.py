#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)

DOCUMENTATION = r"""
---
module: containerd_runtime_config
short_description: Plan containerd runtime files for a node and prove them with the real containerd binary
description:
  - Works out the drop-in (and, when needed, the root configuration edit) that makes the node's containerd load
    O(runtimes), and proves it before anything in place is touched. It writes nothing itself; the
    C(gpufleet.runtime_gate.containerd_runtimes) role writes RV(files) with M(ansible.builtin.copy).
  - Reads on the node (standard library only) C(containerd --version), the root configuration, the files its
    top-level C(imports) match (Go C(filepath.Glob) rules) and the current C(containerd config dump).
  - Chooses from the containerd version the config version and CRI plugin key (version 2 and
    C(io.containerd.grpc.v1.cri) for 1.6/1.7, 3 for 2.0-2.2, 4 for 2.3+), writes the drop-in with the root
    file's own version, and adds an absolute import glob to the root's C(imports) when none matches the drop-in,
    keeping every existing entry, comment and unknown key (a textual edit, proven by re-parsing).
  - On containerd 1.x a drop-in that mentions the CRI plugin replaces the root's whole CRI table, so the drop-in
    carries the complete CRI table of the files loaded before it (merged key by key) with the requested
    runtimes set in it.
  - Refuses, naming the input, runtime names that are not DNS-1123 labels, a root file whose version is above
    what the binary reads or below the drop-in's, a missing root when O(manage_root_config=false), a file loaded
    after the drop-in that would replace its CRI table (1.x), paths that cannot be written, and a change of
    C(default_runtime_name) without O(allow_default_change) (printing C(DEFAULT_RUNTIME=<new>), C(AFFECTED=all),
    C(NEEDS_RUNTIMECLASS=no), C(BLAST_RADIUS=node)).
  - Proof, on the node, in a temporary directory - the candidate tree (root and drop-ins as they will be; imports
    pointing into the config or drop-in directory are rewritten to the temporary copy) is expanded with Go
    C(filepath.Glob) and must match every drop-in; the real C(containerd --config <candidate> config dump) must
    succeed and load every requested runtime with its C(runtime_type) and options, the requested default runtime,
    and every runtime served today with the options it has today.
  - The default runtime guard also judges the candidate's loaded C(default_runtime_name), whatever set it (for example
    O(root_settings) of a managed root); a default other than today's (or any, when today's is unknown) needs O(allow_default_change).
version_added: 0.2.0
author:
  - gpufleet platform team (@gpufleet)
extends_documentation_fragment:
  - gpufleet.runtime_gate._attributes
options:
  runtimes:
    description:
      - The runtimes the node must serve (with O(presets), at least one in all). kubespray's C(containerd_additional_runtimes)
        entries are accepted as they are; option values C("true")/C("false") become booleans, as kubespray writes them.
      - On containerd 1.x a runtime the node already defines is merged with that definition (keys not named here stay).
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description:
          - Runtime (RuntimeClass handler) name, a DNS-1123 label.
        type: str
        required: true
      runtime_type:
        description:
          - The containerd shim (default C(io.containerd.runc.v2)); its shim binary must be on the node.
        type: str
        aliases: [type]
      runtime_engine:
        description:
          - kubespray's C(engine); written only when not empty.
        type: str
        aliases: [engine]
      runtime_root:
        description:
          - kubespray's C(root); written only when not empty.
        type: str
        aliases: [root]
      base_runtime_spec:
        description:
          - The runtime's base OCI spec; a relative path is taken from the directory of O(config_path).
        type: str
      binary_name:
        description:
          - C(options.BinaryName), the OCI runtime binary the shim runs.
        type: str
      options:
        description:
          - Further runtime options, for example C(SystemdCgroup).
        type: dict
        default: {}
  presets:
    description:
      - C(nvidia) adds C(nvidia), C(nvidia-cdi) and C(nvidia-legacy) as C(nvidia-ctk runtime configure) writes them.
    type: list
    elements: str
    choices: [nvidia]
    default: []
  nvidia_binary_dir:
    description:
      - Directory of the preset's C(nvidia-container-runtime) binaries.
    type: str
    default: /usr/bin
  enable_cdi:
    description:
      - The CRI plugin's C(enable_cdi); unset leaves it as it is.
    type: bool
  backup_dir:
    description:
      - Directory of the backups RV(backups) names; empty means C(.runtime-gate-backups) next to O(dropin_dir).
        Refused when an import entry of the node would load a backup.
    type: str
    default: ""
  dropin_dir:
    description:
      - Directory of the drop-in; absolute, and the directory of O(config_path) or below it.
    type: str
    default: /etc/containerd/conf.d
  dropin_name:
    description:
      - File name of the drop-in (letters, digits, C(.), C(_) and C(-), ending in C(.toml), not starting with C(.)).
      - Empty means C(99-gpufleet.toml), or C(99-zz-gpufleet.toml) where nvidia-ctk's C(99-nvidia.toml) is loaded.
    type: str
    default: ""
  import_pattern:
    description:
      - The absolute import added to the root's C(imports) when no entry matches the drop-in. Default C(<dropin_dir>/*.toml).
    type: str
  manage_root_config:
    description:
      - Render the whole root configuration for the detected containerd instead of editing the node's own.
    type: bool
    default: false
  root_settings:
    description:
      - Top-level settings of a rendered root configuration (O(manage_root_config=true)), for example C(root), C(state), C(grpc).
    type: dict
    default: {}
  default_runtime:
    description:
      - The C(default_runtime_name) to set; unset leaves it as it is.
    type: str
  allow_default_change:
    description:
      - Allow the candidate's default runtime (from O(default_runtime), O(root_settings) or the files it carries) to differ
        from the node's current default runtime.
    type: bool
    default: false
  containerd_bin:
    description:
      - The containerd binary on the node.
    type: str
    default: containerd
  config_path:
    description:
      - The root configuration file.
    type: str
    default: /etc/containerd/config.toml
  timeout:
    description:
      - Seconds each containerd command may take.
    type: int
    default: 60
  socket:
    description:
      - containerd's gRPC socket. Empty means the address the loaded configuration names (1.x and 2.0-2.2 C([grpc] address),
        2.3+ C([plugins."io.containerd.server.v1.grpc"] address)); returned as RV(socket).
    type: str
    default: ""
  ask_daemon:
    description:
      - Ask the running daemon (over O(socket)) what it loaded, before the change, to find edits of the files it has
        not loaded yet (see O(accept_pending_edits)). False skips that check and says so in the plan's notes.
    type: bool
    default: true
  wait_command:
    description:
      - The command (argv) that exits 0 once containerd answers. Empty means C(ctr --address <socket> --connect-timeout 1s --timeout 1s version); returned
        as RV(wait_command).
    type: list
    elements: str
    default: []
  accept_pending_edits:
    description:
      - Keys of the loaded configuration (as the refusal names them, for example C(runtimes.runc.options.SystemdCgroup),
        or a prefix such as C(runtimes.runc)) that the running daemon has not loaded and the files now set, which the
        restart after this change may activate. Any other such difference refuses the change.
    type: list
    elements: str
    default: []
attributes:
  check_mode:
    support: full
    description: Reads and proves only; check mode runs it unchanged.
  diff_mode:
    support: none
    description: Writes nothing; the role's M(ansible.builtin.copy) tasks show the diff.
  idempotent:
    support: full
    description: Renders byte-identical files for the same node state and input.
  action:
    support: full
    description: An action plugin plans on the controller; the node runs a standard-library probe.
notes:
  - Only the root's own imports are followed (one level); files they import are loaded as they are.
seealso:
  - module: gpufleet.runtime_gate.containerd_facts
"""

EXAMPLES = r"""
- name: Plan and prove the NVIDIA runtimes
  gpufleet.runtime_gate.containerd_runtime_config:
    runtimes:
      - name: nvidia
        binary_name: /usr/bin/nvidia-container-runtime
        options: {SystemdCgroup: true}
  register: plan

- name: Write the proven files
  ansible.builtin.copy:
    dest: "{{ item.path }}"
    content: "{{ item.content }}"
    backup: true
  loop: "{{ plan.files }}"
"""

RETURN = r"""
files:
  description: The files to write, drop-in first, root last, each with C(path), C(content) (the real text, credentials
    included), C(changed), C(mode), C(owner), C(group) (null - keep the file's own) and C(backup) (null when none).
  returned: success
  type: list
  elements: dict
changed_files:
  description: Paths whose content would change.
  returned: success
  type: list
  elements: str
msg:
  description:
    - On success, one line naming the node, the containerd release that proved the candidate and the files it would write
      (or C(nothing to change)).
    - On a refusal, the node and every reason the change was refused, credentials redacted.
  returned: always
  type: str
  sample: "gpu-node-01: proven with containerd 2.2.9; would write /etc/containerd/conf.d/99-gpufleet.toml"
plan:
  description:
    - The plan (C(load_order), C(imports_added), C(config_version), C(dropin_version), C(cri_plugin), C(notes), C(errors)),
      file contents redacted.
  returned: >-
    success, and when the plan or its proof refused the change; absent when the inputs were refused before the node
    was read, or reading the node's config tree failed
  type: dict
proof:
  description: What the real C(config dump) of the candidate loaded (C(loaded_runtimes), C(default_runtime), C(containerd_version)).
  returned: success
  type: dict
expected_handlers:
  description: The requested runtimes, which the running node must serve after a restart (O(gpufleet.runtime_gate.node_crosscheck#module:expected_handlers)).
  returned: success
  type: list
  elements: str
refused:
  description: "Whether the plan or its proof refused the change (the role registers the result with no_log and fails on it)."
  returned: always
  type: bool
shown:
  description: "What the role shows of the plan, credentials redacted: message, notes, warnings, the loaded configuration's change."
  returned: success
  type: list
  elements: str
diff_lines:
  description: The unified diff of every file that changes, credentials redacted.
  returned: success
  type: list
  elements: str
file_diffs:
  description: Ansible's diff of each file that changes (C(before_header), C(after_header), C(before), C(after)), credentials
    redacted; the role's M(gpufleet.runtime_gate.containerd_runtime_config_diff) task prints it with C(--diff).
  returned: success
  type: list
  elements: dict
loaded_changes:
  description: "Every key of the loaded configuration (C(config dump)) the change sets, C(key: before -> after), credentials redacted."
  returned: success
  type: list
  elements: str
loaded_changes_at_defaults:
  description: "The keys of RV(loaded_changes) the change only brings in at the release defaults (a new runtime's
    C(cni_conf_dir: (absent) -> ''), shown at -v); RV(shown) lists the others."
  returned: success
  type: list
  elements: str
backups:
  description: C(path) and C(backup) of each file that changes and exists (paths only).
  returned: success
  type: list
  elements: dict
prune_backups:
  description: Older backups to remove (the last 3 per file are kept).
  returned: success
  type: list
  elements: str
create_dirs:
  description: Missing directories to create, each with C(path), C(mode) and C(remove_on_rollback).
  returned: success
  type: list
  elements: dict
guard_lines:
  description: The default runtime guard's lines; empty unless the guard refused the change.
  returned: when the plan's checks or the candidate's proof refused the change
  type: list
  elements: str
socket:
  description: The socket containerd answers on after the restart (O(socket), or the candidate's gRPC address).
  returned: success
  type: str
wait_command:
  description: The command waiting for containerd after the restart (O(wait_command), or ctr on RV(socket)).
  returned: success
  type: list
  elements: str
restored_socket:
  description: The socket containerd answers on after a rollback (O(socket), or today's files' gRPC address).
  returned: success
  type: str
restored_wait_command:
  description: The command waiting for containerd after a rollback.
  returned: success
  type: list
  elements: str
pending_edits:
  description: "Keys the files set differently from what the running daemon loaded, that the inputs do not name
    (C(key: before (running) -> after (files))); a change is refused while any is not accepted in O(accept_pending_edits)."
  returned: always
  type: list
  elements: str
"""
