"""One real cluster for the whole directory (etcd, kube-apiserver, kube-scheduler, kwok: support/kube_cluster.py), and the
seed lab built on it once. Package scope: the cluster stops as soon as this directory's last test is done, not at the end
of a whole `make test` session.

How each fixture is made:

- ``kube_cluster`` (package): ``start_cluster`` in a fresh temp dir; start-up bounded (90 s, else the test fails with the
  log tail of the component that did not come up); stopped in ``finally`` (process groups SIGTERM, then SIGKILL), and
  the teardown checks that no component outlived it. A component that is not built skips locally, FAILS under CI.
- ``lab`` (package): the lab's objects (lab_plan.py), created with kubectl (validation on) in order, each step waited
  for by polling the server with a deadline: the RuntimeClasses, two kwok Nodes of 1 CPU (and a cordoned third), then
  the pods one by one (each bound, or marked Unschedulable by the scheduler, before the next is created, so where each
  lands does not depend on timing).
- ``lab_crosscheck`` (package): playbooks/crosscheck.yml over the lab's Nodes (``kube_runs.run_crosscheck``: each host
  judges the committed dump of the demo node of the same name) with the admin kubeconfig; its verdicts and reports.
- ``ansible_inventory``: ``ansible-inventory --list`` of a k8s_nodes configuration (as tests/integration/inventory).

The helpers of tests/integration/kube (``kube_runs``) are reused as they are: that directory is put on ``sys.path``, as
pytest itself does when it collects it.
"""
import json
import os
import subprocess
import sys

import pytest
import yaml
from support.kube_cluster import ClusterNotReady, start_cluster
from support.paths import COLLECTIONS_ROOT, REPO_ROOT

from .lab_plan import LAB_PODS, NAMESPACE, NODE_IPS, NODES, ONE_CPU, RUNTIME_HANDLERS, RUNTIMECLASSES, SCHEDULABLE, lab_pod

KUBE_HELPERS = str(REPO_ROOT / "tests" / "integration" / "kube")
if KUBE_HELPERS not in sys.path:
    sys.path.insert(0, KUBE_HELPERS)


@pytest.fixture(scope="package")
def kube_cluster(tmp_path_factory):
    """The running cluster (``support.kube_cluster.KubeCluster``)."""
    try:
        cluster = start_cluster(tmp_path_factory.mktemp("kube-cluster"))
    except ClusterNotReady as err:
        pytest.fail(f"the test cluster did not start: {err}", pytrace=False)
    try:
        yield cluster
    finally:
        cluster.stop()
    left = [name for name, component in cluster.components.items() if _group_alive(component.process.pid)]
    assert not left, f"still running after the cluster was stopped: {left}"


def _group_alive(pgid):
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def scheduled_or_unschedulable(kube_cluster, name):
    """The pod once the scheduler decided: bound to a node, or marked PodScheduled=False/Unschedulable."""
    obj = kube_cluster.get("pod", name, "-n", NAMESPACE)
    conditions = {c["type"]: c for c in obj["status"].get("conditions") or ()}
    scheduled = conditions.get("PodScheduled", {})
    decided = obj["spec"].get("nodeName") or (scheduled.get("status") == "False" and scheduled.get("reason") == "Unschedulable")
    return obj if decided else None


@pytest.fixture(scope="package")
def lab(kube_cluster):
    """The lab's classes, Nodes and pods on the real cluster; ``{"pods": {name: pod as the server had it once decided}}``."""
    kube_cluster.apply_objects(*RUNTIMECLASSES)
    for name, labels in NODES.items():
        kube_cluster.add_node(name, labels, ONE_CPU, RUNTIME_HANDLERS[name], NODE_IPS[name],
                              unschedulable=name not in SCHEDULABLE)
    kube_cluster.namespace(NAMESPACE)
    decided = {}
    for name, class_name, cpu in LAB_PODS:
        kube_cluster.apply_objects(lab_pod(name, class_name, cpu))
        decided[name] = kube_cluster.wait_for(f"the scheduler's decision on pod {name}",
                                              lambda name=name: scheduled_or_unschedulable(kube_cluster, name))
    return {"namespace": NAMESPACE, "nodes": list(NODES), "pods": decided}


@pytest.fixture(scope="package")
def lab_crosscheck(kube_cluster, lab, tmp_path_factory):
    """crosscheck.yml over the lab's Nodes, as the cluster admin (``kube_runs.PlaybookRun``)."""
    from kube_runs import run_crosscheck  # pylint: disable=import-outside-toplevel  # on sys.path from here

    # Every host over its connection (its demo dump): what these tests compare. In the default hybrid mode a lab Node
    # whose kwok heartbeat is still fresh would be judged from its status instead, and which ones are depends on the
    # package's timing (tests/integration/node_status tests that mode).
    return run_crosscheck(tmp_path_factory.mktemp("lab-crosscheck"), lab["nodes"], kube_cluster.auth_env(),
                          extra_args=("-e", "runtime_gate_verdict_source=ssh"))


@pytest.fixture
def ansible_inventory(tmp_path):
    """``ansible_inventory(config, env)`` -> (returncode, ``--list`` as JSON or None, stderr); only the k8s_nodes plugin
    is enabled and a source that fails to parse fails the command, as in tests/integration/inventory."""
    cfg = tmp_path / "ansible.cfg"
    cfg.write_text(f"[defaults]\ncollections_path = {COLLECTIONS_ROOT}\n\n[inventory]\n"
                   "enable_plugins = gpufleet.runtime_gate.k8s_nodes\nunparsed_is_failed = true\n")

    def run(config, env):
        path = tmp_path / "cluster.k8s_nodes.yml"
        path.write_text(yaml.safe_dump(config))
        environ = {key: value for key, value in os.environ.items()
                   if not key.startswith(("K8S_AUTH_", "ANSIBLE_")) and key not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
        environ.update(HOME=str(tmp_path), ANSIBLE_CONFIG=str(cfg), ANSIBLE_NOCOLOR="1", **env)
        completed = subprocess.run([str(REPO_ROOT / ".venv" / "bin" / "ansible-inventory"), "-i", str(path), "--list"],
                                   cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=120, check=False)
        # ansible-core 2.19 marks strings from an inventory plugin as untrusted: {"__ansible_unsafe": "..."}.
        listed = json.loads(completed.stdout, object_hook=lambda obj: obj["__ansible_unsafe"]
                            if set(obj) == {"__ansible_unsafe"} else obj) if completed.returncode == 0 else None
        return completed.returncode, listed, completed.stderr

    return run
