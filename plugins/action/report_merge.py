# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Merges the report.json files of sliced runs into one fleet report, recomputing the fleet findings over all hosts."""

from datetime import UTC, datetime

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._action.controller_paths import controller_path
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.fleet_result import fleet_result
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.report import write_reports
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.merge import (
    merge_slice_reports,
    read_slice_report,
    slice_report_paths,
    slices_run_id,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._specs.report_merge import get_report_merge_argument_spec
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.summary import (
    fleet_view,
    write_verdicts_file,
)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        spec = get_report_merge_argument_spec()
        spec.pop("supports_check_mode")
        _validation, args = self.validate_argument_spec(**spec)
        # Controller paths, relative to where ansible-playbook runs (this process's cwd), shown absolute.
        for name in ("slices_dir", "report_dir", "verdicts_file"):
            args[name] = controller_path(args[name])
        reports = [controller_path(path) for path in args["reports"]] if args["reports"] is not None else None
        try:
            paths = slice_report_paths(reports, args["slices_dir"], args["expected_slices"])
            if args["max_age_hours"] <= 0:
                raise RuntimeGateError(f"max_age_hours must be above 0, not {args['max_age_hours']}")
            now = datetime.now(UTC)
            reports = {path: read_slice_report(path, now=now, max_age_hours=args["max_age_hours"]) for path in paths}
            run_id = slices_run_id(reports, args["run_id"])
            verdicts, inventory_sources = merge_slice_reports(reports)
            fleet = fleet_view(verdicts, args["cluster_result"])
            generated_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            report, report_paths = write_reports(args["report_dir"], verdicts, fleet, generated_at=generated_at,
                                                 inventory_sources=inventory_sources, run_id=run_id)
            if args["verdicts_file"]:
                write_verdicts_file(args["verdicts_file"], verdicts)
        except RuntimeGateError as error:
            raise AnsibleActionFail(str(error)) from None
        result.update(fleet_result(verdicts, fleet, report=report, report_paths=report_paths,
                                   verdicts_file_written=bool(args["verdicts_file"])), slice_reports=paths)
        return result
