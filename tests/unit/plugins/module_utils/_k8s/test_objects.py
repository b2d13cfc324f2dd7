"""RuntimeClasses and Nodes from manifests and from raw API items: one shape, one clear error each."""
import copy
import os

import pytest
import yaml

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s import manifest
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.manifest import (
    parse_manifest_text,
    read_manifest_file,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.objects import (
    normalise_cluster_objects,
    normalise_node,
    normalise_runtimeclass,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError

SOURCE = "manifest 'cluster.yaml'"
NVIDIA_CDI = {
    "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "nvidia-cdi"},
    "handler": "nvidia-cdi",
    "overhead": {"podFixed": {"cpu": "250m", "memory": "120Mi"}},
    "scheduling": {"nodeSelector": {"nvidia.com/gpu.present": "true"},
                   "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]},
}
NVIDIA = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "nvidia"}, "handler": "nvidia"}
GPU_NODE = {
    "apiVersion": "v1", "kind": "Node",
    "metadata": {"name": "gpu-1", "labels": {"nvidia.com/gpu.present": "true"}},
    "status": {"allocatable": {"cpu": "8", "nvidia.com/gpu": "1"},
               "runtimeHandlers": [{"name": "", "features": {"recursiveReadOnlyMounts": True, "userNamespaces": False}},
                                   {"name": "nvidia", "features": {"recursiveReadOnlyMounts": True, "userNamespaces": False}}],
               "addresses": [{"type": "InternalIP", "address": "10.0.0.11"}, {"type": "Hostname", "address": "gpu-1"}]},
}
OLD_NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-0"}, "status": {"allocatable": {"cpu": "4"}}}
EXPECTED = {
    "runtimeclasses": [
        {"name": "nvidia", "handler": "nvidia", "overhead_pod_fixed": None, "node_selector": None, "tolerations": []},
        {"name": "nvidia-cdi", "handler": "nvidia-cdi", "overhead_pod_fixed": {"cpu": "250m", "memory": "120Mi"},
         "node_selector": {"nvidia.com/gpu.present": "true"},
         "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]},
    ],
    "nodes": [
        {"name": "gpu-0", "labels": {}, "allocatable": {"cpu": "4"}, "runtime_handlers": [], "addresses": [],
         "ready": {"status": None, "heartbeat": None}},
        {"name": "gpu-1", "labels": {"nvidia.com/gpu.present": "true"}, "allocatable": {"cpu": "8", "nvidia.com/gpu": "1"},
         "runtime_handlers": [{"name": "", "features": {"recursiveReadOnlyMounts": True, "userNamespaces": False}},
                              {"name": "nvidia", "features": {"recursiveReadOnlyMounts": True, "userNamespaces": False}}],
         "addresses": [{"type": "InternalIP", "address": "10.0.0.11"}, {"type": "Hostname", "address": "gpu-1"}],
         "ready": {"status": None, "heartbeat": None}},
    ],
    "pods": [],
}
CONFIG_MAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "y"}, "data": {"a": "b"}}


