# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Judges one node on the controller: containerd facts + RuntimeClasses + node labels → verdict."""

from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._verdict import judge_gathered, passed

ARGUMENT_SPEC = dict(
    facts=dict(type="dict"),
    gather_result=dict(type="dict"),
    runtimeclasses=dict(type="list", elements="dict"),
    cluster_result=dict(type="dict"),
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
            mutually_exclusive=[("facts", "gather_result"), ("runtimeclasses", "cluster_result")],
        )
        verdict = judge_gathered(**{name: args[name] for name in ARGUMENT_SPEC if name != "fail_on_verdict"})
        result.update(verdict)
        result["changed"] = False
        result["passed"] = passed(verdict)
        result["msg"] = "\n".join(verdict["lines"])
        if args["fail_on_verdict"] and not result["passed"]:
            result["failed"] = True
        return result
