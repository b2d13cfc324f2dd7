"""Which handler labels node_handler_labels puts on each judged Node, and how it binds a RuntimeClass: the pure plan."""
import pytest

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._cluster_writers.gate_labels import (
    binding_warnings,
    bound_body,
    check_prefix,
    label_warnings,
    plan_binding,
    plan_labels,
)

PREFIX = "handler.runtime-gate.gpufleet.io"
NVIDIA = f"{PREFIX}/nvidia"
RUNC = f"{PREFIX}/runc"
CDI = f"{PREFIX}/nvidia-cdi"
POOL = {"pool": "gpu"}


def verdict(node, status, loaded=()):
    return {"node": node, "status": status, "loaded_runtimes": list(loaded)}


def by_node(plan):
    return {entry["node"]: entry for entry in plan["nodes"]}


@pytest.mark.parametrize(("status", "loaded", "labels_before", "add", "remove"), [
    # An OK node gets one label per served handler.
    ("OK", ["nvidia", "runc"], {}, [NVIDIA, RUNC], []),
    # Already labelled: nothing to write.
    ("OK", ["nvidia", "runc"], {NVIDIA: "served", RUNC: "served"}, [], []),
    # A handler no longer served loses its label.
    ("OK", ["runc"], {NVIDIA: "served", RUNC: "served"}, [], [NVIDIA]),
    # A MISSING node keeps the labels of what it does serve, loses the others.
    ("MISSING", ["runc"], {CDI: "served"}, [RUNC], [CDI]),
    # An UNKNOWN node serves nothing proven: every label of ours goes, whatever loaded_runtimes says.
    ("UNKNOWN", ["nvidia"], {NVIDIA: "served"}, [], [NVIDIA]),
    # A value of ours that is not "served" is rewritten.
    ("OK", ["nvidia"], {NVIDIA: "false"}, [NVIDIA], []),
])
def test_a_judged_node_carries_exactly_the_labels_of_what_it_serves(status, loaded, labels_before, add, remove):
    other = {"kubernetes.io/hostname": "n1", "pool": "gpu", "handler.example.com/nvidia": "yes"}
    plan = plan_labels([verdict("n1", status, loaded)], {"n1": {**other, **labels_before}})
    (entry,) = plan["nodes"]
    assert (entry["add"], entry["remove"]) == (add, remove)
    assert entry["action"] == ("label" if add or remove else "none")
    expected_patch = {key: "served" for key in add} | {key: None for key in remove}
    assert entry["patch"] == ({"metadata": {"labels": expected_patch}} if expected_patch else None)
    # Labels outside the prefix are neither in the patch nor lost from the view after the run.
    assert plan["labels_after"]["n1"] == {**other, **entry["labels_after"]}


def test_nodes_not_judged_are_reported_and_left_alone_and_unknown_names_are_not_found():
    nodes = {"ok": {}, "spare": {NVIDIA: "served", "pool": "gpu"}, "cpu": {"pool": "cpu"}}
    plan = plan_labels([verdict("ok", "OK", ["nvidia"]), verdict("gone", "OK", ["nvidia"])], nodes)
    assert plan["unjudged"] == [{"node": "cpu", "labels": {}}, {"node": "spare", "labels": {NVIDIA: "served"}}]
    assert plan["labels_after"]["spare"] == nodes["spare"]
    entries = by_node(plan)
    assert set(entries) == {"ok", "gone"}
    assert (entries["gone"]["action"], entries["gone"]["patch"]) == ("not_found", None)
    warnings = label_warnings(plan)
    assert any("'gone' was judged (OK) but the cluster has no Node of that name" in text for text in warnings)
    assert any("did not judge keep their handler labels, unverified: spare" in text for text in warnings)
    assert not any("cpu" in text for text in warnings)


