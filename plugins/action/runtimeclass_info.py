# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Runs the runtimeclass_info module with the user's relative paths resolved on the controller.

On the controller (the local connection, as the shipped playbooks run it), ``src`` and the kubeconfig and
certificate paths (options or ``K8S_AUTH_*``) are relative to the directory ansible-playbook runs in, not to the
playbook's directory, where ansible-core runs local modules (``_action/controller_paths``).

A cluster file read on the controller needs no module run and no kubernetes client: the action reads it itself
(``_k8s/cluster_file``), the same function the module calls.
"""

from ansible.errors import AnsibleActionFail
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.cluster_file import cluster_file_result
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.manifest import HAS_YAML
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._action.controller_paths import (
    controller_path,
    resolve_args,
    resolve_k8s_auth_paths,
    runs_on_controller,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError

# A task with only these options and a src is a plain file read; anything else (auth, limits, paging) goes to the module,
# which validates it.
FILE_READ_OPTIONS = frozenset(("src", "nodes", "pods"))


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        module_args = dict(self._task.args)
        if runs_on_controller(self._connection):
            if module_args.get("src") and set(module_args) <= FILE_READ_OPTIONS and HAS_YAML:
                return {**result, **self._read_cluster_file(module_args)}
            module_args = resolve_k8s_auth_paths(resolve_args(module_args, path_args=("src",)))
        module_result = self._execute_module(
            module_name="gpufleet.runtime_gate.runtimeclass_info", module_args=module_args, task_vars=task_vars
        )
        return {**result, **module_result}

    def _read_cluster_file(self, module_args):
        src = controller_path(str(module_args["src"]))
        try:
            include = {name: boolean(module_args.get(name, False), strict=True) for name in ("nodes", "pods")}
        except TypeError as error:
            raise AnsibleActionFail(f"runtimeclass_info: {error}") from None
        try:
            return cluster_file_result(src, include_nodes=include["nodes"], include_pods=include["pods"])
        except RuntimeGateError as error:
            return {"failed": True, "changed": False, "msg": str(error), "source": {"type": "file", "path": src}}
