"""Which RuntimeClasses runtimeclass_apply may create or update: the pure decision, table-driven."""
import pytest

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._cluster_writers.runtimeclass_plan import (
    desired_body,
    needed_change,
    plan_runtimeclasses,
    refusals,
)

GPU = {"nvidia.com/gpu.present": "true"}
NODES = [{"name": "gpu-1", "labels": GPU}, {"name": "gpu-2", "labels": GPU}, {"name": "cpu-1", "labels": {}},
         {"name": "gpu-9", "labels": GPU}]  # gpu-9 is in the cluster but not judged in this run
SERVED = ["nvidia", "runc"]


def verdicts(**loaded):
    return [{"node": node, "status": "OK" if runtimes is not None else "UNKNOWN", "loaded_runtimes": runtimes or []}
            for node, runtimes in loaded.items()]


def plan(desired, judged, **options):
    (result,) = plan_runtimeclasses([desired], judged, NODES, **options)
    return result


def test_class_served_by_every_matched_node_is_allowed():
    result = plan({"name": "nvidia", "handler": "nvidia", "node_selector": GPU},
                  verdicts(**{"gpu-1": SERVED, "gpu-2": SERVED, "gpu-9": SERVED, "cpu-1": ["runc"]}))
    assert result == {"name": "nvidia", "handler": "nvidia", "targeted": ["gpu-1", "gpu-2", "gpu-9"],
                      "serving": ["gpu-1", "gpu-2", "gpu-9"], "missing": [], "unjudged": [], "refusal": None}


def test_class_matching_unjudged_cluster_nodes_is_refused_unless_allowed():
    # A rollout over the GPU nodes only: a class without nodeSelector also reaches cpu-1 (and gpu-9).
    judged = verdicts(**{"gpu-1": SERVED, "gpu-2": SERVED})
    result = plan({"name": "nvidia", "handler": "nvidia"}, judged)
    assert result["unjudged"] == ["cpu-1", "gpu-9"]
    assert result["refusal"] == (
        "RuntimeClass 'nvidia' (handler 'nvidia'): it (no nodeSelector: every node) also matches 2 cluster node(s) this "
        "run did not judge (cpu-1, gpu-9), so they are not proven to serve the handler and pods placed there could fail "
        "with FailedCreatePodSandBox; judge them too, narrow the nodeSelector, or set allow_unjudged_nodes: true")
    assert plan({"name": "nvidia", "handler": "nvidia", "node_selector": GPU}, judged)["refusal"].startswith(
        "RuntimeClass 'nvidia' (handler 'nvidia'): its nodeSelector nvidia.com/gpu.present=true also matches 1 cluster "
        "node(s) this run did not judge (gpu-9)")
    allowed = plan({"name": "nvidia", "handler": "nvidia"}, judged, allow_unjudged_nodes=True)
    assert (allowed["refusal"], allowed["unjudged"]) == (None, ["cpu-1", "gpu-9"])


def test_unjudged_refusal_names_a_few_nodes_and_the_count():
    many = [{"name": f"cpu-{number:02d}", "labels": {}} for number in range(12)]
    (result,) = plan_runtimeclasses([{"name": "nvidia", "handler": "nvidia"}], verdicts(**{"gpu-1": SERVED}),
                                    [{"name": "gpu-1", "labels": GPU}, *many])
    assert "also matches 12 cluster node(s) this run did not judge (cpu-00, cpu-01, cpu-02, cpu-03, cpu-04, ...)" in \
        result["refusal"]


def test_typo_handler_is_refused_with_the_closest_loaded_runtime():
    result = plan({"name": "nvidia", "handler": "nvdia", "node_selector": GPU},
                  verdicts(**{"gpu-1": SERVED, "gpu-2": SERVED}))
    assert result["refusal"] == (
        "RuntimeClass 'nvidia' (handler 'nvdia'): no targeted node serves handler 'nvdia' (nodeSelector "
        "nvidia.com/gpu.present=true; targeted: gpu-1, gpu-2; they serve: nvidia, runc); did you mean 'nvidia'?")


@pytest.mark.parametrize("handler,configured", [("nvidia-cdi", []), ("nvdia", ["nvdia"])],
                         ids=["well-known-name", "configured-on-a-node"])
def test_a_deliberate_handler_not_served_yet_gets_no_spelling_advice(handler, configured):
    # A staged CDI rollout: the judged nodes serve `nvidia` only so far; `nvidia-cdi` is no typo of it, and neither is
    # a name a node's configuration already holds (defined there, not loaded yet).
    judged = [dict(verdict, configured_runtimes=SERVED + configured) for verdict in verdicts(**{"gpu-1": SERVED, "gpu-2": SERVED})]
    result = plan({"name": "gpu", "handler": handler, "node_selector": GPU}, judged)
    assert result["refusal"] == (
        f"RuntimeClass 'gpu' (handler '{handler}'): no targeted node serves handler '{handler}' (nodeSelector "
        "nvidia.com/gpu.present=true; targeted: gpu-1, gpu-2; they serve: nvidia, runc)")


