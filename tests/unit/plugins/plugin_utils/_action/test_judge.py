"""The per-host task's use of the verdicts node_status_verdicts stored on localhost (hybrid mode)."""
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._action.judge import stored_node_status_verdict

from test_host_variables import StoredHostvars  # same folder: pytest puts it on sys.path

OK_FROM_STATUS = {"node": "gpu-node-01", "status": "OK", "lines": ["OK"], "verdict_source": "node-status"}


def task_vars(stored):
    return {"hostvars": StoredHostvars({"localhost": {"runtime_gate_node_status": stored}, "gpu-1": {}})}


def test_the_hosts_own_node_verdict_is_taken():
    stored = {"verdicts": {"gpu-1": OK_FROM_STATUS}}
    assert stored_node_status_verdict(task_vars(stored), "runtime_gate_node_status", "gpu-1", "gpu-node-01") == OK_FROM_STATUS


def test_a_verdict_about_another_node_than_the_hosts_own_is_never_taken():
    # node_status_verdicts read no runtime_gate_node_name for gpu-1 (set in a host_vars/ file) and judged the Node named
    # like another machine: the task, which sees the real name, judges the host from its node instead.
    stored = {"verdicts": {"gpu-1": OK_FROM_STATUS}}
    assert stored_node_status_verdict(task_vars(stored), "runtime_gate_node_status", "gpu-1", "gpu-node-02") is None


def test_no_variable_a_failed_result_or_a_host_left_to_ssh_gives_no_verdict():
    assert stored_node_status_verdict(task_vars({"verdicts": {}}), "", "gpu-1", "gpu-node-01") is None
    assert stored_node_status_verdict(task_vars({"failed": True, "verdicts": {"gpu-1": OK_FROM_STATUS}}),
                                      "runtime_gate_node_status", "gpu-1", "gpu-node-01") is None
    assert stored_node_status_verdict(task_vars({"verdicts": {}}), "runtime_gate_node_status", "gpu-1", "gpu-node-01") is None
    assert stored_node_status_verdict(task_vars({"verdicts": {"gpu-1": "OK"}}), "runtime_gate_node_status", "gpu-1",
                                      "gpu-node-01") is None
