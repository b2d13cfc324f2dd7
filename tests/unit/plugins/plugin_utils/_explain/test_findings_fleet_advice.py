"""HANDLER_SERVED_NOWHERE gives only advice that cannot break a correct RuntimeClass (issue 14.5).

A run that judged only the nodes a staged rollout has not reached yet (no `nvidia-cdi` there) must not say
"did you mean `nvidia`?" nor "fix the handler", and must not claim that *no node* serves the handler when it
judged only some of the cluster's nodes.
"""
import pytest
from support.judged import runtimeclass
from support.paths import REPO_ROOT

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.manifest import read_manifest_file
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._explain.findings import fleet_findings
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._report.summary import fleet_lines, fleet_view

DEMO_CLUSTER = read_manifest_file(str(REPO_ROOT / "inventory" / "demo" / "cluster.yaml"))


def judged(node, loaded, required=(), configured=None, verdict=None, daemon=None):
    """A judged verdict as _verdict.judge returns it, reduced to what the fleet findings read."""
    missing = sorted(set(required) - set(loaded))
    return {
        "node": node,
        "status": verdict or ("MISSING" if missing else "OK"),
        "loaded_runtimes": sorted(loaded),
        "configured_runtimes": sorted(configured if configured is not None else loaded),
        "required_handlers": sorted(required),
        "missing_handlers": missing,
        "daemon_runtimes": daemon,
        "node_runtime_handlers": None,
        "findings": [],
    }


def node(name):
    return {"name": name, "labels": {}, "allocatable": {}, "runtime_handlers": [], "addresses": []}


def served_nowhere(verdicts, cluster, handler):
    [finding] = [item for item in fleet_findings(verdicts, cluster)
                 if item["code"] == "HANDLER_SERVED_NOWHERE" and item["handlers"] == [handler]]
    return finding


def test_staged_cdi_rollout_is_not_called_a_typo_of_nvidia():
    # Only gpu-node-03 judged (`--limit`): it serves nvidia and runc, and has no nvidia-cdi yet; the demo cluster has 9 Nodes.
    verdicts = [judged("gpu-node-03", ["nvidia", "runc"], required=["nvidia", "nvidia-cdi", "runc"])]
    finding = served_nowhere(verdicts, DEMO_CLUSTER, "nvidia-cdi")
    assert finding["message"] == (
        "RuntimeClass nvidia-cdi uses handler 'nvidia-cdi': no judged node serves it (1 of the cluster's 9 nodes judged).")
    assert "did you mean" not in finding["message"] and "Fix the handler" not in finding["remedy"]
    assert "closest_loaded" not in finding["evidence"]
    assert finding["remedy"].startswith("Configure a runtime named 'nvidia-cdi' in containerd on the nodes")
    assert "nodes this run did not judge may already serve it" in finding["remedy"]
    # ... and the terminal summary prints that sentence, not the wrong advice.
    view = fleet_view({"gpu-node-03": verdicts[0]}, {**DEMO_CLUSTER, "changed": False})
    [printed] = [line for line in fleet_lines(view) if "handler 'nvidia-cdi'" in line]
    assert "no judged node serves it" in printed and "did you mean" not in printed and "Fix the handler" not in printed


@pytest.mark.parametrize("handler, served", [("nvidia-cdi", "nvidia"), ("nvidia-legacy", "nvidia"), ("crun", "runc"),
                                             ("runsc", "runc"), ("kata-qemu", "kata-qemu2"), ("spin", "spinx")])
def test_well_known_handlers_are_never_suggested_away(handler, served):
    cluster = {"runtimeclasses": [runtimeclass("special", handler)], "nodes": [node("n1")]}
    finding = served_nowhere([judged("n1", [served, "runc"], required=[handler, "runc"])], cluster, handler)
    assert finding["message"] == f"RuntimeClass special uses handler {handler!r}: no node serves it."
    assert finding["remedy"] == (f"Configure a runtime named {handler!r} in containerd on the nodes that should run these pods, "
                                 "or delete the RuntimeClass.")


