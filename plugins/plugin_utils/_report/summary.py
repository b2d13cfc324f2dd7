"""The fleet view of one run: every judged host's verdict as a terminal table and as JSON, and the fleet findings."""

import json
import os
import tempfile

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._explain.finding_codes import ERROR, make_finding
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._explain.findings import fleet_findings, runtimeclass_summary
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._explain.overhead import overhead_findings
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._verdict import unknown
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.vocabulary import (
    NOT_REACHED,
    OK,
    STATUS_KEY,
    STATUSES,
    UNKNOWN,
    VERDICTS,
    cluster_not_read,
    status_of,
    with_status,
)

CLUSTER_NOT_READ = "CLUSTER_NOT_READ"
NO_HOST_JUDGED = "NO_HOST_JUDGED"

# What the verdicts file and the reports keep of each verdict (the whole verdict stays in the registered
# result), with the value a field takes when the verdict lacks it (UNKNOWN verdicts carry no findings).
REPORTED_FIELDS = {
    "node": None,
    STATUS_KEY: None,
    "lines": [],
    "missing_handlers": [],
    "required_handlers": [],
    "loaded_runtimes": [],
    "configured_runtimes": [],
    "default_runtime": None,
    "containerd_version": None,
    "version_source": None,
    "loaded_source": None,
    "daemon_runtimes": None,
    "reason": "",
    "notes": [],
    "findings": [],
    "missing_explained": {},
    # False: a dump judged without its host root, so "not explained" means "not looked for" (explanation_lines).
    "files_examined": None,
    # What fleet_findings reads besides the runtimes: a merge of sliced runs recomputes them from the reports alone.
    "node_runtime_handlers": None,
    # Where the verdict came from: "node" (the node's evidence, over its connection) or "node-status" (the Node's
    # status.runtimeHandlers, no connection: plugin_utils/_action/verdict_sources).
    "verdict_source": "node",
}
VERDICT_SOURCE_NAMES = ("node", "node-status")
# Statuses whose row and cause give the reason: nothing judged the host.
NOT_JUDGED = (UNKNOWN, NOT_REACHED)


def collect_verdicts(registered_by_host):
    """``{host: registered node_crosscheck result or None}`` → ``{host: verdict}``.

    A host with no verdict was never judged (unreachable before judgement, or removed from the play):
    it is UNKNOWN, never left out and never OK.
    """
    verdicts = {}
    for host in sorted(registered_by_host):
        registered = registered_by_host[host]
        status = status_of(registered)
        if status is None:
            registered = unknown(host, "no verdict: the host was not judged (unreachable, or left the play early)")
            status = status_of(registered)
        fields = {field: _or_default(registered.get(field), default) for field, default in REPORTED_FIELDS.items()}
        verdicts[host] = with_status(fields, status)
    return verdicts


def _or_default(value, default):
    return default if value is None else value


def with_node_status_verdicts(registered_by_host, node_status_result):
    """``registered_by_host`` plus the verdicts of a ``node_status_verdicts`` result for the hosts it lacks a verdict
    of. A result that is absent, failed or skipped adds nothing: its hosts then have no verdict (UNKNOWN)."""
    if not isinstance(node_status_result, dict) or node_status_result.get("failed") or node_status_result.get("skipped"):
        return registered_by_host
    merged = dict(registered_by_host)
    for host, verdict in (node_status_result.get("verdicts") or {}).items():
        if status_of(merged.get(host)) is None:
            merged[host] = verdict
    return merged


def verdict_source_counts(verdicts):
    """``{"node": n, "node-status": m}``: how many hosts were judged from their node and from their Node's status."""
    counts = {source: 0 for source in VERDICT_SOURCE_NAMES}
    for verdict in verdicts.values():
        source = verdict.get("verdict_source") or "node"
        counts[source] = counts.get(source, 0) + 1
    return counts


def verdict_source_line(verdicts):
    """The table's line saying how many hosts were judged each way; None when every host was judged from its node."""
    counts = verdict_source_counts(verdicts)
    if not counts["node-status"]:
        return None
    return (f"judged from node.status.runtimeHandlers (no connection): {counts['node-status']} hosts; "
            f"from the node over its connection: {counts['node']} hosts")


def verdict_counts(verdicts):
    """Hosts per status: OK, MISSING and UNKNOWN always, NOT_REACHED (a rollout's) only when some host has it."""
    counts = {verdict: 0 for verdict in VERDICTS}
    for verdict in verdicts.values():
        status = status_of(verdict)
        counts[status] = counts.get(status, 0) + 1
    return counts


def summary_table(verdicts):
    """Fixed-width lines: host, verdict, missing handlers (or the UNKNOWN reason), default runtime; the counts last."""
    rows = [("HOST", "VERDICT", "DEFAULT", "MISSING / REASON")] + [_table_row(host, verdict) for host, verdict in verdicts.items()]
    widths = [max(len(row[column]) for row in rows) for column in range(3)]
    return [_aligned(row, widths) for row in rows] + [counts_line(verdicts)]