@pytest.mark.parametrize(("handler", "problem"), [
    ("a" * 64, "64 characters"),
    ("runc/v2", "a label name is alphanumerics"),
    ("-runc", "a label name is alphanumerics"),
    ("runc.", "a label name is alphanumerics"),
    ("runc\n", "a label name is alphanumerics"),  # `$` would match before the newline
    ("", "not a non-empty string"),
])
def test_a_handler_that_cannot_be_a_label_name_is_reported_not_dropped_silently(handler, problem):
    plan = plan_labels([verdict("n1", "OK", ["runc", handler])], {"n1": {}})
    (entry,) = plan["nodes"]
    assert entry["add"] == [RUNC]
    assert [item["handler"] for item in entry["unlabelable"]] == [handler]
    assert problem in entry["unlabelable"][0]["problem"]
    (warning,) = label_warnings(plan)
    assert "cannot be a label name" in warning and "no label says it is served" in warning


@pytest.mark.parametrize("handler", ["a" * 63, "Nvidia_CDI", "kata.qemu", "x"])
def test_label_names_kubernetes_accepts_are_labelled(handler):
    (entry,) = plan_labels([verdict("n1", "OK", [handler])], {"n1": {}})["nodes"]
    assert entry["add"] == [f"{PREFIX}/{handler}"] and not entry["unlabelable"]


@pytest.mark.parametrize(("verdicts", "fragment"), [
    ({"n1": "OK"}, "verdicts must be a list"),
    (["OK"], "verdicts item 1 is 'OK', not a node_crosscheck result"),
    ([{"status": "OK", "loaded_runtimes": []}], "verdicts item 1 has no 'node'"),
    ([verdict("n1", "ok")], "'status' is 'ok', not one of OK, MISSING, UNKNOWN"),
    ([{"node": "n1", "status": "OK"}], "'loaded_runtimes' is None, not a list"),
    ([{"node": "n1", "status": "MISSING", "loaded_runtimes": "runc"}], "'loaded_runtimes' is 'runc'"),
    ([verdict("n1", "OK"), verdict("n1", "MISSING")], "node 'n1' is judged twice"),
])
def test_a_verdict_that_cannot_be_read_stops_the_plan(verdicts, fragment):
    with pytest.raises(RuntimeGateError) as refused:
        plan_labels(verdicts, {"n1": {}})
    assert fragment in str(refused.value)


def test_an_unknown_verdict_needs_no_loaded_runtimes():
    (entry,) = plan_labels([{"node": "n1", "status": "UNKNOWN"}], {"n1": {NVIDIA: "served"}})["nodes"]
    assert entry["remove"] == [NVIDIA] and entry["served"] == []


@pytest.mark.parametrize(("prefix", "fragment"), [
    ("Handler.Example.com", "not a DNS-1123 subdomain"),
    ("a" * 254, "not a DNS-1123 subdomain"),
    ("example.com/", "not a DNS-1123 subdomain"),
    ("example.com\n", "not a DNS-1123 subdomain"),
    ("", "must be a DNS subdomain"),
    ("kubernetes.io", "reserved"),
    ("node.kubernetes.io", "reserved"),
    ("k8s.io", "reserved"),
])
def test_a_prefix_we_cannot_own_is_refused(prefix, fragment):
    with pytest.raises(RuntimeGateError) as refused:
        check_prefix(prefix)
    assert fragment in str(refused.value)
    with pytest.raises(RuntimeGateError):
        plan_labels([], {}, prefix)


def test_a_custom_prefix_owns_only_its_own_keys():
    (entry,) = plan_labels([verdict("n1", "OK", ["runc"])], {"n1": {NVIDIA: "served"}}, "gate.example.com")["nodes"]
    assert (entry["add"], entry["remove"], entry["labels_before"]) == (["gate.example.com/runc"], [], {})


def runtimeclass(name, handler, node_selector=None, **extra):
    obj = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "handler": handler,
           "metadata": {"name": name, "resourceVersion": "42", "labels": {"team": "ml"}, "uid": "u-1",
                        "managedFields": [{"manager": "kubectl"}]}, **extra}
    if node_selector is not None:
        obj["scheduling"] = {"nodeSelector": node_selector, "tolerations": [{"key": "gpu", "operator": "Exists"}]}
    return obj


