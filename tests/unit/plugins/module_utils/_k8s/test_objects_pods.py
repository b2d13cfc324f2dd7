"""Pods and their FailedCreatePodSandBox Events: one shape from manifests and from raw API items."""
import pytest
import yaml
from support.kube_fixtures import event, node, pod, runtimeclass

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.manifest import parse_manifest_text
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.objects import (
    normalise_cluster_objects,
    normalise_pod,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError

SOURCE = "manifest 'cluster.yaml'"
NO_RUNTIME = ('Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: '
              'no runtime for "nvdia" is configured')
TRAINER = pod("trainer-0", "ml", node_name="gpu-1", runtime_class_name="nvidia", phase="Pending",
              requests={"cpu": "900m", "memory": "1Gi"}, init_requests={"cpu": "100m"},
              overhead={"cpu": "250m", "memory": "120Mi"}, uid="0b5c6a4e-0000-4000-8000-000000000001")
PLAIN = pod("web", "default", node_name="cpu-1")
NOTEBOOK = pod("notebook", "default", node_name="gpu-2", runtime_class_name="kata")


def without_kind(obj):
    return {key: value for key, value in obj.items() if key not in ("kind", "apiVersion")}


def test_pod_shape():
    assert normalise_pod(TRAINER) == {
        "namespace": "ml", "name": "trainer-0", "node": "gpu-1", "phase": "Pending", "runtime_class": "nvidia",
        "containers": [{"name": "main", "requests": {"cpu": "900m", "memory": "1Gi"}}],
        "init_containers": [{"name": "init", "requests": {"cpu": "100m"}}],
        "overhead": {"cpu": "250m", "memory": "120Mi"}, "sandbox_failures": []}
    unscheduled = normalise_pod({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}})
    assert (unscheduled["namespace"], unscheduled["node"], unscheduled["phase"], unscheduled["runtime_class"]) == (
        "default", None, "Unknown", None)
    assert unscheduled["containers"] == [{"name": "c", "requests": {}}] and unscheduled["overhead"] == {}


def test_sandbox_failures_attach_by_namespace_name_and_uid():
    stale = event(pod("trainer-0", "ml", uid="an-earlier-pod-of-the-same-name"), "old failure")
    other_reason = event(TRAINER, "Successfully assigned ml/trainer-0 to gpu-1", reason="Scheduled")
    elsewhere = event(pod("trainer-0", "other-ns"), "not this pod")
    repeated = [event(TRAINER, NO_RUNTIME), event(TRAINER, NO_RUNTIME)]
    cluster = normalise_cluster_objects([], [], "the API server x",
                                        pod_objs=[without_kind(TRAINER), without_kind(PLAIN), without_kind(NOTEBOOK)],
                                        event_objs=[without_kind(e) for e in [stale, other_reason, elsewhere, *repeated]])
    by_name = {p["name"]: p for p in cluster["pods"]}
    assert by_name["trainer-0"]["sandbox_failures"] == [NO_RUNTIME]
    assert by_name["notebook"]["sandbox_failures"] == []
    assert [p["name"] for p in cluster["pods"]] == ["notebook", "trainer-0"]  # sorted by namespace/name


def test_pods_without_a_runtimeclass_are_checked_then_left_out():
    # The default runtime's pods concern no finding: left out of the result, which a big cluster would fill with them.
    cluster = normalise_cluster_objects([], [], "the API server x", pod_objs=[without_kind(PLAIN), without_kind(TRAINER)])
    assert [p["name"] for p in cluster["pods"]] == ["trainer-0"]
    broken = {**without_kind(PLAIN), "spec": {"nodeName": ["cpu-1"]}}
    with pytest.raises(RuntimeGateError, match="spec.nodeName must be a string"):
        normalise_cluster_objects([], [], "the API server x", pod_objs=[broken])


def test_events_k8s_io_shape_is_read_too():
    new_style = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e", "namespace": "default"},
                 "regarding": {"kind": "Pod", "namespace": "default", "name": "web"},
                 "reason": "FailedCreatePodSandBox", "note": "no runtime for \"kata\" is configured"}
    new_style["regarding"]["name"] = "notebook"
    text = yaml.safe_dump_all([runtimeclass("kata", "kata"), NOTEBOOK, new_style], explicit_start=True)
    assert parse_manifest_text(text, SOURCE)["pods"][0]["sandbox_failures"] == ['no runtime for "kata" is configured']


def test_manifest_pods_equal_api_pods_and_nodes_carry_addresses():
    objects = [runtimeclass("nvidia", "nvidia"), node("gpu-1", internal_ip="10.0.0.21"), TRAINER, PLAIN,
               event(TRAINER, NO_RUNTIME), {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}]
    from_file = parse_manifest_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}), SOURCE)
    from_api = normalise_cluster_objects([without_kind(objects[0])], [without_kind(objects[1])], "x",
                                         pod_objs=[without_kind(TRAINER), without_kind(PLAIN)],
                                         event_objs=[without_kind(objects[4])])
    assert from_file == from_api
    assert from_file["nodes"][0]["addresses"] == [{"type": "InternalIP", "address": "10.0.0.21"},
                                                  {"type": "Hostname", "address": "gpu-1"}]


@pytest.mark.parametrize("objects,fragment", [
    ([PLAIN, PLAIN], "Pod 'default/web' is defined twice"),
    ([{**PLAIN, "apiVersion": "v2"}], "Pod 'web' has apiVersion 'v2'; only 'v1' is read"),
    ([{**PLAIN, "spec": {"containers": "main"}}], "Pod 'default/web': spec.containers must be a list, not a string"),
    ([{**PLAIN, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": [1]}}}]}}],
     "a quantity must be a string or number"),
    ([{**PLAIN, "spec": {"runtimeClassName": 5}}], "spec.runtimeClassName must be a string, not int"),
    ([node("n", allocatable={"cpu": "1"}) | {"status": {"addresses": [{"type": "InternalIP"}]}}],
     "status.addresses must be a list of mappings with string 'type' and 'address'"),
])
def test_bad_pods_and_nodes_are_one_clear_error(objects, fragment):
    text = yaml.safe_dump_all([runtimeclass("nvidia", "nvidia"), *objects], explicit_start=True)
    with pytest.raises(RuntimeGateError) as raised:
        parse_manifest_text(text, SOURCE)
    assert fragment in str(raised.value) and str(raised.value).startswith(SOURCE)