def as_list(objects):
    return yaml.safe_dump({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": objects})


def as_documents(objects):
    return yaml.safe_dump_all(objects, explicit_start=True)


def without_kind(obj):
    return {key: value for key, value in obj.items() if key not in ("kind", "apiVersion")}


@pytest.mark.parametrize("text", [
    as_list([NVIDIA_CDI, GPU_NODE, NVIDIA, OLD_NODE]),
    as_documents([NVIDIA_CDI, GPU_NODE, NVIDIA, OLD_NODE]),
    # What the API itself sends: typed lists whose items carry no kind/apiVersion.
    as_documents([{"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClassList", "metadata": {},
                   "items": [without_kind(NVIDIA_CDI), without_kind(NVIDIA)]},
                  {"apiVersion": "v1", "kind": "NodeList", "items": [without_kind(GPU_NODE), without_kind(OLD_NODE)]}]),
    # Other kinds are skipped, in a List and as documents; empty documents too.
    as_list([CONFIG_MAP, NVIDIA, OLD_NODE]) + as_documents([NVIDIA_CDI, CONFIG_MAP, GPU_NODE]) + "---\n",
], ids=["kubectl-List", "multi-document", "typed-lists", "mixed-with-other-kinds"])
def test_every_input_form_gives_the_same_sorted_shape(text):
    assert parse_manifest_text(text, SOURCE) == EXPECTED


def test_api_items_and_file_give_the_same_shape():
    from_api = normalise_cluster_objects([without_kind(NVIDIA), without_kind(NVIDIA_CDI)],
                                         [without_kind(GPU_NODE), without_kind(OLD_NODE)], "the API server https://x")
    assert from_api == parse_manifest_text(as_list([NVIDIA, NVIDIA_CDI, GPU_NODE, OLD_NODE]), SOURCE) == EXPECTED


@pytest.mark.parametrize("scheduling", [None, {}, {"nodeSelector": {}}, {"nodeSelector": None, "tolerations": []}])
def test_absent_or_empty_node_selector_means_every_node(scheduling):
    obj = dict(NVIDIA, scheduling=scheduling) if scheduling is not None else NVIDIA
    assert normalise_runtimeclass(obj)["node_selector"] is None


def test_node_selector_scopes_and_keeps_every_label():
    obj = dict(NVIDIA, scheduling={"nodeSelector": {"nvidia.com/gpu.present": "true", "pool": "a100"}})
    assert normalise_runtimeclass(obj)["node_selector"] == {"nvidia.com/gpu.present": "true", "pool": "a100"}


def test_numeric_overhead_quantities_become_strings():
    obj = dict(NVIDIA, overhead={"podFixed": {"cpu": 1, "memory": "64Mi"}})
    assert normalise_runtimeclass(obj)["overhead_pod_fixed"] == {"cpu": "1", "memory": "64Mi"}


@pytest.mark.parametrize("status", [None, {}, {"runtimeHandlers": None}, {"runtimeHandlers": []}])
def test_node_without_runtime_handlers_is_unknown_not_none(status):
    obj = {"metadata": {"name": "n"}, **({"status": status} if status is not None else {})}
    assert normalise_node(obj) == {"name": "n", "labels": {}, "allocatable": {}, "runtime_handlers": [], "addresses": [],
                                   "ready": {"status": None, "heartbeat": None}}


@pytest.mark.parametrize(("conditions", "ready"), [
    ([{"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-12-03T00:00:00Z"}],
     {"status": "True", "heartbeat": "2026-12-03T00:00:00Z"}),
    ([{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "False"}],
     {"status": "False", "heartbeat": None}),
    ([{"type": "Ready", "status": 1, "lastHeartbeatTime": 5}], {"status": None, "heartbeat": None}),
    ("Ready", {"status": None, "heartbeat": None}),
    ([None, "x"], {"status": None, "heartbeat": None}),
])
def test_node_ready_condition_is_read_or_left_unknown(conditions, ready):
    assert normalise_node({"metadata": {"name": "n"}, "status": {"conditions": conditions}})["ready"] == ready


def test_runtime_handler_without_name_or_features_is_the_default_handler():
    obj = {"metadata": {"name": "n"}, "status": {"runtimeHandlers": [{}, {"name": "nvidia"}]}}
    assert normalise_node(obj)["runtime_handlers"] == [{"name": "", "features": {}}, {"name": "nvidia", "features": {}}]


@pytest.mark.parametrize("text,fragments", [
    ("", ["is empty", "holds no Kubernetes objects"]),
    ("# only a comment\n---\n", ["is empty"]),
    (as_documents([{"apiVersion": "v1", "kind": "List", "items": [CONFIG_MAP]}]), ["holds no RuntimeClass and no Node"]),
    (as_documents([{"apiVersion": "v1", "kind": "ConfigMapList", "items": []}]), ["holds no RuntimeClass and no Node"]),
    (as_documents([CONFIG_MAP]), ["holds no RuntimeClass and no Node"]),
    ("kind: RuntimeClass\nmetadata: {name: [unclosed\n", ["not valid YAML at line 3"]),
    ("apiVersion: v1\nkind: List\nitems:\n- a: b\n  c\n", ["not valid YAML at line"]),
    ("- apiVersion: v1\n  kind: Node\n", ["document 1 is a list, not a mapping"]),
    ("just a string\n", ["document 1 is a string, not a mapping"]),
    ("metadata: {name: x}\nhandler: y\n", ["document 1 has no 'kind'"]),
    (as_documents([NVIDIA, {"kind": "RuntimeClass", "apiVersion": "node.k8s.io/v1", "metadata": {"name": "bare"}}]),
     ["document 2", "RuntimeClass 'bare' has no 'handler'"]),
    (as_documents([dict(NVIDIA, handler=12)]), ["RuntimeClass 'nvidia' has a handler of type int (12)", "string"]),
    (as_documents([dict(NVIDIA, handler=True)]), ["RuntimeClass 'nvidia' has a handler of type bool"]),
    (as_documents([dict(NVIDIA, handler="")]), ["RuntimeClass 'nvidia' has an empty handler"]),
    (as_list([NVIDIA, NVIDIA_CDI, dict(copy.deepcopy(NVIDIA), handler="other")]),
     ["document 1, item 3", "RuntimeClass 'nvidia' is defined twice", "also in document 1, item 1"]),
    (as_documents([GPU_NODE, GPU_NODE]), ["Node 'gpu-1' is defined twice"]),
    (as_documents([dict(NVIDIA, apiVersion="node.k8s.io/v1beta1")]),
     ["RuntimeClass 'nvidia' has apiVersion 'node.k8s.io/v1beta1'", "only 'node.k8s.io/v1'"]),
    (as_documents([dict(NVIDIA, scheduling={"nodeSelector": {"nvidia.com/gpu.present": True}})]),
     ["RuntimeClass 'nvidia': scheduling.nodeSelector has 'nvidia.com/gpu.present': True", "must be strings"]),
    (as_documents([dict(NVIDIA, scheduling={"nodeSelector": ["a=b"]})]), ["scheduling.nodeSelector must be a mapping"]),
    (as_documents([dict(NVIDIA, scheduling={"tolerations": {"key": "a"}})]), ["tolerations must be a list of mappings"]),
    (as_documents([dict(NVIDIA, metadata={})]), ["a RuntimeClass has no metadata.name"]),
    (as_documents([dict(GPU_NODE, metadata={"name": "gpu-1", "labels": {"pool": 3}})]),
     ["Node 'gpu-1': metadata.labels has 'pool': 3"]),
    (as_documents([dict(GPU_NODE, status={"runtimeHandlers": "nvidia"})]), ["status.runtimeHandlers must be a list"]),
    (as_documents([{"apiVersion": "v1", "kind": "List", "items": {"a": 1}}]), ["'items' is not a list"]),
])
def test_bad_manifests_raise_one_message_naming_source_and_problem(text, fragments):
    with pytest.raises(RuntimeGateError) as raised:
        parse_manifest_text(text, SOURCE)
    message = str(raised.value)
    assert message.startswith(SOURCE), message
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message


# What `kubectl get runtimeclass -o yaml` prints for a cluster without RuntimeClasses (kubectl 1.33).
KUBECTL_EMPTY_LIST = 'apiVersion: v1\nitems: []\nkind: List\nmetadata:\n  resourceVersion: ""\n'


@pytest.mark.parametrize("text", [
    KUBECTL_EMPTY_LIST,
    as_documents([{"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClassList", "metadata": {}, "items": []}]),
    as_documents([{"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClassList", "items": []},
                  {"apiVersion": "v1", "kind": "NodeList", "items": []}]),
], ids=["kubectl-empty-List", "empty-RuntimeClassList", "empty-typed-lists"])
def test_an_export_of_a_cluster_without_runtimeclasses_is_a_cluster_without_runtimeclasses(text):
    assert parse_manifest_text(text, SOURCE) == {"runtimeclasses": [], "nodes": [], "pods": []}


def test_file_is_read_with_utf8_bom(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + as_list([NVIDIA]).encode())
    assert [rc["name"] for rc in read_manifest_file(str(path))["runtimeclasses"]] == ["nvidia"]


@pytest.mark.parametrize("make_path,fragments", [
    (lambda tmp: tmp / "absent.yaml", ["does not exist"]),
    (lambda tmp: tmp, ["is a directory"]),
    (lambda tmp: (tmp / "latin1.yaml", (tmp / "latin1.yaml").write_bytes(b"kind: List\n# caf\xe9\n"))[0],
     ["is not UTF-8 text", "byte 0xe9 at line 2"]),
    (lambda tmp: (tmp / "empty.yaml", (tmp / "empty.yaml").write_bytes(b""))[0], ["is empty"]),
])
def test_file_errors_name_the_file(tmp_path, make_path, fragments):
    path = make_path(tmp_path)
    with pytest.raises(RuntimeGateError) as raised:
        read_manifest_file(str(path))
    message = str(raised.value)
    assert f"manifest file '{path}'" in message
    for fragment in fragments:
        assert fragment in message


def test_files_at_the_size_limit_are_refused_unread(tmp_path):
    path = tmp_path / "huge.yaml"
    with open(path, "wb") as huge:
        huge.truncate(manifest.MAX_MANIFEST_BYTES)  # sparse: nothing is written
    assert os.path.getsize(path) == 50 * 1024 * 1024
    with pytest.raises(RuntimeGateError, match=r"is 50\.0 MB; files of 50 MB or more are refused"):
        read_manifest_file(str(path))


def test_size_limit_boundary(tmp_path, monkeypatch):
    text = as_list([NVIDIA]).encode()
    path = tmp_path / "cluster.yaml"
    path.write_bytes(text)
    monkeypatch.setattr(manifest, "MAX_MANIFEST_BYTES", len(text) + 1)
    assert read_manifest_file(str(path))["runtimeclasses"][0]["name"] == "nvidia"
    monkeypatch.setattr(manifest, "MAX_MANIFEST_BYTES", len(text))
    with pytest.raises(RuntimeGateError, match="refused"):
        read_manifest_file(str(path))


# Names where cluster data enters: a Node's status.runtimeHandlers names follow the rule of the RuntimeClass handler
# they are matched against (issue 22 item 5: the API server does not check them).
API_SOURCE = "the API server https://x"


def node_with_handlers(*names):
    return {"metadata": {"name": "gpu-1"}, "status": {"runtimeHandlers": [{"name": name} for name in names]}}


def test_handler_names_that_are_labels_and_the_default_are_kept():
    nodes = normalise_cluster_objects([], [node_with_handlers("", "nvidia", "kata-qemu")], API_SOURCE)["nodes"]
    assert [handler["name"] for handler in nodes[0]["runtime_handlers"]] == ["", "nvidia", "kata-qemu"]


@pytest.mark.parametrize("name", ["x\nOK", "Nvidia", "kata_qemu", "-runc", "a" * 64, "nvidia.gpu", "\x1b[32mOK"])
def test_a_handler_name_that_no_runtimeclass_can_name_is_refused_naming_node_field_and_rule(name):
    with pytest.raises(RuntimeGateError) as raised:
        normalise_cluster_objects([], [node_with_handlers("", name)], API_SOURCE)
    message = str(raised.value)
    assert message.startswith(f"{API_SOURCE}: Node 'gpu-1': status.runtimeHandlers name "), message
    assert "is not a DNS-1123 label (lowercase letters, digits and '-', at most 63 characters)" in message
    assert "\n" not in message and "\x1b" not in message
