#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)

DOCUMENTATION = r"""
---
module: handler_crosscheck
short_description: Judge whether a node's loaded containerd runtimes serve the RuntimeClass handlers it needs
description:
  - Computes the handlers the cluster requires of this node and compares them with the runtimes its
    containerd loaded. Runs entirely on the controller (action plugin); nothing is executed on the node.
  - Required handlers are the C(handler) of every RuntimeClass whose C(scheduling.nodeSelector) matches the
    node's labels (a class without a nodeSelector applies to every node), plus the node's own
    C(default_runtime_name), which pods without C(runtimeClassName) use (containerd's built-in C(runc) when the
    loaded configuration names none).
  - When the node's labels are unknown, every nodeSelector-scoped class counts as required and a note says so.
  - Loaded runtimes are the ones the CRI plugin can serve; none when the CRI plugin is disabled or when
    C(default_runtime_name) names no loaded runtime (the plugin then fails validation and containerd runs
    without CRI).
  - The running daemon's view (CRI status) is used when the facts carry it, else the config dump; a handler missing
    from the Node's C(status.runtimeHandlers) or whose C(BinaryName) is missing on the node is not served.
  - Findings explain each missing handler (import globs that match nothing, config versions, replaced CRI tables,
    missing binaries, a daemon pending restart...); see RV(findings).
  - The verdict is C(OK), C(MISSING) (the sorted missing handlers) or C(UNKNOWN) (facts or cluster data could
    not be gathered). C(MISSING) and C(UNKNOWN) fail the task unless O(fail_on_verdict=false).
version_added: 0.1.0
author:
  - gpufleet platform team (@gpufleet)
extends_documentation_fragment:
  - gpufleet.runtime_gate._attributes
options:
  facts:
    description:
      - The node's containerd facts, as C(ansible_facts.containerd) from M(gpufleet.runtime_gate.containerd_facts).
      - At most one of O(facts) and O(gather_result); with neither, the verdict is C(UNKNOWN).
    type: dict
  gather_result:
    description:
      - The registered result of M(gpufleet.runtime_gate.containerd_facts); a failed or unreachable result makes the verdict C(UNKNOWN).
    type: dict
  runtimeclasses:
    description:
      - RuntimeClasses as M(gpufleet.runtime_gate.runtimeclass_info) returns them.
      - At most one of O(runtimeclasses) and O(cluster_result); with neither, the verdict is C(UNKNOWN).
    type: list
    elements: dict
  cluster_result:
    description:
      - The registered result of M(gpufleet.runtime_gate.runtimeclass_info); a failed result makes the verdict C(UNKNOWN).
      - Its C(nodes) are used to look up the node's labels unless O(nodes) or O(node_labels) is given.
    type: dict
  cluster_result_var:
    description:
      - The name of the variable on C(localhost) that holds the registered result of M(gpufleet.runtime_gate.runtimeclass_info);
        the action reads it as stored, instead of receiving it as O(cluster_result).
      - For many hosts and a large cluster; O(cluster_result) is templated and copied into every host's task (benchmarks/README.md).
      - A variable that does not exist (the C(localhost) play did not run) makes the verdict C(UNKNOWN).
      - Deprecated, removed in 2.0.0 (a warning says so), because the action reads another host's variables behind the task's
        back. Pass the cluster as O(cluster_result), or judge each host with M(gpufleet.runtime_gate.node_crosscheck), which
        gathers and judges in one task and reads the cluster once per host without copying it.
      - At most one of O(runtimeclasses), O(cluster_result) and O(cluster_result_var).
    type: str
  nodes:
    description:
      - Nodes as M(gpufleet.runtime_gate.runtimeclass_info) returns them with C(nodes=true), to find O(node_name)'s labels.
    type: list
    elements: dict
  node_name:
    description:
      - The Kubernetes Node name of this host.
    type: str
    required: true
  node_labels:
    description:
      - The node's labels. Overrides the labels found in O(nodes) or O(cluster_result).
    type: dict
  fail_on_verdict:
    description:
      - Fail the task when the verdict is not C(OK).
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    description: Pure computation; same result in check mode.
  diff_mode:
    support: none
    description: Nothing to diff.
  idempotent:
    support: full
    description: Changes nothing.
  action:
    support: full
    description: Pure computation on the controller.
seealso:
  - module: gpufleet.runtime_gate.containerd_facts
  - module: gpufleet.runtime_gate.runtimeclass_info
  - module: gpufleet.runtime_gate.node_crosscheck
"""

EXAMPLES = r"""
- name: Read the cluster's RuntimeClasses once
  gpufleet.runtime_gate.runtimeclass_info:
    nodes: true
  delegate_to: localhost
  run_once: true
  register: cluster

- name: Read the loaded containerd configuration
  gpufleet.runtime_gate.containerd_facts:

- name: Fail unless every required handler is loaded
  gpufleet.runtime_gate.handler_crosscheck:
    facts: "{{ ansible_facts.containerd }}"
    runtimeclasses: "{{ cluster.runtimeclasses }}"
    nodes: "{{ cluster.nodes }}"
    node_name: "{{ inventory_hostname }}"

- name: Judge a node whose labels are known from the inventory
  gpufleet.runtime_gate.handler_crosscheck:
    facts: "{{ ansible_facts.containerd }}"
    runtimeclasses: "{{ cluster.runtimeclasses }}"
    node_name: "{{ inventory_hostname }}"
    node_labels:
      nvidia.com/gpu.present: "true"
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
version_source:
  description: Where the containerd release came from (for example C(`containerd --version` on the node)); null when UNKNOWN or not known.
  returned: always
  type: str
"""
