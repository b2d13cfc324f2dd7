# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Judges one node on the controller: containerd facts + RuntimeClasses + node labels → verdict."""

from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._findings import explanation_lines
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._verdict import judge_gathered, passed

ARGUMENT_SPEC = dict(
    facts=dict(type="dict"),
    gather_result=dict(type="dict"),
    runtimeclasses=dict(type="list", elements="dict"),
    cluster_result=dict(type="dict"),
    cluster_result_var=dict(type="str"),
    nodes=dict(type="list", elements="dict"),
    node_name=dict(type="str", required=True),
    node_labels=dict(type="dict"),
    fail_on_verdict=dict(type="bool", default=True),
)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(
            argument_spec=ARGUMENT_SPEC,
            mutually_exclusive=[("facts", "gather_result"), ("runtimeclasses", "cluster_result", "cluster_result_var")],
        )
        judge_args = {name: args[name] for name in ARGUMENT_SPEC if name not in ("fail_on_verdict", "cluster_result_var")}
        if args["cluster_result_var"]:
            # The stored value, not hostvars[...][...]: that templates and copies the whole cluster (every pod) into each
            # host's task and its result, O(hosts x cluster) time and memory (benchmarks/README.md). It is data, not a template.
            judge_args["cluster_result"] = task_vars["hostvars"].raw_get("localhost").get(args["cluster_result_var"])
        verdict = judge_gathered(**judge_args)
        result.update(verdict)
        result["changed"] = False
        result["passed"] = passed(verdict)
        # A failed host's message carries its findings under the MISSING lines, so crosscheck.yml shows
        # why without any playbook logic; `lines` stays the bare seed contract.
        result["msg"] = "\n".join(verdict["lines"] + ([] if result["passed"] else explanation_lines(verdict)))
        if args["fail_on_verdict"] and not result["passed"]:
            result["failed"] = True
        return result
