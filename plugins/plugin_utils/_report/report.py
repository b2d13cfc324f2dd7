"""The reports of one crosscheck run: ``report.json``, ``junit.xml``, ``report.html`` and ``metrics.prom`` in one
directory.

``build_report`` is pure (verdicts + fleet view + run metadata + the previous report → one JSON-able object,
documented in docs/report.md and docs/report.schema.json); ``junit_xml``, ``_report_html.render_html`` and
``_report_metrics.render_metrics`` only render that object; ``write_reports`` is the one function that touches the directory.
"""

import json
import os
import xml.etree.ElementTree as ET

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._printable import printable, printable_lines
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._explain.findings import explanation_lines
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.report_html import render_html
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.report_metrics import METRICS_PROM, render_metrics
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.run_id import run_id_for
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.summary import (
    REPORTED_FIELDS,
    finding_line,
    verdict_counts,
    verdict_source_counts,
    write_atomically,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.vocabulary import (
    MISSING,
    NOT_REACHED,
    OK,
    UNKNOWN,
    missing_line,
    run_passed,
    status_of,
    verdict_lines,
    with_status,
)

REPORT_FORMAT = 1
REPORT_JSON = "report.json"
PREVIOUS_REPORT_JSON = "report.prev.json"
JUNIT_XML = "junit.xml"
REPORT_HTML = "report.html"

SERVED, MISSING_CELL, NOT_REQUIRED, UNKNOWN_CELL = "served", "missing", "not_required", "unknown"
NOT_REACHED_CELL = "not_reached"


def build_report(verdicts, fleet, *, generated_at, inventory_sources=(), previous=None, run_id=None):
    """The report object. ``verdicts``: ``{host: verdict}`` (``_summary.collect_verdicts``); ``fleet``:
    ``_summary.fleet_view``; ``previous``: ``previous_report(...)`` of the report this one replaces, or None;
    ``run_id``: the run's name (``_report/run_id.run_id_for``: None gives this run an id of its own).

    The run passes only when the cluster was read and every host (at least one) is OK: a run that could
    not read the cluster, or judged nobody, is never a green report.
    """
    hosts = {host: {field: verdict.get(field) for field in REPORTED_FIELDS} for host, verdict in sorted(verdicts.items())}
    counts = verdict_counts(verdicts)
    return {
        "format": REPORT_FORMAT,
        "generated_at": generated_at,
        "run_id": run_id_for(run_id, generated_at),
        "passed": run_passed(fleet["cluster"]["read"], hosts.values()),
        "counts": counts,
        "verdict_sources": verdict_source_counts(verdicts),
        "sources": {"cluster": fleet["cluster"], "inventory": sorted(inventory_sources or [])},
        "fleet_findings": fleet["fleet_findings"],
        "overhead_findings": fleet["overhead_findings"],
        "runtimeclasses": fleet["runtimeclasses"],
        "matrix": fleet_matrix(hosts, fleet["runtimeclasses"]),
        "hosts": hosts,
        "failures": failures(hosts),
        "previous": None if previous is None else {key: previous[key] for key in ("generated_at", "error")},
        "changed_hosts": changed_hosts(hosts, previous),
    }


def fleet_matrix(hosts, runtimeclasses):
    """Hosts × handlers: ``served``, ``missing``, ``not_required``, ``unknown`` (the host's verdict is UNKNOWN) or
    ``not_reached`` (a rollout's host whose batch has not run).

    The columns are every RuntimeClass handler plus every handler some host requires (default runtimes).
    """
    handlers = {runtimeclass["handler"] for runtimeclass in runtimeclasses}
    for entry in hosts.values():
        handlers.update(entry["required_handlers"] or [])
    rows = {host: {handler: _cell(entry, handler) for handler in sorted(handlers)} for host, entry in hosts.items()}
    return {"handlers": sorted(handlers), "rows": rows}


def _cell(entry, handler):
    if status_of(entry) == UNKNOWN:
        return UNKNOWN_CELL
    if status_of(entry) == NOT_REACHED:
        return NOT_REACHED_CELL
    if handler in (entry["missing_handlers"] or []):
        return MISSING_CELL
    return SERVED if handler in (entry["required_handlers"] or []) else NOT_REQUIRED


def failures(hosts):
    """One flat entry per failing host × handler (an UNKNOWN or NOT_REACHED host: one entry, handler null)."""
    entries = []
    for host, entry in hosts.items():
        status = status_of(entry)
        if status == MISSING:
            for handler in entry["missing_handlers"]:
                explained_by = (entry["missing_explained"] or {}).get(handler) or []
                entries.append(with_status({"host": host, "node": entry["node"], "handler": handler,
                                            "message": missing_line(handler), "explained_by": list(explained_by)}, MISSING))
        elif status in (UNKNOWN, NOT_REACHED):
            entries.append(with_status({"host": host, "node": entry["node"], "handler": None,
                                        "message": verdict_lines(entry)[0], "explained_by": []}, status))
    return entries


def previous_report(text):
    """The previous ``report.json`` (its text, or None when there was none) as ``{generated_at, error, hosts}``.

    A previous file that is not a report of this format is kept (as report.prev.json) but not compared:
    ``error`` says why, and the new report's ``changed_hosts`` is null rather than a made-up "nothing changed".
    """
    if text is None:
        return None
    try:
        document = json.loads(text)
    except ValueError as error:
        return {"generated_at": None, "error": f"{REPORT_JSON} was not valid JSON: {error}", "hosts": None}
    if not isinstance(document, dict) or document.get("format") != REPORT_FORMAT or not isinstance(document.get("hosts"), dict):
        return {"generated_at": None, "error": f"{REPORT_JSON} was not a format {REPORT_FORMAT} report", "hosts": None}
    hosts = {host: entry for host, entry in document["hosts"].items() if isinstance(entry, dict)}
    return {"generated_at": document.get("generated_at"), "error": None, "hosts": hosts}


def changed_hosts(hosts, previous):
    """Hosts whose verdict or missing handlers differ from the previous report's (added and removed hosts too).

    None when there is no previous report to compare with.
    """
    if previous is None or previous["hosts"] is None:
        return None
    changed = []
    for host in sorted(set(hosts) | set(previous["hosts"])):
        before, now = _outcome(previous["hosts"].get(host)), _outcome(hosts.get(host))
        if before != now:
            changed.append({"host": host, "previous": before, "current": now})
    return changed


def _outcome(entry):
    if entry is None:
        return None
    return with_status({"missing_handlers": sorted(entry.get("missing_handlers") or [])}, status_of(entry))


def junit_xml(report):
    """One ``testsuite``, one ``testcase`` per host; a host that is not OK has one ``failure`` (type = verdict)
    whose text is what the console prints for it: its MISSING/UNKNOWN lines, then ``explanation_lines`` (each
    missing handler's explanation, then the findings). Fleet findings go to the suite's system-out.

    Every text and attribute goes through ``_printable``: a control character or non-character (ESC, NUL, VT, U+FFFE)
    from a hostile name would otherwise make the file not well-formed XML, which CI tools then drop whole."""
    suites = ET.Element("testsuites", name="gpufleet.runtime_gate")
    failing = len(report["hosts"]) - report["counts"][OK]
    suite = ET.SubElement(suites, "testsuite", name="runtime_gate crosscheck", tests=str(len(report["hosts"])),
                          failures=str(failing), errors="0", skipped="0", time="0", timestamp=report["generated_at"])
    properties = ET.SubElement(suite, "properties")
    for name, value in _suite_properties(report):
        ET.SubElement(properties, "property", name=name, value=printable(value))
    for host, entry in report["hosts"].items():
        case = ET.SubElement(suite, "testcase", classname="runtime_gate.crosscheck", name=printable(host), time="0")
        explained = explanation_lines(entry)
        if status_of(entry) != OK:
            failure = ET.SubElement(case, "failure", type=status_of(entry), message=printable(" ".join(entry["lines"])))
            failure.text = printable_lines("\n".join(entry["lines"] + explained))
        elif explained:
            ET.SubElement(case, "system-out").text = printable_lines("\n".join(explained))
    fleet_text = [finding_line(finding) for finding in report["fleet_findings"] + report["overhead_findings"]]
    if fleet_text:
        ET.SubElement(suite, "system-out").text = printable_lines("\n".join(fleet_text))
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def _suite_properties(report):
    cluster = report["sources"]["cluster"]
    where = cluster["server"] or cluster["path"] or "-"
    yield "cluster", f"{cluster['type'] or 'unknown'} {where}" if cluster["read"] else f"not read: {cluster['error']}"
    yield "inventory", ", ".join(report["sources"]["inventory"]) or "-"
    yield "passed", str(report["passed"]).lower()


def report_lines(report, paths):
    """What the terminal summary says about the reports: where they are and what changed since the last one."""
    lines = ["Reports: " + ", ".join(paths[name] for name in (REPORT_JSON, JUNIT_XML, REPORT_HTML, METRICS_PROM))]
    previous, changed = report["previous"], report["changed_hosts"]
    if previous is not None:
        since = f"the previous report ({paths[PREVIOUS_REPORT_JSON]}, {previous['generated_at'] or 'time unknown'})"
        if changed is None:
            lines.append(f"Not compared with {since}: {previous['error']}")
        else:
            moves = ", ".join(f"{entry['host']} {_verdict_text(entry['previous'])} -> {_verdict_text(entry['current'])}" for entry in changed)
            lines.append(f"Changed since {since}: {moves or 'no host'}")
    return lines


def _verdict_text(outcome):
    return "absent" if outcome is None else status_of(outcome)


def report_paths(report_dir):
    directory = os.path.abspath(report_dir)
    names = (REPORT_JSON, JUNIT_XML, REPORT_HTML, METRICS_PROM, PREVIOUS_REPORT_JSON)
    return {name: os.path.join(directory, name) for name in names}


def write_reports(report_dir, verdicts, fleet, *, generated_at, inventory_sources=(), run_id=None):
    """Write report.json, junit.xml, report.html and metrics.prom into ``report_dir`` (created if absent).

    An existing report.json becomes report.prev.json and the new report lists the hosts whose verdict changed
    since. Each file is replaced atomically; every file is rendered before any is written, and nothing else in
    the directory is touched. Returns ``(report, paths)``; raises RuntimeGateError naming the path.
    """
    if os.path.exists(report_dir) and not os.path.isdir(report_dir):
        raise RuntimeGateError(f"report_dir '{report_dir}' exists and is not a directory")
    paths = report_paths(report_dir)
    previous_text = _read_if_present(paths[REPORT_JSON])
    report = build_report(verdicts, fleet, generated_at=generated_at, inventory_sources=inventory_sources,
                          previous=previous_report(previous_text), run_id=run_id)
    rendered = {
        JUNIT_XML: junit_xml(report),
        REPORT_HTML: render_html(report),
        METRICS_PROM: render_metrics(report),
        REPORT_JSON: json.dumps(report, indent=2, sort_keys=True) + "\n",
    }
    if previous_text is not None:
        write_atomically(paths[PREVIOUS_REPORT_JSON], previous_text, "previous report")
    for name, text in rendered.items():  # report.json last: once it is new, so are the others
        write_atomically(paths[name], text, "report")
    if previous_text is None:
        del paths[PREVIOUS_REPORT_JSON]
    return report, paths


def _read_if_present(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        raise RuntimeGateError(f"previous report '{path}' cannot be read: {getattr(error, 'strerror', None) or error}") from None
