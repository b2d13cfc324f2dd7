#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)

DOCUMENTATION = r"""
---
module: report_merge
short_description: Merge the reports of sliced crosscheck runs into one fleet report
description:
  - AWX and Automation Platform job slicing run C(playbooks/nightly.yml) (or C(crosscheck.yml) with C(runtime_gate_report_dir)) as
    N jobs, each over a slice of the inventory; each slice's report.json speaks only for its own hosts, and its fleet findings
    (C(HANDLER_SERVED_NOWHERE), C(RUNTIMECLASS_WITHOUT_NODESELECTOR)) can be wrong for the fleet.
  - This action reads every slice's report.json, takes each host's verdict as the slice reported it once verified (nothing is re-judged),
    recomputes the fleet findings and overhead findings over all hosts with the cluster read once more (O(cluster_result)), and
    writes report.json, junit.xml, report.html and metrics.prom into O(report_dir), as one unsliced run would (docs/report.md).
  - A host found in two slice reports, a report that is not a runtime_gate report.json, slices of different runs
    (O(run_id)), or a slice count other than O(expected_slices) fails the task, naming the files; nothing is written then.
  - Each slice is verified before it is used, as a file anyone could have written - plain JSON (a key given twice or
    C(NaN) is refused), conforming to C(docs/report.schema.json), generated no more than O(max_age_hours) ago, judging
    at least one host, read against the same cluster as every other slice, and each host's status recomputed from its
    own evidence (C(lines), C(missing_handlers), C(required_handlers) against C(loaded_runtimes)). A slice that fails any
    check fails the task, naming the file, the host and the problem.
  - Runs on the controller only (action plugin). See C(playbooks/merge_reports.yml) and docs/awx.md.
version_added: 0.2.0
author:
  - gpufleet platform team (@gpufleet)
extends_documentation_fragment:
  - gpufleet.runtime_gate._attributes
options:
  reports:
    description:
      - The slices' report.json files, or the report directories holding them.
      - Exactly one of O(reports) and O(slices_dir).
    type: list
    elements: path
  slices_dir:
    description:
      - A directory with one subdirectory per slice, each holding that slice's report.json (C(<slices_dir>/*/report.json)).
    type: path
  expected_slices:
    description:
      - How many slice reports there must be (the job template's slice count). Without it, a slice that wrote no report
        leaves its hosts out of the fleet report unnoticed.
    type: int
  max_age_hours:
    description:
      - The oldest a slice report may be (its C(generated_at)), in hours. An older one is refused as not of this run.
    type: float
    default: 24
  run_id:
    description:
      - The run the slices belong to (C(runtime_gate_run_id) in C(playbooks/merge_reports.yml)); every slice's C(run_id)
        must be this one.
      - Unset, every slice must name the same run as the first; slices of runs that were not named (each has an id of
        its own) are then refused, naming the slice.
    type: str
  cluster_result:
    description:
      - The registered result of M(gpufleet.runtime_gate.runtimeclass_info), the cluster the fleet findings are computed against.
      - Absent or failed, the merged report says the cluster was not read and fails, as a single run does.
    type: dict
  report_dir:
    description:
      - The directory to write the fleet's report.json, junit.xml, report.html and metrics.prom into (created if absent; an
        existing report.json becomes report.prev.json). Relative to where ansible-playbook runs.
    type: path
    required: true
  verdicts_file:
    description:
      - Also write every host's verdict as JSON to this controller path, as crosscheck.yml's C(runtime_gate_verdicts_file).
    type: path
attributes:
  check_mode:
    support: none
    details:
      - Writes the reports; not run in check mode.
  diff_mode:
    support: none
    details:
      - Writes report files; no diff.
  idempotent:
    support: none
    details:
      - Each run writes new reports (a new C(generated_at)).
  action:
    support: full
    description: Runs on the controller.
seealso:
  - module: gpufleet.runtime_gate.crosscheck_summary
  - module: gpufleet.runtime_gate.runtimeclass_info
"""

EXAMPLES = r"""
- name: Read the cluster once
  gpufleet.runtime_gate.runtimeclass_info:
    nodes: true
    pods: true
  register: cluster

- name: Merge the four slices' reports
  gpufleet.runtime_gate.report_merge:
    slices_dir: /shared/runtime-gate/2026-12-02
    expected_slices: 4
    cluster_result: "{{ cluster }}"
    report_dir: /shared/runtime-gate/2026-12-02/fleet
"""

RETURN = r"""
slice_reports:
  description: The report.json files merged.
  returned: success
  type: list
  elements: str
run_id:
  description: The run the slices belong to, written into the merged C(report.json).
  returned: success
  type: str
passed:
  description: Whether the cluster was read and every host of every slice is OK.
  returned: success
  type: bool
verdicts:
  description: Every host's verdict as its slice reported it, by host (the fields of report.json's C(hosts)).
  returned: success
  type: dict
counts:
  description: Hosts per verdict (C(OK), C(MISSING), C(UNKNOWN)).
  returned: success
  type: dict
verdict_sources:
  description: As RV(gpufleet.runtime_gate.crosscheck_summary#module:verdict_sources) of a single run, over every slice's hosts.
  returned: success
  type: dict
runtimeclasses:
  description: As RV(gpufleet.runtime_gate.crosscheck_summary#module:runtimeclasses) of a single run, over every slice's hosts.
  returned: success
  type: list
  elements: dict
cluster:
  description: Where the cluster came from and whether it was read (report.json's C(sources.cluster)).
  returned: success
  type: dict
fleet_findings:
  description: The fleet findings recomputed over every slice's hosts.
  returned: success
  type: list
  elements: dict
overhead_findings:
  description: The overhead findings of the cluster.
  returned: success
  type: list
  elements: dict
report_paths:
  description: The files written, by name (C(report.json), C(junit.xml), C(report.html), C(metrics.prom), C(report.prev.json)).
  returned: success
  type: dict
changed_hosts:
  description: Hosts whose verdict changed since the report.json this merge replaced.
  returned: success
  type: list
  elements: dict
table_lines:
  description: The fleet summary table, the fleet findings and where the reports are, line by line.
  returned: success
  type: list
  elements: str
"""
