"""The seed lab on real nodes: what the crosscheck says of each node x RuntimeClass is what a real Pod does there.

One real control plane (etcd, kube-apiserver, kube-scheduler; no kwok) and three real kubelets v1.34.4
(support/real_nodes.py), each on its own containerd release and config tree, started once for the module:

| node | containerd | its tree | what it serves |
|---|---|---|---|
| ``rn-24`` | 2.4 | ``imports = [".../conf.d/*.conf"]``; partial drop-in ``50-nvidia.conf``; ``99-nvidia-cdi.toml`` never matched | runc, nvidia |
| ``rn-22`` | 2.2 | every runtime in the root config, ``default_runtime_name = "nvidia"`` (the default runtime changed) | runc, nvidia, nvidia-cdi |
| ``rn-17`` | 1.7 | v3 on 1.x: a ``version = 3`` root with the nvidia runtimes in 2.x tables, a ``version = 2`` drop-in with runc | runc |
| ``rn-16`` | 1.6 (Debian's) | a ``version = 2`` root with runc and nvidia | runc, nvidia |

The nvidia runtimes' binaries are runc wrappers under /usr/local/nvidia/toolkit of each tree. RuntimeClasses:
``nvidia``, ``nvidia-cdi`` and the mistyped ``nvidia-typo`` (handler ``nvdia``), none with a nodeSelector, so every
node must serve every handler. A Pod per node x class (pinned with ``nodeName``) either runs or gets the kubelet's
``FailedCreatePodSandBox ... no runtime for "<handler>" is configured``; the real crosscheck.yml over the three nodes'
trees and daemons must name exactly the failing (node, handler) pairs MISSING.

Last, ``rollout.yml`` repairs the broken nodes from inside each node (the role's modules run in its namespaces,
containerd restarted by the node's own restart command), the pods stuck on them start, and the crosscheck passes.

Time: about 4 minutes on a loaded 2-core machine (cluster and nodes up in about 25 s; eight ansible-playbook runs).
"""
import json
import time
from pathlib import Path

import pytest
from support.containerd_daemons import releases
from support.oci_images import WORKLOAD_IMAGE
from support.real_nodes import NVIDIA_DIR
from support.seed_lab import CRI, NVIDIA, NVIDIA_CDI, crosscheck_hosts, root_config, run_playbook, runtime_class, running_lab

NAMESPACE = "seed-lab"
CLASSES = {"nvidia": "nvidia", "nvidia-cdi": "nvidia-cdi", "nvidia-typo": "nvdia"}
POD_SECONDS = 120
HANDLERS_FOLLOW_SECONDS = 60


def trees(release_of):
    """node name -> (release, {path under the node's /etc/containerd: text})."""
    v3_runtimes = "".join(text.replace(CRI, 'plugins."io.containerd.cri.v1.runtime".containerd')
                          for text in (NVIDIA, NVIDIA_CDI))
    return {
        # A partial drop-in (nvidia alone, deep-merged by 2.x) matched by the .conf glob; nvidia-cdi's .toml is not.
        "rn-24": (release_of["2.4"], {"config.toml": root_config(release_of["2.4"], imports=["/etc/containerd/conf.d/*.conf"]),
                                      "conf.d/50-nvidia.conf": "version = 2\n" + NVIDIA,
                                      "conf.d/99-nvidia-cdi.toml": "version = 2\n" + NVIDIA_CDI}),
        "rn-22": (release_of["2.2"], {"config.toml": root_config(release_of["2.2"], NVIDIA + NVIDIA_CDI, default="nvidia")}),
        # v3 on 1.x: the root's 2.x tables are ignored (a v2 drop-in makes the merged version 2, so 1.7 starts).
        "rn-17": (release_of["1.7"], {"config.toml": 'version = 3\nimports = ["/etc/containerd/conf.d/*.toml"]\n'
                                                     + v3_runtimes,
                                      "conf.d/00-base.toml": root_config(release_of["1.7"])}),
        "rn-16": (release_of["1.6"], {"config.toml": root_config(release_of["1.6"], NVIDIA)}),
    }


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """The cluster, its four real nodes (``{"cluster", "nodes": {name: RealNode}, "work"}``); everything stopped after
    the module, and checked stopped."""
    release_of = {release.name: release for release in releases()}
    with running_lab(tmp_path_factory.mktemp("seed-lab"), trees(release_of), CLASSES, NAMESPACE) as started:
        yield started


