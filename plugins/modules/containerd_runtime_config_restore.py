#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)

DOCUMENTATION = r"""
---
module: containerd_runtime_config_restore
short_description: "Internal: decide which files the containerd_runtimes role puts back after a failure"
description:
  - Internal to the P(gpufleet.runtime_gate.containerd_runtimes#role) role, not a module for playbooks; its options
    may change in any release.
  - From the registered result of the role's M(ansible.builtin.copy) loop, lists each written file with the backup
    to restore it from, or that it is to be deleted (it did not exist before); unchanged files are not listed.
  - With O(failed_result), also the message the role fails the host with.
  - Runs on the controller (action plugin) and touches nothing; the role's tasks loop over RV(restore).
version_added: 0.2.0
author:
  - gpufleet platform team (@gpufleet)
extends_documentation_fragment:
  - gpufleet.runtime_gate._attributes
options:
  written:
    description:
      - The registered result of the M(ansible.builtin.copy) loop that wrote the proven files (with C(results)).
    type: dict
    default: {}
  failed_result:
    description:
      - The failed task's result (C(ansible_failed_result)) when writing failed; each failed item's C(msg) goes into RV(failure_msg).
    type: dict
  created_dirs:
    description:
      - The registered result of the role's loop that created missing directories; each one it created and marked
        C(remove_on_rollback) is listed in RV(remove_dirs).
    type: dict
    default: {}
  rollback:
    description:
      - After a failed restart or verification, C(host), C(failed_task), C(failed_result) (with the command's stderr),
        C(restart_result) and C(wait_result) of the restart on the restored files; gives RV(rollback_msg).
    type: dict
attributes:
  check_mode:
    support: full
    description: Decides only; check mode runs it unchanged.
  diff_mode:
    support: none
    description: Changes nothing that could be diffed.
  idempotent:
    support: full
    description: The same input gives the same answer.
  action:
    support: full
    description: An action plugin; nothing runs on the node.
seealso:
  - module: gpufleet.runtime_gate.containerd_runtime_config
"""

EXAMPLES = r"""
- name: Decide what to restore
  gpufleet.runtime_gate.containerd_runtime_config_restore:
    written: "{{ containerd_runtimes_written }}"
  register: containerd_runtimes_restore
"""

RETURN = r"""
restore:
  description: One entry per file to put back, C(path), C(backup) (null when there is none) and C(delete) (the file did not exist before).
  returned: always
  type: list
  elements: dict
failure_msg:
  description: Why writing failed (every failed item's message); null without O(failed_result).
  returned: always
  type: str
remove_dirs:
  description: Directories the role created that a rollback removes again (when empty).
  returned: always
  type: list
  elements: str
rollback_msg:
  description: What failed, that the previous files were restored, and whether containerd answers again or is down on the host.
  returned: when O(rollback) is given
  type: str
"""
