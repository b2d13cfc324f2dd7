"""Close the gate (docs/gate.md), against the real apiserver, RBAC authorizer and kube-scheduler.

node_handler_labels labels each judged Node with the handlers it serves and binds a RuntimeClass's nodeSelector to
that label; the real scheduler then keeps a pod of the class Pending rather than place it on a node that does not
serve the handler, and binds it once a node that does is labelled. Everything here has its own names (gate-node-*,
the RuntimeClass gate-nvidia, the namespace gate-tests) and is deleted afterwards, so the lab's tests (test_lab.py)
see the cluster as they built it. The module runs with docs/rbac.yaml's labeller ServiceAccount token; the
read-only account's token gets 403.
"""
import json
import subprocess
import sys

import pytest
import yaml
from kube_runs import DEMO, VENV_BIN, ansible_env, assert_one_clear_failure, run_module
from support.kube_fixtures import pod, runtimeclass
from support.paths import REPO_ROOT
from support.tools import require_command

MODULE = "gpufleet.runtime_gate.node_handler_labels"
RBAC = REPO_ROOT / "docs" / "rbac.yaml"
ACCOUNTS = "gpu-checks"
LABELLER = f"system:serviceaccount:{ACCOUNTS}:runtime-gate-labeller"
NAMESPACE = "gate-tests"
CLASS = "gate-nvidia"
POOL = {"gate.example/pool": "gate"}
# Written out, not imported from the module: a renamed prefix must fail these tests.
NVIDIA = "handler.runtime-gate.gpufleet.io/nvidia"
RUNC = "handler.runtime-gate.gpufleet.io/runc"
OK_NODE, MISSING_NODE, SPARE_NODE = "gate-node-ok", "gate-node-missing", "gate-node-spare"
GATE_NODES = (OK_NODE, MISSING_NODE, SPARE_NODE)
# What node_crosscheck would say of the two judged nodes (the nightly test below lets it say so for real).
OK = {"node": OK_NODE, "status": "OK", "loaded_runtimes": ["nvidia", "runc"]}
MISSING = {"node": MISSING_NODE, "status": "MISSING", "loaded_runtimes": ["runc"], "missing_handlers": ["nvidia"]}
UNKNOWN = {"node": OK_NODE, "status": "UNKNOWN", "loaded_runtimes": [], "reason": "host unreachable"}


def gate_pod(name):
    obj = pod(name, NAMESPACE, runtime_class_name=CLASS, requests={"cpu": "100m"})
    del obj["status"]
    return obj


def decided(kube_cluster, name):
    """The pod once the scheduler decided: bound, or PodScheduled=False/Unschedulable."""
    obj = kube_cluster.get("pod", name, "-n", NAMESPACE)
    scheduled = {c["type"]: c for c in obj["status"].get("conditions") or ()}.get("PodScheduled", {})
    unschedulable = (scheduled.get("status"), scheduled.get("reason")) == ("False", "Unschedulable")
    return obj if obj["spec"].get("nodeName") or unschedulable else None


def node_labels(kube_cluster, name):
    return kube_cluster.get("node", name)["metadata"].get("labels") or {}


def squeezed(text):
    """``text`` without whitespace: ansible-core may wrap a warning anywhere, also after a hyphen."""
    return "".join(text.split())


