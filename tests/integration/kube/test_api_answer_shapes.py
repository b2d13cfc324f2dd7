"""Answers that are HTTP 200 but not the list that was asked for: no host may be judged OK from them.

An empty object, a ``Status`` with ``status: Failure``, ``items: null``, another kind's list, items that are not
mappings: each must fail the cluster read with one message naming the server and what was wrong, through the
real crosscheck.yml (every host UNKNOWN, exit 2) and through ``bin/rc-crosscheck`` (exit 2, nothing on stdout).
The two demo hosts are OK when the stand-in answers properly, so a shape that leaked into "OK" would show.
"""
import subprocess

import pytest
from kube_runs import DEMO, DEMO_OK_HOSTS, VENV_BIN, ansible_env, load_demo_cluster, run_crosscheck
from support.paths import REPO_ROOT

FAILURE_STATUS = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                  "message": "etcdserver: leader changed", "reason": "InternalError", "code": 500}
ASKED = {
    "runtimeclasses": "RuntimeClasses (node.k8s.io/v1)",
    "nodes": "Nodes (v1)",
    "pods": "Pods (v1, all namespaces)",
    "events": "Events (v1, all namespaces, reason=FailedCreatePodSandBox)",
}
# (resource, the 200 answer, what the message must say was wrong)
SHAPES = {
    "empty-object": ("runtimeclasses", {}, "the answer has no 'kind', expected a RuntimeClassList"),
    "status-failure": ("runtimeclasses", FAILURE_STATUS,
                       "the answer is a Status (Failure), not a RuntimeClassList: etcdserver: leader changed"),
    "items-null": ("runtimeclasses", {"kind": "RuntimeClassList", "apiVersion": "node.k8s.io/v1", "metadata": {},
                                      "items": None},
                   "the RuntimeClassList's 'items' is null, not a list"),
    "other-kinds-list": ("runtimeclasses", {"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": []},
                         "the answer is a NodeList, not a RuntimeClassList"),
    "items-not-mappings": ("runtimeclasses", {"kind": "RuntimeClassList", "apiVersion": "node.k8s.io/v1",
                                              "metadata": {}, "items": ["nvidia"]},
                           "the RuntimeClassList's item 1 is a string, not a mapping"),
    "nodes-as-status": ("nodes", FAILURE_STATUS,
                        "the answer is a Status (Failure), not a NodeList: etcdserver: leader changed"),
    "pods-empty-object": ("pods", {}, "the answer has no 'kind', expected a PodList"),
    "events-items-null": ("events", {"kind": "EventList", "apiVersion": "v1", "metadata": {}, "items": None},
                          "the EventList's 'items' is null, not a list"),
}


@pytest.fixture
def demo_cluster(kube_api):
    load_demo_cluster(kube_api)
    return kube_api


def expected_message(cluster, resource, problem):
    return f"listing {ASKED[resource]} from {cluster.url} failed: {problem}"


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_no_host_is_ok_from_an_answer_that_is_not_the_list_asked_for(demo_cluster, tmp_path, shape):
    resource, payload, problem = SHAPES[shape]
    demo_cluster.answer_with(resource, payload)
    run = run_crosscheck(tmp_path, DEMO_OK_HOSTS, {"K8S_AUTH_KUBECONFIG": demo_cluster.kubeconfig_path})
    message = expected_message(demo_cluster, resource, problem)
    assert run.returncode == 2, run.output
    assert "Traceback" not in run.output
    assert sorted(run.verdicts) == DEMO_OK_HOSTS
    for host, verdict in run.verdicts.items():
        assert verdict["status"] == "UNKNOWN", (host, verdict)
        assert verdict["reason"].endswith(": " + message), verdict["reason"]


@pytest.mark.parametrize("shape", ["empty-object", "status-failure", "items-null", "other-kinds-list"])
def test_rc_crosscheck_cannot_judge_an_answer_that_is_not_the_list_asked_for(demo_cluster, shape):
    resource, payload, problem = SHAPES[shape]
    demo_cluster.answer_with(resource, payload)
    completed = subprocess.run(
        [str(VENV_BIN / "python"), str(REPO_ROOT / "bin" / "rc-crosscheck"),
         str(DEMO / "nodes" / DEMO_OK_HOSTS[0] / "config-dump.toml"), "--kubeconfig", str(demo_cluster.kubeconfig_path)],
        cwd=REPO_ROOT, env=ansible_env(), capture_output=True, text=True, timeout=120, check=False)
    assert (completed.returncode, completed.stdout) == (2, ""), completed
    assert completed.stderr == f"rc-crosscheck: {expected_message(demo_cluster, resource, problem)}\n"
