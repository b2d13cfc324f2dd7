#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)

DOCUMENTATION = r"""
---
module: crosscheck_summary
short_description: Summarise the verdicts of a crosscheck run
description:
  - Reads the registered M(gpufleet.runtime_gate.handler_crosscheck) result of every host in O(hosts) and returns
    a table for the terminal, the verdicts and their counts; optionally writes them as JSON on the controller.
  - A host without a verdict (unreachable before it was judged, or removed from the play) is reported C(UNKNOWN).
  - Runs on the controller (action plugin); run it once per play.
version_added: 0.1.0
author:
  - gpufleet platform team (@gpufleet)
options:
  hosts:
    description:
      - The hosts of the run, usually C(ansible_play_hosts_all).
    type: list
    elements: str
    required: true
  verdict_var:
    description:
      - The variable each host registered its M(gpufleet.runtime_gate.handler_crosscheck) result in.
    type: str
    default: runtime_gate_verdict
  verdicts_file:
    description:
      - "Controller path to write the verdicts to as JSON (C(hosts): host to verdict, C(counts)), atomically; directories are created."
    type: path
attributes:
  check_mode:
    support: full
    description: Same result in check mode; the verdicts file is written in check mode too, since it changes no host.
  diff_mode:
    support: none
    description: Nothing to diff.
  idempotent:
    support: full
    description: Writes the same file for the same verdicts.
  action:
    support: full
    description: Runs on the controller; reads the other hosts' registered verdicts.
seealso:
  - module: gpufleet.runtime_gate.handler_crosscheck
"""

EXAMPLES = r"""
- name: Summarise the fleet
  gpufleet.runtime_gate.crosscheck_summary:
    hosts: "{{ ansible_play_hosts_all }}"
    verdicts_file: "{{ playbook_dir }}/../out/verdicts.json"
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
    - Per host C(verdict), C(missing_handlers), C(required_handlers), C(loaded_runtimes), C(default_runtime),
      C(containerd_version), C(reason), C(notes).
  returned: always
  type: dict
counts:
  description: Number of hosts per verdict.
  returned: always
  type: dict
  sample: {"OK": 4, "MISSING": 2, "UNKNOWN": 1}
"""
