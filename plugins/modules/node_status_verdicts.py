#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)

DOCUMENTATION = r"""
---
module: node_status_verdicts
short_description: Judge hosts from their Nodes' status.runtimeHandlers, without connecting to them
description:
  - Judges each host of O(hosts) from its Kubernetes Node's C(status.runtimeHandlers) (the handlers the kubelet, 1.30
    or later, reports that containerd 2.0 or later serves), as read by M(gpufleet.runtime_gate.runtimeclass_info) with
    C(nodes=true). The same verdict words as M(gpufleet.runtime_gate.node_crosscheck), each verdict with
    C(verdict_source=node-status) and a note of what it cannot see (no config file, no runtime binary, no explanation
    of a missing handler).
  - A Node vouches for its host only when its C(status.runtimeHandlers) lists the default handler and at least one
    named one, its C(Ready) condition is C(True) and the condition's C(lastHeartbeatTime) is at most
    O(max_heartbeat_age) seconds old. A host whose Node does not vouch, or that the cluster does not list, is never
    judged C(OK) from the API.
  - "O(verdict_source) says what then happens: C(node-status) judges every host from the API (a host whose Node does
    not vouch is C(UNKNOWN)); C(hybrid) keeps the API verdict of the hosts found C(OK) and hands every other host to
    its node's evidence (RV(ssh_hosts)), so each missing handler is still explained from the node's files;
    C(ssh) judges nobody here and hands every host on."
  - The Node's Host name is C(runtime_gate_node_name) (as the M(gpufleet.runtime_gate.k8s_nodes) inventory sets it),
    else the host's name; its labels C(runtime_gate_node_labels), else the Node's.
  - Runs on the controller (action plugin), once per run; no connection to a host, and no request to the API server
    unless O(cluster) is given with O(verdict_source=node-status).
  - With O(verdict_source=node-status) every verdict is final here. O(cluster) then reads the cluster in this task
    (in-process, on the controller) and O(summarise) summarises the run as M(gpufleet.runtime_gate.crosscheck_summary)
    does, writing O(verdicts_file) and the reports into O(report_dir). The Nodes and Pods of a large cluster and every
    host's verdict then stay out of the registered results, whose handling by ansible-core costs about a minute for
    10,000 Nodes (benchmarks/README.md in the collection, "API mode"). The playbooks do this in node-status mode.
version_added: 0.3.0
author:
  - gpufleet platform team (@gpufleet)
extends_documentation_fragment:
  - gpufleet.runtime_gate._attributes
options:
  hosts:
    description:
      - The hosts to judge, e.g. C(query('inventory_hostnames', 'gpu_nodes')). The inventory's hosts that the run's
        C(--limit) leaves out are left out (that lookup lists them all), as every play of the run leaves them out.
    type: list
    elements: str
    required: true
  verdict_source:
    description:
      - C(hybrid), C(node-status) or C(ssh), as described above.
    type: str
    default: hybrid
    choices: [hybrid, node-status, ssh]
  max_heartbeat_age:
    description:
      - Seconds the Node's C(Ready) heartbeat (C(lastHeartbeatTime)) may be old for its status to count.
      - A healthy kubelet rewrites it at least every C(nodeStatusReportFrequency) (5 minutes by default), hence the
        default of 7 minutes.
    type: int
    default: 420
  cluster_result_var:
    description:
      - The variable on C(localhost) holding the registered M(gpufleet.runtime_gate.runtimeclass_info) result (with
        C(nodes=true)), read as stored. A result that is absent or failed vouches for no host.
    type: str
    default: runtime_gate_cluster
  cluster:
    description:
      - With O(verdict_source=node-status), the options of M(gpufleet.runtime_gate.runtimeclass_info) (C(src), C(nodes),
        C(pods), the connection and limit options, with the same C(K8S_AUTH_*) fallbacks and the same checks), read
        by this task itself, on the controller; O(cluster_result_var) is then not read. Relative paths are the
        controller's (the directory ansible-playbook runs in).
      - Ignored with C(hybrid) and C(ssh), whose hosts judged over their connection need the cluster as a registered
        result (O(cluster_result_var)).
    type: dict
  summarise:
    description:
      - With O(verdict_source=node-status), summarise the run here (RV(summary)) and leave RV(verdicts) out of the
        result. Ignored with C(hybrid) and C(ssh), whose other hosts are judged later.
    type: bool
    default: false
  summary_verdicts:
    description:
      - With O(summarise), also return every verdict in RV(summary) (as its C(verdicts)), as the gate step needs them.
    type: bool
    default: false
  verdicts_file:
    description:
      - With O(summarise), write every host's verdict as JSON to this controller path (as
        M(gpufleet.runtime_gate.crosscheck_summary)'s O(gpufleet.runtime_gate.crosscheck_summary#module:verdicts_file)).
    type: path
  report_dir:
    description:
      - With O(summarise), write C(report.json), C(junit.xml), C(report.html) and C(metrics.prom) into this controller
        directory (as M(gpufleet.runtime_gate.crosscheck_summary)'s O(gpufleet.runtime_gate.crosscheck_summary#module:report_dir)).
    type: path
  run_id:
    description:
      - With O(summarise) and O(report_dir), the run the reports belong to (as
        M(gpufleet.runtime_gate.crosscheck_summary)'s O(gpufleet.runtime_gate.crosscheck_summary#module:run_id)).
    type: str
attributes:
  check_mode:
    support: full
    details: >-
      Only reads; the same in check mode. With O(summarise), the verdicts file and the reports are written in check
      mode too, as M(gpufleet.runtime_gate.crosscheck_summary) writes them.
  diff_mode:
    support: none
    details: Nothing to diff.
  idempotent:
    support: full
    details: Only reads (the heartbeat's age depends on the time of the run).
  action:
    support: full
    description: Runs on the controller; reads the cluster (result) and the hosts' variables, writes the reports.
seealso:
  - module: gpufleet.runtime_gate.node_crosscheck
  - module: gpufleet.runtime_gate.crosscheck_summary
"""

