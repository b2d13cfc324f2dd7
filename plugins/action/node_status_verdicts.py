# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Judges hosts from their Nodes' status.runtimeHandlers on the controller, with no connection to them, and says which
hosts are left for their node's evidence (``_action/verdict_sources``).

In node-status mode every verdict is final here: given ``cluster`` (runtimeclass_info's options) the action reads the
cluster itself, in-process, and given ``summarise`` it summarises the run and writes its files, as crosscheck_summary
would; the lists of a 10,000-Node cluster and the 10,000 verdicts then never pass through ansible-core's handling of
registered results (benchmarks/README.md, "API mode"), only the counts and the table do.
"""

from datetime import UTC, datetime

from ansible.errors import AnsibleActionFail
from ansible.inventory.helpers import sort_groups
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._specs.node_status_verdicts import (
    get_node_status_verdicts_argument_spec,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._specs.runtimeclass_info import get_runtimeclass_info_argument_spec
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._action.controller_paths import (
    controller_path,
    resolve_args,
    resolve_k8s_auth_paths,
)
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._action.judge import stored_cluster_result
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._action.verdict_sources import NODE_STATUS, split_by_verdict_source
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.fleet_result import summarised_run
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.summary import collect_verdicts

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
        node_status_mode = args["verdict_source"] == NODE_STATUS
        node_names, node_labels = {}, {}
        inventory = task_vars["hostvars"]._inventory  # pylint: disable=protected-access
        for host in hosts_in_limit(args["hosts"], inventory):
            variables = inventory_variables(inventory.get_host(host))
            node_names[host] = _host_value(task_vars, host, variables, NODE_NAME_VAR) or host
            labels = _host_value(task_vars, host, variables, NODE_LABELS_VAR)
            if isinstance(labels, dict):
                node_labels[host] = labels
        if node_status_mode and args["cluster"] is not None:
            cluster_result, warnings = read_cluster(args["cluster"])
            result.setdefault("warnings", []).extend(warnings)
        else:
            cluster_result = stored_cluster_result(task_vars, args["cluster_result_var"])
        split = split_by_verdict_source(
            node_names, cluster_result, args["verdict_source"],
            now=datetime.now(UTC), max_heartbeat_age=args["max_heartbeat_age"], node_labels=node_labels)
        result.update(split, changed=False, verdict_source=args["verdict_source"])
        if node_status_mode and args["summarise"]:
            summary = summarise(split["verdicts"], cluster_result, args, task_vars)
            if not args["summary_verdicts"]:
                del summary["verdicts"]
            del result["verdicts"]
            result.update(summary=summary, changed=summary["changed"])
        return result


def read_cluster(cluster_args):
    """``(runtimeclass_info's result, warnings)`` for its options ``cluster_args``, read here on the controller; its
    relative paths (``src``, the kubeconfig and certificates, also as ``K8S_AUTH_*``) are the controller's."""
    spec = get_runtimeclass_info_argument_spec()
    spec.pop("supports_check_mode")
    validated = ArgumentSpecValidator(**spec).validate(resolve_k8s_auth_paths(resolve_args(cluster_args, path_args=("src",))))
    if validated.error_messages:
        raise AnsibleActionFail(f"cluster: {'; '.join(validated.error_messages)}")
    # Here, not at the top: the kubernetes client costs about a second to import, needed only in this mode.
    from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.cluster_info import (  # pylint: disable=import-outside-toplevel
        cluster_info_result,
    )
    return cluster_info_result(validated.validated_parameters)


def summarise(node_status_verdicts, cluster_result, args, task_vars):
    """crosscheck_summary's result for a run whose every verdict is ``node_status_verdicts``, its files written."""
    try:
        return summarised_run(collect_verdicts(node_status_verdicts), cluster_result,
                              verdicts_file=controller_path(args["verdicts_file"]), report_dir=controller_path(args["report_dir"]),
                              run_id=args["run_id"], inventory_sources=task_vars.get("ansible_inventory_sources") or [])
    except RuntimeGateError as error:
        raise AnsibleActionFail(str(error)) from None


def hosts_in_limit(hosts, inventory):
    """``hosts`` less the inventory's hosts that the run's ``--limit`` leaves out, in their order: the hosts a play of the
    run can target. ``query('inventory_hostnames', ...)`` lists a pattern's hosts whatever the limit; judged here from
    their Node's status, the hosts outside it would be in the summary and the reports (with ``node-status``, as every
    host of the run), and handed to the per-host play (``task_hosts``) they would not be judged at all. A name the
    inventory does not hold is no host of a limit: it is kept."""
    in_limit = {host.name for host in inventory.get_hosts("all", ignore_restrictions=True)}
    in_inventory = {host.name for host in inventory.get_hosts("all", ignore_limits=True, ignore_restrictions=True)}
    return [host for host in hosts if host in in_limit or host not in in_inventory]


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
