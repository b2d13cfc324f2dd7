# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""One task per host: gathers the node's containerd evidence (the containerd_facts node module), parses it and judges
it here on the controller, and fails the host with its MISSING lines. Given facts (``facts``, or the registered result
of a user's own containerd_facts task as ``gather_result``), it judges those and gathers nothing."""

from ansible.errors import AnsibleConnectionFailure
from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._action.gather import gather_node_facts
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._action.host_variables import (
    stored_host_variables,
    with_host_variables,
)
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._action.judge import (
    stored_cluster_result,
    stored_node_status_verdict,
    verdict_result,
)
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._verdict import (
    judge_gathered,
    judge_node,
    not_gathered,
    unreachable,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._specs.node_crosscheck import (
    get_node_crosscheck_argument_spec,
)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        # Options the task leaves out come from the host's runtime_gate_* variables (docs/variables.md).
        self._task.args = with_host_variables(self._task.args, task_vars, self._templar.template)
        spec = get_node_crosscheck_argument_spec()
        spec.pop("supports_check_mode")
        _validation, args = self.validate_argument_spec(**spec)
        # localhost's registered results as stored, computed once for this host's task (the node-status verdict, the
        # cluster).
        localhost_variables = stored_host_variables(task_vars, "localhost")
        given = args["facts"] is not None or args["gather_result"] is not None
        if not given:
            # Judged from its Node's status on localhost (node_status_verdicts, hybrid mode): that verdict, no connection.
            from_node_status = stored_node_status_verdict(task_vars, args["node_status_var"],
                                                          task_vars.get("inventory_hostname"), args["node_name"],
                                                          localhost_variables)
            if from_node_status is not None:
                return {**result, **verdict_result(dict(from_node_status), fail_on_verdict=args["fail_on_verdict"])}
        # What the node's requirements come from: the RuntimeClasses (given, or localhost's stored cluster result),
        # the Nodes, the node's labels, the expected handlers.
        requirement_inputs = {name: args[name] for name in ("runtimeclasses", "cluster_result", "nodes", "node_labels",
                                                            "expected_handlers")}
        if args["runtimeclasses"] is None and args["cluster_result"] is None and args["expected_handlers"] is None:
            requirement_inputs["cluster_result"] = stored_cluster_result(task_vars, args["cluster_result_var"],
                                                                         localhost_variables)
        if given:
            verdict = judge_gathered(node_name=args["node_name"], facts=args["facts"], gather_result=args["gather_result"],
                                     **requirement_inputs)
        else:
            verdict = self._judged_from_the_node(task_vars, args["node_name"], requirement_inputs)
        return {**result, **verdict_result(verdict, fail_on_verdict=args["fail_on_verdict"])}

    def _judged_from_the_node(self, task_vars, node_name, requirement_inputs):
        """The node's evidence gathered over its connection, parsed into one NodeFacts and judged as it is."""
        try:
            node, failed = gather_node_facts(self, task_vars, dict(self._task.args))
        except AnsibleConnectionFailure as error:
            # An unreachable node is a verdict (UNKNOWN), not a missing one: the host fails with its UNKNOWN line.
            return unreachable(node_name, str(error))
        if failed:
            return not_gathered(node_name, failed)
        return judge_node(node, node_name=node_name, **requirement_inputs)