# Above this many hosts the terminal gets the fleet view (fleet_summary_lines); at or below it, the whole table.
FLEET_VIEW_ABOVE_HOSTS = 20
# OK hosts named in the fleet view's OK line; the rest are a count (every host is in the reports).
OK_NAMES_SHOWN = 5


def summary_lines(verdicts, extra_lines=()):
    """What the terminal shows of a run: the table, then ``extra_lines`` (rollout notes, fleet findings, report paths).

    Up to FLEET_VIEW_ABOVE_HOSTS hosts: every host's row and the counts line, then ``extra_lines``. Above it, the
    fleet view: the hosts that did not pass grouped by cause, the OK hosts as one line, ``extra_lines``, and the
    counts line last, so a run over 1,000 hosts ends with its counts, not with 1,000 rows.
    """
    if len(verdicts) <= FLEET_VIEW_ABOVE_HOSTS:
        return summary_table(verdicts) + list(extra_lines)
    return fleet_summary_lines(verdicts) + list(extra_lines) + [counts_line(verdicts)]


def fleet_summary_lines(verdicts):
    """The hosts that did not pass, one group per cause (the same missing handlers with the same findings, or the
    same UNKNOWN reason), largest group first, each host a table row under its group; then the OK hosts as a count
    with the first OK_NAMES_SHOWN names. No counts line (summary_lines puts it last)."""
    groups = {}
    for host, verdict in verdicts.items():
        if status_of(verdict) != OK:
            groups.setdefault(failure_cause(verdict), []).append(host)
    ordered = sorted(groups.items(), key=lambda item: (STATUSES.index(item[0][0]), -len(item[1]), item[0]))
    rows = [_table_row(host, verdicts[host]) for _cause, hosts in ordered for host in hosts]
    widths = [max((len(row[column]) for row in rows), default=0) for column in range(3)]
    lines = []
    failing = sum(len(hosts) for hosts in groups.values())
    if failing:
        lines.append(f"{failing} of {len(verdicts)} hosts did not pass, by cause (every host: the reports and the "
                     f"verdicts file):")
    row_of = dict(zip((host for _cause, hosts in ordered for host in hosts), rows, strict=True))
    for cause, hosts in ordered:
        lines.append(f"{cause_line(cause)} ({_hosts(len(hosts))})")
        lines.extend("  " + _aligned(row_of[host], widths) for host in hosts)
    passing = [host for host, verdict in verdicts.items() if status_of(verdict) == OK]
    if passing:
        shown = ", ".join(passing[:OK_NAMES_SHOWN])
        more = f" and {len(passing) - OK_NAMES_SHOWN} more" if len(passing) > OK_NAMES_SHOWN else ""
        lines.append(f"OK ({_hosts(len(passing))}): {shown}{more}")
    return lines


def failure_cause(verdict):
    """What a failing host's group is keyed by: its verdict, then each missing handler with the finding codes that
    explain it, or the UNKNOWN reason."""
    status = status_of(verdict)
    if status in NOT_JUDGED:
        return (status, verdict["reason"] or "-")
    explained = verdict.get("missing_explained") or {}
    return (status, tuple((handler, tuple(explained.get(handler) or ())) for handler in verdict["missing_handlers"] or ()))


def cause_line(cause):
    """``MISSING nvidia-cdi: NOT_CONFIGURED_ANYWHERE; nvidia: …``, ``UNKNOWN: <reason>`` or ``NOT_REACHED: <reason>``."""
    status, detail = cause
    if status in NOT_JUDGED:
        return f"{status}: {detail}"
    return f"{status} " + "; ".join(f"{handler}: {', '.join(codes)}" if codes else handler for handler, codes in detail)


def _hosts(count):
    return f"{count} host" if count == 1 else f"{count} hosts"


def _table_row(host, verdict):
    status = status_of(verdict)
    detail = verdict["reason"] if status in NOT_JUDGED else ",".join(verdict["missing_handlers"] or [])
    return (host, status, verdict["default_runtime"] or "-", detail or "-")


def _aligned(row, widths):
    return "  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True)) + "  " + row[3]


def counts_line(verdicts):
    counts = verdict_counts(verdicts)
    return ", ".join(f"{count} {status}" for status, count in counts.items()) + f" of {len(verdicts)} hosts"


