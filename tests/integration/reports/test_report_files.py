"""write_reports without Ansible: what it does with a previous report it cannot compare, a report_dir that is a
file, and names and messages that carry markup."""
import json
from xml.etree import ElementTree

import jsonschema
import pytest
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.report import write_reports
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.summary import collect_verdicts, fleet_view
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._verdict import judge_and_explain
from reports_support import SCHEMA_PATH, visible_text

HOSTILE = '<img src=x onerror="alert(1)">&amp;'
CLUSTER = {
    "runtimeclasses": [{"name": HOSTILE, "handler": "nvidia", "overhead_pod_fixed": None, "node_selector": None, "tolerations": []}],
    "nodes": [], "pods": [], "source": {"type": "file", "path": "/srv/cluster.yaml"}, "api_requests": 0,
}
NOW = "2026-11-30T03:00:00Z"


def verdicts(runtimes=("runc",)):
    facts = {"default_runtime_name": "runc", "runtimes": {name: {} for name in runtimes}, "containerd_version": "1.7.27"}
    return collect_verdicts({HOSTILE: judge_and_explain(facts, CLUSTER["runtimeclasses"], node_name=HOSTILE, node_labels={})})


def schema_valid(report):
    jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text())).validate(report)


def test_markup_in_names_is_text_in_every_report(tmp_path):
    judged = verdicts()
    report, paths = write_reports(tmp_path, judged, fleet_view(judged, CLUSTER), generated_at=NOW)
    schema_valid(report)
    html = (tmp_path / "report.html").read_text()
    assert "<img" not in html and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;&amp;amp;" in html
    assert HOSTILE in visible_text(html).text
    case = ElementTree.parse(tmp_path / "junit.xml").getroot().find("testsuite/testcase")
    assert case.get("name") == HOSTILE and case.find("failure").text.splitlines()[0] == "MISSING=nvidia"
    assert set(paths) == {"report.json", "junit.xml", "report.html", "metrics.prom"}


def test_a_previous_report_that_is_not_one_is_kept_but_not_compared(tmp_path):
    (tmp_path / "report.json").write_text("{ half a report")
    judged = verdicts()
    report, paths = write_reports(tmp_path, judged, fleet_view(judged, CLUSTER), generated_at=NOW)
    schema_valid(report)
    assert (tmp_path / "report.prev.json").read_text() == "{ half a report"
    assert report["changed_hosts"] is None  # not "nothing changed"
    assert report["previous"]["error"].startswith("report.json was not valid JSON")
    assert paths["report.prev.json"] == str(tmp_path / "report.prev.json")


def test_report_dir_that_is_a_file_fails_naming_it_and_writes_nothing(tmp_path):
    target = tmp_path / "reports"
    target.write_text("a file")
    judged = verdicts()
    with pytest.raises(RuntimeGateError, match=f"report_dir '{target}' exists and is not a directory"):
        write_reports(target, judged, fleet_view(judged, CLUSTER), generated_at=NOW)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["reports"] and target.read_text() == "a file"


def test_without_a_cluster_result_even_ok_hosts_make_a_failing_report(tmp_path):
    judged = verdicts(runtimes=("runc", "nvidia"))
    assert [verdict["status"] for verdict in judged.values()] == ["OK"]
    report, _paths = write_reports(tmp_path, judged, fleet_view(judged, None), generated_at=NOW)
    schema_valid(report)
    assert report["passed"] is False and report["sources"]["cluster"]["read"] is False
    assert "never asked" in report["fleet_findings"][0]["message"]


def test_the_run_is_named_in_report_json_and_report_html(tmp_path):
    judged = verdicts()
    report, _paths = write_reports(tmp_path / "named", judged, fleet_view(judged, CLUSTER), generated_at=NOW,
                                   run_id="nightly-2026-11-30")
    schema_valid(report)
    assert json.loads((tmp_path / "named" / "report.json").read_text())["run_id"] == "nightly-2026-11-30"
    assert "run nightly-2026-11-30." in visible_text((tmp_path / "named" / "report.html").read_text()).text
    unnamed, _paths = write_reports(tmp_path / "unnamed", judged, fleet_view(judged, CLUSTER), generated_at=NOW)
    assert unnamed["run_id"].startswith("unnamed-20261130T030000Z-")
    with pytest.raises(RuntimeGateError, match=r"run_id \(runtime_gate_run_id\) 'a b' is not a run name"):
        write_reports(tmp_path / "bad", judged, fleet_view(judged, CLUSTER), generated_at=NOW, run_id="a b")
    assert not (tmp_path / "bad" / "report.json").exists()