@pytest.fixture(scope="module")
def gate(kube_cluster, tmp_path_factory):
    """docs/rbac.yaml applied; the labeller's and the reader's tokens; three Nodes of pool gate/spare and the class
    gate-nvidia (handler nvidia, nodeSelector pool=gate); a pod of that class created while gate-node-missing was
    the only schedulable Node of the pool. Everything made here is deleted at the end."""
    kube_cluster.kubectl("apply", "--validate=strict", "-f", str(RBAC))
    tokens = {name: kube_cluster.token(ACCOUNTS, name) for name in ("runtime-gate", "runtime-gate-labeller")}
    if kube_cluster.kubectl("get", "namespace", NAMESPACE, check=False).returncode != 0:
        kube_cluster.namespace(NAMESPACE)
    try:
        kube_cluster.add_node(MISSING_NODE, {**POOL, "team": "ml"}, runtime_handlers=["", "runc"], internal_ip="10.0.1.2")
        kube_cluster.add_node(OK_NODE, dict(POOL), runtime_handlers=["", "runc", "nvidia"], internal_ip="10.0.1.1",
                              unschedulable=True)
        # Not judged by any run here: its label (from an earlier run) must stay, and be reported.
        kube_cluster.add_node(SPARE_NODE, {"gate.example/pool": "spare", NVIDIA: "served"}, internal_ip="10.0.1.3")
        kube_cluster.apply_objects(runtimeclass(CLASS, "nvidia", node_selector=dict(POOL)))
        kube_cluster.apply_objects(gate_pod("ungated-0"))
        control = kube_cluster.wait_for("the scheduler's decision on pod ungated-0",
                                        lambda: decided(kube_cluster, "ungated-0"))
        kube_cluster.kubectl("uncordon", OK_NODE)
        yield {"tokens": tokens, "control": control, "workdir": tmp_path_factory.mktemp("gate")}
    finally:
        kube_cluster.kubectl("delete", "pods", "--all", "-n", NAMESPACE, "--force", "--grace-period=0", check=False)
        kube_cluster.kubectl("delete", "runtimeclass", CLASS, "--ignore-not-found", check=False)
        kube_cluster.kubectl("delete", "node", *GATE_NODES, "--ignore-not-found", check=False)


def label(kube_cluster, token, verdicts, check_mode=False, diff=False, **args):
    return run_module(MODULE, {"verdicts": verdicts, **args}, env=ansible_env(**kube_cluster.auth_env(token)),
                      check_mode=check_mode, diff=diff)


def labeller_requests(kube_cluster, mark):
    return [(event["verb"], (event.get("objectRef") or {}).get("resource"), (event.get("objectRef") or {}).get("name"),
             event["responseStatus"]["code"]) for event in kube_cluster.audit_events(LABELLER)[mark:]]


def test_without_the_gate_a_pod_of_the_class_lands_on_the_node_that_lacks_the_handler(kube_cluster, gate):
    # The scheduler only reads the class's nodeSelector: gate-node-missing matches it, so the pod goes there.
    assert gate["control"]["spec"]["nodeName"] == MISSING_NODE
    assert gate["control"]["spec"]["nodeSelector"] == POOL


def test_the_dry_run_and_check_mode_plan_the_labels_and_write_nothing(kube_cluster, gate):
    token = gate["tokens"]["runtime-gate-labeller"]
    before = {name: node_labels(kube_cluster, name) for name in GATE_NODES}
    mark = len(kube_cluster.audit_events(LABELLER))
    dry = label(kube_cluster, token, [OK, MISSING], bind_runtimeclasses=[CLASS])
    assert dry.returncode == 0 and dry.result["changed"] is False and dry.result["applied"] is False, dry.output
    assert dry.result["msg"].startswith("dry run, nothing written"), dry.result["msg"]
    planned = {entry["node"]: (entry["action"], entry["add"], entry["remove"]) for entry in dry.result["nodes"]}
    assert planned == {OK_NODE: ("label", [NVIDIA, RUNC], []), MISSING_NODE: ("label", [RUNC], [])}
    (binding,) = dry.result["runtimeclasses"]
    assert (binding["action"], binding["node_selector_after"]) == ("bind", {**POOL, NVIDIA: "served"})

    checked = label(kube_cluster, token, [OK, MISSING], check_mode=True, apply=True, bind_runtimeclasses=[CLASS])
    assert checked.returncode == 0 and checked.result["changed"] is True and checked.result["applied"] is False
    assert {name: node_labels(kube_cluster, name) for name in GATE_NODES} == before
    assert kube_cluster.get("runtimeclass", CLASS)["scheduling"]["nodeSelector"] == POOL
    # Per the audit log, both runs only read: a list of Nodes and one of RuntimeClasses each.
    assert labeller_requests(kube_cluster, mark) == [("list", "nodes", None, 200),
                                                     ("list", "runtimeclasses", None, 200)] * 2


def test_the_read_only_token_gets_403_and_nothing_is_labelled(kube_cluster, gate):
    token = gate["tokens"]["runtime-gate"]
    run = label(kube_cluster, token, [OK, MISSING], apply=True)
    assert_one_clear_failure(run, f"labelling Node '{MISSING_NODE}' on {kube_cluster.server} failed: HTTP 403",
                             'cannot patch resource "nodes"', "docs/rbac.yaml", "written before this failure: nothing",
                             secrets=(token,))
    assert RUNC not in node_labels(kube_cluster, MISSING_NODE) and NVIDIA not in node_labels(kube_cluster, OK_NODE)


