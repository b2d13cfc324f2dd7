#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)

DOCUMENTATION = r"""
---
module: crosscheck_summary
short_description: Summarise the verdicts of a crosscheck run and write its reports
description:
  - Reads the registered M(gpufleet.runtime_gate.node_crosscheck) result of every host in O(hosts) and returns
    a table for the terminal, the verdicts and their counts; optionally writes them as JSON on the controller.
  - With O(cluster_result), also the fleet findings (a handler no node serves, a RuntimeClass without nodeSelector),
    the RuntimeClass overhead warnings (pods that do not fit a node once the overhead is added) and, per RuntimeClass,
    the nodes that serve and miss its handler; the table is followed by the findings.
  - With O(report_dir), writes C(report.json), C(junit.xml), C(report.html) and C(metrics.prom) there (see docs/report.md in the collection);
    an existing C(report.json) is kept as C(report.prev.json) and the new one lists the hosts whose verdict changed.
  - A host without a verdict (unreachable before it was judged, or removed from the play) is reported C(UNKNOWN).
  - Runs on the controller (action plugin); run it once per play.
version_added: 0.1.0
author:
  - gpufleet platform team (@gpufleet)
extends_documentation_fragment:
  - gpufleet.runtime_gate._attributes
options:
  hosts:
    description:
      - The hosts of the run, usually C(ansible_play_hosts_all).
    type: list
    elements: str
    required: true
  verdict_var:
    description:
      - The variable each host registered its M(gpufleet.runtime_gate.node_crosscheck) result in.
    type: str
    default: runtime_gate_verdict
  verdicts_file:
    description:
      - "Controller path to write the verdicts to as JSON (C(hosts): host to verdict, C(counts)), atomically; directories are created."
    type: path
  cluster_result:
    description:
      - The registered M(gpufleet.runtime_gate.runtimeclass_info) result of the run, instead of O(cluster_result_var).
      - When absent or failed, the reports say the cluster was not read (and why), the run does not pass, and a
        C(CLUSTER_NOT_READ) fleet finding replaces the other fleet findings.
      - Templated and copied into the task, every Pod of it; for a large cluster prefer O(cluster_result_var).
    type: dict
  cluster_result_var:
    description:
      - The name of the variable on C(localhost) that holds the registered M(gpufleet.runtime_gate.runtimeclass_info)
        result, read as stored (a registered result is data, never a template), as O(verdict_var) names the hosts' verdicts.
      - A variable that does not exist (the C(localhost) play did not run, C(--limit)) counts as an absent O(cluster_result).
      - At most one of O(cluster_result) and O(cluster_result_var).
    type: str
  report_dir:
    description:
      - Controller directory to write C(report.json), C(junit.xml), C(report.html) and C(metrics.prom) into, each atomically (temporary
        file and rename); created if absent; no other file in it is touched. A relative path is relative to the
        directory ansible-playbook runs in.
      - An existing C(report.json) is first kept as C(report.prev.json).
    type: path
  run_id:
    description:
      - The run the reports belong to, written into C(report.json) as C(run_id) (C(runtime_gate_run_id) in the playbooks).
        Give every slice of a sliced run, and M(gpufleet.runtime_gate.report_merge), the same value (docs/awx.md).
      - A letter or digit, then at most 127 letters, digits, C(.), C(_), C(:) or C(-).
      - Unset, the run gets an id of its own (C(unnamed-<generated_at>-<random>)), so its report is never merged with
        another run's.
    type: str
  role_failure_var:
    description:
      - Name of a host variable holding the failure of a change made before the check (C(rollout.yml) sets it when the
        role C(containerd_runtimes) failed on the host); the summary names such hosts and points to the role's message,
        which the role's failed task printed (it is not printed again).
    type: str
  batch_reached_var:
    description:
      - Name of a host variable set when the host's batch started (C(rollout.yml)); a host without it and without a
        verdict is C(NOT_REACHED) (its batch has not run, so it was not changed and not judged), not C(UNKNOWN).
        C(NOT_REACHED) is no node verdict; the host fails like C(UNKNOWN), and C(counts) has a C(NOT_REACHED) entry
        only then.
    type: str
  node_status_var:
    description:
      - The name of the variable on C(localhost) that holds the registered
        M(gpufleet.runtime_gate.node_status_verdicts) result, read as stored. Its verdicts join the summary for the
        hosts that have no verdict of their own (judged from their Node's status, they never ran the host task); the
        table then says how many hosts were judged each way.
      - A variable that does not exist, or a failed or skipped result, adds nothing.
      - Given no O(hosts), a result that already summarised the run (node-status mode, its C(summary)) is returned as it
        is; that task wrote the verdicts file and the reports.
    type: str
  return_verdicts:
    description:
      - Return every host's verdict as RV(verdicts). V(false) leaves them out (the verdicts file and the reports still
        hold them), since ansible-core copies a registered result several times and a fleet's verdicts are its biggest
        part; C(gpufleet.runtime_gate.crosscheck) asks for them only for the gate step.
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    details: >-
      Same result in check mode; the verdicts file and the reports are written in check mode too, since they change no
      host. The task is C(changed) when it wrote a report or a verdicts file, as M(gpufleet.runtime_gate.report_merge) is.
  diff_mode:
    support: none
    details: Nothing to diff.
  idempotent:
    support: partial
    details: >-
      Writes the same verdicts file for the same verdicts; each report run replaces the previous report
      (kept as C(report.prev.json)) and carries its own time, so a run that writes either is C(changed).
  action:
    support: full
    description: Runs on the controller; reads the other hosts' registered verdicts.
seealso:
  - module: gpufleet.runtime_gate.node_crosscheck
"""