EXAMPLES = r"""
- name: Judge the GPU nodes from their Nodes' status where it vouches for them
  gpufleet.runtime_gate.node_status_verdicts:
    hosts: "{{ query('inventory_hostnames', 'gpu_nodes') }}"
    verdict_source: hybrid
    cluster_result_var: runtime_gate_cluster
  register: runtime_gate_node_status
"""

RETURN = r"""
verdicts:
  description:
    - Host name to its verdict from the Node's status, in the shape of M(gpufleet.runtime_gate.node_crosscheck)'s,
      with C(verdict_source) C(node-status); every host with O(verdict_source=node-status), only the hosts found
      C(OK) with C(hybrid), none with C(ssh).
  returned: unless the run was summarised here (O(summarise) with O(verdict_source=node-status))
  type: dict
summary:
  description:
    - The result M(gpufleet.runtime_gate.crosscheck_summary) returns for the run (C(table_lines), C(passed), C(counts),
      C(verdict_sources), C(cluster), the findings, C(report_paths) and C(run_id) when the reports were written), its
      C(verdicts) only with O(summary_verdicts). M(gpufleet.runtime_gate.crosscheck_summary) given no host and this
      result (its O(gpufleet.runtime_gate.crosscheck_summary#module:node_status_var)) returns it as it is.
  returned: when the run was summarised here (O(summarise) with O(verdict_source=node-status))
  type: dict
ssh_hosts:
  description: The hosts left for their node's evidence (all with C(ssh), none with C(node-status)), sorted.
  returned: always
  type: list
  elements: str
task_hosts:
  description:
    - The hosts that run the playbooks' per-host task (M(gpufleet.runtime_gate.node_crosscheck)) - every host with
      C(hybrid) and C(ssh), none with C(node-status). A host judged here takes its verdict from RV(verdicts) there,
      without a connection.
  returned: always
  type: list
  elements: str
judged_from_node_status:
  description: How many hosts RV(verdicts) holds.
  returned: always
  type: int
handed_to_ssh:
  description: How many hosts RV(ssh_hosts) holds.
  returned: always
  type: int
verdict_source:
  description: O(verdict_source), as used.
  returned: always
  type: str
"""
