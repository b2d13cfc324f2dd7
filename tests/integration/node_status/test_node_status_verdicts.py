"""crosscheck.yml judging nodes from their Nodes' status.runtimeHandlers, on the real control plane.

The cluster is support.kube_cluster's (real etcd, kube-apiserver, kube-scheduler; kwok initialises every Node it is
given: Ready, a fresh heartbeat). Once kwok has made the Nodes Ready it is stopped, so that the statuses this test then
writes (a Ready heartbeat an hour old, Ready=False) stay as written: kwok would set a NotReady Node Ready again at once
(its node-initialize stage). One RuntimeClass, ``nvidia``, is required of the GPU Nodes.

The hosts handed to SSH (hybrid) are judged from committed demo dumps (real containerd 1.6.20 output,
inventory/demo): gpu-node-01's serves nvidia, gpu-node-02's does not. The OK host's dump is gpu-node-02's on purpose:
judged over its connection it would be MISSING, so its OK can only have come from its Node's status.
"""
import json
import re
import sys

import pytest
import yaml
from support.kube_cluster import ClusterNotReady, start_cluster
from support.paths import REPO_ROOT
from support.playbooks import ansible_playbook

DEMO_NODES = REPO_ROOT / "inventory" / "demo" / "nodes"
GPU = {"gpufleet.example/gpu": "true"}
FULL = ["", "runc", "nvidia"]
# host -> (status.runtimeHandlers, the demo dump judged over SSH)
HOSTS = {
    "ok-node": (FULL, "gpu-node-02"),
    "missing-node": (["", "runc"], "gpu-node-02"),
    "stale-node": (FULL, "gpu-node-01"),
    "notready-node": (FULL, "gpu-node-01"),
    "nohandlers-node": (None, "gpu-node-01"),
}
# Also a host whose Node the cluster does not list.
NOT_A_NODE = "not-a-node"
HOUR_AGO = "2026-01-01T00:00:00Z"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    try:
        kube = start_cluster(tmp_path_factory.mktemp("node-status-cluster"))
    except ClusterNotReady as err:
        pytest.fail(f"the test cluster did not start: {err}", pytrace=False)
    try:
        kube.apply_objects({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "nvidia"},
                            "handler": "nvidia", "scheduling": {"nodeSelector": GPU}})
        for number, (host, (handlers, _dump)) in enumerate(HOSTS.items(), start=1):
            kube.add_node(host, dict(GPU), runtime_handlers=handlers, internal_ip=f"10.0.2.{number}")
        kube.components["kwok"].stop()
        write_ready(kube, "stale-node", "True", HOUR_AGO)
        write_ready(kube, "notready-node", "False", None)
        yield kube
    finally:
        kube.stop()


