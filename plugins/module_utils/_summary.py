"""The fleet view of one run: every judged host's verdict as a terminal table and as JSON."""

import json
import os
import tempfile

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._verdict import VERDICTS, unknown

# What the verdicts file keeps of each verdict (the whole verdict stays in the registered result).
REPORTED_FIELDS = (
    "verdict",
    "missing_handlers",
    "required_handlers",
    "loaded_runtimes",
    "default_runtime",
    "containerd_version",
    "reason",
    "notes",
)


def collect_verdicts(registered_by_host):
    """``{host: registered handler_crosscheck result or None}`` → ``{host: verdict}``.

    A host with no verdict was never judged (unreachable before judgement, or removed from the play):
    it is UNKNOWN, never left out and never OK.
    """
    verdicts = {}
    for host in sorted(registered_by_host):
        registered = registered_by_host[host]
        if not isinstance(registered, dict) or registered.get("verdict") not in VERDICTS:
            registered = unknown(host, "no verdict: the host was not judged (unreachable, or left the play early)")
        verdicts[host] = {field: registered.get(field) for field in REPORTED_FIELDS}
    return verdicts


def verdict_counts(verdicts):
    counts = {verdict: 0 for verdict in VERDICTS}
    for verdict in verdicts.values():
        counts[verdict["verdict"]] += 1
    return counts


def summary_table(verdicts):
    """Fixed-width lines: host, verdict, missing handlers (or the UNKNOWN reason), default runtime."""
    rows = [("HOST", "VERDICT", "DEFAULT", "MISSING / REASON")]
    for host, verdict in verdicts.items():
        detail = ",".join(verdict["missing_handlers"] or []) if verdict["verdict"] != "UNKNOWN" else verdict["reason"]
        rows.append((host, verdict["verdict"], verdict["default_runtime"] or "-", detail or "-"))
    widths = [max(len(row[column]) for row in rows) for column in range(3)]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True)) + "  " + row[3] for row in rows
    ]
    counts = verdict_counts(verdicts)
    lines.append(", ".join(f"{counts[verdict]} {verdict}" for verdict in VERDICTS) + f" of {len(verdicts)} hosts")
    return lines


def write_verdicts_file(path, verdicts):
    """Write ``{"hosts": ..., "counts": ...}`` atomically: a reader sees the old file or the new one."""
    directory = os.path.dirname(os.path.abspath(path))
    document = {"hosts": verdicts, "counts": verdict_counts(verdicts)}
    try:
        os.makedirs(directory, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=directory, prefix=".verdicts-", suffix=".json")
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=2, sort_keys=True)
            handle.write("\n")
        os.replace(temporary, path)
    except OSError as error:
        raise RuntimeGateError(f"verdicts file '{path}' cannot be written: {error.strerror or error}") from None
