import json
import multiprocessing
import os
import resource
import signal

import pytest

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.summary import (
    collect_verdicts,
    fleet_view,
    summary_table,
    write_verdicts_file,
)
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._verdict import judge_and_explain, unknown

CLASSES = [{"name": "nvidia", "handler": "nvidia", "node_selector": None}]


def _registered():
    runtimes = {"runc": {}, "nvidia": {}}
    return {
        "ok-node": judge_and_explain({"default_runtime_name": "runc", "runtimes": runtimes}, CLASSES, node_name="ok-node", node_labels={}),
        "bad-node": judge_and_explain({"default_runtime_name": "runc", "runtimes": {"runc": {}}}, CLASSES, node_name="bad-node", node_labels={}),
        "gone-node": unknown("gone-node", "host unreachable while gathering containerd facts: ssh refused"),
        "never-judged": None,
    }


def test_hosts_without_a_verdict_are_unknown_not_dropped():
    verdicts = collect_verdicts(_registered())
    assert {host: verdict["status"] for host, verdict in verdicts.items()} == {
        "bad-node": "MISSING",
        "gone-node": "UNKNOWN",
        "never-judged": "UNKNOWN",
        "ok-node": "OK",
    }


def test_summary_table_lists_every_host_and_counts():
    lines = summary_table(collect_verdicts(_registered()))
    assert lines[0].split()[:3] == ["HOST", "VERDICT", "DEFAULT"]
    bad = next(line for line in lines if line.startswith("bad-node"))
    assert "MISSING" in bad and bad.rstrip().endswith("nvidia")
    assert "ssh refused" in next(line for line in lines if line.startswith("gone-node"))
    assert lines[-1] == "1 OK, 1 MISSING, 2 UNKNOWN of 4 hosts"


def test_verdicts_file_holds_every_host_and_the_counts(tmp_path):
    target = tmp_path / "nested" / "verdicts.json"
    write_verdicts_file(str(target), collect_verdicts(_registered()))
    document = json.loads(target.read_text())
    assert document["counts"] == {"OK": 1, "MISSING": 1, "UNKNOWN": 2}
    assert document["hosts"]["bad-node"]["missing_handlers"] == ["nvidia"]
    assert document["hosts"]["bad-node"]["status"] == document["hosts"]["bad-node"]["status"] == "MISSING"
    assert [path.name for path in target.parent.iterdir()] == ["verdicts.json"]


def test_a_reader_of_the_old_verdicts_file_never_sees_the_new_one_half_written(tmp_path):
    # A reader that opened the file before the write (a dashboard, CI collecting artifacts) keeps the whole old
    # document: the new one is a new file renamed over the path, not the old file truncated and rewritten.
    target = tmp_path / "verdicts.json"
    write_verdicts_file(str(target), {})
    old_text = target.read_text()
    with open(target, encoding="utf-8") as reader:
        write_verdicts_file(str(target), collect_verdicts(_registered()))
        assert reader.read() == old_text
    assert json.loads(target.read_text())["counts"]["MISSING"] == 1


def _write_with_a_file_size_limit(path, verdicts, limit):
    """In a child process: write under RLIMIT_FSIZE, so the write fails part-way (EFBIG) as on a full disk."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    try:
        write_verdicts_file(path, verdicts)
    except RuntimeGateError:
        os._exit(3)
    os._exit(0)


def test_a_write_that_fails_part_way_leaves_the_old_verdicts_file_whole(tmp_path):
    target = tmp_path / "verdicts.json"
    write_verdicts_file(str(target), {})
    old_text = target.read_text()
    verdicts = collect_verdicts(_registered())
    assert len(json.dumps(verdicts)) > 2 * len(old_text)
    child = multiprocessing.get_context("fork").Process(
        target=_write_with_a_file_size_limit, args=(str(target), verdicts, len(old_text) + 10))
    child.start()
    child.join(60)
    assert child.exitcode == 3, "the write did not fail with a clear error"
    assert target.read_text() == old_text
    assert [path.name for path in tmp_path.iterdir()] == ["verdicts.json"]


def test_unwritable_verdicts_file_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(RuntimeGateError, match="cannot be written"):
        write_verdicts_file(str(blocker / "verdicts.json"), {})


@pytest.mark.parametrize("stored", ["cluster.yaml", ["nvidia"]])
def test_a_cluster_variable_that_holds_no_result_fails_the_fleet_not_the_summary(stored):
    # crosscheck_summary's cluster_result_var reads localhost's variable as stored: no argument spec checked it.
    view = fleet_view(collect_verdicts(_registered()), stored)
    assert not view["cluster"]["read"] and "not what runtimeclass_info returns" in view["cluster"]["error"]
    assert [finding["code"] for finding in view["fleet_findings"]] == ["CLUSTER_NOT_READ"]