def workload_pod(name, node_name, class_name, **spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"nodeName": node_name, "runtimeClassName": class_name, "automountServiceAccountToken": False,
                     "terminationGracePeriodSeconds": 1, **spec,
                     "containers": [{"name": "work", "image": WORKLOAD_IMAGE, "imagePullPolicy": "Never"}]}}


def sandbox_failures(cluster):
    """pod name -> message of its latest FailedCreatePodSandBox event."""
    events = cluster.get("events", "-n", NAMESPACE)["items"]
    return {event["involvedObject"]["name"]: event["message"] for event in events
            if event.get("reason") == "FailedCreatePodSandBox"}


def pods_by_name(cluster):
    return {item["metadata"]["name"]: item for item in cluster.get("pods", "-n", NAMESPACE)["items"]}


def phase(pod):
    return (pod.get("status") or {}).get("phase")


def outcomes(cluster, names, seconds=POD_SECONDS):
    """pod name -> ("Running", None) or ("FailedCreatePodSandBox", message), once every pod reached one of them."""
    def probe():
        pods, failed = pods_by_name(cluster), sandbox_failures(cluster)
        found = {}
        for name in names:
            if phase(pods.get(name, {})) == "Running":
                found[name] = ("Running", None)
            elif name in failed:
                found[name] = ("FailedCreatePodSandBox", failed[name])
        return found if len(found) == len(names) else None
    return cluster.wait_for(f"every pod of {sorted(names)} Running or FailedCreatePodSandBox", probe, seconds, interval=1)


def run_crosscheck(lab, out: Path, playbook="crosscheck.yml", extra=None):
    """playbooks/crosscheck.yml (or ``playbook``, with ``extra`` vars) over the real nodes: each node's tree (host_root)
    run by its own containerd release, its running daemon asked on its socket (crictl), the cluster read with the admin
    kubeconfig. (host -> verdict, the completed run)."""
    hosts = {name: {**host, "runtime_gate_dump_file": ""} for name, host in crosscheck_hosts(lab["nodes"]).items()}
    # Judged over "SSH" (the node's files and daemon), never from the Nodes' status: the kubelet reports a restart's
    # handlers only at its next sync (4-8 s here), and these tests compare the files' and daemon's truth with the pods.
    return run_playbook(lab, out, playbook, hosts, {"runtime_gate_verdict_source": "ssh",
                                                    "runtime_gate_report_dir": str(out / "report"), **(extra or {})})


def test_every_pod_does_what_the_crosscheck_says(lab):
    cluster = lab["cluster"]
    matrix = {(node, class_name): f"{node}-{class_name}" for node in lab["nodes"] for class_name in CLASSES}
    started = time.monotonic()
    cluster.apply_objects(*(workload_pod(pod, node, class_name) for (node, class_name), pod in matrix.items()))
    did = outcomes(cluster, list(matrix.values()))
    print(f"\n{len(matrix)} pods decided in {time.monotonic() - started:.0f} s")

    verdicts, run = run_crosscheck(lab, lab["work"] / "crosscheck")
    assert set(verdicts) == set(lab["nodes"]), run.stdout[-3000:]
    assert all(verdict["status"] in ("OK", "MISSING") for verdict in verdicts.values()), verdicts
    judged = {(node, class_name): ("FailedCreatePodSandBox" if CLASSES[class_name] in verdicts[node]["missing_handlers"]
                                   else "Running") for node, class_name in matrix}
    observed = {key: did[pod][0] for key, pod in matrix.items()}
    assert observed == judged, "\n".join(f"{key}: pod {observed[key]}, crosscheck {judged[key]}"
                                         for key in matrix if observed[key] != judged[key])
    for (node, class_name), pod in matrix.items():
        if did[pod][0] == "FailedCreatePodSandBox":
            assert f'no runtime for "{CLASSES[class_name]}" is configured' in did[pod][1], did[pod][1]
    # The lab's cases, as the crosscheck must see them (and as the pods showed them).
    assert {node: verdict["missing_handlers"] for node, verdict in verdicts.items()} == {
        "rn-24": ["nvdia", "nvidia-cdi"], "rn-22": ["nvdia"], "rn-17": ["nvdia", "nvidia", "nvidia-cdi"],
        "rn-16": ["nvdia", "nvidia-cdi"]}
    assert run.returncode == 2


def served_by_kubelet(cluster, name):
    handlers = (cluster.get("node", name).get("status") or {}).get("runtimeHandlers")
    return None if handlers is None else sorted(entry["name"] for entry in handlers if entry["name"])