@pytest.mark.parametrize("desired,judged,refusal", [
    ({"name": "nvidia", "handler": "nvidia"}, verdicts(**{"gpu-1": SERVED, "cpu-1": ["runc"]}),
     "RuntimeClass 'nvidia' (handler 'nvidia'): 1 of the 2 node(s) it (no nodeSelector: every node) targets do not "
     "serve the handler (cpu-1); pods placed there would fail with FailedCreatePodSandBox"),
    ({"name": "nvidia", "handler": "nvidia", "node_selector": GPU}, verdicts(**{"gpu-1": SERVED, "gpu-2": None}),
     "RuntimeClass 'nvidia' (handler 'nvidia'): 1 of the 2 node(s) its nodeSelector nvidia.com/gpu.present=true "
     "targets do not serve the handler (gpu-2); pods placed there would fail with FailedCreatePodSandBox"),
    ({"name": "kata", "handler": "kata", "node_selector": {"kata": "yes"}}, verdicts(**{"gpu-1": SERVED}),
     "RuntimeClass 'kata' (handler 'kata'): its nodeSelector kata=yes matches none of the 1 judged node(s), so no "
     "node is proven to serve the handler; judge the nodes it targets first"),
    ({"name": "nvidia", "handler": "nvidia", "node_selector": GPU}, verdicts(**{"gpu-1": SERVED, "new-node": SERVED}),
     "RuntimeClass 'nvidia' (handler 'nvidia'): the labels of judged node(s) new-node are unknown (not in nodes), so "
     "whether its nodeSelector nvidia.com/gpu.present=true targets them cannot be told; pass the cluster's Nodes"),
])
def test_refusals_name_class_handler_and_nodes(desired, judged, refusal):
    assert plan(desired, judged)["refusal"] == refusal


def test_unknown_verdict_serves_nothing_even_with_runtimes_listed():
    judged = [{"node": "gpu-1", "status": "UNKNOWN", "loaded_runtimes": SERVED}]
    assert plan({"name": "nvidia", "handler": "nvidia", "node_selector": GPU}, judged)["missing"] == ["gpu-1"]


@pytest.mark.parametrize("desired,fragment", [
    ({"name": "Bad_Name", "handler": "nvidia"}, "name 'Bad_Name' is not a DNS-1123 subdomain"),
    ({"name": "nvidia", "handler": "nvidia_cdi"}, "handler 'nvidia_cdi' is not a DNS-1123 label"),
    # Python's "$" matches before a trailing newline: the whole string must match.
    ({"name": "nvidia\n", "handler": "nvidia"}, "name 'nvidia\\n' is not a DNS-1123 subdomain"),
    ({"name": "nvidia", "handler": "nvidia\n"}, "handler 'nvidia\\n' is not a DNS-1123 label"),
    ({"name": "nvidia", "handler": "nvidia", "overhead_pod_fixed": {"cpu": "lots"}}, "is not a Kubernetes quantity"),
    ({"name": "nvidia", "handler": "nvidia", "node_selector": {"gpu": True}}, "keys and values must be strings"),
])
def test_bad_desired_classes_are_one_clear_error(desired, fragment):
    with pytest.raises(RuntimeGateError) as raised:
        plan_runtimeclasses([desired], verdicts(**{"gpu-1": SERVED}), NODES)
    assert fragment in str(raised.value)


def test_duplicate_names_and_refusals_list():
    desired = {"name": "nvidia", "handler": "nvidia"}
    with pytest.raises(RuntimeGateError, match="listed twice"):
        plan_runtimeclasses([desired, desired], verdicts(**{"gpu-1": SERVED}), NODES)
    plans = plan_runtimeclasses([desired, {"name": "x", "handler": "nvdia"}], verdicts(**{"gpu-1": SERVED}), NODES,
                                allow_unjudged_nodes=True)
    assert [text.split(":")[0] for text in refusals(plans)] == ["RuntimeClass 'x' (handler 'nvdia')"]


def test_needed_change_create_update_none():
    desired = desired_body({"name": "nvidia", "handler": "nvidia", "node_selector": GPU,
                            "overhead_pod_fixed": {"cpu": "250m", "memory": "120Mi"}})
    assert needed_change(desired, None) == ("create", desired)
    live = {**desired, "metadata": {"name": "nvidia", "resourceVersion": "7", "uid": "u", "labels": {"team": "gpu"},
                                    "creationTimestamp": "2026-01-01T00:00:00Z", "managedFields": []},
            "overhead": {"podFixed": {"cpu": "0.25", "memory": "120Mi"}}}
    assert needed_change(desired, live) == ("none", None)  # 0.25 == 250m: the apiserver canonicalises quantities
    live["scheduling"] = {}
    action, body = needed_change(desired, live)
    assert action == "update" and body["scheduling"] == {"nodeSelector": GPU}
    assert body["metadata"] == {"name": "nvidia", "resourceVersion": "7", "uid": "u", "labels": {"team": "gpu"}}
    with pytest.raises(RuntimeGateError, match="handler is immutable"):
        needed_change(desired_body({"name": "nvidia", "handler": "nvidia-cdi"}), live)