def write_ready(kube, node, status, heartbeat):
    """The Node's Ready condition as a kubelet would write it (status subresource), read back as written."""
    current = kube.get("node", node)
    conditions = [dict(condition) for condition in current["status"]["conditions"]]
    for condition in conditions:
        if condition["type"] == "Ready":
            condition.update(status=status, reason="KubeletReady" if status == "True" else "KubeletNotReady")
            if heartbeat:
                condition["lastHeartbeatTime"] = heartbeat
    kube.kubectl("patch", "node", node, "--subresource=status", "--type=merge",
                 "-p", json.dumps({"status": {"conditions": conditions}}))
    ready = next(c for c in kube.get("node", node)["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == status and (not heartbeat or ready["lastHeartbeatTime"] == heartbeat), ready


def inventory(path, connection):
    """Every host, plus one the cluster does not know. ``unreachable``: an SSH address nothing listens on, so any
    attempt to connect fails the host; ``local``: the demo dump judged on this machine."""
    hosts = {}
    for host, (_handlers, dump) in {**HOSTS, NOT_A_NODE: (None, "gpu-node-01")}.items():
        if connection == "unreachable":
            hosts[host] = {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 9,
                           "ansible_ssh_common_args": "-o ConnectTimeout=2"}
        else:
            hosts[host] = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                           "runtime_gate_dump_file": str(DEMO_NODES / dump / "config-dump.toml"),
                           "runtime_gate_ask_daemon": False}
    path.write_text(yaml.safe_dump({"all": {"children": {"gpu_nodes": {"hosts": hosts}}}}))
    return path


def crosscheck(kube, tmp_path, connection, *extra):
    verdicts_file = tmp_path / "verdicts.json"
    completed = ansible_playbook(REPO_ROOT / "playbooks" / "crosscheck.yml", inventory(tmp_path / "hosts.yml", connection),
                                 "-e", f"runtime_gate_verdicts_file={verdicts_file}", "-e", "runtime_gate_list_pods=false",
                                 "-e", f"runtime_gate_report_dir={tmp_path / 'report'}", *extra,
                                 env={"K8S_AUTH_KUBECONFIG": str(kube.admin_kubeconfig)})
    output = completed.stdout + completed.stderr
    assert verdicts_file.exists(), output
    verdicts = json.loads(verdicts_file.read_text())["hosts"]
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    return completed, output, verdicts, report


def judged(verdicts):
    return {host: (verdict["status"], verdict["verdict_source"]) for host, verdict in verdicts.items()}


def test_node_status_mode_judges_every_host_from_the_api_without_connecting(cluster, tmp_path):
    completed, output, verdicts, report = crosscheck(cluster, tmp_path, "unreachable",
                                                     "-e", "runtime_gate_verdict_source=node-status")
    assert completed.returncode == 2, output
    assert judged(verdicts) == {
        "ok-node": ("OK", "node-status"), "missing-node": ("MISSING", "node-status"),
        "stale-node": ("UNKNOWN", "node-status"), "notready-node": ("UNKNOWN", "node-status"),
        "nohandlers-node": ("UNKNOWN", "node-status"), NOT_A_NODE: ("UNKNOWN", "node-status")}
    assert verdicts["missing-node"]["lines"] == ["MISSING=nvidia"]
    assert "more than 420 s" in verdicts["stale-node"]["reason"]
    assert "Ready=False" in verdicts["notready-node"]["reason"]
    assert "reports no status.runtimeHandlers" in verdicts["nohandlers-node"]["reason"]
    assert "no Node named 'not-a-node'" in verdicts[NOT_A_NODE]["reason"]
    assert any("no config file" in note for note in verdicts["ok-node"]["notes"])
    assert report["verdict_sources"] == {"node": 0, "node-status": 6}
    assert "judged from node.status.runtimeHandlers (no connection): 6 hosts" in output
    # No host was contacted: every one of them would be unreachable.
    assert "UNREACHABLE" not in output and "unreachable=1" not in output, output


def test_node_status_mode_with_a_cluster_it_cannot_read_fails_every_host_unknown(cluster, tmp_path):
    # The one node-status task reads the cluster itself (in-process): a cluster it cannot read vouches for no host, and
    # the reason names what failed; no host is OK, none is contacted.
    absent = tmp_path / "absent-cluster.yaml"
    completed, output, verdicts, report = crosscheck(cluster, tmp_path, "unreachable",
                                                     "-e", "runtime_gate_verdict_source=node-status",
                                                     "-e", f"runtime_gate_runtimeclasses_file={absent}")
    assert completed.returncode == 2, output
    assert judged(verdicts) == {host: ("UNKNOWN", "node-status") for host in [*HOSTS, NOT_A_NODE]}, output
    assert all(str(absent) in verdict["reason"] for verdict in verdicts.values()), verdicts
    assert (report["counts"]["UNKNOWN"], report["counts"].get("OK", 0)) == (6, 0), report["counts"]
    assert "UNREACHABLE" not in output and "unreachable=1" not in output, output


def test_the_heartbeat_bound_is_the_users(cluster, tmp_path):
    # A bound of many years makes the hour-old heartbeat fresh enough.
    _completed, output, verdicts, _report = crosscheck(cluster, tmp_path, "unreachable",
                                                       "-e", "runtime_gate_verdict_source=node-status",
                                                       "-e", "runtime_gate_max_heartbeat_age=999999999")
    assert verdicts["stale-node"]["status"] == "OK", output


def test_hybrid_judges_vouched_ok_nodes_from_the_api_and_the_rest_over_their_connection(cluster, tmp_path):
    completed, output, verdicts, report = crosscheck(cluster, tmp_path, "local")
    assert completed.returncode == 2, output
    assert judged(verdicts) == {
        "ok-node": ("OK", "node-status"), "missing-node": ("MISSING", "node"),
        "stale-node": ("OK", "node"), "notready-node": ("OK", "node"),
        "nohandlers-node": ("OK", "node"), NOT_A_NODE: ("OK", "node")}
    # The MISSING host was judged from its own dump (what the node loaded), not from the Node's list.
    assert verdicts["missing-node"]["lines"] == ["MISSING=nvidia"]
    assert verdicts["missing-node"]["loaded_source"] == "dump"
    assert report["verdict_sources"] == {"node": 5, "node-status": 1}
    assert "judged from node.status.runtimeHandlers (no connection): 1 hosts; from the node over its connection: 5 hosts" \
        in output


def test_the_runs_limit_bounds_the_hosts_judged_from_their_nodes_status(cluster, tmp_path):
    # query('inventory_hostnames') lists a pattern's every host whatever --limit says: the hosts outside the limit are
    # judged nowhere, neither from their Node's status nor in the summary and the reports.
    for run in ("node-status", "hybrid"):
        (tmp_path / run).mkdir()
    completed, output, verdicts, report = crosscheck(cluster, tmp_path / "node-status", "unreachable",
                                                     "-e", "runtime_gate_verdict_source=node-status",
                                                     "--limit", "localhost,ok-node,missing-node")
    assert completed.returncode == 2, output
    assert judged(verdicts) == {"ok-node": ("OK", "node-status"), "missing-node": ("MISSING", "node-status")}, output
    assert report["verdict_sources"] == {"node": 0, "node-status": 2} and report["counts"]["OK"] == 1
    # Hybrid: ok-node's Node vouches for it, but the limit leaves it out; missing-node is judged over its connection.
    completed, output, verdicts, report = crosscheck(cluster, tmp_path / "hybrid", "local", "--limit", "localhost,missing-node")
    assert completed.returncode == 2, output
    assert judged(verdicts) == {"missing-node": ("MISSING", "node")}, output
    assert report["verdict_sources"] == {"node": 1, "node-status": 0}


def test_ssh_mode_judges_every_host_over_its_connection(cluster, tmp_path):
    _completed, output, verdicts, _report = crosscheck(cluster, tmp_path, "local", "-e", "runtime_gate_verdict_source=ssh")
    assert {verdict["verdict_source"] for verdict in verdicts.values()} == {"node"}, output
    # ok-node's dump is gpu-node-02's: over its connection it is MISSING.
    assert verdicts["ok-node"]["status"] == "MISSING"


def test_the_inventory_plugin_sets_the_switch_for_the_playbook(cluster, tmp_path):
    # The k8s_nodes inventory of the same cluster, verdict_source node-status: each host's ansible_host is its Node's
    # InternalIP (10.0.2.x, nothing there), so a connection to any of them would fail the host.
    config = tmp_path / "cluster.k8s_nodes.yml"
    config.write_text(yaml.safe_dump({"plugin": "gpufleet.runtime_gate.k8s_nodes", "verdict_source": "node-status",
                                      "node_groups": {"gpu_nodes": GPU}}))
    verdicts_file = tmp_path / "verdicts.json"
    completed = ansible_playbook(REPO_ROOT / "playbooks" / "crosscheck.yml", config,
                                 "-e", f"runtime_gate_verdicts_file={verdicts_file}", "-e", "runtime_gate_list_pods=false",
                                 env={"K8S_AUTH_KUBECONFIG": str(cluster.admin_kubeconfig),
                                      "ANSIBLE_INVENTORY_UNPARSED_FAILED": "true"})
    output = completed.stdout + completed.stderr
    assert completed.returncode == 2, output
    verdicts = json.loads(verdicts_file.read_text())["hosts"]
    assert judged(verdicts) == {
        "ok-node": ("OK", "node-status"), "missing-node": ("MISSING", "node-status"),
        "stale-node": ("UNKNOWN", "node-status"), "notready-node": ("UNKNOWN", "node-status"),
        "nohandlers-node": ("UNKNOWN", "node-status")}, output


def timeless(text):
    """``text`` without the stale Node's heartbeat age, which grows between two readings."""
    return re.sub(r"heartbeat is \d+ s old", "heartbeat is N s old", text)


def test_node_status_mode_summarised_in_one_task_equals_the_registered_results(cluster, tmp_path):
    """node_status_verdicts reading the cluster itself and summarising the run (what crosscheck.yml does in node-status
    mode, so that a 10,000-Node cluster and 10,000 verdicts never pass through ansible-core's result handling) writes
    the same verdicts file and report, and shows the same table, as runtimeclass_info, node_status_verdicts and
    crosscheck_summary passing registered results do; it returns no verdict, and crosscheck_summary given its result
    and no host passes its summary on."""
    hosts = "{{ query('inventory_hostnames', 'gpu_nodes') }}"
    files = {way: {"verdicts_file": str(tmp_path / way / "verdicts.json"), "report_dir": str(tmp_path / way / "report"),
                   "run_id": "node-status-equality"} for way in ("registered", "summarised")}
    tasks = [
        {"gpufleet.runtime_gate.runtimeclass_info": {"nodes": True}, "register": "cluster"},
        {"gpufleet.runtime_gate.node_status_verdicts": {"hosts": hosts, "verdict_source": "node-status",
                                                        "cluster_result_var": "cluster"}, "register": "split"},
        {"gpufleet.runtime_gate.crosscheck_summary": {"hosts": [], "node_status_var": "split", "cluster_result_var": "cluster",
                                                      **files["registered"]}, "register": "registered"},
        {"gpufleet.runtime_gate.node_status_verdicts": {"hosts": hosts, "verdict_source": "node-status",
                                                        "cluster": {"nodes": True}, "summarise": True,
                                                        **files["summarised"]}, "register": "summarised"},
        {"gpufleet.runtime_gate.crosscheck_summary": {"hosts": [], "node_status_var": "summarised"},
         "register": "passed_on"},
        {"ansible.builtin.copy": {"dest": str(tmp_path / "results.json"), "mode": "0644",
                                  "content": "{{ {'registered': registered, 'summarised': summarised, "
                                             "'passed_on': passed_on} | to_json }}"}},
    ]
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "connection": "local", "gather_facts": False,
                                         "vars": {"ansible_python_interpreter": sys.executable}, "tasks": tasks}]))
    completed = ansible_playbook(playbook, inventory(tmp_path / "hosts.yml", "unreachable"),
                                 env={"K8S_AUTH_KUBECONFIG": str(cluster.admin_kubeconfig)})
    assert completed.returncode == 0, completed.stdout + completed.stderr
    results = json.loads((tmp_path / "results.json").read_text())
    registered, summarised = results["registered"], results["summarised"]
    assert "verdicts" not in summarised and "verdicts" not in summarised["summary"], sorted(summarised)
    assert summarised["task_hosts"] == [] and summarised["judged_from_node_status"] == 6
    assert summarised["changed"] is True
    read = {way: json.loads(timeless((tmp_path / way / "verdicts.json").read_text())) for way in files}
    assert read["summarised"] == read["registered"]
    assert judged(read["summarised"]["hosts"]) == {
        "ok-node": ("OK", "node-status"), "missing-node": ("MISSING", "node-status"),
        "stale-node": ("UNKNOWN", "node-status"), "notready-node": ("UNKNOWN", "node-status"),
        "nohandlers-node": ("UNKNOWN", "node-status"), NOT_A_NODE: ("UNKNOWN", "node-status")}
    reports = {way: json.loads(timeless((tmp_path / way / "report" / "report.json").read_text())) for way in files}
    for report in reports.values():
        report.pop("generated_at")
    assert reports["summarised"] == reports["registered"]
    # One page of RuntimeClasses and one of Nodes, read by the task itself.
    assert reports["summarised"]["sources"]["cluster"]["api_requests"] == 2
    shown = [timeless(line.replace(str(tmp_path / "registered"), str(tmp_path / "summarised")))
             for line in registered["table_lines"]]
    assert [timeless(line) for line in summarised["summary"]["table_lines"]] == shown
    assert not summarised["summary"]["passed"]
    passed_on = {key: value for key, value in results["passed_on"].items() if key in summarised["summary"]}
    assert passed_on == summarised["summary"]
