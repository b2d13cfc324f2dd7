# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Runs the stdlib node module once, then parses its raw text here on the controller (tomllib)."""

from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._containerd_config import facts_from_evidence
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._errors import RuntimeGateError


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("containerd_bin", "config_path", "dump_file", "timeout", "dropin_dirs", "cdi_spec_dirs",
                             "daemon", "socket", "crictl_bin", "host_root"))

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        node = (task_vars or {}).get("inventory_hostname", "?")
        module_result = self._execute_module(
            module_name="gpufleet.runtime_gate.containerd_facts", module_args=self._task.args, task_vars=task_vars
        )
        if module_result.get("failed"):
            module_result["msg"] = f"{node}: {module_result.get('msg', 'containerd facts could not be gathered')}"
            module_result.pop("evidence", None)
            # The module failed on purpose with a sentence; ansible-core's "(traceback unavailable)" adds nothing.
            module_result.pop("exception", None)
            return {**result, **module_result}

        try:
            facts = facts_from_evidence(module_result["evidence"])
        except RuntimeGateError as error:
            return {**result, "failed": True, "changed": False, "msg": f"{node}: {error}"}
        return {**result, "changed": False, "ansible_facts": {"containerd": facts}}