def test_node_status_runtime_handlers_agree_and_follow_a_restart(lab):
    """containerd >= 2.0: the kubelet's status.runtimeHandlers is what the daemon serves, so the verdict read from it
    equals the verdict from the node's files and daemon; after a restart with a runtime removed it follows within a
    deadline, while a pod already running under that handler keeps running."""
    cluster, nodes = lab["cluster"], lab["nodes"]
    verdicts, _run = run_crosscheck(lab, lab["work"] / "handlers-before")
    for name, node in nodes.items():
        handlers = served_by_kubelet(cluster, name)
        if node.release.name.startswith("1."):
            assert handlers is None, f"containerd {node.release} reports no runtime handlers"
            continue
        from_status = sorted(set(CLASSES.values()) - set(handlers))
        assert from_status == verdicts[name]["missing_handlers"], (name, handlers, verdicts[name])

    node = nodes["rn-22"]
    pod = "rn-22-keeps-nvidia-cdi"
    cluster.apply_objects(workload_pod(pod, "rn-22", "nvidia-cdi"))
    assert outcomes(cluster, [pod])[pod][0] == "Running"
    config = node.node_root / "etc" / "containerd" / "config.toml"
    config.write_text(config.read_text(encoding="utf-8").replace(NVIDIA_CDI, ""), encoding="utf-8")
    started = time.monotonic()
    node.restart_containerd()
    cluster.wait_for("status.runtimeHandlers of rn-22 without nvidia-cdi",
                     lambda: served_by_kubelet(cluster, "rn-22") == ["nvidia", "runc"], HANDLERS_FOLLOW_SECONDS, interval=0.5)
    print(f"\nstatus.runtimeHandlers followed the restart in {time.monotonic() - started:.1f} s")
    still = cluster.get("pod", pod, "-n", NAMESPACE)
    assert still["status"]["phase"] == "Running", still["status"]
    assert all(status["restartCount"] == 0 for status in still["status"]["containerStatuses"]), still["status"]
    verdicts, _run = run_crosscheck(lab, lab["work"] / "handlers-after")
    assert verdicts["rn-22"]["missing_handlers"] == ["nvdia", "nvidia-cdi"], verdicts["rn-22"]
    # The pods still running there under nvidia-cdi (this one, and the matrix's) are named: they fail when recreated.
    report = json.loads((lab["work"] / "handlers-after" / "report" / "report.json").read_text(encoding="utf-8"))
    stranded = [finding for finding in report["fleet_findings"] if finding["code"] == "PODS_RUN_ON_UNSERVED_HANDLER"]
    assert [(finding["host"], finding["evidence"]["handler"], finding["evidence"]["pods"]) for finding in stranded] == [
        ("rn-22", "nvidia-cdi", [f"{NAMESPACE}/rn-22-keeps-nvidia-cdi", f"{NAMESPACE}/rn-22-nvidia-cdi"])], stranded
    # A new pod under the removed handler now fails where the old one still runs.
    cluster.apply_objects(workload_pod("rn-22-new-nvidia-cdi", "rn-22", "nvidia-cdi"))
    outcome, message = outcomes(cluster, ["rn-22-new-nvidia-cdi"])["rn-22-new-nvidia-cdi"]
    assert outcome == "FailedCreatePodSandBox" and 'no runtime for "nvidia-cdi"' in message, message


GATE_LABEL = "handler.runtime-gate.gpufleet.io/nvidia"


