#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)

DOCUMENTATION = r"""
---
module: node_crosscheck
short_description: Gather a node's loaded containerd configuration and judge it against the RuntimeClasses, in one task
description:
- Gathers and judges in one task per host, as C(playbooks/crosscheck.yml) runs it.
- Runs the C(containerd_facts) node module on the node (standard library only, one round trip), parses its evidence on the
  controller, and judges it there against the RuntimeClasses.
- Given O(facts) or O(gather_result) (what a user's own M(gpufleet.runtime_gate.containerd_facts) task returned), it judges
  those and contacts no node.
- 'The verdict is C(OK), C(MISSING) or C(UNKNOWN) (facts or cluster data could not be gathered, or the host was unreachable:
  the host then fails with its C(UNKNOWN=) line instead of being reported unreachable). C(MISSING) and C(UNKNOWN) fail the
  host unless O(fail_on_verdict=false).'
- The node options are those of M(gpufleet.runtime_gate.containerd_facts).
- 'An option the task does not give is taken from the host''s variable the playbooks document for it (docs/variables.md), so a
  fleet''s task needs no templated argument per host: O(containerd_bin) from C(runtime_gate_containerd_bin), O(config_path)
  from C(runtime_gate_containerd_config), O(dump_file) from C(runtime_gate_dump_file), O(containerd_version) from
  C(runtime_gate_containerd_version), O(host_root) from C(runtime_gate_host_root), O(socket) from C(runtime_gate_containerd_socket),
  O(ask_daemon) from C(runtime_gate_ask_daemon), O(dropin_dirs) from C(runtime_gate_dropin_dirs), O(cdi_spec_dirs) from
  C(runtime_gate_cdi_spec_dirs), O(node_name) from C(runtime_gate_node_name), O(node_labels) from C(runtime_gate_node_labels).
  A value given in the task wins; an empty string counts as unset for the paths, binaries and versions; the option''s
  default applies when neither is set.'
- The console callback (C(gpufleet.runtime_gate.console)) prints a failed host of this task as its RV(msg) only; the whole
  verdict stays in the registered result.
version_added: 0.2.0
author:
- gpufleet platform team (@gpufleet)
extends_documentation_fragment:
- gpufleet.runtime_gate._attributes
- gpufleet.runtime_gate._attributes.INFO_MODULE
- gpufleet.runtime_gate.containerd_node_options
options:
  facts:
    description:
    - The node's containerd facts, as C(ansible_facts.containerd) from M(gpufleet.runtime_gate.containerd_facts), judged
      as given; the node is not contacted.
    - At most one of O(facts) and O(gather_result).
    type: dict
  gather_result:
    description:
    - The registered result of a M(gpufleet.runtime_gate.containerd_facts) task, judged as given; the node is not
      contacted. A failed, skipped or unreachable result makes the verdict C(UNKNOWN).
    type: dict
  expected_handlers:
    description:
    - Handlers the node must serve whatever the cluster asks (the C(containerd_runtimes) role verifies its runtimes after
      a restart with it), besides the node's default runtime.
    - Without O(runtimeclasses) and O(cluster_result), the node is judged against these alone and the cluster is not read
      (O(cluster_result_var) is not used).
    type: list
    elements: str
  runtimeclasses:
    description:
    - RuntimeClasses as M(gpufleet.runtime_gate.runtimeclass_info) returns them; instead of O(cluster_result_var).
    - At most one of O(runtimeclasses) and O(cluster_result).
    type: list
    elements: dict
  cluster_result:
    description:
    - The registered result of M(gpufleet.runtime_gate.runtimeclass_info), instead of O(cluster_result_var); a failed result
      makes the verdict C(UNKNOWN).
    - Its C(nodes) are used to look up the node's labels unless O(nodes) or O(node_labels) is given.
    - 'Templated into every host''s task: for a fleet, prefer O(cluster_result_var) (benchmarks/README.md).'
    type: dict
  cluster_result_var:
    description:
    - The name of the variable on C(localhost) that holds the registered result of M(gpufleet.runtime_gate.runtimeclass_info);
      the action reads it as stored, once per host, without templating or copying it into the task (a registered result is
      data, never a template).
    - Used when none of O(runtimeclasses), O(cluster_result) and O(expected_handlers) is given. A variable that does not exist (the C(localhost)
      play did not run, C(--limit)) makes the verdict C(UNKNOWN).
    type: str
    default: runtime_gate_cluster
  node_status_var:
    description:
    - The name of the variable on C(localhost) that holds the registered result of
      M(gpufleet.runtime_gate.node_status_verdicts), read as stored. When it holds a verdict for this host (judged from its
      Node's C(status.runtimeHandlers)), that verdict is the result and the node is not contacted; otherwise, or when
      the variable does not exist, the node is gathered and judged as usual.
    type: str
  nodes:
    description:
    - Nodes as M(gpufleet.runtime_gate.runtimeclass_info) returns them with C(nodes=true), to find O(node_name)'s labels.
    type: list
    elements: dict
  node_name:
    description:
    - The Kubernetes Node name of this host.
    - Default C(runtime_gate_node_name), else C(inventory_hostname).
    type: str
  node_labels:
    description:
    - The node's labels. Overrides the labels found in O(nodes) or O(cluster_result).
    type: dict
  fail_on_verdict:
    description:
    - Fail the host when the verdict is not C(OK); its C(msg) then holds its C(MISSING=)/C(UNKNOWN=) lines and the findings
      that explain them.
    type: bool
    default: true
attributes:
  action:
    support: full
    description: The judgement runs on the controller.
seealso:
- module: gpufleet.runtime_gate.containerd_facts
- module: gpufleet.runtime_gate.runtimeclass_info
"""

