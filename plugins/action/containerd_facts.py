# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Runs the stdlib node module once, then parses its raw text here on the controller (tomllib)."""

from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._action.gather import gather_containerd_facts
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._specs.containerd_facts import (
    get_containerd_facts_argument_spec,
)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        spec = get_containerd_facts_argument_spec()
        spec.pop("supports_check_mode")
        self.validate_argument_spec(**spec)
        # The task's own arguments, not the validated ones: the node module applies the defaults itself.
        return {**result, **gather_containerd_facts(self, task_vars, dict(self._task.args))}
