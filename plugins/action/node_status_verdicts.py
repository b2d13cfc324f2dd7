# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Judges hosts from their Nodes' status.runtimeHandlers on the controller, with no connection to them, and says which
hosts are left for their node's evidence (``_action/verdict_sources``)."""

from datetime import UTC, datetime

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._specs.node_status_verdicts import (
    get_node_status_verdicts_argument_spec,
)
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._action.host_variables import stored_host_variables
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._action.judge import stored_cluster_result
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._action.verdict_sources import split_by_verdict_source

NODE_NAME_VAR = "runtime_gate_node_name"
NODE_LABELS_VAR = "runtime_gate_node_labels"


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        spec = get_node_status_verdicts_argument_spec()
        spec.pop("supports_check_mode")
        _validation, args = self.validate_argument_spec(**spec)
        if args["max_heartbeat_age"] < 1:
            raise AnsibleActionFail(f"max_heartbeat_age must be at least 1 second, not {args['max_heartbeat_age']}")
        node_names, node_labels = {}, {}
        for host in args["hosts"]:
            variables = stored_host_variables(task_vars, host)
            node_names[host] = _host_value(task_vars, host, variables, NODE_NAME_VAR) or host
            labels = _host_value(task_vars, host, variables, NODE_LABELS_VAR)
            if isinstance(labels, dict):
                node_labels[host] = labels
        split = split_by_verdict_source(
            node_names, stored_cluster_result(task_vars, args["cluster_result_var"]), args["verdict_source"],
            now=datetime.now(UTC), max_heartbeat_age=args["max_heartbeat_age"], node_labels=node_labels)
        return {**result, **split, "changed": False, "verdict_source": args["verdict_source"]}


def _host_value(task_vars, host, variables, name):
    """A host variable as the playbooks read it: as stored when it is plain data (the inventory plugin's are), else
    templated in the host's own context (``hostvars``), which costs a template per host."""
    value = variables.get(name)
    if isinstance(value, str) and "{" in value:
        value = task_vars["hostvars"][host].get(name)
    return value
