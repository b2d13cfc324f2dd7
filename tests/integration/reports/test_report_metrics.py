"""metrics.prom as Prometheus reads it: prometheus_client's own text parser (the format node_exporter's textfile
collector and the Pushgateway accept), over a fleet judged by the collection and host names that need escaping."""
from datetime import datetime, timezone

import pytest
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.report import write_reports
from prometheus_client.parser import text_string_to_metric_families
from reports_support import synthetic_fleet

NOW = "2026-12-01T03:00:00Z"
AWKWARD = 'gpu "node"\\07\nrack-2'  # a quote, a backslash and a newline in one inventory name


def parsed(path):
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n") and "\r" not in text
    return {family.name: family for family in text_string_to_metric_families(text)}, text


@pytest.fixture(scope="module")
def metrics(tmp_path_factory):
    names = iter([AWKWARD])
    verdicts, fleet, kinds = synthetic_fleet(8, name=lambda index: next(names, f"gpu-node-{index:03d}"))
    report_dir = tmp_path_factory.mktemp("metrics")
    report, paths = write_reports(report_dir, verdicts, fleet, generated_at=NOW)
    families, text = parsed(report_dir / "metrics.prom")
    return report, paths, families, text, kinds, report_dir


def samples(family):
    return [(sample.name, sample.labels, sample.value) for sample in family.samples]


def test_each_host_has_one_verdict_set_to_1(metrics):
    report, _paths, families, _text, _kinds, _dir = metrics
    family = families["runtime_gate_host_verdict"]
    assert family.type == "gauge" and family.documentation
    by_host = {}
    for _name, labels, value in samples(family):
        by_host.setdefault(labels["host"], {})[labels["verdict"]] = value
        assert labels["node"] == labels["host"]  # the synthetic fleet's nodes are named like their hosts
    assert set(by_host) == set(report["hosts"])
    for host, values in by_host.items():
        assert sorted(values) == ["MISSING", "OK", "UNKNOWN"] and sorted(values.values()) == [0, 0, 1]
        assert values[report["hosts"][host]["status"]] == 1


def test_handler_served_per_host_and_required_handler(metrics):
    report, _paths, families, _text, kinds, _dir = metrics
    served = {(labels["host"], labels["handler"]): value for _name, labels, value in samples(families["runtime_gate_handler_served"])}
    for host, kind in kinds.items():
        row = {handler: value for (name, handler), value in served.items() if name == host}
        if kind == "unjudged":
            assert row == {}  # nothing is known about an UNKNOWN host's handlers
        elif kind == "cpu":
            assert row == {"runc": 1}
        elif kind == "gpu":
            assert row == {"runc": 1, "nvidia": 1, "nvidia-cdi": 1}
        else:
            assert row == {"runc": 1, "nvidia": 1, "nvidia-cdi": 0}, (host, kind)
    assert report["counts"]["MISSING"] == sum(kind in ("not_configured", "binary_missing", "files_not_examined") for kind in kinds.values())


def test_run_timestamp_passed_and_counts(metrics):
    report, _paths, families, _text, _kinds, _dir = metrics
    (_name, labels, value), = samples(families["runtime_gate_run_timestamp_seconds"])
    assert labels == {} and value == datetime(2026, 12, 1, 3, 0, 0, tzinfo=timezone.utc).timestamp()
    assert samples(families["runtime_gate_run_passed"]) == [("runtime_gate_run_passed", {}, 0.0)]
    assert {labels["verdict"]: value for _name, labels, value in samples(families["runtime_gate_hosts"])} == report["counts"]


def test_label_values_are_escaped_as_the_format_says(metrics):
    _report, _paths, families, text, _kinds, _dir = metrics
    hosts = {labels["host"] for _name, labels, _value in samples(families["runtime_gate_host_verdict"])}
    assert AWKWARD in hosts  # parsed back to the very same name
    assert 'host="gpu \\"node\\"\\\\07\\nrack-2"' in text  # and written as \" \\ \n
    assert all(line.startswith(("# HELP ", "# TYPE ", "runtime_gate_")) for line in text.splitlines())


def test_help_and_type_once_per_family_before_its_samples(metrics):
    _report, _paths, families, text, _kinds, _dir = metrics
    lines = text.splitlines()
    for name in families:
        assert lines.count(f"# TYPE {name} gauge") == 1 and sum(line.startswith(f"# HELP {name} ") for line in lines) == 1
        first_sample = next(index for index, line in enumerate(lines) if line.startswith((name + "{", name + " ")))
        assert lines.index(f"# TYPE {name} gauge") < first_sample


def test_written_next_to_report_json_atomically_and_listed(metrics):
    _report, paths, _families, _text, _kinds, report_dir = metrics
    assert paths["metrics.prom"] == str(report_dir / "metrics.prom")
    assert sorted(path.name for path in report_dir.iterdir()) == ["junit.xml", "metrics.prom", "report.html", "report.json"]
