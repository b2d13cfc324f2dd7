# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Collects every judged host's verdict once per run: a table for the terminal, the fleet findings, a JSON
verdicts file and the reports (report.json, junit.xml, report.html, metrics.prom)."""

from collections.abc import Mapping

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.rollout import rollout_annotations
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._action.controller_paths import controller_path
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._action.host_variables import stored_host_variables
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._action.judge import stored_cluster_result
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.fleet_result import summarised_run
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._specs.crosscheck_summary import get_crosscheck_summary_argument_spec
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.summary import collect_verdicts, with_node_status_verdicts


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        spec = get_crosscheck_summary_argument_spec()
        spec.pop("supports_check_mode")
        _validation, args = self.validate_argument_spec(**spec)
        # Controller paths, relative to where ansible-playbook runs (this process's cwd), shown absolute.
        for name in ("verdicts_file", "report_dir"):
            args[name] = controller_path(args[name])
        localhost_node_status = (stored_host_variables(task_vars, "localhost").get(args["node_status_var"])
                                 if args["node_status_var"] else None)
        if not args["hosts"] and isinstance(localhost_node_status, Mapping) and isinstance(
                localhost_node_status.get("summary"), Mapping):
            # node-status mode: node_status_verdicts judged every host, summarised the run and wrote its files itself
            # (the 10,000 verdicts of a large fleet never travel as a registered result): its summary is the run's.
            summary = {**result, **localhost_node_status["summary"]}
            if not args["return_verdicts"]:
                summary.pop("verdicts", None)
            return summary
        host_variables = {host: stored_host_variables(task_vars, host) for host in args["hosts"]}
        registered = {host: host_variables[host].get(args["verdict_var"]) for host in args["hosts"]}
        if args["node_status_var"]:
            # The hosts judged from their Node's status (node_status_verdicts) never ran the host task: their verdicts
            # are localhost's, read as stored; a host that was also judged from its node keeps that verdict.
            registered = with_node_status_verdicts(registered, localhost_node_status)
        verdicts = collect_verdicts(registered)
        role_lines = rollout_annotations(verdicts, host_variables,
                                         failure_var=args["role_failure_var"], reached_var=args["batch_reached_var"],
                                         check_mode=bool(self._task.check_mode))
        cluster_result = args["cluster_result"]
        if cluster_result is None and args["cluster_result_var"]:
            cluster_result = stored_cluster_result(task_vars, args["cluster_result_var"])
        try:
            result.update(summarised_run(verdicts, cluster_result, verdicts_file=args["verdicts_file"],
                                         report_dir=args["report_dir"], run_id=args["run_id"],
                                         inventory_sources=task_vars.get("ansible_inventory_sources") or [],
                                         notes=role_lines))
        except RuntimeGateError as error:
            raise AnsibleActionFail(str(error)) from None
        if not args["return_verdicts"]:
            del result["verdicts"]
        return result
