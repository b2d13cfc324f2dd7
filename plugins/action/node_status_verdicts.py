# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Judges hosts from their Nodes' status.runtimeHandlers on the controller, with no connection to them, and says which
hosts are left for their node's evidence (``_action/verdict_sources``)."""

from datetime import UTC, datetime

from ansible.errors import AnsibleActionFail
from ansible.inventory.helpers import sort_groups
from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._specs.node_status_verdicts import (
    get_node_status_verdicts_argument_spec,
)
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
        inventory = task_vars["hostvars"]._inventory  # pylint: disable=protected-access
        for host in args["hosts"]:
            variables = inventory_variables(inventory.get_host(host))
            node_names[host] = _host_value(task_vars, host, variables, NODE_NAME_VAR) or host
            labels = _host_value(task_vars, host, variables, NODE_LABELS_VAR)
            if isinstance(labels, dict):
                node_labels[host] = labels
        split = split_by_verdict_source(
            node_names, stored_cluster_result(task_vars, args["cluster_result_var"]), args["verdict_source"],
            now=datetime.now(UTC), max_heartbeat_age=args["max_heartbeat_age"], node_labels=node_labels)
        return {**result, **split, "changed": False, "verdict_source": args["verdict_source"]}


def inventory_variables(host):
    """``runtime_gate_node_name`` and ``runtime_gate_node_labels`` as the inventory sources set them (host variables
    over group variables, the deeper group winning: Ansible's order), or ``{}`` for a host the inventory lacks.

    Not ``hostvars``: that computes all of a host's variables (vars plugins, facts), about 0.6 ms a host, 6 s for 10,000
    hosts on these machines, where the inventory's own are 0.02 ms (benchmarks/README.md, "API mode"). Variables from
    host_vars/ and group_vars/ files are therefore not read here (docs/usage.md): set them in the inventory, as the
    k8s_nodes inventory plugin does.
    """
    if host is None:
        return {}
    found = {}
    for group in sort_groups(host.get_groups()):
        group_vars = group.get_vars()
        found.update({name: group_vars[name] for name in (NODE_NAME_VAR, NODE_LABELS_VAR) if name in group_vars})
    host_vars = host.get_vars()
    found.update({name: host_vars[name] for name in (NODE_NAME_VAR, NODE_LABELS_VAR) if name in host_vars})
    return found


def _host_value(task_vars, host, variables, name):
    """A host variable as the playbooks read it: as stored when it is plain data (the inventory plugin's are), else
    templated in the host's own context (``hostvars``), which costs a template per host."""
    value = variables.get(name)
    if isinstance(value, str) and "{" in value:
        value = task_vars["hostvars"][host].get(name)
    return value
