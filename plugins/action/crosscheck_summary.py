# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Collects every judged host's verdict once per run: a table for the terminal, the fleet findings, a JSON
verdicts file and the reports (report.json, junit.xml, report.html, metrics.prom)."""

from datetime import UTC, datetime

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.rollout import rollout_annotations
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._action.controller_paths import controller_path
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._action.host_variables import stored_host_variables
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._action.judge import stored_cluster_result
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.fleet_result import fleet_result
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.report import write_reports
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._specs.crosscheck_summary import get_crosscheck_summary_argument_spec
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.summary import (
    collect_verdicts,
    fleet_view,
    verdict_source_line,
    with_node_status_verdicts,
    write_verdicts_file,
)


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
        host_variables = {host: stored_host_variables(task_vars, host) for host in args["hosts"]}
        registered = {host: host_variables[host].get(args["verdict_var"]) for host in args["hosts"]}
        if args["node_status_var"]:
            # The hosts judged from their Node's status (node_status_verdicts) never ran the host task: their verdicts
            # are localhost's, read as stored; a host that was also judged from its node keeps that verdict.
            registered = with_node_status_verdicts(registered, stored_host_variables(task_vars, "localhost").get(
                args["node_status_var"]))
        verdicts = collect_verdicts(registered)
        role_lines = rollout_annotations(verdicts, host_variables,
                                         failure_var=args["role_failure_var"], reached_var=args["batch_reached_var"],
                                         check_mode=bool(self._task.check_mode))
        cluster_result = args["cluster_result"]
        if cluster_result is None and args["cluster_result_var"]:
            cluster_result = stored_cluster_result(task_vars, args["cluster_result_var"])
        fleet = fleet_view(verdicts, cluster_result)
        source_line = verdict_source_line(verdicts)
        report = report_paths = None
        try:
            if args["verdicts_file"]:
                write_verdicts_file(args["verdicts_file"], verdicts)
            if args["report_dir"]:
                generated_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                report, report_paths = write_reports(
                    args["report_dir"], verdicts, fleet, generated_at=generated_at,
                    inventory_sources=task_vars.get("ansible_inventory_sources") or [], run_id=args["run_id"],
                )
        except RuntimeGateError as error:
            raise AnsibleActionFail(str(error)) from None
        result.update(fleet_result(verdicts, fleet, lines_before=([source_line] if source_line else []) + role_lines,
                                   report=report, report_paths=report_paths,
                                   verdicts_file_written=bool(args["verdicts_file"])))
        return result
