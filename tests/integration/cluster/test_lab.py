"""The seed lab's steps against a real control plane (kube-apiserver, etcd, kube-scheduler, kwok Nodes).

What the API stand-in cannot show, shown here with the real components: the apiserver accepts a RuntimeClass whose
handler exists nowhere and the scheduler places its pod; the RuntimeClass admission plugin writes the class's overhead
into each pod; the scheduler leaves exactly the pods whose requests + overhead exceed a node Pending — and the
project's overhead warning names exactly those pods. Then runtimeclass_info, runtimeclass_apply and the k8s_nodes
inventory against the real server, pagination with its real continue tokens, and the real 410 after etcd compaction.
Every expectation about the cluster is read back from the server, never assumed.
"""
import json

import yaml
from kube_runs import DEMO, ansible_env, assert_one_clear_failure, run_module
from kubernetes import client as kube_client
from kubernetes.client.exceptions import ApiException

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.client import build_api_client
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.session import ApiSession

from .lab_plan import LAB_PODS, NAMESPACE, NODE_IPS, NODES, OVERHEAD, RUNTIME_HANDLERS, RUNTIMECLASSES, SCHEDULABLE, lab_pod

INFO = "gpufleet.runtime_gate.runtimeclass_info"
APPLY = "gpufleet.runtime_gate.runtimeclass_apply"
POD_CODE = "POD_DOES_NOT_FIT_WITH_OVERHEAD"
EXPIRED_SECONDS = 40  # the watch cache notices an etcd compaction within ~15 s (compactorPollPeriod)


def pods_on_server(kube_cluster):
    """Every pod of the cluster as the server has it now: ``{"ns/name": pod}``."""
    return {f"{item['metadata']['namespace']}/{item['metadata']['name']}": item
            for item in kube_cluster.get("pods", "--all-namespaces")["items"]}


def left_pending(pods):
    """The pods the scheduler left Pending: no node, and its PodScheduled=False/Unschedulable condition."""
    pending = set()
    for name, item in pods.items():
        scheduled = {c["type"]: c for c in item["status"].get("conditions") or ()}.get("PodScheduled", {})
        if not item["spec"].get("nodeName") and item["status"]["phase"] == "Pending":
            assert (scheduled.get("status"), scheduled.get("reason")) == ("False", "Unschedulable"), item["status"]
            pending.add(name)
    return pending


def module_env(kube_cluster, token=None):
    return ansible_env(**kube_cluster.auth_env(token))


def cluster_info(kube_cluster, **args):
    run = run_module(INFO, {"nodes": True, "pods": True, **args}, env=module_env(kube_cluster))
    assert run.returncode == 0, run.output
    return run


def test_the_apiserver_accepts_a_mistyped_handler_and_the_scheduler_places_its_pod(kube_cluster, lab):
    classes = {item["metadata"]["name"]: item for item in kube_cluster.get("runtimeclasses")["items"]}
    assert {name: classes[name]["handler"] for name in ("nvidia", "nvidia-cdi", "nvidia-typo")} == {
        "nvidia": "nvidia", "nvidia-cdi": "nvidia-cdi", "nvidia-typo": "nvdia"}
    # Nothing checks a handler: the pod of the 'nvdia' class is bound, and kwok (the "kubelet") runs it.
    running = kube_cluster.wait_for("pod train-canary-0 Running", lambda: in_phase(kube_cluster, "train-canary-0", "Running"))
    assert running["spec"]["nodeName"] == "gpu-node-07"
    # RuntimeClass admission copied the class's scheduling into the pod: it can only go to the canary pool.
    assert running["spec"]["nodeSelector"] == {"gpufleet.example/pool": "canary"}
    assert running["spec"]["runtimeClassName"] == "nvidia-typo" and running["spec"]["overhead"] == OVERHEAD

    # What admission does check: the class must exist, and a pod may not bring an overhead of its own.
    missing_class = kube_cluster.apply_objects(lab_pod("no-class-0", "nvidia-tpyo", "100m"), check=False)
    assert missing_class.returncode != 0 and 'RuntimeClass "nvidia-tpyo" not found' in missing_class.stderr, missing_class.stderr
    own_overhead = kube_cluster.apply_objects(lab_pod("own-overhead-0", "nvidia-typo", "100m", overhead={"cpu": "1m"}),
                                              check=False)
    assert own_overhead.returncode != 0 and "Overhead" in own_overhead.stderr, own_overhead.stderr