EXAMPLES = r"""
- name: Judge each node; a node that does not serve its handlers fails with its MISSING lines
  gpufleet.runtime_gate.node_crosscheck:
    # localhost's variable holding runtimeclass_info's registered result (playbooks/crosscheck.yml's first play); the
    # node options come from each host's runtime_gate_* variables (runtime_gate_containerd_config, ...)
    cluster_result_var: runtime_gate_cluster
  register: runtime_gate_verdict

- name: The same with the options in the task, which win over the host's variables
  gpufleet.runtime_gate.node_crosscheck:
    config_path: /etc/containerd/config.toml
    socket: /run/k3s/containerd/containerd.sock
    node_name: "{{ inventory_hostname }}"
    cluster_result_var: runtime_gate_cluster
  register: runtime_gate_verdict

- name: Judge a node from a captured dump against RuntimeClasses given inline
  gpufleet.runtime_gate.node_crosscheck:
    dump_file: /srv/captures/gpu-node-01/config-dump.toml
    runtimeclasses: "{{ cluster.runtimeclasses }}"
    node_name: gpu-node-01
    node_labels:
      nvidia.com/gpu.present: "true"
    fail_on_verdict: false

- name: Judge what a containerd_facts task of your own gathered (no second round trip)
  gpufleet.runtime_gate.node_crosscheck:
    gather_result: "{{ my_containerd_facts }}"
    cluster_result_var: runtime_gate_cluster
  register: runtime_gate_verdict
"""

