# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""One fleet report from the report.json files of sliced runs (AWX job slicing: one job per slice of the inventory).

Each slice judged only its own hosts, so its fleet findings (HANDLER_SERVED_NOWHERE, RUNTIMECLASS_WITHOUT_NODESELECTOR)
speak for the slice. The merge recomputes the fleet view over all of them with the same core (``_summary.fleet_view``,
``_report.write_reports``) a single run uses.

A slice is a file anyone could have written, so it is verified here, at the one place slices enter: plain JSON (no key
given twice, no NaN), conforming to docs/report.schema.json, no older than ``max_age_hours``, read against the same
cluster as the other slices, of the same run (``run_id``: the one the merge is told, else the one every slice names),
judging at least one host, and each host's status recomputed from its own evidence (``lines``, ``missing_handlers``,
``required_handlers`` against ``loaded_runtimes``): a slice whose status disagrees with its evidence is refused, naming
the host.
"""

import glob
import os
from datetime import UTC, datetime, timedelta

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._strict_json import StrictJsonError, loads_strict
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.vocabulary import (
    MISSING,
    NOT_REACHED,
    OK,
    UNKNOWN,
    status_of,
    verdict_lines,
)
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.report_schema import load_report_schema, schema_errors
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.report import REPORT_FORMAT, REPORT_JSON
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.run_id import is_unnamed, run_id_for
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


DEFAULT_MAX_AGE_HOURS = 24
GENERATED_AT_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def read_slice_report(path, *, now=None, max_age_hours=DEFAULT_MAX_AGE_HOURS, schema=None):
    """A slice's report.json as written by crosscheck.yml/nightly.yml, verified; RuntimeGateError naming the file otherwise."""
    try:
        with open(path, "rb") as handle:
            text = handle.read().decode("utf-8")
    except FileNotFoundError:
        raise RuntimeGateError(f"slice report '{path}' does not exist") from None
    except (OSError, UnicodeDecodeError) as error:
        raise RuntimeGateError(f"slice report '{path}' cannot be read: {getattr(error, 'strerror', None) or error}") from None
    try:
        report = loads_strict(text)
    except StrictJsonError as error:
        raise RuntimeGateError(f"slice report '{path}' is not JSON: {error}") from None
    if not isinstance(report, dict) or report.get("format") != REPORT_FORMAT or not isinstance(report.get("hosts"), dict):
        raise RuntimeGateError(f"slice report '{path}' is not a runtime_gate report.json of format {REPORT_FORMAT}")
    errors = schema_errors(report, schema if schema is not None else load_report_schema())
    if errors:
        raise RuntimeGateError(f"slice report '{path}' does not conform to docs/report.schema.json: " + "; ".join(errors))
    _check_age(path, report["generated_at"], now or datetime.now(UTC), max_age_hours)
    if not report["hosts"]:
        raise RuntimeGateError(f"slice report '{path}' judged no host: a slice covers at least one host of the inventory")
    for host, entry in report["hosts"].items():
        _check_host_evidence(path, host, entry)
    return report


def _check_age(path, generated_at, now, max_age_hours):
    written = datetime.strptime(generated_at, GENERATED_AT_FORMAT).replace(tzinfo=UTC)
    if now - written > timedelta(hours=max_age_hours):
        raise RuntimeGateError(f"slice report '{path}' was generated at {generated_at}, more than {max_age_hours} hours ago "
                               f"(max_age_hours): it is not a slice of this run")
    if written - now > timedelta(minutes=5):
        raise RuntimeGateError(f"slice report '{path}' was generated at {generated_at}, in the future")


def recomputed_status(entry):
    """A host's status from its own evidence, whatever its ``status`` says: UNKNOWN (NOT_REACHED) when its lines say so, else MISSING
    when a required handler is not loaded, else OK."""
    if any(line.startswith("UNKNOWN=") for line in entry["lines"]) or status_of(entry) == UNKNOWN:
        return UNKNOWN
    if any(line.startswith("NOT_REACHED=") for line in entry["lines"]) or status_of(entry) == NOT_REACHED:
        return NOT_REACHED
    missing = set(entry["required_handlers"]) - set(entry["loaded_runtimes"])
    return MISSING if missing or entry["missing_handlers"] else OK


def _check_host_evidence(path, host, entry):
    claimed, status = status_of(entry), recomputed_status(entry)
    problem = None
    if claimed != status:
        problem = f"its status is {claimed} but its evidence says {status}"
    elif status not in (UNKNOWN, NOT_REACHED):
        missing = sorted(set(entry["required_handlers"]) - set(entry["loaded_runtimes"]))
        if missing != sorted(entry["missing_handlers"]):
            problem = (f"missing_handlers {sorted(entry['missing_handlers'])} is not required_handlers less loaded_runtimes "
                       f"{missing}")
    if problem is None and entry["lines"] != verdict_lines(entry):
        problem = f"its lines {entry['lines'][:3]} are not what its status {status} says"
    if problem:
        raise RuntimeGateError(f"slice report '{path}': host {host!r}: {problem}; the slice was altered or is not a "
                               f"runtime_gate report")


def slices_run_id(reports_by_path, run_id=None):
    """The run every slice of ``{path: report}`` belongs to: ``run_id`` when the merge is told one (each slice must name
    it), else the one the first slice names, which every other slice must name too. RuntimeGateError naming the slice
    otherwise: two slices of one cluster from different runs within max_age_hours are not one fleet."""
    expected = run_id_for(run_id, "") if run_id not in (None, "") else None
    first_path = None
    for path, report in reports_by_path.items():
        found = report["run_id"]
        if expected is None:
            expected, first_path = found, path
            continue
        if found == expected:
            continue
        if first_path is None:
            raise RuntimeGateError(f"slice report '{path}' is of run '{found}', not of run '{expected}' (run_id): it is "
                                   "not a slice of this run")
        hint = ("the slices' runs were not named: give every slice and the merge the same runtime_gate_run_id"
                if is_unnamed(found) or is_unnamed(expected) else "slices of different runs are not one fleet")
        raise RuntimeGateError(f"slice report '{path}' is of run '{found}', but slice report '{first_path}' is of run "
                               f"'{expected}': {hint}")
    return expected


def _cluster_identity(report):
    cluster = report["sources"]["cluster"]
    return {key: cluster[key] for key in ("type", "server", "path")}


def merge_slice_reports(reports_by_path):
    """``{path: report}`` → ``(verdicts, inventory_sources)`` over every slice's hosts.

    A host in two slices is an error naming both files: slices partition the inventory, so it means two runs were mixed.
    Slices that read different clusters (another API server or cluster file) are refused for the same reason.
    """
    registered, found_in, inventory_sources, clusters = {}, {}, set(), {}
    for path, report in reports_by_path.items():
        cluster = _cluster_identity(report) if isinstance(report.get("sources", {}).get("cluster"), dict) else None
        if cluster is not None:
            clusters.setdefault(tuple(sorted((key, str(value)) for key, value in cluster.items())), path)
        for host, verdict in report["hosts"].items():
            if host in found_in:
                raise RuntimeGateError(f"host '{host}' is in two slice reports: '{found_in[host]}' and '{path}'")
            found_in[host] = path
            registered[host] = verdict
        inventory_sources.update((report.get("sources") or {}).get("inventory") or [])
    if len(clusters) > 1:
        described = "; ".join(f"'{path}' read {dict(identity)}" for identity, path in clusters.items())
        raise RuntimeGateError(f"the slice reports read different clusters, so they are not slices of one run: {described}")
    return collect_verdicts(registered), sorted(inventory_sources)