def in_phase(kube_cluster, name, phase):
    obj = kube_cluster.get("pod", name, "-n", NAMESPACE)
    return obj if obj["status"]["phase"] == phase else None


def test_admission_writes_the_overhead_and_the_scheduler_leaves_the_pods_it_outgrows_pending(kube_cluster, lab):
    nodes = {item["metadata"]["name"]: item for item in kube_cluster.get("nodes")["items"]}
    for name in NODES:  # kwok marked them Ready; allocatable is what we registered
        assert {c["type"]: c["status"] for c in nodes[name]["status"]["conditions"]}["Ready"] == "True"
        assert nodes[name]["status"]["allocatable"]["cpu"] == "1"
        assert bool(nodes[name]["spec"].get("unschedulable")) is (name not in SCHEDULABLE)
    pods = pods_on_server(kube_cluster)
    lab_names = {f"{NAMESPACE}/{name}" for name, _class, _cpu in LAB_PODS}
    assert set(pods) == lab_names
    overheads = {name.split("/")[1]: item["spec"].get("overhead") for name, item in pods.items()}
    assert overheads == {"train-canary-0": OVERHEAD, "train-0": None, "infer-vm-0": OVERHEAD,
                         "bigmem-canary-0": OVERHEAD, "train-vm-0": OVERHEAD}

    bound = {name.split("/")[1]: item["spec"]["nodeName"] for name, item in pods.items() if item["spec"].get("nodeName")}
    assert bound == {"train-canary-0": "gpu-node-07", "train-0": "gpu-node-01", "infer-vm-0": "gpu-node-07"}
    pending = left_pending(pods)
    assert pending == {f"{NAMESPACE}/bigmem-canary-0", f"{NAMESPACE}/train-vm-0"}
    # The same 900m binds without overhead (train-0) and stays Pending with 250m of it (train-vm-0).
    for name in pending:
        message = {c["type"]: c for c in pods[name]["status"]["conditions"]}["PodScheduled"]["message"]
        assert "Insufficient cpu" in message, message


def test_the_overhead_warning_names_exactly_the_pods_the_scheduler_left_pending(kube_cluster, lab, lab_crosscheck):
    report = json.loads(lab_crosscheck.written["report/report.json"])
    warnings = [finding for finding in report["overhead_findings"] if finding["code"] == POD_CODE]
    warned = {finding["evidence"]["pod"] for finding in warnings}
    assert warned == left_pending(pods_on_server(kube_cluster)), lab_crosscheck.output
    # One finding per node the pod's class selects: the canary node for nvidia-typo, every node for nvidia-vm.
    nodes_of = {}
    for finding in warnings:
        nodes_of.setdefault(finding["evidence"]["pod"], set()).add(finding["host"])
        assert finding["severity"] == "warning" and finding["evidence"]["fits_without_overhead"] is True
        assert finding["evidence"]["scheduled"] is False and finding["evidence"]["overhead_source"] == "pod.spec.overhead"
        assert "only because of the overhead" in finding["message"]
    assert nodes_of == {f"{NAMESPACE}/bigmem-canary-0": {"gpu-node-07"}, f"{NAMESPACE}/train-vm-0": set(NODES)}
    assert not [finding for finding in report["overhead_findings"] if finding["code"] != POD_CODE]
    assert "Overhead warnings" in lab_crosscheck.output


