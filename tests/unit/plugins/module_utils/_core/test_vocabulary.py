"""How a verdict is said, decided in _core/vocabulary alone: the words users and scripts match on are asserted as text."""
import pytest

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.vocabulary import (
    cluster_not_read,
    passed,
    run_passed,
    status_of,
    verdict_lines,
    with_status,
)


def test_lines_are_the_contract_users_grep_for():
    assert verdict_lines({"status": "MISSING", "missing_handlers": ["nvidia", "nvidia-cdi"]}) == ["MISSING=nvidia", "MISSING=nvidia-cdi"]
    assert verdict_lines({"status": "UNKNOWN", "reason": "ssh refused"}) == ["UNKNOWN=ssh refused"]
    assert verdict_lines({"status": "OK", "missing_handlers": []}) == ["OK"]


def test_a_verdict_says_its_word_under_status_only():
    # the pre-release `verdict` key is gone: a mapping holding only it is no verdict, and never passes
    assert status_of({"status": "MISSING"}) == "MISSING" and passed({"status": "OK"})
    assert status_of({"verdict": "OK"}) is None and not passed({"verdict": "OK"})
    assert with_status({"node": "n1"}, "OK") == {"node": "n1", "status": "OK"}


@pytest.mark.parametrize("verdict", [None, {}, {"status": "ok"}, {"status": "PROBABLY_FINE"}, {"status": "UNKNOWN"},
                                     {"status": "MISSING"}])
def test_only_ok_passes(verdict):
    assert not passed(verdict)


def test_a_run_passes_only_with_the_cluster_read_and_every_host_ok():
    ok = {"status": "OK"}
    assert run_passed(True, [ok, ok])
    assert not run_passed(False, [ok, ok])  # the cluster was not read
    assert not run_passed(True, [])  # nobody was judged
    assert not run_passed(True, [ok, {"status": "UNKNOWN"}])


def test_why_the_cluster_was_not_read():
    assert cluster_not_read({"runtimeclasses": [], "nodes": []}) is None
    assert cluster_not_read(None) == "the cluster was never asked (was localhost left out by --limit?)"
    assert cluster_not_read({"failed": True, "msg": "401 Unauthorized"}) == \
        "reading RuntimeClasses from the cluster failed: 401 Unauthorized"
    assert cluster_not_read({"skipped": True}) == "reading RuntimeClasses from the cluster was skipped"
    assert cluster_not_read({"changed": False}) == "the runtimeclass_info result holds no runtimeclasses"


@pytest.mark.parametrize("stored", ["cluster.yaml", ["nvidia"], 3])
def test_a_variable_that_holds_no_result_is_a_cluster_not_read(stored):
    # What cluster_result_var may name on localhost: anything a user put there, read as stored without validation.
    assert cluster_not_read(stored) == f"the cluster result is a {type(stored).__name__}, not what runtimeclass_info returns"