def test_the_gate_keeps_new_pods_off_a_node_broken_again(lab):
    """nightly.yml's gate step labels each Node with the handlers it was proven to serve and binds a class to its
    handler's label; the real scheduler then places that class's new pods only on serving nodes, and off a node
    whose nvidia runtime was removed (containerd restarted) once the next run took its label away."""
    cluster, nodes = lab["cluster"], lab["nodes"]
    # Only nvidia is required now, so that some nodes pass and some do not (with nvdia required every node is MISSING).
    cluster.kubectl("delete", "runtimeclass", "nvidia-typo", "nvidia-cdi")
    cluster.apply_objects(runtime_class("nvidia-gated", "nvidia"))
    gate = {"runtime_gate_label_nodes": True, "runtime_gate_label_apply": True,
            "runtime_gate_label_bind_runtimeclasses": ["nvidia-gated"]}

    def labelled():
        return sorted(name for name in nodes if cluster.get("node", name)["metadata"]["labels"].get(GATE_LABEL) == "served")

    def place(names):
        for name in names:
            pod = workload_pod(name, None, "nvidia-gated")
            del pod["spec"]["nodeName"]
            cluster.apply_objects(pod)
        outcomes(cluster, names)
        return {cluster.get("pod", name, "-n", NAMESPACE)["spec"]["nodeName"] for name in names}

    _verdicts, run = run_crosscheck(lab, lab["work"] / "gate-1", "nightly.yml", gate)
    assert labelled() == ["rn-16", "rn-22", "rn-24"], run.stdout[-3000:]
    selector = cluster.get("runtimeclass", "nvidia-gated")["scheduling"]["nodeSelector"]
    assert selector == {GATE_LABEL: "served"}, selector
    assert place([f"gated-{index}" for index in range(4)]) <= {"rn-16", "rn-22", "rn-24"}

    # rn-24 broken again: its partial drop-in loses nvidia, containerd restarts.
    dropin = nodes["rn-24"].node_root / "etc" / "containerd" / "conf.d" / "50-nvidia.conf"
    dropin.write_text("version = 2\n", encoding="utf-8")
    nodes["rn-24"].restart_containerd()
    verdicts, run = run_crosscheck(lab, lab["work"] / "gate-2", "nightly.yml", gate)
    assert "nvidia" in verdicts["rn-24"]["missing_handlers"], verdicts["rn-24"]
    assert labelled() == ["rn-16", "rn-22"], run.stdout[-3000:]
    assert place([f"gated-after-{index}" for index in range(3)]) <= {"rn-16", "rn-22"}


def millicpu(quantity):
    return int(quantity[:-1]) if quantity.endswith("m") else int(float(quantity) * 1000)


