"""What a rollout's summary adds (issue 23 item 7): hosts not reached, and in check mode what each host would become."""
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._cluster_writers.runtimeclass_plan import plan_runtimeclasses
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.vocabulary import passed, status_of
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.rollout import WAITING_REASON, rollout_annotations
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.merge import recomputed_status
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.report import build_report
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.report_html import render_html
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.report_metrics import render_metrics
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.report_schema import load_report_schema, schema_errors
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.summary import (
    collect_verdicts,
    fleet_view,
    summary_lines,
    verdict_counts,
)
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._verdict import judge_and_explain

PLAN = {"refused": False, "changed_files": ["/etc/containerd/conf.d/99-gpufleet.toml"],
        "proof": {"loaded_runtimes": ["nvidia", "runc"], "default_runtime": "runc", "containerd_version": "2.3.4"}}
CLASSES = [{"name": "nvidia", "handler": "nvidia", "node_selector": None}]
CLUSTER = {"runtimeclasses": CLASSES, "nodes": [], "source": {"type": "file", "path": "/c.yaml"}}


def verdicts():
    return {host: {"status": "UNKNOWN", "reason": "no verdict"} for host in ("a", "b", "c")}


def test_check_mode_says_what_each_proven_host_would_become_and_skips_refused_ones():
    facts = {"a": {"reached": True, "containerd_runtimes_plan": PLAN},
             "b": {"reached": True, "containerd_runtimes_plan": {"refused": True, "msg": "no"}}, "c": {}}
    found = verdicts()
    lines = rollout_annotations(found, facts, failure_var="failed", reached_var="reached", check_mode=True)
    assert lines == ["a: check mode: would change /etc/containerd/conf.d/99-gpufleet.toml; the proven candidate serves "
                     "nvidia, runc (default runc) with containerd 2.3.4"]
    assert rollout_annotations(verdicts(), facts, failure_var="failed", reached_var="reached") == []


def rollout(failed_message="b: the candidate configuration fails its proof, nothing was written:\nMISSING=nvidia"):
    """Batch 1 (a) passed, batch 2 (b) failed in the role, batch 3 (c) never ran: the summary's verdicts."""
    registered = {
        "a": judge_and_explain({"default_runtime_name": "runc", "runtimes": {"runc": {}, "nvidia": {}}}, CLASSES,
                               node_name="a", node_labels={}),
        "b": judge_and_explain({"default_runtime_name": "runc", "runtimes": {"runc": {}}}, CLASSES, node_name="b",
                               node_labels={}),
        "c": None,
    }
    found = collect_verdicts(registered)
    facts = {"a": {"reached": True}, "b": {"reached": True, "failed": failed_message}, "c": {}}
    lines = rollout_annotations(found, facts, failure_var="failed", reached_var="reached")
    return found, lines


def test_a_host_whose_batch_never_ran_is_not_reached_in_the_status_column_and_never_passes():
    found, _lines = rollout()
    assert [status_of(found[host]) for host in "abc"] == ["OK", "MISSING", "NOT_REACHED"]
    assert found["c"]["status"] == "NOT_REACHED"
    assert found["c"]["reason"] == WAITING_REASON and found["c"]["lines"] == [f"NOT_REACHED={WAITING_REASON}"]
    assert not passed(found["c"])
    table = summary_lines(found)
    assert table[0].split()[:2] == ["HOST", "VERDICT"]
    assert table[3].split()[:3] == ["c", "NOT_REACHED", "-"] and table[3].endswith(WAITING_REASON)
    assert table[-1] == "1 OK, 1 MISSING, 0 UNKNOWN, 1 NOT_REACHED of 3 hosts"
    assert verdict_counts(found) == {"OK": 1, "MISSING": 1, "UNKNOWN": 0, "NOT_REACHED": 1}
    # Counted apart only when a host has it: a run without one keeps its three counts.
    assert verdict_counts({"a": found["a"]}) == {"OK": 1, "MISSING": 0, "UNKNOWN": 0}


def test_a_judged_host_keeps_its_verdict_and_an_unknown_host_of_a_batch_that_ran_stays_unknown():
    found = collect_verdicts({"a": None, "b": None})
    rollout_annotations(found, {"a": {"reached": True}, "b": {}}, failure_var="failed", reached_var="reached")
    assert [status_of(found[host]) for host in "ab"] == ["UNKNOWN", "NOT_REACHED"]


def test_the_role_failure_line_points_to_the_message_instead_of_repeating_it():
    _found, lines = rollout()
    assert lines == ["b: the containerd_runtimes role failed; its message is printed above, under its failed task "
                     "(fatal: [b])"]
    assert not any("candidate configuration" in line for line in lines)


def test_reports_schema_html_and_metrics_say_not_reached():
    found, _lines = rollout()
    report = build_report(found, fleet_view(found, CLUSTER), generated_at="2026-12-03T07:00:00Z")
    assert schema_errors(report, load_report_schema()) == []
    assert report["counts"] == {"OK": 1, "MISSING": 1, "UNKNOWN": 0, "NOT_REACHED": 1} and report["passed"] is False
    assert report["matrix"]["rows"]["c"] == {"nvidia": "not_reached", "runc": "not_reached"}
    assert {failure["host"]: (failure["status"], failure["message"]) for failure in report["failures"]}["c"] == (
        "NOT_REACHED", f"NOT_REACHED={WAITING_REASON}")
    assert recomputed_status(report["hosts"]["c"]) == "NOT_REACHED"
    metrics = render_metrics(report)
    assert 'runtime_gate_hosts{verdict="NOT_REACHED"} 1' in metrics
    assert 'runtime_gate_host_verdict{host="c",node="c",verdict="NOT_REACHED"} 1' in metrics
    assert 'runtime_gate_host_verdict{host="c",node="c",verdict="UNKNOWN"} 0' in metrics
    page = render_html(report)
    assert "1 OK, 1 MISSING, 0 UNKNOWN, 1 NOT_REACHED of 3 hosts" in page and WAITING_REASON in page
    # The cluster step never counts a host that was not reached as serving anything, whatever runtimes it lists.
    listed = dict(report["hosts"]["c"], loaded_runtimes=["nvidia"])
    assert plan_runtimeclasses(CLASSES, [listed], nodes=None)[0]["serving"] == []