def test_apply_labels_the_judged_nodes_binds_the_class_and_leaves_the_rest(kube_cluster, gate):
    token = gate["tokens"]["runtime-gate-labeller"]
    version = kube_cluster.get("runtimeclass", CLASS)["metadata"]["resourceVersion"]
    mark = len(kube_cluster.audit_events(LABELLER))
    run = label(kube_cluster, token, [OK, MISSING], apply=True, bind_runtimeclasses=[CLASS], diff=True)
    assert run.returncode == 0 and run.result["changed"] is True and run.result["applied"] is True, run.output
    assert token not in run.output
    # Our labels per verdict; every other label kept.
    assert node_labels(kube_cluster, OK_NODE) == {"kubernetes.io/hostname": OK_NODE, **POOL, NVIDIA: "served",
                                                  RUNC: "served"}
    assert node_labels(kube_cluster, MISSING_NODE) == {"kubernetes.io/hostname": MISSING_NODE, **POOL, "team": "ml",
                                                       RUNC: "served"}
    # The node nobody judged keeps its label, and is reported.
    assert node_labels(kube_cluster, SPARE_NODE)[NVIDIA] == "served"
    assert {"node": SPARE_NODE, "labels": {NVIDIA: "served"}} in run.result["unjudged"]
    output = squeezed(run.output)
    assert squeezed(f"1 node(s) this run did not judge keep their handler labels, unverified: {SPARE_NODE}") in output
    # The warning, before the bind, names the node the class places pods on that lacks the label.
    assert squeezed(f"binding RuntimeClass '{CLASS}' to {NVIDIA}=served: its nodeSelector gate.example/pool=gate now "
                    "places pods on 1 node(s) without that label, where new pods of the class will no longer be "
                    f"scheduled (running pods stay): {MISSING_NODE}") in output, run.output
    live = kube_cluster.get("runtimeclass", CLASS)
    assert live["scheduling"]["nodeSelector"] == {**POOL, NVIDIA: "served"} and live["handler"] == "nvidia"
    # Labels first, then the class: a merge patch per judged Node, then a conditional replace (the version read).
    writes = [(verb, resource, name, code) for verb, resource, name, code in labeller_requests(kube_cluster, mark)
              if verb != "list"]
    assert writes == [("patch", "nodes", MISSING_NODE, 200), ("patch", "nodes", OK_NODE, 200),
                      ("update", "runtimeclasses", CLASS, 200)]
    update = kube_cluster.audit_events(LABELLER, "runtimeclasses")[-1]
    assert update["requestObject"]["metadata"]["resourceVersion"] == version

    again = label(kube_cluster, token, [OK, MISSING], apply=True, bind_runtimeclasses=[CLASS])
    assert again.returncode == 0 and again.result["changed"] is False, again.output
    assert {entry["action"] for entry in again.result["nodes"]} == {"none"}
    assert again.result["runtimeclasses"][0]["action"] == "none"


def test_the_real_scheduler_keeps_a_gated_pod_pending_until_a_node_that_serves_the_handler_is_labelled(kube_cluster, gate):
    token = gate["tokens"]["runtime-gate-labeller"]
    # gate-node-ok could not be proven this time (UNKNOWN): it loses every label; gate-node-missing still lacks nvidia.
    run = label(kube_cluster, token, [UNKNOWN, MISSING], apply=True)
    assert run.returncode == 0, run.output
    assert not [key for key in node_labels(kube_cluster, OK_NODE) if key.startswith("handler.runtime-gate.gpufleet.io/")]
    kube_cluster.apply_objects(gate_pod("gated-0"))
    pending = kube_cluster.wait_for("the scheduler's decision on pod gated-0", lambda: decided(kube_cluster, "gated-0"))
    # Both Nodes of the pool are schedulable; the one that lacks the handler is not chosen: the pod waits.
    assert not pending["spec"].get("nodeName") and pending["status"]["phase"] == "Pending", pending["status"]
    assert pending["spec"]["nodeSelector"] == {**POOL, NVIDIA: "served"}  # RuntimeClass admission copied it in
    message = {c["type"]: c for c in pending["status"]["conditions"]}["PodScheduled"]["message"]
    assert "didn't match Pod's node affinity/selector" in message, message

    relabelled = label(kube_cluster, token, [OK, MISSING], apply=True)
    assert relabelled.returncode == 0, relabelled.output
    bound = kube_cluster.wait_for("pod gated-0 bound", lambda: kube_cluster.get(
        "pod", "gated-0", "-n", NAMESPACE)["spec"].get("nodeName"), timeout=60)
    assert bound == OK_NODE
    # The pod placed before the gate still runs where it was: binding changes only where new pods go.
    assert kube_cluster.get("pod", "ungated-0", "-n", NAMESPACE)["spec"]["nodeName"] == MISSING_NODE