def test_binding_adds_the_label_to_the_selector_and_names_the_nodes_it_leaves():
    labels_after = {"ok": {**POOL, NVIDIA: "served"}, "missing": dict(POOL), "cpu": {"pool": "cpu"}}
    binding = plan_binding(runtimeclass("nvidia", "nvidia", POOL), labels_after)
    assert binding == {"name": "nvidia", "handler": "nvidia", "label": NVIDIA, "action": "bind",
                       "node_selector_before": POOL, "node_selector_after": {**POOL, NVIDIA: "served"},
                       "labelled_nodes": ["ok"], "unlabelled_nodes": ["missing"]}
    (warning,) = binding_warnings(binding)
    assert warning.startswith(f"binding RuntimeClass 'nvidia' to {NVIDIA}=served: its nodeSelector pool=gpu now places "
                              "pods on 1 node(s) without that label")
    assert warning.endswith(": missing")


def test_binding_a_class_without_selector_counts_every_node_and_warns_when_none_is_labelled():
    labels_after = {"a": {}, "b": {RUNC: "served"}}
    binding = plan_binding(runtimeclass("nvidia", "nvidia"), labels_after)
    assert binding["unlabelled_nodes"] == ["a", "b"] and binding["labelled_nodes"] == []
    assert binding["node_selector_before"] is None and binding["node_selector_after"] == {NVIDIA: "served"}
    first, second = binding_warnings(binding)
    assert "it (no nodeSelector: every node)" in first and first.endswith(": a, b")
    assert "no node carries" in second and "every new pod of the class stays Pending" in second


def test_a_class_already_bound_is_left_alone():
    binding = plan_binding(runtimeclass("nvidia", "nvidia", {**POOL, NVIDIA: "served"}), {"x": dict(POOL)})
    assert binding["action"] == "none" and binding_warnings(binding) == []


def test_the_bound_body_is_a_conditional_replace_that_keeps_the_rest():
    live = runtimeclass("nvidia", "nvidia", POOL, overhead={"podFixed": {"cpu": "250m"}})
    binding = plan_binding(live, {})
    body = bound_body(live, binding)
    assert body["metadata"] == {"name": "nvidia", "resourceVersion": "42", "labels": {"team": "ml"}, "uid": "u-1"}
    assert body["scheduling"] == {"nodeSelector": {**POOL, NVIDIA: "served"},
                                  "tolerations": [{"key": "gpu", "operator": "Exists"}]}
    assert (body["handler"], body["overhead"]) == ("nvidia", {"podFixed": {"cpu": "250m"}})
    assert live["scheduling"]["nodeSelector"] == POOL  # the object read is not changed


def test_the_whole_plan_feeds_the_binding():
    nodes = {"ok": dict(POOL), "missing": {**POOL, NVIDIA: "served"}, "unjudged": {**POOL, NVIDIA: "served"}}
    plan = plan_labels([verdict("ok", "OK", ["nvidia"]), verdict("missing", "MISSING", ["runc"])], nodes)
    binding = plan_binding(runtimeclass("nvidia", "nvidia", POOL), plan["labels_after"])
    # After the run: ok carries the label, missing lost it, the unjudged node keeps its (unverified) one.
    assert binding["labelled_nodes"] == ["ok", "unjudged"] and binding["unlabelled_nodes"] == ["missing"]


def test_a_verdict_is_read_from_its_status_key():
    """A verdict says its status under ``status``; the pre-release ``verdict`` key alone is refused."""
    (entry,) = plan_labels([{"node": "n1", "status": "UNKNOWN"}], {"n1": {NVIDIA: "served"}})["nodes"]
    assert entry["remove"] == [NVIDIA] and entry["served"] == []
    with pytest.raises(RuntimeGateError) as refused:
        plan_labels([{"node": "n1", "verdict": "OK", "loaded_runtimes": []}], {"n1": {}})
    assert "'status' is None" in str(refused.value)