def test_a_name_some_judged_node_configures_is_no_typo():
    # n2's configuration defines nvidia2 but its CRI plugin is broken (nothing loaded): the name exists on purpose.
    verdicts = [judged("n1", ["nvidia", "runc"]), judged("n2", [], configured=["nvidia2", "runc"], required=["runc"])]
    cluster = {"runtimeclasses": [runtimeclass("gpu", "nvidia2")], "nodes": [node("n1"), node("n2")]}
    finding = served_nowhere(verdicts, cluster, "nvidia2")
    assert finding["message"] == "RuntimeClass gpu uses handler 'nvidia2': no node serves it."
    assert "Fix the handler" not in finding["remedy"]


def test_a_name_the_running_daemon_serves_is_no_typo():
    verdicts = [judged("n1", ["nvidia", "runc"], daemon=["nvidia", "nvidia2", "runc"])]
    cluster = {"runtimeclasses": [runtimeclass("gpu", "nvidia2")], "nodes": [node("n1")]}
    assert "did you mean" not in served_nowhere(verdicts, cluster, "nvidia2")["message"]


def test_a_name_that_is_a_runtimeclass_name_is_no_typo():
    verdicts = [judged("n1", ["nvidia", "runc"])]
    cluster = {"runtimeclasses": [runtimeclass("nvidia2"), runtimeclass("gpu", "nvidia2")], "nodes": [node("n1")]}
    finding = served_nowhere(verdicts, cluster, "nvidia2")
    assert finding["message"] == "RuntimeClass gpu, nvidia2 uses handler 'nvidia2': no node serves it."


def test_a_real_typo_still_gets_its_suggestion():
    verdicts = [judged("n1", ["nvidia", "runc"], required=["nvdia", "runc"])]
    cluster = {"runtimeclasses": [runtimeclass("nvidia-typo", "nvdia")], "nodes": [node("n1")]}
    finding = served_nowhere(verdicts, cluster, "nvdia")
    assert finding["message"] == "RuntimeClass nvidia-typo uses handler 'nvdia': no node serves it (did you mean `nvidia`?)."
    assert finding["remedy"] == "Fix the handler of RuntimeClass nvidia-typo (probably 'nvidia'), or configure 'nvdia' on the nodes."
    assert finding["evidence"]["closest_loaded"] == "nvidia"


def test_the_demo_typo_is_served_by_no_judged_node():
    # The demo judges 7 of its cluster's 9 Nodes (gpu-node-08 unreachable, cpu-node-01 not in the inventory).
    verdicts = [judged(f"gpu-node-0{number}", ["nvidia", "runc"]) for number in range(1, 7)]
    verdicts.append(judged("gpu-node-07", ["nvidia", "runc"], required=["nvdia", "nvidia", "runc"]))
    verdicts.append({"node": "gpu-node-08", "status": "UNKNOWN"})
    finding = served_nowhere(verdicts, DEMO_CLUSTER, "nvdia")
    assert finding["message"].startswith(
        "RuntimeClass nvidia-typo uses handler 'nvdia': no judged node serves it (7 of the cluster's 9 nodes judged) "
        "(did you mean `nvidia`?); ")
    assert finding["evidence"]["nodes_checked"] == 7 and finding["evidence"]["cluster_nodes"] == 9


def test_unknown_cluster_nodes_mean_only_judged_nodes_are_spoken_for():
    # runtime_gate_list_nodes=false, or a RuntimeClasses file without Nodes: other nodes may serve the handler.
    cluster = {"runtimeclasses": [runtimeclass("kata")]}
    finding = served_nowhere([judged("n1", ["runc"])], cluster, "kata")
    assert finding["message"] == (
        "RuntimeClass kata uses handler 'kata': no judged node serves it (1 judged; the cluster's other nodes are unknown).")
    assert finding["evidence"]["cluster_nodes"] is None


def test_judged_hosts_that_are_not_the_clusters_nodes_are_a_subset():
    # As many hosts as Nodes, but one of them is no Node of this cluster: n2 was not judged.
    cluster = {"runtimeclasses": [runtimeclass("kata")], "nodes": [node("n1"), node("n2")]}
    finding = served_nowhere([judged("n1", ["runc"]), judged("other", ["runc"])], cluster, "kata")
    assert "no judged node serves it (1 of the cluster's 2 nodes judged)" in finding["message"]