def fleet_view(verdicts, cluster_result):
    """What the run learnt about the fleet as a whole, from the verdicts and the ``runtimeclass_info`` result.

    ``{"cluster": source, "fleet_findings": [...], "overhead_findings": [...], "runtimeclasses": [...]}``.
    A cluster that was not read yields one CLUSTER_NOT_READ error finding and nothing else: the hosts are
    all UNKNOWN already, and findings drawn from an empty cluster would be made up.
    """
    source = cluster_source(cluster_result)
    if not verdicts:
        return _run_failed(
            source, NO_HOST_JUDGED,
            "No host was judged: the host pattern matched no inventory host, so nothing says the fleet is fine.",
            "Check runtime_gate_hosts and the inventory (or the k8s_nodes inventory plugin's groups), then run again.",
            {"cluster_read": source["read"]},
        )
    if not source["read"]:
        return _run_failed(
            source, CLUSTER_NOT_READ,
            f"The cluster's RuntimeClasses could not be read, so no host could be judged: {source['error']}",
            "Check cluster access (kubeconfig, K8S_AUTH_* variables) or runtime_gate_runtimeclasses_file, then run again.",
            {"error": source["error"]},
        )
    verdict_list = list(verdicts.values())
    serving = {entry["name"]: entry for entry in runtimeclass_summary(verdict_list, cluster_result)}
    runtimeclasses = [
        {
            "name": runtimeclass["name"],
            "handler": runtimeclass["handler"],
            "overhead_pod_fixed": runtimeclass.get("overhead_pod_fixed"),
            "node_selector": runtimeclass.get("node_selector"),
            **{key: sorted(serving.get(runtimeclass["name"], {}).get(key) or []) for key in ("serving", "required", "missing")},
        }
        for runtimeclass in cluster_result["runtimeclasses"]
    ]
    return {
        "cluster": source,
        "fleet_findings": fleet_findings(verdict_list, cluster_result),
        # Only the nodes this run judged (a run limited by -l names no other node).
        "overhead_findings": overhead_findings(cluster_result, {verdict.get("node") or host for host, verdict in verdicts.items()}),
        "runtimeclasses": runtimeclasses,
    }


def _run_failed(source, code, message, remedy, evidence):
    """The fleet view of a run that cannot vouch for the fleet: one error finding, nothing drawn from the cluster."""
    finding = make_finding(code, ERROR, message, remedy, evidence)
    return {"cluster": source, "fleet_findings": [finding], "overhead_findings": [], "runtimeclasses": []}


def cluster_source(cluster_result):
    """Where the cluster view came from and whether it could be read; ``error`` says why not."""
    error = cluster_not_read(cluster_result)
    cluster_result = cluster_result if isinstance(cluster_result, dict) else {}
    given = cluster_result.get("source") or {}
    # A failed API read names its server next to the message, but carries no source.
    server = given.get("server") or cluster_result.get("server")
    return {
        "read": error is None,
        "error": error,
        "type": given.get("type") or ("api" if server else None),
        "server": server,
        "path": given.get("path"),
        "api_requests": cluster_result.get("api_requests"),
        "counts": None if error else {kind: len(cluster_result.get(kind) or []) for kind in ("runtimeclasses", "nodes", "pods")},
    }


def finding_line(finding):
    """One finding as one line of text: severity, code, where, what is wrong and what to do."""
    where = f" [{finding['host']}]" if finding.get("host") else ""
    return f"{finding['severity'].upper()} {finding['code']}{where}: {finding['message']} Remedy: {finding['remedy']}"


def fleet_lines(fleet):
    """The lines printed after the table: fleet findings, then overhead warnings."""
    lines = []
    for title, findings in (("Fleet findings", fleet["fleet_findings"]), ("Overhead warnings", fleet["overhead_findings"])):
        if findings:
            lines.append(f"{title}:")
            lines.extend(f"  {finding_line(finding)}" for finding in findings)
    return lines


def write_verdicts_file(path, verdicts):
    """Write ``{"hosts": ..., "counts": ...}`` atomically: a reader sees the old file or the new one."""
    document = {"hosts": verdicts, "counts": verdict_counts(verdicts)}
    write_atomically(path, json.dumps(document, indent=2, sort_keys=True) + "\n", "verdicts file")


def write_atomically(path, text, what):
    """Write ``text`` to ``path`` through a temporary file in the same directory and a rename.

    A reader sees the old file or the new one, never half of one; on failure no temporary file is left.
    ``what`` names the file in the error (``verdicts file '/x' cannot be written: …``).
    """
    directory = os.path.dirname(os.path.abspath(path))
    temporary = None
    try:
        os.makedirs(directory, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}-", suffix=".tmp")
        # mkstemp creates 0600; the file is a report for people and CI, so it gets the usual 0666 & ~umask.
        os.fchmod(descriptor, 0o666 & ~_current_umask())
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except OSError as error:
        if temporary and os.path.exists(temporary):
            os.unlink(temporary)
        raise RuntimeGateError(f"{what} '{path}' cannot be written: {error.strerror or error}") from None


def _current_umask():
    umask = os.umask(0o022)
    os.umask(umask)
    return umask