def test_overhead_warning_against_the_real_kubelets_allocatable(lab):
    """A class with overhead, bound to the served-nvidia label (rn-16 and rn-22 after the gate test): a pod that fits the
    real kubelets' allocatable CPU without the overhead but not with it stays Pending (the real scheduler), and the
    crosscheck's overhead warning names exactly that pod, on each node the class may place it; a small one runs and is
    not named."""
    cluster = lab["cluster"]
    cluster.apply_objects(runtime_class("nvidia-vm", "nvidia", overhead={"podFixed": {"cpu": "250m", "memory": "120Mi"}},
                                        scheduling={"nodeSelector": {GATE_LABEL: "served"}}))
    allocatable = millicpu(cluster.get("node", "rn-22")["status"]["allocatable"]["cpu"])
    for name, cpu in (("vm-small", "100m"), ("vm-big", f"{allocatable - 100}m")):
        pod = workload_pod(name, None, "nvidia-vm")
        del pod["spec"]["nodeName"]
        pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
        cluster.apply_objects(pod)
    assert outcomes(cluster, ["vm-small"])["vm-small"][0] == "Running"

    def unschedulable():
        conditions = cluster.get("pod", "vm-big", "-n", NAMESPACE)["status"].get("conditions") or []
        return any(c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable" for c in conditions)
    cluster.wait_for("vm-big left Pending by the scheduler", unschedulable, POD_SECONDS)

    _verdicts, _run = run_crosscheck(lab, lab["work"] / "overhead")
    report = json.loads((lab["work"] / "overhead" / "report" / "report.json").read_text(encoding="utf-8"))
    warned = {(finding["host"], finding["evidence"]["pod"]) for finding in report["overhead_findings"]
              if finding["code"] == "POD_DOES_NOT_FIT_WITH_OVERHEAD"}
    assert warned == {("rn-16", f"{NAMESPACE}/vm-big"), ("rn-22", f"{NAMESPACE}/vm-big")}, report["overhead_findings"]


def run_rollout(lab, out: Path, extra=None):
    """playbooks/rollout.yml over the real nodes, each host's modules run inside its node (``python_interpreter``: the
    node's mount, network and PID namespaces), so the role reads and writes the node's own /etc/containerd, proves with
    the node's containerd release and restarts the node's containerd with its own restart command; the cluster read
    with the admin kubeconfig. (host -> verdict, the completed run)."""
    hosts = {}
    for name, node in lab["nodes"].items():
        # rn-17's root is version 3, which 1.7 ignores: the role renders a version 2 root for it, keeping its imports.
        own_root = {"containerd_runtimes_manage_root_config": True,
                    "containerd_runtimes_root_settings": {"imports": ["/etc/containerd/conf.d/*.toml"]}}
        hosts[name] = {**(own_root if name == "rn-17" else {}),
                       "ansible_connection": "local", "ansible_python_interpreter": node.python_interpreter(),
                       "containerd_runtimes_containerd_bin": node.release.binary,
                       "containerd_runtimes_restart_command": node.restart_command(),
                       "containerd_runtimes_wait_command": [node.paths["ctr"], "--address",
                                                            "/run/containerd/containerd.sock", "version"]}
    runtimes = {"containerd_runtimes_runtimes": [
        {"name": "nvidia", "binary_name": f"{NVIDIA_DIR}/nvidia-container-runtime"},
        {"name": "nvidia-cdi", "binary_name": f"{NVIDIA_DIR}/nvidia-container-runtime.cdi"}]}
    return run_playbook(lab, out, "rollout.yml", hosts, {"runtime_gate_serial": ["1", "100%"], **(extra or {})},
                        group_vars=runtimes, timeout=600)


def test_rollout_repairs_the_nodes_and_the_stuck_pods_start(lab):
    """Last (the nodes are left repaired): the operator restores the nvidia-cdi class and retires the mistyped one
    (a class's handler cannot be changed); rollout.yml gives every node nvidia and nvidia-cdi, verified batch by batch
    against the real daemons; the pods stuck in FailedCreatePodSandBox start: the kubelet retries their sandbox by
    itself, except the mistyped class's pods, whose class is gone (a pod's runtimeClassName cannot change), recreated
    under ``nvidia``; then the crosscheck passes on every node."""
    cluster, nodes = lab["cluster"], lab["nodes"]
    # (the gate test deleted both; deleted here too, so that this test also runs alone)
    cluster.kubectl("delete", "runtimeclass", "nvidia-typo", "nvidia-cdi", "--ignore-not-found")
    cluster.apply_objects(runtime_class("nvidia-cdi", "nvidia-cdi"))
    failing = sandbox_failures(cluster)
    pods = pods_by_name(cluster)
    stuck = sorted(name for name, pod in pods.items()
                   if name in failing and phase(pod) != "Running")
    retried = [name for name in stuck if pods[name]["spec"]["runtimeClassName"] != "nvidia-typo"]
    recreated = [name for name in stuck if name not in retried]
    assert retried and {pods[name]["spec"]["nodeName"] for name in recreated} == set(nodes), (retried, recreated)
    before, _run = run_crosscheck(lab, lab["work"] / "rollout-before")
    broken = sorted(name for name, verdict in before.items() if verdict["status"] != "OK")
    assert broken, before

    daemons = {name: (node.work / "containerd.pid").read_text(encoding="utf-8") for name, node in nodes.items()}
    started = time.monotonic()
    verdicts, run = run_rollout(lab, lab["work"] / "rollout")
    print(f"\nrollout.yml over {len(nodes)} real nodes took {time.monotonic() - started:.0f} s")
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert {name: verdict["status"] for name, verdict in verdicts.items()} == {name: "OK" for name in nodes}, verdicts
    # The role restarted each broken node's containerd, through the node's own restart command (and any other node it
    # gave its drop-in: the role owns the runtimes it was given, served before or not).
    restarted = {name for name, node in nodes.items()
                 if (node.work / "containerd.pid").read_text(encoding="utf-8") != daemons[name]}
    assert set(broken) <= restarted, (broken, restarted, run.stdout[-3000:])

    for name in recreated:
        cluster.kubectl("delete", "pod", name, "-n", NAMESPACE, "--grace-period=0", "--force")
    cluster.apply_objects(*(workload_pod(f"{name}-again", pods[name]["spec"]["nodeName"], "nvidia")
                            for name in recreated))
    # Running, each of them (their old FailedCreatePodSandBox events stay: only the phase counts here).
    waiting = retried + [f"{name}-again" for name in recreated]
    started = time.monotonic()
    cluster.wait_for(f"every pod of {waiting} Running",
                     lambda: all(phase(pods_by_name(cluster).get(name, {})) == "Running" for name in waiting),
                     POD_SECONDS, interval=1)
    print(f"{len(retried)} stuck pods started by the kubelet's retries, {len(recreated)} recreated, in "
          f"{time.monotonic() - started:.0f} s")

    after, run = run_crosscheck(lab, lab["work"] / "rollout-after")
    assert {name: verdict["status"] for name, verdict in after.items()} == {name: "OK" for name in nodes}, after
    assert run.returncode == 0, run.stdout[-3000:]
