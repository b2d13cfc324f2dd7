"""docs/rbac.yaml applied with the real kubectl to the stand-in, read back, and held against what the modules ask.

The stand-in stores RBAC objects but enforces nothing, so the proof is in two halves: the roles read back
hold exactly the verbs below, and every request the modules sent (from the stand-in's request log) is
one of those verbs on one of those resources. ``--validate=false``: the stand-in serves no OpenAPI schema.
"""
import json
import subprocess

import pytest
from kube_runs import run_module
from support.kube_fixtures import event, node, pod, runtimeclass
from support.paths import REPO_ROOT
from support.tools import require_command

from support.kube_standin import _route

RBAC = REPO_ROOT / "docs" / "rbac.yaml"
READER = {("node.k8s.io", "runtimeclasses"): ["get", "list"], ("", "nodes"): ["get", "list"],
          ("", "pods"): ["get", "list"], ("", "events"): ["list"]}
ROLLOUT = {("node.k8s.io", "runtimeclasses"): ["create", "update", "patch"]}
GROUPS = {"runtimeclasses": "node.k8s.io", "nodes": "", "pods": "", "events": ""}


@pytest.fixture
def kubectl(kube_api, tmp_path):
    binary = require_command("kubectl", "kubernetes-client")

    def run(*args):
        completed = subprocess.run([binary, "--kubeconfig", str(kube_api.kubeconfig_path), "--cache-dir",
                                    str(tmp_path / "kube-cache"), *args], capture_output=True, text=True, timeout=60,
                                   check=False)
        assert completed.returncode == 0, completed.stderr
        return completed.stdout
    return run


def rules_of(kubectl, name):
    role = json.loads(kubectl("get", "clusterrole", name, "-o", "json"))
    granted = {}
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                granted.setdefault((group, resource), []).extend(rule["verbs"])
    return granted


def requested(kube_api):
    """(group, resource) -> verbs the modules used, from the stand-in's request log."""
    verbs = {}
    for request in kube_api.requests:
        route = _route(request.path)
        if route is None:
            continue
        resource, _namespace, name = route
        verb = {"GET": "list" if name is None else "get", "POST": "create", "PUT": "update", "PATCH": "patch",
                "DELETE": "delete"}[request.method]
        verbs.setdefault((GROUPS[resource], resource), set()).add(verb)
    return verbs


def test_rbac_yaml_applies_and_grants_exactly_the_read_only_and_rollout_verbs(kube_api, kubectl):
    applied = kubectl("apply", "--validate=false", "-f", str(RBAC))
    assert applied.count(" created") == 7, applied
    assert kubectl("apply", "--validate=false", "-f", str(RBAC)).count(" unchanged") == 7

    assert rules_of(kubectl, "gpufleet-runtime-gate-reader") == READER
    assert rules_of(kubectl, "gpufleet-runtime-gate-rollout") == ROLLOUT
    bindings = {name: json.loads(kubectl("get", "clusterrolebinding", name, "-o", "json")) for name in
                ("gpufleet-runtime-gate-reader", "gpufleet-runtime-gate-rollout")}
    subjects = {name: sorted(f"{s['namespace']}/{s['name']}" for s in binding["subjects"])
                for name, binding in bindings.items()}
    assert subjects == {"gpufleet-runtime-gate-reader": ["gpu-checks/runtime-gate", "gpu-checks/runtime-gate-rollout"],
                        "gpufleet-runtime-gate-rollout": ["gpu-checks/runtime-gate-rollout"]}
    assert {name: binding["roleRef"]["name"] for name, binding in bindings.items()} == {name: name for name in bindings}
    service_accounts = json.loads(kubectl("get", "serviceaccounts", "-n", "gpu-checks", "-o", "json"))["items"]
    assert sorted(sa["metadata"]["name"] for sa in service_accounts) == ["runtime-gate", "runtime-gate-rollout"]


def test_the_modules_ask_only_for_what_the_roles_grant(kube_api):
    gpu_pod = pod("trainer", "ml", node_name="gpu-1", runtime_class_name="nvidia")
    kube_api.set_objects(runtimeclasses=[runtimeclass("nvidia", "nvidia")], nodes=[node("gpu-1")], pods=[gpu_pod],
                         events=[event(gpu_pod, "no runtime for \"nvidia\" is configured")])
    read = run_module("gpufleet.runtime_gate.runtimeclass_info",
                      {"kubeconfig": kube_api.kubeconfig_path, "nodes": True, "pods": True})
    assert read.returncode == 0, read.output
    used_by_checks = requested(kube_api)
    assert used_by_checks == {key: {"list"} for key in READER}  # lists only; get is granted for kubectl users
    assert all(used_by_checks[key] <= set(READER[key]) for key in used_by_checks)

    kube_api.requests.clear()
    applied = run_module("gpufleet.runtime_gate.runtimeclass_apply", {
        "kubeconfig": kube_api.kubeconfig_path, "runtimeclasses": [{"name": "nvidia-cdi", "handler": "nvidia-cdi"}],
        "verdicts": [{"node": "gpu-1", "verdict": "OK", "loaded_runtimes": ["nvidia-cdi", "runc"]}],
        "nodes": read.result["nodes"]})
    assert applied.returncode == 0 and applied.result["changed"], applied.output
    rollout_grants = {key: set(READER.get(key, [])) | set(ROLLOUT.get(key, [])) for key in {*READER, *ROLLOUT}}
    for key, verbs in requested(kube_api).items():
        assert verbs <= rollout_grants[key], (key, verbs)
