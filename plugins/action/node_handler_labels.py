# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Runs the node_handler_labels module with the user's relative paths resolved on the controller.

On the controller (the local connection, as the shipped playbooks run it), the kubeconfig and
certificate paths (options or ``K8S_AUTH_*``) are relative to the directory ansible-playbook runs in, not to the
playbook's directory, where ansible-core runs local modules (``_action/controller_paths``).
"""

from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._action.controller_paths import (
    resolve_k8s_auth_paths,
    runs_on_controller,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._specs.node_handler_labels import get_node_handler_labels_argument_spec


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        # The module's own spec, so a bad argument fails here with the module's message, before any path is resolved.
        spec = get_node_handler_labels_argument_spec()
        spec.pop("supports_check_mode")
        self.validate_argument_spec(**spec)
        module_args = dict(self._task.args)
        if runs_on_controller(self._connection):
            module_args = resolve_k8s_auth_paths(module_args)
        module_result = self._execute_module(
            module_name="gpufleet.runtime_gate.node_handler_labels", module_args=module_args, task_vars=task_vars
        )
        return {**result, **module_result}
