"""runtimeclass_apply run by real Ansible against the API stand-in; kubectl reads the result back independently.

Pattern: check mode (reports, writes nothing) -> apply -> check mode (no change) -> apply (idempotent) -> kubectl.
The refusal of the seed's typo class is decided from verdicts of a real crosscheck.yml run over the demo fleet.
"""
import json
import subprocess

import pytest
from kube_runs import assert_one_clear_failure, load_demo_cluster, run_crosscheck, run_module
from support.kube_fixtures import node, runtimeclass
from support.tools import require_command

MODULE = "gpufleet.runtime_gate.runtimeclass_apply"
GPU = {"nvidia.com/gpu.present": "true"}
NODES = [{"name": "gpu-1", "labels": GPU}, {"name": "gpu-2", "labels": GPU}, {"name": "cpu-1", "labels": {}}]
VERDICTS = [{"node": "gpu-1", "status": "OK", "loaded_runtimes": ["nvidia", "nvidia-cdi", "runc"]},
            {"node": "gpu-2", "status": "MISSING", "loaded_runtimes": ["nvidia", "runc"]},
            {"node": "cpu-1", "status": "OK", "loaded_runtimes": ["runc"]}]
NVIDIA = {"name": "nvidia", "handler": "nvidia", "node_selector": GPU, "overhead_pod_fixed": {"cpu": "250m", "memory": "120Mi"},
          "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}


def writes(kube_api):
    return [(request.method, request.path.rsplit("/", 1)[-1]) for request in kube_api.requests if request.method != "GET"]


def apply(kube_api, runtimeclasses, check_mode=False, diff=False, verdicts=None, nodes=None, **options):
    """runtimeclass_apply with the cluster's Nodes stored in the stand-in (the module lists them itself)."""
    kube_api.set_objects(nodes=[node(item["name"], item["labels"]) for item in (NODES if nodes is None else nodes)])
    return run_module(MODULE, {"kubeconfig": kube_api.kubeconfig_path, "runtimeclasses": runtimeclasses,
                               "verdicts": VERDICTS if verdicts is None else verdicts, **options},
                      check_mode=check_mode, diff=diff)


def requests_of(kube_api):
    return [(request.method, request.path.rsplit("/", 1)[-1].split("?")[0]) for request in kube_api.requests]


def test_check_apply_check_apply_then_kubectl_reads_it(kube_api, tmp_path):
    kube_api.set_objects(runtimeclasses=[runtimeclass("runc", "runc")])

    planned = apply(kube_api, [NVIDIA], check_mode=True, diff=True)
    assert planned.returncode == 0 and planned.result["changed"], planned.output
    assert [(item["name"], item["action"]) for item in planned.result["runtimeclasses"]] == [("nvidia", "create")]
    assert '-    "nvidia": null\n+    "nvidia": {\n+        "handler": "nvidia",' in planned.output  # --diff as rendered
    assert writes(kube_api) == []

    created = apply(kube_api, [NVIDIA])
    assert created.returncode == 0 and created.result["changed"], created.output
    assert writes(kube_api) == [("POST", "runtimeclasses")]
    assert created.result["runtimeclasses"][0] | {"action": None} == {
        "name": "nvidia", "handler": "nvidia", "targeted": ["gpu-1", "gpu-2"], "serving": ["gpu-1", "gpu-2"],
        "missing": [], "unjudged": [], "refusal": None, "action": None}

    for check_mode in (True, False):
        again = apply(kube_api, [NVIDIA], check_mode=check_mode)
        assert (again.returncode, again.result["changed"], again.result["runtimeclasses"][0]["action"]) == (0, False, "none")
    assert writes(kube_api) == [("POST", "runtimeclasses")]

    kubectl = require_command("kubectl", "kubernetes-client")
    shown = subprocess.run([kubectl, "--kubeconfig", str(kube_api.kubeconfig_path), "--cache-dir", str(tmp_path / "cache"),
                            "get", "runtimeclass", "nvidia", "-o", "json"], capture_output=True, text=True, check=True)
    live = json.loads(shown.stdout)
    assert (live["handler"], live["overhead"], live["scheduling"]) == (
        "nvidia", {"podFixed": {"cpu": "250m", "memory": "120Mi"}},
        {"nodeSelector": GPU, "tolerations": NVIDIA["tolerations"]})


def test_update_is_a_conditional_replace_that_keeps_labels(kube_api):
    existing = runtimeclass("nvidia", "nvidia", node_selector=GPU, overhead={"cpu": "0.25", "memory": "120Mi"})
    existing["metadata"]["labels"] = {"app.kubernetes.io/component": "gpu-operator"}
    kube_api.set_objects(runtimeclasses=[existing])
    version = kube_api.stored("runtimeclasses")[0]["metadata"]["resourceVersion"]

    # 0.25 CPU is 250m: equal by value, so only the missing tolerations make a change
    updated = apply(kube_api, [NVIDIA], diff=True)
    assert updated.returncode == 0 and updated.result["runtimeclasses"][0]["action"] == "update", updated.output
    assert '-        "tolerations": []\n+        "tolerations": [' in updated.output
    assert writes(kube_api) == [("PUT", "nvidia")]
    (stored,) = kube_api.stored("runtimeclasses")
    assert stored["metadata"]["labels"] == {"app.kubernetes.io/component": "gpu-operator"}
    assert stored["scheduling"]["tolerations"] == NVIDIA["tolerations"] and stored["metadata"]["resourceVersion"] != version


def test_concurrent_change_fails_instead_of_overwriting(kube_api):
    kube_api.set_objects(runtimeclasses=[runtimeclass("nvidia", "nvidia", node_selector=GPU)])
    kube_api.fail("runtimeclasses", 409, 'Operation cannot be fulfilled on runtimeclasses.node.k8s.io "nvidia": the '
                  "object has been modified; please apply your changes to the latest version and try again", skip=1)
    run = apply(kube_api, [NVIDIA])
    assert_one_clear_failure(run, f"updating RuntimeClass 'nvidia' on {kube_api.url} failed: HTTP 409 Conflict",
                             "the object has been modified")


def test_handler_change_is_refused_as_immutable(kube_api):
    kube_api.set_objects(runtimeclasses=[runtimeclass("nvidia", "nvidia-legacy")])
    run = apply(kube_api, [{"name": "nvidia", "handler": "nvidia", "node_selector": GPU}])
    assert_one_clear_failure(run, "RuntimeClass 'nvidia' exists with handler 'nvidia-legacy', and handler is immutable")
    assert writes(kube_api) == []


def test_partly_served_class_refuses_the_whole_plan(kube_api):
    run = apply(kube_api, [NVIDIA, {"name": "nvidia-cdi", "handler": "nvidia-cdi", "node_selector": GPU}])
    assert_one_clear_failure(run, "1 RuntimeClass(es) refused, nothing applied: RuntimeClass 'nvidia-cdi' (handler "
                                  "'nvidia-cdi'): 1 of the 2 node(s) its nodeSelector nvidia.com/gpu.present=true "
                                  "targets do not serve the handler (gpu-2)")
    assert [item["action"] for item in run.result["runtimeclasses"]] == ["none", "refused"]
    # Only the Nodes were listed (the stand-in serves them in pages), nothing written.
    assert set(requests_of(kube_api)) == {("GET", "nodes")}
    assert run.result["api_requests"] == len(kube_api.requests)


def test_class_matching_unjudged_nodes_is_refused_unless_allowed(kube_api):
    # A rollout over the GPU nodes: cpu-1 is in the cluster but was not judged, and a class without
    # nodeSelector would send pods there too.
    kube_api.set_objects(runtimeclasses=[])
    gpu_verdicts = [verdict for verdict in VERDICTS if verdict["node"] != "cpu-1"]
    gpu_verdicts[1] = dict(gpu_verdicts[1], verdict="OK")
    everywhere = {"name": "nvidia", "handler": "nvidia"}
    refused = apply(kube_api, [everywhere], verdicts=gpu_verdicts)
    assert_one_clear_failure(refused, "1 RuntimeClass(es) refused, nothing applied: RuntimeClass 'nvidia' (handler "
                                      "'nvidia'): it (no nodeSelector: every node) also matches 1 cluster node(s) this "
                                      "run did not judge (cpu-1)", "allow_unjudged_nodes: true")
    assert writes(kube_api) == [] and refused.result["runtimeclasses"][0]["unjudged"] == ["cpu-1"]

    allowed = apply(kube_api, [everywhere], verdicts=gpu_verdicts, allow_unjudged_nodes=True)
    assert allowed.returncode == 0 and allowed.result["runtimeclasses"][0]["action"] == "create", allowed.output
    assert "RuntimeClass 'nvidia' also targets node(s) this run did not judge: cpu-1" in allowed.output
    assert writes(kube_api) == [("POST", "runtimeclasses")]


@pytest.mark.parametrize("bad,fragment", [
    ({"name": "nvidia", "handler": "Nvidia"}, "handler 'Nvidia' is not a DNS-1123 label"),
    ({"name": "nvidia", "handler": "nvidia", "node_selector": {"nvidia.com/gpu.present": True}},
     "keys and values must be strings (quote them in YAML)"),
])
def test_bad_input_is_one_clear_message(kube_api, bad, fragment):
    run = apply(kube_api, [bad])
    assert_one_clear_failure(run, fragment)
    assert kube_api.requests == []


def test_seed_typo_class_is_refused_from_a_real_crosscheck(kube_api, tmp_path):
    load_demo_cluster(kube_api)
    hosts = [f"gpu-node-0{number}" for number in range(1, 8)]
    crosscheck = run_crosscheck(tmp_path, hosts, {"K8S_AUTH_KUBECONFIG": kube_api.kubeconfig_path})
    assert crosscheck.verdicts["gpu-node-07"]["missing_handlers"] == ["nvdia"], crosscheck.output
    nodes = [node(name, {"gpufleet.example/pool": "canary" if name == "gpu-node-07" else "main", **GPU})
             for name in hosts]
    nodes = [{"name": item["metadata"]["name"], "labels": item["metadata"]["labels"]} for item in nodes]
    kube_api.requests.clear()

    run = apply(kube_api, [{"name": "nvidia-typo", "handler": "nvdia", "node_selector": {"gpufleet.example/pool": "canary"}}],
                verdicts=list(crosscheck.verdicts.values()), nodes=nodes)
    assert ("GET", "nodes") in requests_of(kube_api)
    served = ", ".join(crosscheck.verdicts["gpu-node-07"]["loaded_runtimes"])
    assert_one_clear_failure(run)
    assert run.result["msg"] == (
        "1 RuntimeClass(es) refused, nothing applied: RuntimeClass 'nvidia-typo' (handler 'nvdia'): no targeted node "
        f"serves handler 'nvdia' (nodeSelector gpufleet.example/pool=canary; targeted: gpu-node-07; they serve: {served}); "
        "did you mean 'nvidia'?")
    assert writes(kube_api) == []


def test_a_class_without_node_selector_is_refused_for_the_cluster_nodes_nobody_judged(kube_api):
    # Issue 22 item 3: one OK verdict and the Nodes left unlisted by the caller (rollout.yml passed nodes: []) made a
    # class without nodeSelector that reached every node. The module lists the Nodes itself and names the unjudged ones.
    kube_api.set_objects(runtimeclasses=[])
    nodes = [{"name": f"gpu-node-0{number}", "labels": GPU} for number in range(1, 6)]
    only_one = [{"node": "gpu-node-01", "status": "OK", "loaded_runtimes": ["nvidia", "runc"]}]
    refused = apply(kube_api, [{"name": "nvidia", "handler": "nvidia"}], verdicts=only_one, nodes=nodes)
    assert_one_clear_failure(refused, "also matches 4 cluster node(s) this run did not judge (gpu-node-02, gpu-node-03, "
                                      "gpu-node-04, gpu-node-05)")
    assert writes(kube_api) == []


def test_a_class_bound_to_the_gate_label_is_applied_with_a_warning_for_unjudged_nodes(kube_api):
    kube_api.set_objects(runtimeclasses=[])
    label = "handler.runtime-gate.gpufleet.io/nvidia"
    nodes = [{"name": "gpu-1", "labels": {label: "served"}}, {"name": "gpu-2", "labels": {label: "served"}}]
    only_one = [{"node": "gpu-1", "status": "OK", "loaded_runtimes": ["nvidia", "runc"]}]
    gated = {"name": "nvidia", "handler": "nvidia", "node_selector": {label: "served"}}
    applied = apply(kube_api, [gated], verdicts=only_one, nodes=nodes)
    assert applied.returncode == 0 and applied.result["runtimeclasses"][0]["action"] == "create", applied.output
    assert "RuntimeClass 'nvidia' also targets node(s) this run did not judge: gpu-2" in applied.output
    # Bound to another prefix's label, the same class is refused.
    kube_api.set_objects(runtimeclasses=[])
    other = apply(kube_api, [gated], verdicts=only_one, nodes=nodes, label_prefix="gate.example.com")
    assert_one_clear_failure(other, "did not judge (gpu-2)")
