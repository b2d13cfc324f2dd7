# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The one result of the fleet tasks (crosscheck_summary, report_merge): the verdicts, their counts and sources,
whether the run passed, the fleet's findings, the table; ``changed`` when a report or a verdicts file was written.
``summarised_run`` writes the verdicts file and the reports first (crosscheck_summary, and node_status_verdicts in
node-status mode)."""

from datetime import UTC, datetime

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.vocabulary import run_passed
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.report import report_lines, write_reports
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.summary import (
    fleet_lines,
    fleet_view,
    summary_lines,
    verdict_counts,
    verdict_source_counts,
    verdict_source_line,
    write_verdicts_file,
)


def summarised_run(verdicts, cluster_result, *, verdicts_file=None, report_dir=None, run_id=None, inventory_sources=(),
                   notes=()):
    """The fleet result of a run's final ``verdicts`` (``{host: verdict}``, as ``collect_verdicts`` returns them), after
    writing the verdicts file and the reports when their paths are given. ``notes``: lines the table shows after the
    verdict source line (a rollout's). Raises ``RuntimeGateError`` when a file cannot be written."""
    fleet = fleet_view(verdicts, cluster_result)
    source_line = verdict_source_line(verdicts)
    report = report_paths = None
    if verdicts_file:
        write_verdicts_file(verdicts_file, verdicts)
    if report_dir:
        generated_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        report, report_paths = write_reports(report_dir, verdicts, fleet, generated_at=generated_at,
                                             inventory_sources=list(inventory_sources), run_id=run_id)
    return fleet_result(verdicts, fleet, lines_before=([source_line] if source_line else []) + list(notes),
                        report=report, report_paths=report_paths, verdicts_file_written=bool(verdicts_file))


def fleet_result(verdicts, fleet, *, lines_before=(), report=None, report_paths=None, verdicts_file_written=False):
    """The task result of a fleet task. ``lines_before``: what the table shows before the fleet findings (the verdict
    source line, a rollout's notes); ``report``/``report_paths``: what ``write_reports`` wrote, if it ran."""
    lines = list(lines_before) + fleet_lines(fleet)
    result = {
        "changed": bool(report_paths) or verdicts_file_written,
        "verdicts": verdicts,
        "counts": verdict_counts(verdicts),
        "verdict_sources": verdict_source_counts(verdicts),
        "passed": run_passed(fleet["cluster"]["read"], verdicts.values()),
        "cluster": fleet["cluster"],
        "fleet_findings": fleet["fleet_findings"],
        "overhead_findings": fleet["overhead_findings"],
        "runtimeclasses": fleet["runtimeclasses"],
    }
    if report is not None:
        result.update(report_paths=report_paths, run_id=report["run_id"], changed_hosts=report["changed_hosts"])
        lines.extend(report_lines(report, report_paths))
    result["table_lines"] = summary_lines(verdicts, lines)
    return result
