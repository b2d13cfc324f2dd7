#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)

DOCUMENTATION = r"""
---
module: containerd_runtime_config_diff
short_description: "Internal: show the containerd_runtimes role's proven file changes as Ansible's diff"
description:
  - Internal to the P(gpufleet.runtime_gate.containerd_runtimes#role) role, not a module for playbooks; its options
    may change in any release.
  - Returns C(diff) entries (C(before), C(after), one header per file) from the
    registered result of M(gpufleet.runtime_gate.containerd_runtime_config), whose texts are already redacted, so that
    C(--diff) prints them as Ansible prints any file's change.
version_added: 0.2.0
author:
  - gpufleet platform team (@gpufleet)
extends_documentation_fragment:
  - gpufleet.runtime_gate._attributes
options:
  file_diffs:
    description:
      - The C(file_diffs) of M(gpufleet.runtime_gate.containerd_runtime_config)'s result.
    type: list
    elements: dict
    default: []
attributes:
  check_mode:
    support: full
    description: Shows only; check mode runs it unchanged.
  diff_mode:
    support: full
    description: Its only output is the diff.
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
- name: Show the proven files as a diff
  gpufleet.runtime_gate.containerd_runtime_config_diff:
    file_diffs: "{{ containerd_runtimes_plan.file_diffs }}"
"""

RETURN = r"""
diff:
  description: One entry per changed file, C(before_header), C(after_header) (its path), C(before) and C(after).
  returned: always
  type: list
  elements: dict
"""