def run_nightly(kube_cluster, gate, name, hosts, *extra):
    """nightly.yml as the labeller over gate Nodes named after inventory hosts, each judging a committed demo dump
    (``hosts``: host -> demo node), into its own work directory ``name``."""
    workdir = gate["workdir"] / name
    workdir.mkdir(exist_ok=True)
    inventory = {"all": {"hosts": {"localhost": {"ansible_connection": "local"}}, "children": {"gpu_nodes": {
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
        "hosts": {host: {"runtime_gate_dump_file": str(DEMO / "nodes" / demo / "config-dump.toml")}
                  for host, demo in hosts.items()}}}}}
    (workdir / "hosts.yml").write_text(yaml.safe_dump(inventory))
    return subprocess.run(
        [str(VENV_BIN / "ansible-playbook"), "-i", str(workdir / "hosts.yml"),
         str(REPO_ROOT / "playbooks" / "nightly.yml"), "-e", f"runtime_gate_report_dir={workdir / 'report'}",
         "-e", f"runtime_gate_verdicts_file={workdir / 'verdicts.json'}", *extra],
        cwd=REPO_ROOT, env=ansible_env(ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default",
                                       **kube_cluster.auth_env(gate["tokens"]["runtime-gate-labeller"])),
        capture_output=True, text=True, timeout=300, check=False)


def gate_labels(kube_cluster, names=(OK_NODE, MISSING_NODE)):
    return {name: sorted(key for key in node_labels(kube_cluster, name)
                         if key.startswith("handler.runtime-gate.gpufleet.io/")) for name in names}


def test_nightly_labels_the_nodes_it_judged_only_when_asked(kube_cluster, gate):
    """nightly.yml over the two gate Nodes (each judging a committed demo dump): the step is off by default, a dry run
    with runtime_gate_label_nodes, and writes with runtime_gate_label_apply."""
    token = gate["tokens"]["runtime-gate-labeller"]
    # Start from labels no run wrote: gate-node-ok without any, gate-node-missing with a stale nvidia label.
    kube_cluster.kubectl("label", "node", OK_NODE, f"{NVIDIA}-", f"{RUNC}-")
    kube_cluster.kubectl("label", "node", MISSING_NODE, f"{NVIDIA}=served", "--overwrite")
    dumps = {OK_NODE: "gpu-node-01", MISSING_NODE: "gpu-node-02"}

    def nightly(*extra):
        return run_nightly(kube_cluster, gate, "nightly", dumps, *extra)

    before = gate_labels(kube_cluster)
    off = nightly()
    assert off.returncode == 2, off.stdout + off.stderr  # gate-node-missing is MISSING nvidia
    assert gate_labels(kube_cluster) == before
    verdicts = json.loads((gate["workdir"] / "nightly" / "verdicts.json").read_text())["hosts"]
    assert verdicts[OK_NODE]["status"] == "OK" and verdicts[MISSING_NODE]["status"] == "MISSING", verdicts
    dry = nightly("-e", "runtime_gate_label_nodes=true")
    assert dry.returncode == 2 and "dry run, nothing written" in dry.stdout, dry.stdout + dry.stderr
    assert gate_labels(kube_cluster) == before

    applied = nightly("-e", "runtime_gate_label_nodes=true", "-e", "runtime_gate_label_apply=true")
    assert applied.returncode == 2, applied.stdout + applied.stderr
    served = {host: sorted(f"handler.runtime-gate.gpufleet.io/{name}" for name in verdicts[host]["loaded_runtimes"])
              for host in (OK_NODE, MISSING_NODE)}
    assert NVIDIA in served[OK_NODE] and NVIDIA not in served[MISSING_NODE]
    assert gate_labels(kube_cluster) == served
    assert token not in applied.stdout + applied.stderr