def test_crosscheck_over_the_kwok_nodes_gives_the_labs_verdicts(lab_crosscheck):
    expected = yaml.safe_load((DEMO / "expected-verdicts.yml").read_text())["hosts"]
    verdicts = lab_crosscheck.verdicts
    assert lab_crosscheck.returncode == 2, lab_crosscheck.output  # gpu-node-07 is MISSING 'nvdia'
    assert {host: (verdict["status"], verdict["missing_handlers"]) for host, verdict in verdicts.items()} == {
        **{host: (expected[host]["status"], expected[host]["missing_handlers"]) for host in SCHEDULABLE},
        "gpu-node-06": ("MISSING", ["nvidia-cdi"])}
    # The SSH-free view: gpu-node-06's dump serves nvidia-cdi (the demo expects OK from it), but the Node's
    # status.runtimeHandlers, as the real apiserver stored it, lacks it: not served.
    assert expected["gpu-node-06"]["status"] == "OK"
    assert "node.status.runtimeHandlers lacks nvidia-cdi: counted as not served" in verdicts["gpu-node-06"]["notes"]
    assert not [note for host in SCHEDULABLE for note in verdicts[host]["notes"] if "runtimeHandlers" in note]
    report = json.loads(lab_crosscheck.written["report/report.json"])
    (nowhere,) = [finding for finding in report["fleet_findings"] if finding["code"] == "HANDLER_SERVED_NOWHERE"]
    assert nowhere["severity"] == "error" and nowhere["evidence"]["handler"] == "nvdia"
    assert nowhere["evidence"]["required_on"] == ["gpu-node-07"] and nowhere["evidence"]["cluster_nodes"] == len(NODES)
    assert {text.split()[0] for text in nowhere["evidence"]["pods"]} == {f"{NAMESPACE}/train-canary-0",
                                                                         f"{NAMESPACE}/bigmem-canary-0"}
    assert f"{NAMESPACE}/train-canary-0 node=gpu-node-07 phase=Running" in nowhere["evidence"]["pods"]


def test_runtimeclass_info_reads_what_the_real_server_holds(kube_cluster, lab):
    run = cluster_info(kube_cluster)
    assert run.result["source"] == {"type": "api", "server": kube_cluster.server}
    classes = {item["name"]: item for item in run.result["runtimeclasses"]}
    for obj in RUNTIMECLASSES:
        name = obj["metadata"]["name"]
        assert classes[name] == {"name": name, "handler": obj["handler"],
                                 "overhead_pod_fixed": (obj.get("overhead") or {}).get("podFixed"),
                                 "node_selector": (obj.get("scheduling") or {}).get("nodeSelector"), "tolerations": []}
    nodes = {item["name"]: item for item in run.result["nodes"]}
    assert sorted(nodes) == sorted(NODES)
    for name, labels in NODES.items():
        assert nodes[name]["labels"] == {"kubernetes.io/hostname": name, **labels}
        assert nodes[name]["allocatable"] == {"cpu": "1", "memory": "4Gi", "pods": "110"}
        assert [handler["name"] for handler in nodes[name]["runtime_handlers"]] == RUNTIME_HANDLERS[name]
        assert {"type": "InternalIP", "address": NODE_IPS[name]} in nodes[name]["addresses"]
    pods = {f"{item['namespace']}/{item['name']}": item for item in run.result["pods"]}
    # Pods that name no RuntimeClass are read and left out of the result.
    server_pods = {name: item for name, item in pods_on_server(kube_cluster).items() if item["spec"].get("runtimeClassName")}
    assert set(pods) == set(server_pods) and pods
    for name, item in pods.items():
        assert (item["node"], item["phase"], item["overhead"], item["runtime_class"]) == (
            server_pods[name]["spec"].get("nodeName"), server_pods[name]["status"]["phase"],
            server_pods[name]["spec"].get("overhead") or {}, server_pods[name]["spec"]["runtimeClassName"])


def test_pagination_follows_the_real_servers_continue_tokens(kube_cluster, lab):
    # The modules' own client (build_api_client), pages of one object: every page but the last carries a new token.
    api = build_api_client({"kubeconfig": str(kube_cluster.admin_kubeconfig)})
    try:
        nodev1 = kube_client.NodeV1Api(api)
        whole = [item.metadata.name for item in nodev1.list_runtime_class().items]
        names, tokens, token = [], [], None
        while True:
            page = nodev1.list_runtime_class(limit=1, _continue=token)
            names.extend(item.metadata.name for item in page.items)
            token = page.metadata._continue  # pylint: disable=protected-access
            if not token:
                break
            tokens.append(token)
    finally:
        api.close()
    assert names == whole and len(whole) >= len(RUNTIMECLASSES)
    assert len(tokens) == len(whole) - 1 and len(set(tokens)) == len(tokens)

    # runtimeclass_info with page_size 1: one request per object of each list (the FailedCreatePodSandBox Events:
    # none, one page), and the same answer as with the default page size.
    counts = {kind: len(kube_cluster.get(kind, "--all-namespaces")["items"]) for kind in ("runtimeclasses", "nodes", "pods")}
    paged = cluster_info(kube_cluster, page_size=1)
    assert paged.result["api_requests"] == sum(counts.values()) + 1, (counts, paged.result["api_requests"])
    whole_run = cluster_info(kube_cluster)
    assert whole_run.result["api_requests"] == 4
    for key in ("runtimeclasses", "nodes", "pods"):
        assert paged.result[key] == whole_run.result[key]


