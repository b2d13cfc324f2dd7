"""Which RuntimeClasses runtimeclass_apply may create or update: the pure decision, table-driven."""
import pytest

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._runtimeclass_plan import (
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
    return [{"node": node, "verdict": "OK" if runtimes is not None else "UNKNOWN", "loaded_runtimes": runtimes or []}
            for node, runtimes in loaded.items()]


def plan(desired, judged):
    (result,) = plan_runtimeclasses([desired], judged, NODES)
    return result


def test_class_served_by_every_targeted_node_is_allowed():
    result = plan({"name": "nvidia", "handler": "nvidia", "node_selector": GPU},
                  verdicts(**{"gpu-1": SERVED, "gpu-2": SERVED, "cpu-1": ["runc"]}))
    assert result == {"name": "nvidia", "handler": "nvidia", "targeted": ["gpu-1", "gpu-2"],
                      "serving": ["gpu-1", "gpu-2"], "missing": [], "unjudged": ["gpu-9"], "refusal": None}


def test_typo_handler_is_refused_with_the_closest_loaded_runtime():
    result = plan({"name": "nvidia", "handler": "nvdia", "node_selector": GPU},
                  verdicts(**{"gpu-1": SERVED, "gpu-2": SERVED}))
    assert result["refusal"] == (
        "RuntimeClass 'nvidia' (handler 'nvdia'): no targeted node serves handler 'nvdia' (nodeSelector "
        "nvidia.com/gpu.present=true; targeted: gpu-1, gpu-2; they serve: nvidia, runc); did you mean 'nvidia'?")


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
    judged = [{"node": "gpu-1", "verdict": "UNKNOWN", "loaded_runtimes": SERVED}]
    assert plan({"name": "nvidia", "handler": "nvidia", "node_selector": GPU}, judged)["missing"] == ["gpu-1"]


@pytest.mark.parametrize("desired,fragment", [
    ({"name": "Bad_Name", "handler": "nvidia"}, "name 'Bad_Name' is not a DNS-1123 subdomain"),
    ({"name": "nvidia", "handler": "nvidia_cdi"}, "handler 'nvidia_cdi' is not a DNS-1123 label"),
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
    plans = plan_runtimeclasses([desired, {"name": "x", "handler": "nvdia"}], verdicts(**{"gpu-1": SERVED}), NODES)
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