EXAMPLES = r"""
- name: Summarise the fleet
  gpufleet.runtime_gate.crosscheck_summary:
    hosts: "{{ ansible_play_hosts_all }}"
    verdicts_file: "{{ playbook_dir }}/../out/verdicts.json"
    cluster_result_var: runtime_gate_cluster
    report_dir: /srv/reports/runtime-gate
  run_once: true
  delegate_to: localhost
  register: summary

- name: Show it
  ansible.builtin.debug:
    msg: "{{ summary.table_lines }}"
  run_once: true
"""

RETURN = r"""
table_lines:
  description: The summary table, one line per host plus a header and a count line.
  returned: always
  type: list
  elements: str
verdicts:
  description:
    - Host name to its verdict, each with C(node), C(status) (C(OK), C(MISSING) or C(UNKNOWN)), C(lines),
      C(missing_handlers), C(required_handlers), C(loaded_runtimes), C(configured_runtimes), C(default_runtime),
      C(containerd_version), C(version_source), C(loaded_source), C(daemon_runtimes), C(node_runtime_handlers), C(reason),
      C(notes), C(findings), C(missing_explained), C(files_examined) and C(verdict_source) (C(node) or C(node-status)),
      as M(gpufleet.runtime_gate.node_crosscheck) returns them;
      a host that was not judged is C(UNKNOWN) with the reason, or C(NOT_REACHED) when O(batch_reached_var) says
      its batch has not run.
  returned: >-
    with O(return_verdicts), except when the run was summarised by M(gpufleet.runtime_gate.node_status_verdicts)
    without its O(gpufleet.runtime_gate.node_status_verdicts#module:summary_verdicts) (see O(node_status_var))
  type: dict
verdict_sources:
  description: How many hosts were judged from their node's evidence (C(node)) and from their Node's status (C(node-status)).
  returned: always
  type: dict
  sample: {"node": 12, "node-status": 9988}
passed:
  description: Whether the run passes - the cluster was read and every host (at least one) is C(OK).
  returned: always
  type: bool
counts:
  description: Number of hosts per verdict; C(NOT_REACHED) only when some host has it (O(batch_reached_var)).
  returned: always
  type: dict
  sample: {"OK": 4, "MISSING": 2, "UNKNOWN": 1}
cluster:
  description: Whether the cluster was read (C(read)), why not (C(error)), and where from (C(type), C(server), C(path)).
  returned: always
  type: dict
fleet_findings:
  description: Findings about the fleet as a whole (C(host) null), or one C(CLUSTER_NOT_READ) finding.
  returned: always
  type: list
  elements: dict
overhead_findings:
  description: RuntimeClass overhead warnings (C(host) = the node); empty when the cluster was not read.
  returned: always
  type: list
  elements: dict
runtimeclasses:
  description: Per RuntimeClass its C(handler), C(overhead_pod_fixed), C(node_selector) and the judged nodes C(serving), C(required), C(missing).
  returned: always
  type: list
  elements: dict
report_paths:
  description: The files written, by name (C(report.json), C(junit.xml), C(report.html), C(metrics.prom), and C(report.prev.json) when kept).
  returned: when O(report_dir) is set
  type: dict
run_id:
  description: The run the reports belong to (O(run_id), or the id made for this run).
  returned: when O(report_dir) is set
  type: str
changed_hosts:
  description:
    - Hosts whose verdict or missing handlers differ from the previous report, with C(previous) and C(current);
      null when there was no comparable previous report.
  returned: when O(report_dir) is set
  type: list
  elements: dict
"""
