# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""One fleet report from the report.json files of sliced runs (AWX job slicing: one job per slice of the inventory).

Each slice judged only its own hosts, so its fleet findings (HANDLER_SERVED_NOWHERE, RUNTIMECLASS_WITHOUT_NODESELECTOR)
speak for the slice. The merge takes every slice's per-host verdicts as reported and recomputes the fleet view over all of
them with the same core (``_summary.fleet_view``, ``_report.write_reports``) a single run uses. Nothing is re-judged.
"""

import glob
import json
import os

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.report import REPORT_FORMAT, REPORT_JSON
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.summary import collect_verdicts


def slice_report_paths(reports=None, slices_dir=None, expected_slices=None):
    """The report.json of each slice: ``reports`` (files, or directories holding one), else every ``<slices_dir>/*/report.json``.

    With ``expected_slices``, anything but that many reports is an error: a slice that wrote no report (it failed before
    its summary, or its directory is elsewhere) would otherwise leave its hosts out of the fleet report unseen.
    """
    if reports is not None:
        paths = [os.path.join(path, REPORT_JSON) if os.path.isdir(path) else path for path in reports]
    else:
        if not os.path.isdir(slices_dir):
            raise RuntimeGateError(f"slices_dir '{slices_dir}' is not a directory")
        paths = sorted(glob.glob(os.path.join(glob.escape(slices_dir), "*", REPORT_JSON)))
    if not paths:
        raise RuntimeGateError(f"no slice report found in slices_dir '{slices_dir}' (expected <slice>/{REPORT_JSON})"
                               if reports is None else "reports lists no report")
    if expected_slices is not None and len(paths) != expected_slices:
        raise RuntimeGateError(f"{len(paths)} slice reports found, {expected_slices} expected (expected_slices): "
                               + ", ".join(paths))
    return paths


def read_slice_report(path):
    """A slice's report.json as written by crosscheck.yml/nightly.yml; RuntimeGateError naming the file otherwise."""
    try:
        with open(path, encoding="utf-8") as handle:
            report = json.load(handle)
    except FileNotFoundError:
        raise RuntimeGateError(f"slice report '{path}' does not exist") from None
    except (OSError, UnicodeDecodeError) as error:
        raise RuntimeGateError(f"slice report '{path}' cannot be read: {getattr(error, 'strerror', None) or error}") from None
    except json.JSONDecodeError as error:
        raise RuntimeGateError(f"slice report '{path}' is not JSON: {error.msg} at line {error.lineno}") from None
    if not isinstance(report, dict) or report.get("format") != REPORT_FORMAT or not isinstance(report.get("hosts"), dict):
        raise RuntimeGateError(f"slice report '{path}' is not a runtime_gate report.json of format {REPORT_FORMAT}")
    return report


def merge_slice_reports(reports_by_path):
    """``{path: report}`` → ``(verdicts, inventory_sources)`` over every slice's hosts.

    A host in two slices is an error naming both files: slices partition the inventory, so it means two runs were mixed.
    """
    registered, found_in, inventory_sources = {}, {}, set()
    for path, report in reports_by_path.items():
        for host, verdict in report["hosts"].items():
            if host in found_in:
                raise RuntimeGateError(f"host '{host}' is in two slice reports: '{found_in[host]}' and '{path}'")
            found_in[host] = path
            registered[host] = verdict
        inventory_sources.update((report.get("sources") or {}).get("inventory") or [])
    return collect_verdicts(registered), sorted(inventory_sources)
