"""_report_merge: which slice reports are read, and what is refused (a real merge: tests/integration/runner)."""
import json
from datetime import UTC, datetime

import pytest
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.merge import (
    merge_slice_reports,
    read_slice_report,
    slice_report_paths,
    slices_run_id,
)
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.report import build_report
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.summary import collect_verdicts, fleet_view
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._verdict import judge_and_explain


def verdict(host, outcome="OK", **fields):
    return {"node": host, "status": outcome, "lines": [outcome], "loaded_runtimes": ["runc"], **fields}


def slice_report(hosts, inventory="inv.yml"):
    return {"format": 1, "hosts": {host: verdict(host) for host in hosts}, "sources": {"inventory": [inventory]}}


def write_slice(directory, name, report):
    (directory / name).mkdir(parents=True)
    path = directory / name / "report.json"
    path.write_text(json.dumps(report) if isinstance(report, dict) else report, encoding="utf-8")
    return str(path)


def test_every_slice_directory_is_read_and_the_count_is_checked(tmp_path):
    paths = [write_slice(tmp_path, f"slice-{number}", slice_report([f"h{number}"])) for number in (1, 2, 3)]
    # Every <dir>/report.json counts, whatever it holds (read_slice_report refuses it then); other files do not.
    write_slice(tmp_path, "not-a-slice", "x")
    (tmp_path / "notes.txt").write_text("ignored")
    assert slice_report_paths(slices_dir=str(tmp_path), expected_slices=4) == sorted(paths + [str(tmp_path / "not-a-slice" / "report.json")])
    with pytest.raises(RuntimeGateError, match=r"4 slice reports found, 3 expected"):
        slice_report_paths(slices_dir=str(tmp_path), expected_slices=3)
    assert slice_report_paths(reports=[str(tmp_path / "slice-1"), paths[1]]) == paths[:2]
    with pytest.raises(RuntimeGateError, match="no slice report found"):
        slice_report_paths(slices_dir=str(tmp_path / "slice-1"))


def test_merged_verdicts_keep_every_host_once_and_the_inventory_sources(tmp_path):
    reports = {"a": slice_report(["h1", "h2"], "a.yml"), "b": slice_report(["h3"], "b.yml")}
    reports["b"]["hosts"]["h3"] = verdict("h3", "MISSING", missing_handlers=["nvidia"], node_runtime_handlers=["runc"])
    verdicts, sources = merge_slice_reports(reports)
    assert sorted(verdicts) == ["h1", "h2", "h3"] and sources == ["a.yml", "b.yml"]
    assert verdicts["h3"]["status"] == "MISSING" and verdicts["h3"]["node_runtime_handlers"] == ["runc"]
    # A report written before node_runtime_handlers existed: the field is there, null.
    assert verdicts["h1"]["node_runtime_handlers"] is None


def test_a_host_in_two_slices_is_refused_naming_both_files():
    with pytest.raises(RuntimeGateError, match=r"host 'h2' is in two slice reports: 'a' and 'b'"):
        merge_slice_reports({"a": slice_report(["h1", "h2"]), "b": slice_report(["h2"])})


def test_a_verdict_that_is_not_one_is_unknown_never_ok():
    report = slice_report(["h1"])
    report["hosts"]["h1"]["status"] = "FINE"
    verdicts, _sources = merge_slice_reports({"a": report})
    assert verdicts["h1"]["status"] == "UNKNOWN"


@pytest.mark.parametrize(("text", "message"), [
    ("{", "is not JSON"),
    ('{"format": 99, "hosts": {}}', "is not a runtime_gate report.json of format 1"),
    ('["hosts"]', "is not a runtime_gate report.json"),
    (b"\xff", "cannot be read"),
])
def test_a_file_that_is_not_a_report_is_refused_by_name(tmp_path, text, message):
    path = tmp_path / "report.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(RuntimeGateError, match=f"slice report '{path}' {message}"):
        read_slice_report(str(path))
    with pytest.raises(RuntimeGateError, match="does not exist"):
        read_slice_report(str(tmp_path / "absent.json"))