@pytest.mark.parametrize("source", ["ssh", "node-status"])
def test_nightly_takes_the_labels_away_when_every_judged_node_fails(kube_cluster, gate, source):
    """Every judged host MISSING (here the one judged): ansible-playbook ends a run after a play in which every host
    failed, yet the gate step must still run and remove the stale label, judged over the host's connection (the host
    play fails every host) or from its Node's status alone (the controller's last play fails). The run still fails."""
    kube_cluster.kubectl("label", "node", MISSING_NODE, f"{NVIDIA}=served", f"{RUNC}=served", "--overwrite")
    run = run_nightly(kube_cluster, gate, f"all-fail-{source}", {MISSING_NODE: "gpu-node-02"},
                      "-e", json.dumps({"runtime_gate_label_nodes": True, "runtime_gate_label_apply": True,
                                        "runtime_gate_verdict_source": source}))
    assert run.returncode == 2, run.stdout + run.stderr
    verdicts = json.loads((gate["workdir"] / f"all-fail-{source}" / "verdicts.json").read_text())["hosts"]
    assert verdicts[MISSING_NODE]["status"] == "MISSING" and "nvidia" in verdicts[MISSING_NODE]["missing_handlers"]
    assert gate_labels(kube_cluster, [MISSING_NODE]) == {MISSING_NODE: [RUNC]}, run.stdout[-3000:]


def test_rollout_labels_the_nodes_it_repaired_once_every_batch_verified(kube_cluster, gate):
    """rollout.yml over two trees named after the gate Nodes, both lacking nvidia: the role gives it to both (real
    containerd 1.6 proves and dumps; systemd is a stand-in), both batches verify, and the opt-in gate step then labels
    each Node with what it now serves, as the labeller account. A rollout whose batch fails never reaches that step."""
    from role import _support as s  # pylint: disable=import-outside-toplevel  # tests/integration/role's helpers

    require_command("containerd", "containerd")
    token = gate["tokens"]["runtime-gate-labeller"]
    base = gate["workdir"] / "rollout"
    kube_cluster.kubectl("label", "node", OK_NODE, MISSING_NODE, f"{NVIDIA}-", f"{RUNC}-")
    nvidia = s.make_executable(base / "bin" / "nvidia-container-runtime", "#!/bin/sh\nexit 0\n")
    standin = s.service_standin(base / "bin")
    hosts = {}
    for host in (OK_NODE, MISSING_NODE):
        s.write_tree(base / host, {"config.toml": "version = 2\n\n" + s.RUNC_SYSTEMD})
        hosts[host] = {"containerd_runtimes_config_path": str(base / host / "config.toml"),
                       "containerd_runtimes_dropin_dir": str(base / host / "conf.d"),
                       "containerd_runtimes_restart_command": [str(standin), str(base / f"{host}.restarts"), "ok"]}
    s.write_inventory(base / "inventory.yml", hosts, {
        "containerd_runtimes_runtimes": [{"name": "nvidia", "binary_name": str(nvidia), "options": {"SystemdCgroup": True}}],
        "containerd_runtimes_wait_command": ["true"]})
    classes = base / "cluster.yaml"
    classes.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [runtimeclass("nvidia", "nvidia")]}))

    run = s.run_playbook(REPO_ROOT / "playbooks" / "rollout.yml", base / "inventory.yml",
                         "-e", f"runtime_gate_runtimeclasses_file={classes}",
                         "-e", '{"runtime_gate_serial": ["1", "1"], "runtime_gate_list_nodes": false, '
                               '"runtime_gate_label_nodes": true, "runtime_gate_label_apply": true}',
                         env=kube_cluster.auth_env(token))
    assert run.returncode == 0, run.explain()
    for host in (OK_NODE, MISSING_NODE):
        assert (base / f"{host}.restarts").read_text() == "restart\n", run.explain()
        labels = node_labels(kube_cluster, host)
        assert (labels.get(NVIDIA), labels.get(RUNC)) == ("served", "served"), (host, labels)
    assert token not in run.stdout + run.stderr