def test_a_continue_token_from_before_an_etcd_compaction_gets_the_real_410_and_the_list_restarts(kube_cluster, lab):
    options = {"kubeconfig": str(kube_cluster.admin_kubeconfig)}
    with ApiSession(options) as session:
        nodev1 = kube_client.NodeV1Api(session.client)
        first = nodev1.list_runtime_class(limit=1)
        stale = first.metadata._continue  # pylint: disable=protected-access
        assert stale
        kube_cluster.kubectl("annotate", "namespace", NAMESPACE, "gpufleet.example/after-token=1", "--overwrite")
        kube_cluster.compact_etcd()

        def expired():
            try:
                nodev1.list_runtime_class(limit=1, _continue=stale)
            except ApiException as err:
                return err
            return None

        gone = kube_cluster.wait_for("410 for a continue token older than the compaction", expired, EXPIRED_SECONDS, 0.5)
        assert gone.status == 410, gone.body
        status = json.loads(gone.body)
        assert status["reason"] == "Expired" and "continue parameter is too old" in status["message"]

        # The modules' list (ApiSession.list_all): when the server answers a continue with 410, it starts over once.
        asked = []

        def list_call(**kwargs):
            if kwargs.get("_continue") and not any(token == stale for token in asked):
                kwargs["_continue"] = stale  # the token this list received is swapped for the expired one, once
            asked.append(kwargs.get("_continue"))
            return nodev1.list_runtime_class(**kwargs)

        items = session.list_all("RuntimeClasses (node.k8s.io/v1)", list_call, 1, list_kind="RuntimeClassList")
    names = [item["metadata"]["name"] for item in items]
    assert names == sorted(item["metadata"]["name"] for item in kube_cluster.get("runtimeclasses")["items"])
    # page 1, the 410, then a fresh list of one page per class
    assert asked[:3] == [None, stale, None] and session.api_requests == 2 + len(names)


# --- runtimeclass_apply ------------------------------------------------------------------------------------------
def apply_args(lab_crosscheck, runtimeclasses):
    # runtimeclass_apply lists the Nodes itself (issue 22 item 3).
    return {"runtimeclasses": runtimeclasses, "verdicts": list(lab_crosscheck.verdicts.values())}


def writes_to(kube_cluster, name):
    """The audit log's writes to RuntimeClass ``name``: (verb, HTTP code, request body)."""
    def named(event):  # a create's objectRef has no name; its request body does
        return name in (event["objectRef"].get("name"), ((event.get("requestObject") or {}).get("metadata") or {}).get("name"))

    return [(event["verb"], event["responseStatus"]["code"], event.get("requestObject"))
            for event in kube_cluster.audit_events(resource="runtimeclasses") if named(event)]


def test_runtimeclass_apply_creates_only_after_check_mode_and_then_leaves_it_alone(kube_cluster, lab, lab_crosscheck):
    desired = [{"name": "nvidia-cdi-canary", "handler": "nvidia-cdi", "node_selector": {"gpufleet.example/pool": "canary"},
                "overhead_pod_fixed": {"cpu": "100m"}}]
    args = apply_args(lab_crosscheck, desired)
    env = module_env(kube_cluster)

    planned = run_module(APPLY, args, env=env, check_mode=True)
    assert planned.returncode == 0 and planned.result["changed"], planned.output
    assert [(item["action"], item["targeted"], item["serving"]) for item in planned.result["runtimeclasses"]] == [
        ("create", ["gpu-node-07"], ["gpu-node-07"])]
    assert kube_cluster.kubectl("get", "runtimeclass", "nvidia-cdi-canary", check=False).returncode != 0
    assert writes_to(kube_cluster, "nvidia-cdi-canary") == []

    created = run_module(APPLY, args, env=env)
    assert created.returncode == 0 and created.result["runtimeclasses"][0]["action"] == "create", created.output
    live = kube_cluster.get("runtimeclass", "nvidia-cdi-canary")
    assert (live["handler"], live["scheduling"], live["overhead"]) == (
        "nvidia-cdi", {"nodeSelector": {"gpufleet.example/pool": "canary"}}, {"podFixed": {"cpu": "100m"}})
    assert [(verb, code) for verb, code, _body in writes_to(kube_cluster, "nvidia-cdi-canary")] == [("create", 201)]

    again = run_module(APPLY, args, env=env)
    assert (again.returncode, again.result["changed"], again.result["runtimeclasses"][0]["action"]) == (0, False, "none")
    assert len(writes_to(kube_cluster, "nvidia-cdi-canary")) == 1


