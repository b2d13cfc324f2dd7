# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Runs the stdlib node module once, then parses its raw text here on the controller (tomllib)."""

from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._containerd_config import facts_from_evidence
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._controller_paths import resolve_args, runs_on_controller
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._errors import RuntimeGateError


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("containerd_bin", "config_path", "dump_file", "timeout", "dropin_dirs", "cdi_spec_dirs",
                             "daemon", "socket", "crictl_bin", "host_root", "containerd_version"))

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        node = (task_vars or {}).get("inventory_hostname", "?")
        module_args = dict(self._task.args)
        if runs_on_controller(self._connection):
            # The node is the controller: a relative dump file, node root or wrapper is relative to where
            # ansible-playbook runs, not to the playbook's directory where the module runs (_controller_paths).
            # config_path, dropin_dirs and cdi_spec_dirs are node paths under host_root: left alone.
            module_args = resolve_args(module_args, path_args=("dump_file", "host_root", "socket"),
                                       program_args=("containerd_bin", "crictl_bin"))
        module_result = self._execute_module(
            module_name="gpufleet.runtime_gate.containerd_facts", module_args=module_args, task_vars=task_vars
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
