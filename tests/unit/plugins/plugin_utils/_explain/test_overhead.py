"""Overhead fit: pods whose requests + RuntimeClass overhead exceed a node's allocatable, and classes
whose overhead alone does. The cluster dicts have the shape ``runtimeclass_info`` returns."""
import json

import pytest
from support.judged import runtimeclass

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._explain.overhead import (
    overhead_findings,
    pod_request,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.quantity import parse_quantity

GPU = {"nvidia.com/gpu.present": "true"}
FINDING_KEYS = {"code", "severity", "host", "message", "remedy", "evidence", "handlers"}


def node(name, cpu="1", memory="4Gi", labels=None):
    return {"name": name, "labels": dict(GPU if labels is None else labels), "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
            "runtime_handlers": [], "addresses": []}


def pod(name, runtime_class="kata", node_name="gpu-1", cpu="900m", memory="1Gi", init=(), overhead=None,
        phase="Running", containers=None):
    return {"namespace": "ml", "name": name, "node": node_name, "phase": phase, "runtime_class": runtime_class,
            "containers": containers if containers is not None else [{"name": "main", "requests": {"cpu": cpu, "memory": memory}}],
            "init_containers": [{"name": f"init-{i}", "requests": requests} for i, requests in enumerate(init)],
            "overhead": overhead or {}, "sandbox_failures": []}


def cluster(runtimeclasses, nodes, pods=()):
    return {"runtimeclasses": runtimeclasses, "nodes": nodes, "pods": list(pods), "source": "test", "api_requests": 0}


KATA = runtimeclass("kata", overhead={"cpu": "250m", "memory": "120Mi"}, node_selector=GPU)


def test_900m_plus_250m_overhead_does_not_fit_a_1_cpu_node_that_900m_alone_would():
    findings = overhead_findings(cluster([KATA], [node("gpu-1")], [pod("train-0", overhead={"cpu": "250m", "memory": "120Mi"})]))
    assert [(f["code"], f["host"], f["severity"]) for f in findings] == [("POD_DOES_NOT_FIT_WITH_OVERHEAD", "gpu-1", "warning")]
    finding = findings[0]
    assert set(finding) == FINDING_KEYS and finding["handlers"] == []
    assert "900m requested + 250m overhead = 1150m > 1 allocatable" in finding["message"]
    assert "ml/train-0" in finding["message"] and "only because of the overhead" in finding["message"]
    evidence = finding["evidence"]
    assert evidence["fits_without_overhead"] is True and evidence["resources"] == ["cpu"]
    assert evidence["requests_with_overhead"] == ["cpu=1150m"] and evidence["allocatable"] == ["cpu=1"]
    assert evidence["overhead_source"] == "pod.spec.overhead" and evidence["handler"] == "kata"
    # Evidence is flat JSON: scalars and lists only.
    assert all(not isinstance(value, dict) for value in evidence.values())
    json.dumps(findings)


def test_same_pod_without_overhead_or_on_a_bigger_node_is_silent():
    plain = runtimeclass("kata")
    assert overhead_findings(cluster([plain], [node("gpu-1")], [pod("train-0")])) == []
    assert overhead_findings(cluster([KATA], [node("gpu-1", cpu="1150m")], [pod("train-0")])) == []
    assert overhead_findings(cluster([KATA], [node("gpu-1", cpu="2")], [pod("train-0")])) == []


def test_class_overhead_counts_when_the_pod_carries_none():
    # Created before the class had overhead: the next re-created pod gets the class's.
    [finding] = overhead_findings(cluster([KATA], [node("gpu-1")], [pod("train-0")]))
    assert finding["evidence"]["overhead_source"] == "RuntimeClass kata overhead.podFixed"


def test_pod_overhead_is_what_the_scheduler_counts():
    # A pod's own spec.overhead wins over a class edited later (admission copies it at creation only).
    small = runtimeclass("kata", overhead={"cpu": "50m"}, node_selector=GPU)
    [finding] = overhead_findings(cluster([small], [node("gpu-1")], [pod("train-0", overhead={"cpu": "250m"})]))
    assert finding["evidence"]["requests_with_overhead"] == ["cpu=1150m"]


def test_does_not_fit_even_without_overhead_says_so():
    [finding] = overhead_findings(cluster([KATA], [node("gpu-1")], [pod("big", cpu="2")]))
    assert "even without the overhead" in finding["message"]
    assert finding["evidence"]["fits_without_overhead"] is False


def test_every_exceeded_resource_is_named():
    [finding] = overhead_findings(cluster([KATA], [node("gpu-1", memory="1Gi")], [pod("train-0")]))
    assert finding["evidence"]["resources"] == ["cpu", "memory"]
    assert "memory 1Gi requested + 120Mi overhead = 1144Mi > 1Gi allocatable" in finding["message"]


@pytest.mark.parametrize("containers, init, expected_cpu", [
    # Containers run together and add up; init containers run one at a time and only raise the floor.
    ([{"name": "a", "requests": {"cpu": "300m"}}, {"name": "b", "requests": {"cpu": "400m"}}], [], "700m"),
    ([{"name": "a", "requests": {"cpu": "300m"}}], [{"cpu": "800m"}, {"cpu": "200m"}], "800m"),
    ([{"name": "a", "requests": {"cpu": "900m"}}], [{"cpu": "500m"}], "900m"),
    ([{"name": "a", "requests": {}}], [], "0"),
    ([], [], "0"),
])
def test_pod_request_follows_the_scheduler(containers, init, expected_cpu):
    without, with_overhead = pod_request(pod("p", containers=containers, init=init), {"cpu": parse_quantity("250m")})
    assert without.get("cpu", 0) == parse_quantity(expected_cpu)
    assert with_overhead["cpu"] == parse_quantity(expected_cpu) + parse_quantity("250m")


def test_init_container_larger_than_the_node_with_overhead():
    findings = overhead_findings(cluster([KATA], [node("gpu-1")], [pod("p", cpu="100m", init=[{"cpu": "900m"}])]))
    assert [f["evidence"]["requests_with_overhead"] for f in findings] == [["cpu=1150m"]]


def test_unscheduled_pod_is_judged_against_every_node_the_class_selects():
    nodes = [node("gpu-1"), node("gpu-2", cpu="1100m"), node("cpu-1", cpu="16", labels={})]
    pending = pod("train-0", node_name=None, phase="Pending")
    findings = overhead_findings(cluster([KATA], nodes, [pending]))
    # cpu-1 could hold it but the class's nodeSelector keeps it off: it fits nowhere it may go.
    assert [(f["host"], f["evidence"]["scheduled"]) for f in findings] == [("gpu-1", False), ("gpu-2", False)]
    assert "is not scheduled and does not fit node gpu-1" in findings[0]["message"]
    # One selected node that can hold it is enough: the scheduler will pick it.
    roomy = nodes + [node("gpu-3", cpu="2")]
    assert overhead_findings(cluster([KATA], roomy, [pending])) == []


def test_only_the_judged_nodes_are_named():
    """A run limited by -l to gpu-1 names no other node (issue 25 item 4); a pending pod is still weighed against
    every node it may go to."""
    nodes = [node("gpu-1"), node("gpu-2"), node("gpu-3")]
    pods = [pod("on-1", node_name="gpu-1"), pod("on-2", node_name="gpu-2"), pod("pending", node_name=None, phase="Pending")]
    assert sorted(f["host"] for f in overhead_findings(cluster([KATA], nodes, pods))) == ["gpu-1", "gpu-1", "gpu-2", "gpu-2", "gpu-3"]
    limited = overhead_findings(cluster([KATA], nodes, pods), judged_nodes=["gpu-1"])
    assert [(f["host"], f["evidence"]["pod"]) for f in limited] == [("gpu-1", "ml/on-1"), ("gpu-1", "ml/pending")]
    # one node that would hold the pending pod, even one outside the run, is enough: no finding anywhere
    roomy = nodes + [node("gpu-4", cpu="2")]
    assert [f["evidence"]["pod"] for f in overhead_findings(cluster([KATA], roomy, pods), judged_nodes=["gpu-1"])] == ["ml/on-1"]
    unreadable = runtimeclass("broken", overhead={"cpu": "lots"})
    assert [f["host"] for f in overhead_findings(cluster([unreadable], nodes), judged_nodes=[])] == [None]


def test_class_without_node_selector_selects_every_node():
    everywhere = runtimeclass("kata", overhead={"cpu": "250m"})
    nodes = [node("gpu-1"), node("cpu-1", cpu="900m", labels={})]
    findings = overhead_findings(cluster([everywhere], nodes, [pod("p", node_name=None, phase="Pending", cpu="800m")]))
    assert sorted(f["host"] for f in findings) == ["cpu-1", "gpu-1"]


def test_scheduled_pod_is_judged_against_its_own_node_only():
    nodes = [node("gpu-1", cpu="2"), node("gpu-2")]
    assert overhead_findings(cluster([KATA], nodes, [pod("p", node_name="gpu-1")])) == []
    [finding] = overhead_findings(cluster([KATA], nodes, [pod("p", node_name="gpu-2")]))
    assert finding["host"] == "gpu-2" and "is on node gpu-2" in finding["message"]


@pytest.mark.parametrize("changes", [
    {"phase": "Succeeded"}, {"phase": "Failed"}, {"runtime_class": None}, {"runtime_class": "unknown-class"},
    {"node": "node-not-listed"},
])
def test_pods_that_cannot_or_need_not_be_judged_are_skipped(changes):
    assert overhead_findings(cluster([KATA], [node("gpu-1")], [dict(pod("p"), **changes)])) == []


def test_class_overhead_alone_exceeding_a_selected_node():
    greedy = runtimeclass("kata", overhead={"cpu": "1500m", "memory": "120Mi"}, node_selector=GPU)
    nodes = [node("gpu-1"), node("gpu-2", cpu="2"), node("cpu-1", cpu="1", labels={})]
    findings = overhead_findings(cluster([greedy], nodes))
    assert [(f["code"], f["host"]) for f in findings] == [("RUNTIMECLASS_OVERHEAD_EXCEEDS_ALLOCATABLE", "gpu-1")]
    assert "RuntimeClass kata's overhead alone exceeds node gpu-1's allocatable (cpu 1500m > 1)" in findings[0]["message"]
    assert findings[0]["evidence"]["overhead"] == ["cpu=1500m", "memory=120Mi"]


def test_resource_the_node_does_not_list_counts_as_zero():
    gpu_overhead = runtimeclass("odd", overhead={"nvidia.com/gpu": "1"})
    [finding] = overhead_findings(cluster([gpu_overhead], [node("gpu-1")]))
    assert finding["evidence"]["resources"] == ["nvidia.com/gpu"]


def test_nodes_without_allocatable_are_not_judged():
    bare = dict(node("gpu-1"), allocatable={})
    assert overhead_findings(cluster([runtimeclass("kata", overhead={"cpu": "64"})], [bare], [pod("p")])) == []


def test_unreadable_quantities_are_findings_not_silence():
    findings = overhead_findings(cluster(
        [runtimeclass("kata", overhead={"cpu": "a lot"}, node_selector=GPU), runtimeclass("ok", overhead={"cpu": "250m"}, node_selector=GPU)],
        [node("gpu-1"), node("gpu-2", cpu="one")],
        [pod("p", runtime_class="ok", cpu="9OOm")]))
    codes = sorted((f["code"], f["host"] or "") for f in findings)
    assert codes == [("OVERHEAD_FIT_UNKNOWN", ""), ("OVERHEAD_FIT_UNKNOWN", "gpu-1"), ("OVERHEAD_FIT_UNKNOWN", "gpu-2")]
    messages = " | ".join(f["message"] for f in findings)
    assert "RuntimeClass 'kata' overhead.podFixed cpu 'a lot'" in messages
    assert "Node 'gpu-2' allocatable cpu 'one'" in messages
    assert "pod ml/p container 'main' requests cpu '9OOm'" in messages


def test_empty_or_missing_parts_give_no_findings():
    assert overhead_findings({}) == []
    assert overhead_findings(None) == []
    assert overhead_findings({"runtimeclasses": [KATA], "nodes": [node("gpu-1")]}) == []


def test_order_is_stable():
    nodes = [node(f"gpu-{i}") for i in (3, 1, 2)]
    pods = [pod(f"p{i}", node_name=f"gpu-{i}") for i in (2, 3, 1)]
    findings = overhead_findings(cluster([KATA], nodes, pods))
    assert [f["host"] for f in findings] == ["gpu-1", "gpu-2", "gpu-3"]
    assert findings == overhead_findings(cluster([KATA], list(reversed(nodes)), list(reversed(pods))))
