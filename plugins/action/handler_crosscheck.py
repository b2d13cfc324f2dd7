# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Judges one node on the controller: containerd facts + RuntimeClasses + node labels → verdict."""

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._action.judge import judged_result, stored_cluster_result
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._specs.handler_crosscheck import (
    get_handler_crosscheck_argument_spec,
)

CLUSTER_RESULT_VAR_DEPRECATION = (
    "handler_crosscheck's cluster_result_var reads localhost's variables behind the task's back; pass the cluster as "
    "cluster_result, or judge each host with gpufleet.runtime_gate.node_crosscheck (one task per host, the cluster named once)"
)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        spec = get_handler_crosscheck_argument_spec()
        spec.pop("supports_check_mode")
        _validation, args = self.validate_argument_spec(**spec)
        judge_args = {name: args[name] for name in ("facts", "gather_result", "runtimeclasses", "cluster_result", "nodes",
                                                    "node_name", "node_labels")}
        if args["cluster_result_var"]:
            Display().deprecated(CLUSTER_RESULT_VAR_DEPRECATION, version="2.0.0", collection_name="gpufleet.runtime_gate")
            judge_args["cluster_result"] = stored_cluster_result(task_vars, args["cluster_result_var"])
        return {**result, **judged_result(judge_args, fail_on_verdict=args["fail_on_verdict"])}
