"""runtimeclass_info with pods: true against the stand-in: Pods and FailedCreatePodSandBox Events, paginated, the
same from the API as from a kubectl export, and a request count that does not grow with the inventory."""
import json
import subprocess

import pytest
import yaml
from kube_runs import DEMO_OK_HOSTS, load_demo_cluster, run_crosscheck, run_module
from support.kube_fixtures import event, node, pod, runtimeclass
from support.tools import require_command

MODULE = "gpufleet.runtime_gate.runtimeclass_info"
NO_RUNTIME = ('Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: '
              'no runtime for "nvidia" is configured')
STUCK = pod("trainer-0", "ml", node_name="gpu-2", runtime_class_name="nvidia", phase="Pending",
            requests={"cpu": "900m"}, overhead={"cpu": "250m"}, uid="6b0e3c1a-0000-4000-8000-00000000000a")
PODS = [STUCK, pod("trainer-1", "ml", node_name="gpu-1", runtime_class_name="nvidia", init_requests={"cpu": "1"}),
        pod("web-0", "default", node_name="cpu-1"), pod("web-1", "default", node_name="cpu-1"),
        pod("queued", "ml", runtime_class_name="nvidia")]
EVENTS = [event(STUCK, NO_RUNTIME, count=14), event(STUCK, "Successfully assigned ml/trainer-0 to gpu-2", reason="Scheduled"),
          event(PODS[2], "Pulling image", reason="Pulling"), event(STUCK, NO_RUNTIME),
          event(pod("deleted-0", "ml", node_name="gpu-2"), NO_RUNTIME)]  # its pod is gone: reported nowhere


@pytest.fixture
def cluster(kube_api):
    kube_api.set_objects(runtimeclasses=[runtimeclass("nvidia", "nvidia")],
                         nodes=[node("gpu-1", internal_ip="10.0.0.11"), node("gpu-2"), node("cpu-1")],
                         pods=PODS, events=EVENTS)
    return kube_api


def test_pods_come_with_their_sandbox_failures_page_by_page(cluster):
    run = run_module(MODULE, {"kubeconfig": cluster.kubeconfig_path, "nodes": True, "pods": True, "page_size": 3})
    assert run.returncode == 0, run.output
    pods = {f"{item['namespace']}/{item['name']}": item for item in run.result["pods"]}
    # The web pods name no RuntimeClass: read (their pages are counted below), left out of the result.
    assert list(pods) == ["ml/queued", "ml/trainer-0", "ml/trainer-1"]
    assert pods["ml/trainer-0"] == {
        "namespace": "ml", "name": "trainer-0", "node": "gpu-2", "phase": "Pending", "runtime_class": "nvidia",
        "containers": [{"name": "main", "requests": {"cpu": "900m"}}], "init_containers": [],
        "overhead": {"cpu": "250m"}, "sandbox_failures": [NO_RUNTIME]}
    assert pods["ml/queued"]["node"] is None and pods["ml/trainer-1"]["init_containers"] == [
        {"name": "init", "requests": {"cpu": "1"}}]
    assert all(not item["sandbox_failures"] for name, item in pods.items() if name != "ml/trainer-0")
    assert {item["name"]: item["addresses"][0]["address"] for item in run.result["nodes"]}["gpu-1"] == "10.0.0.11"

    pod_pages, event_pages = cluster.list_calls("pods"), cluster.list_calls("events")
    assert len(pod_pages) == 3 and all(page.query["limit"] == "3" for page in pod_pages)  # 5 pods, 2 a page
    assert [page.query.get("fieldSelector") for page in event_pages] == ["reason=FailedCreatePodSandBox"] * 2
    assert all(page.path in ("/api/v1/pods", "/api/v1/events") for page in pod_pages + event_pages)
    assert run.result["api_requests"] == 3 + 2 + 1 + 2  # pods, events (3 matching), runtimeclasses, nodes


def test_pods_are_empty_unless_asked(cluster):
    run = run_module(MODULE, {"kubeconfig": cluster.kubeconfig_path})
    assert run.returncode == 0 and run.result["pods"] == [], run.output
    assert not cluster.list_calls("pods") and not cluster.list_calls("events")


def test_kubectl_export_gives_the_same_pods_and_the_stand_in_selects_fields_like_the_apiserver(cluster, tmp_path):
    kubectl = require_command("kubectl", "kubernetes-client")

    def kubectl_run(*args):
        return subprocess.run([kubectl, "--kubeconfig", str(cluster.kubeconfig_path), "--cache-dir",
                               str(tmp_path / "cache"), *args], capture_output=True, text=True, timeout=60, check=False)

    export = kubectl_run("get", "runtimeclass,node,pod,event", "-A", "-o", "yaml")
    assert export.returncode == 0, export.stderr
    manifest = tmp_path / "cluster.yaml"
    manifest.write_text(export.stdout)
    from_file = run_module(MODULE, {"src": manifest, "nodes": True, "pods": True})
    from_api = run_module(MODULE, {"kubeconfig": cluster.kubeconfig_path, "nodes": True, "pods": True})
    assert from_file.returncode == 0, from_file.output
    assert from_file.result["pods"] == from_api.result["pods"] and from_file.result["nodes"] == from_api.result["nodes"]

    selected = kubectl_run("get", "events", "-A", "--field-selector", "reason=FailedCreatePodSandBox,involvedObject.name=trainer-0",
                           "-o", "json")
    assert selected.returncode == 0, selected.stderr
    assert [item["message"] for item in json.loads(selected.stdout)["items"]] == [NO_RUNTIME, NO_RUNTIME]
    not_scheduled = kubectl_run("get", "events", "-A", "--field-selector", "reason!=Scheduled", "-o", "json")
    assert len(json.loads(not_scheduled.stdout)["items"]) == 4
    on_cpu = kubectl_run("get", "pods", "-A", "--field-selector", "spec.nodeName=cpu-1", "-o", "name")
    assert on_cpu.stdout.split() == ["pod/web-0", "pod/web-1"]
    unsupported = kubectl_run("get", "pods", "-A", "--field-selector", "spec.runtimeClassName=nvidia")
    assert unsupported.returncode != 0 and '"spec.runtimeClassName" is not a known field selector' in unsupported.stderr


def test_api_requests_do_not_grow_with_the_inventory(kube_api, tmp_path):
    load_demo_cluster(kube_api)
    counts = []
    for hosts in (DEMO_OK_HOSTS[:1], [f"gpu-node-0{number}" for number in range(1, 8)]):
        before = len(kube_api.requests)
        workdir = tmp_path / str(len(hosts))
        workdir.mkdir()
        run = run_crosscheck(workdir, hosts, {"K8S_AUTH_KUBECONFIG": kube_api.kubeconfig_path})
        assert len(run.verdicts) == len(hosts), run.output
        assert yaml.safe_load(run.written["report/report.json"]) is not None
        counts.append(len(kube_api.requests) - before)
    assert counts[0] == counts[1] and kube_api.list_calls("pods") and kube_api.list_calls("events"), counts
