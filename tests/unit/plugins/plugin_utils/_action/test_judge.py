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


class CountingHostvars(StoredHostvars):
    """Counts raw_get: each one computes all of a host's variables in ansible-core (about 2 ms of controller CPU)."""

    def __init__(self, variables):
        super().__init__(variables)
        self.raw_gets = 0

    def raw_get(self, host):
        self.raw_gets += 1
        return super().raw_get(host)


def test_localhost_variables_read_once_serve_both_lookups():
    # node_crosscheck reads localhost's variables once per host's task and hands them to both lookups.
    from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._action.host_variables import stored_host_variables
    from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._action.judge import stored_cluster_result

    cluster = {"runtimeclasses": [], "nodes": []}
    hostvars = CountingHostvars({"localhost": {"runtime_gate_node_status": {"verdicts": {"gpu-1": OK_FROM_STATUS}},
                                               "runtime_gate_cluster": cluster}, "gpu-1": {}})
    variables = {"hostvars": hostvars}
    localhost_variables = stored_host_variables(variables, "localhost")
    assert stored_node_status_verdict(variables, "runtime_gate_node_status", "gpu-1", "gpu-node-01",
                                      localhost_variables) == OK_FROM_STATUS
    assert stored_cluster_result(variables, "runtime_gate_cluster", localhost_variables) is cluster
    assert hostvars.raw_gets == 1
    # Without them, each lookup computes them itself.
    assert stored_cluster_result(variables, "runtime_gate_cluster") is cluster
    assert hostvars.raw_gets == 2
