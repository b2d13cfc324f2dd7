"""_report_merge: which slice reports are read, and what is refused (a real merge: tests/integration/runner)."""
import json

import pytest
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.merge import (
    merge_slice_reports,
    read_slice_report,
    slice_report_paths,
)


def verdict(host, outcome="OK", **fields):
    return {"node": host, "verdict": outcome, "lines": [outcome], "loaded_runtimes": ["runc"], **fields}


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
    assert verdicts["h3"]["verdict"] == "MISSING" and verdicts["h3"]["node_runtime_handlers"] == ["runc"]
    # A report written before node_runtime_handlers existed: the field is there, null.
    assert verdicts["h1"]["node_runtime_handlers"] is None


def test_a_host_in_two_slices_is_refused_naming_both_files():
    with pytest.raises(RuntimeGateError, match=r"host 'h2' is in two slice reports: 'a' and 'b'"):
        merge_slice_reports({"a": slice_report(["h1", "h2"]), "b": slice_report(["h2"])})


def test_a_verdict_that_is_not_one_is_unknown_never_ok():
    report = slice_report(["h1"])
    report["hosts"]["h1"]["verdict"] = "FINE"
    verdicts, _sources = merge_slice_reports({"a": report})
    assert verdicts["h1"]["verdict"] == "UNKNOWN"


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