# Slices as the real core writes them (judge, collect_verdicts, fleet_view, build_report), then altered as an attacker would.
RUNTIMECLASSES = [{"name": "nvidia", "handler": "nvidia", "node_selector": None, "overhead": None, "scheduling": None}]
NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def real_report(served_by_host, generated_at="2026-12-03T11:00:00Z", cluster_path="/cluster.json", run_id=None):
    """report.json of a run over ``{host: [loaded runtimes]}`` against one RuntimeClass (handler nvidia, every node)."""
    judged = {host: judge_and_explain({"runtimes": {name: {"runtime_type": "io.containerd.runc.v2"} for name in loaded},
                                       "default_runtime_name": "runc"}, RUNTIMECLASSES, node_name=host, node_labels={})
              for host, loaded in served_by_host.items()}
    verdicts = collect_verdicts(judged)
    cluster = {"runtimeclasses": RUNTIMECLASSES, "nodes": [], "source": {"type": "file", "path": cluster_path}}
    return build_report(verdicts, fleet_view(verdicts, cluster), generated_at=generated_at, run_id=run_id)


def read_written(tmp_path, report, name="slice"):
    return read_slice_report(write_slice(tmp_path, name, report), now=NOW)


def test_a_real_slice_is_read_as_written(tmp_path):
    report = real_report({"h1": ["runc", "nvidia"], "h2": ["runc"]})
    assert read_written(tmp_path, report) == report


def test_a_host_set_to_ok_with_its_missing_handlers_listed_is_refused(tmp_path):
    report = real_report({"h1": ["runc"]})
    report["hosts"]["h1"].update(status="OK", verdict="OK")
    with pytest.raises(RuntimeGateError, match=r"\$\.hosts\[\"h1\"\]\.missing_handlers: has more than 0 items"):
        read_written(tmp_path, report)


def test_a_host_made_ok_in_every_field_but_its_evidence_is_refused(tmp_path):
    # status, lines and missing_handlers all say OK; required_handlers against loaded_runtimes still says nvidia is missing.
    report = real_report({"h1": ["runc"]})
    report["hosts"]["h1"].update(status="OK", lines=["OK"], missing_handlers=[], reason="")
    with pytest.raises(RuntimeGateError, match=r"host 'h1': its status is OK but its evidence says MISSING"):
        read_written(tmp_path, report)


def test_an_empty_slice_is_refused(tmp_path):
    report = real_report({"h1": ["runc", "nvidia"]})
    report["hosts"] = {}
    with pytest.raises(RuntimeGateError, match="judged no host"):
        read_written(tmp_path, report)


def test_a_host_given_twice_in_one_slice_is_refused_not_last_wins(tmp_path):
    report = real_report({"h1": ["runc"]})
    ok_host = json.dumps(real_report({"h1": ["runc", "nvidia"]})["hosts"]["h1"])
    text = json.dumps(report).replace('"hosts": {"h1": ', '"hosts": {"h1": ' + ok_host + ', "h1": ')
    path = write_slice(tmp_path, "slice", text)
    with pytest.raises(RuntimeGateError, match=r"is not JSON: the key \"h1\" is given twice"):
        read_slice_report(path, now=NOW)


def test_nan_is_refused(tmp_path):
    text = json.dumps(real_report({"h1": ["runc", "nvidia"]})).replace('"OK": 1', '"OK": NaN')
    with pytest.raises(RuntimeGateError, match="NaN is not a JSON value"):
        read_slice_report(write_slice(tmp_path, "slice", text), now=NOW)


def test_a_slice_older_than_max_age_is_refused(tmp_path):
    path = write_slice(tmp_path, "slice", real_report({"h1": ["runc", "nvidia"]}, generated_at="2024-05-01T00:00:00Z"))
    with pytest.raises(RuntimeGateError, match=r"generated at 2024-05-01T00:00:00Z, more than 24 hours ago"):
        read_slice_report(path, now=NOW)
    assert read_slice_report(path, now=NOW, max_age_hours=24 * 365 * 3)["hosts"]


def test_a_bare_verdict_gets_a_clear_message(tmp_path):
    path = write_slice(tmp_path, "slice", '{"verdict":"OK"}')
    with pytest.raises(RuntimeGateError, match="is not a runtime_gate report.json of format 1"):
        read_slice_report(path, now=NOW)


def test_a_slice_not_conforming_to_the_schema_is_refused_naming_the_field(tmp_path):
    report = real_report({"h1": ["runc", "nvidia"]})
    del report["hosts"]["h1"]["required_handlers"]
    with pytest.raises(RuntimeGateError, match=r"\$\.hosts\[\"h1\"\]: lacks the required field 'required_handlers'"):
        read_written(tmp_path, report)