def test_runtimeclass_apply_updates_conditionally_and_keeps_labels(kube_cluster, lab, lab_crosscheck):
    existing = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "handler": "nvidia",
                "metadata": {"name": "nvidia-main", "labels": {"app.kubernetes.io/component": "gpu-operator"}},
                "scheduling": {"nodeSelector": {"gpufleet.example/pool": "main"}}}
    kube_cluster.apply_objects(existing)
    version = kube_cluster.get("runtimeclass", "nvidia-main")["metadata"]["resourceVersion"]
    desired = [{"name": "nvidia-main", "handler": "nvidia", "node_selector": {"gpufleet.example/pool": "main"},
                "overhead_pod_fixed": {"cpu": "0.25", "memory": "120Mi"}}]
    updated = run_module(APPLY, apply_args(lab_crosscheck, desired), env=module_env(kube_cluster))
    assert updated.returncode == 0 and updated.result["runtimeclasses"][0]["action"] == "update", updated.output
    live = kube_cluster.get("runtimeclass", "nvidia-main")
    assert live["metadata"]["labels"] == {"app.kubernetes.io/component": "gpu-operator"}
    assert live["overhead"] == {"podFixed": {"cpu": "250m", "memory": "120Mi"}}  # the server's canonical form
    assert live["metadata"]["resourceVersion"] != version
    # A conditional replace: a PUT (update) carrying the resourceVersion it read, as the audit log recorded it.
    (update,) = [(code, body) for verb, code, body in writes_to(kube_cluster, "nvidia-main") if verb == "update"]
    assert update[0] == 200 and update[1]["metadata"]["resourceVersion"] == version


def test_runtimeclass_apply_refuses_a_handler_change_which_the_server_also_forbids(kube_cluster, lab, lab_crosscheck):
    kube_cluster.apply_objects({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "handler": "nvidia-cdi",
                                "metadata": {"name": "nvidia-moved"}})
    run = run_module(APPLY, apply_args(lab_crosscheck, [{"name": "nvidia-moved", "handler": "nvidia"}]),
                     env=module_env(kube_cluster))
    assert_one_clear_failure(run, "RuntimeClass 'nvidia-moved' exists with handler 'nvidia-cdi', and handler is immutable")
    assert [verb for verb, _code, _body in writes_to(kube_cluster, "nvidia-moved")] == ["create"]  # kubectl's, above
    # The apiserver agrees: replacing the handler is refused as immutable.
    live = kube_cluster.get("runtimeclass", "nvidia-moved")
    live["handler"] = "nvidia"
    replaced = kube_cluster.kubectl("replace", "-f", "-", stdin=json.dumps(live), check=False)
    assert replaced.returncode != 0 and "field is immutable" in replaced.stderr, replaced.stderr
    assert kube_cluster.get("runtimeclass", "nvidia-moved")["handler"] == "nvidia-cdi"


def test_k8s_nodes_inventory_from_the_real_server(kube_cluster, lab, ansible_inventory):
    returncode, listed, stderr = ansible_inventory(
        {"plugin": "gpufleet.runtime_gate.k8s_nodes", "node_groups": {"gpu_nodes": {"nvidia.com/gpu.present": "true"},
                                                                      "canary": {"gpufleet.example/pool": "canary"}}},
        kube_cluster.auth_env())
    assert returncode == 0, stderr
    assert sorted(listed["gpu_nodes"]["hosts"]) == sorted(NODES) and listed["canary"]["hosts"] == ["gpu-node-07"]
    for name, labels in NODES.items():
        assert listed["_meta"]["hostvars"][name] == {
            "ansible_host": NODE_IPS[name], "runtime_gate_node_name": name,
            "runtime_gate_node_labels": {"kubernetes.io/hostname": name, **labels}}
