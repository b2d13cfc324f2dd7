"""metrics.prom: the report object (``_report.build_report``) in the Prometheus text exposition format 0.0.4.

The file is read as is by node_exporter's textfile collector (``--collector.textfile.directory``) and can be
pushed unchanged to a Pushgateway (``curl --data-binary @metrics.prom .../metrics/job/runtime_gate``). Both
refuse client-side sample timestamps, so the run's time is a gauge of its own, not a timestamp on each sample.

``runtime_gate_host_verdict`` is one gauge per host and verdict value (1 for the host's verdict, 0 for the two
others), as kube-state-metrics does for pod phases: ``runtime_gate_host_verdict{verdict="MISSING"} == 1`` is an
alert rule, and a host whose verdict changes keeps its series instead of growing a new one.
"""

from datetime import UTC, datetime

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._printable import printable_lines
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.vocabulary import status_of

METRICS_PROM = "metrics.prom"

FAMILIES = (
    ("runtime_gate_host_verdict",
     "Verdict of the host in the last run: 1 for its verdict (OK, MISSING or UNKNOWN; NOT_REACHED: a rollout's host "
     "whose batch has not run, a series only when some host has it), 0 for the others."),
    ("runtime_gate_handler_served",
     "1 when the host serves the runtime handler it is required to serve, 0 when it is missing; UNKNOWN hosts have none."),
    ("runtime_gate_hosts", "Hosts with this verdict in the last run."),
    ("runtime_gate_run_passed", "1 when the cluster was read and every checked host (at least one) is OK, else 0."),
    ("runtime_gate_run_timestamp_seconds", "Unix time the last run's report was generated."),
)


def render_metrics(report):
    """The whole metrics.prom text: each family once, its # HELP and # TYPE lines, then its samples."""
    samples = {name: [] for name, _help in FAMILIES}
    for host, entry in report["hosts"].items():
        node = entry["node"] or host
        for verdict in report["counts"]:
            samples["runtime_gate_host_verdict"].append(
                ({"host": host, "node": node, "verdict": verdict}, int(status_of(entry) == verdict)))
        missing = set(entry["missing_handlers"] or [])
        for handler in sorted(entry["required_handlers"] or []):
            samples["runtime_gate_handler_served"].append(
                ({"host": host, "node": node, "handler": handler}, int(handler not in missing)))
    for verdict, count in report["counts"].items():
        samples["runtime_gate_hosts"].append(({"verdict": verdict}, count))
    samples["runtime_gate_run_passed"].append(({}, int(report["passed"])))
    samples["runtime_gate_run_timestamp_seconds"].append(({}, unix_time(report["generated_at"])))
    lines = []
    for name, help_text in FAMILIES:
        lines.append(f"# HELP {name} {_escape_help(help_text)}")
        lines.append(f"# TYPE {name} gauge")
        lines.extend(f"{name}{_labels(labels)} {value}" for labels, value in samples[name])
    return "\n".join(lines) + "\n"


def unix_time(generated_at):
    """``YYYY-MM-DDTHH:MM:SSZ`` (the report's ``generated_at``) as whole Unix seconds."""
    return int(datetime.strptime(generated_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp())


def _labels(labels):
    if not labels:
        return ""
    return "{" + ",".join(f'{key}="{_escape_label(str(value))}"' for key, value in labels.items()) + "}"


def _escape_label(value):
    # The exposition format escapes exactly these three in label values; anything else (UTF-8 too) is literal, so
    # control characters and non-characters are made visible escapes first (_printable).
    return printable_lines(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _escape_help(text):
    return printable_lines(text).replace("\\", "\\\\").replace("\n", "\\n")