def test_slices_of_different_clusters_are_refused():
    first = real_report({"h1": ["runc", "nvidia"]}, cluster_path="/a.json")
    second = real_report({"h2": ["runc", "nvidia"]}, cluster_path="/b.json")
    with pytest.raises(RuntimeGateError, match="read different clusters"):
        merge_slice_reports({"a": first, "b": second})
    assert sorted(merge_slice_reports({"a": first, "b": real_report({"h2": ["runc"]}, cluster_path="/a.json")})[0]) == ["h1", "h2"]


def test_slices_of_one_named_run_merge_and_give_the_run_its_name():
    slices = {"a": real_report({"h1": ["runc", "nvidia"]}, run_id="nightly-2026-12-03"),
              "b": real_report({"h2": ["runc"]}, run_id="nightly-2026-12-03")}
    assert slices_run_id(slices) == "nightly-2026-12-03"
    assert slices_run_id(slices, "nightly-2026-12-03") == "nightly-2026-12-03"


def test_a_slice_of_another_run_of_the_same_cluster_within_max_age_is_refused_naming_it(tmp_path):
    # Issue 22 item 2: same cluster, both an hour old; only the run id tells them apart.
    tonight = read_written(tmp_path, real_report({"h1": ["runc", "nvidia"]}, run_id="nightly-2026-12-03"), "tonight")
    rerun = read_written(tmp_path, real_report({"h2": ["runc", "nvidia"]}, run_id="rerun-2026-12-03"), "rerun")
    with pytest.raises(RuntimeGateError) as raised:
        slices_run_id({"slices/tonight/report.json": tonight, "slices/rerun/report.json": rerun})
    assert str(raised.value) == ("slice report 'slices/rerun/report.json' is of run 'rerun-2026-12-03', but slice report "
                                 "'slices/tonight/report.json' is of run 'nightly-2026-12-03': slices of different runs "
                                 "are not one fleet")


def test_a_slice_of_a_run_other_than_the_one_named_is_refused():
    slices = {"a": real_report({"h1": ["runc", "nvidia"]}, run_id="nightly-2026-12-03")}
    with pytest.raises(RuntimeGateError, match=r"^slice report 'a' is of run 'nightly-2026-12-03', not of run "
                                               r"'nightly-2026-12-02' \(run_id\): it is not a slice of this run$"):
        slices_run_id(slices, "nightly-2026-12-02")


def test_slices_of_runs_not_named_are_never_merged_and_the_message_says_how_to_name_them():
    first, second = real_report({"h1": ["runc", "nvidia"]}), real_report({"h2": ["runc", "nvidia"]})
    assert first["run_id"].startswith("unnamed-20261203T110000Z-") and first["run_id"] != second["run_id"]
    with pytest.raises(RuntimeGateError, match="the slices' runs were not named: give every slice and the merge the same "
                                               "runtime_gate_run_id"):
        slices_run_id({"a": first, "b": second})
    assert slices_run_id({"a": first}) == first["run_id"]


@pytest.mark.parametrize("run_id", ["x\nOK", "-x", "a b", "a" * 129, "nightly/1", "run\n"])
def test_a_run_id_that_is_not_a_run_name_is_refused(run_id):
    with pytest.raises(RuntimeGateError, match="is not a run name"):
        real_report({"h1": ["runc", "nvidia"]}, run_id=run_id)
    with pytest.raises(RuntimeGateError, match="is not a run name"):
        slices_run_id({"a": real_report({"h1": ["runc", "nvidia"]}, run_id="r1")}, run_id)


def test_a_slice_without_a_run_id_or_with_a_forged_one_is_refused_by_the_schema(tmp_path):
    report = real_report({"h1": ["runc", "nvidia"]}, run_id="r1")
    del report["run_id"]
    with pytest.raises(RuntimeGateError, match="lacks the required field 'run_id'"):
        read_written(tmp_path, report, "without")
    report["run_id"] = "r1\n"
    with pytest.raises(RuntimeGateError, match=r"\$\.run_id: does not match"):
        read_written(tmp_path, report, "forged")


def test_a_generated_at_with_a_trailing_newline_is_refused_by_the_schema_not_a_traceback(tmp_path):
    # Python's "$" also matches before a final newline; JSON Schema's (ECMA-262) does not, and strptime would then fail.
    report = real_report({"h1": ["runc", "nvidia"]}, run_id="r1")
    report["generated_at"] += "\n"
    with pytest.raises(RuntimeGateError, match=r"\$\.generated_at: does not match"):
        read_written(tmp_path, report)