RETURN = r"""
node:
  description: The node judged (O(node_name)).
  returned: always
  type: str
  sample: gpu-node-02
status:
  description: C(OK), C(MISSING) or C(UNKNOWN).
  returned: always
  type: str
  sample: MISSING
passed:
  description: Whether the verdict is C(OK).
  returned: always
  type: bool
msg:
  description:
    - One C(MISSING=<handler>) line per missing handler, C(UNKNOWN=<reason>), or C(OK).
    - When the verdict is not C(OK), the findings follow these lines, indented (code, severity, message, remedy, evidence).
  returned: always
  type: str
  sample: "MISSING=nvidia\nMISSING=nvidia-cdi\n  DROPIN_NOT_IMPORTED (error): ..."
lines:
  description: The verdict lines of RV(msg) (without the findings) as a list.
  returned: always
  type: list
  elements: str
required_handlers:
  description: Sorted handlers the cluster requires of the node. Empty when UNKNOWN.
  returned: always
  type: list
  elements: str
requirements:
  description: Each required handler with what requires it (RuntimeClasses, the default runtime).
  returned: always
  type: list
  elements: dict
loaded_runtimes:
  description: Sorted runtimes the CRI plugin serves; empty when it cannot run.
  returned: always
  type: list
  elements: str
configured_runtimes:
  description: Sorted runtimes in the loaded configuration, served or not.
  returned: always
  type: list
  elements: str
missing_handlers:
  description: Sorted required handlers that are not served.
  returned: always
  type: list
  elements: str
default_runtime:
  description: The node's C(default_runtime_name); null when UNKNOWN.
  returned: always
  type: str
containerd_version:
  description: The node's containerd version when known.
  returned: always
  type: str
node_labels_known:
  description: Whether the node's labels were known; when false every scoped RuntimeClass counted as required.
  returned: always
  type: bool
notes:
  description: Sentences that qualify the verdict (unknown labels, a CRI plugin that cannot run).
  returned: always
  type: list
  elements: str
reason:
  description: Why the node is not OK (the UNKNOWN cause, or why nothing is served); empty when OK.
  returned: always
  type: str
findings:
  description:
    - Why handlers are missing or at risk, from the silent-failure catalogue (see docs/findings.md); errors first.
    - Each has C(code), C(severity) (C(error) or C(warning)), C(host), C(message), C(remedy), C(evidence) (file, line, key,
      containerd version...) and C(handlers) (the handlers it explains). Rules whose evidence the node did not send stay silent.
  returned: always
  type: list
  elements: dict
  sample:
    - code: IMPORT_GLOB_MATCHES_NOTHING
      severity: error
      host: gpu-node-02
      message: imports pattern '/etc/containerd/conf.d/*.conf' in /etc/containerd/config.toml matches no file.
      remedy: Change the pattern to match the drop-in files, or rename the files to match it.
      evidence: {file: /etc/containerd/config.toml, line: 4, key: imports, pattern: /etc/containerd/conf.d/*.conf}
      handlers: [nvidia, nvidia-cdi]
missing_explained:
  description: Each missing handler with the codes of the findings that explain it; C([NOT_CONFIGURED_ANYWHERE]) when no config file mentions it.
  returned: always
  type: dict
  sample: {nvidia: [DROPIN_NOT_IMPORTED, IMPORT_GLOB_MATCHES_NOTHING], nvdia: [NOT_CONFIGURED_ANYWHERE]}
daemon_runtimes:
  description: The runtimes the running containerd serves (CRI status); null when its view is unknown.
  returned: always
  type: list
  elements: str
loaded_source:
  description: C(daemon) when the loaded runtimes come from the running daemon, C(dump) when from C(containerd config dump); null when UNKNOWN.
  returned: always
  type: str
node_runtime_handlers:
  description: Named C(status.runtimeHandlers) of the Node object; null when the Node reports none (containerd 1.x, kubelet before 1.30).
  returned: always
  type: list
  elements: str
files_examined:
  description:
    - Whether the node's config files were examined besides the dump; false for a dump judged by itself (no host root),
      when why a handler is missing is not known beyond the dump. Null when UNKNOWN.
  returned: always
  type: bool
verdict_source:
  description: Where the verdict came from - C(node-status) when it was taken from O(node_status_var) (no connection).
  returned: when the verdict came from O(node_status_var)
  type: str
  sample: node-status
version_source:
  description: Where the containerd release came from (for example C(`containerd --version` on the node)); null when UNKNOWN or not known.
  returned: always
  type: str
"""
