"""The Nodes' status as first witness, checked against the real kubelets: crosscheck.yml judging each real node from
its Node's ``status.runtimeHandlers`` (``node-status``, no connection) gives the verdict that judging it from its own
files and daemon (``ssh``) gives, and ``hybrid`` ends with the same verdicts, each from the source it documents.

One real control plane (no kwok) and two real kubelets v1.34.4 (support/real_nodes.py) on containerd 2.4 and 2.2,
which report the handlers their CRI serves; RuntimeClasses ``nvidia`` and ``nvidia-cdi``, no nodeSelector:

| node | containerd | serves | verdict |
|---|---|---|---|
| ``eq-24`` | 2.4 | runc, nvidia | MISSING ``nvidia-cdi`` |
| ``eq-22`` | 2.2 | runc, nvidia, nvidia-cdi | OK, then (nvidia removed, containerd restarted) MISSING ``nvidia`` |

After the restart the Node's list lags the daemon by one kubelet status update (docs/usage.md, "The restart window"):
the test waits, with a deadline, until the Node's list equals what the daemon itself serves (``crictl info``), then
compares the modes again.

Time: about 2 minutes on a loaded 2-core machine (cluster and nodes up in about 20 s; six ansible-playbook runs).
"""
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from support.containerd_daemons import containerd_wrapper, crictl, releases
from support.kube_cluster import ClusterNotReady, start_cluster
from support.paths import REPO_ROOT
from support.real_nodes import NVIDIA_DIR, cri_base, remove_real_node, runtime_wrapper, start_real_node

CRI = 'plugins."io.containerd.grpc.v1.cri".containerd'
CLASSES = {"nvidia": "nvidia", "nvidia-cdi": "nvidia-cdi"}
# The kubelet follows a restart in 4.7-7.8 s here (test_seed_lab.py); the deadline leaves room for a loaded machine.
SETTLE_SECONDS = 90
PLAYBOOK_SECONDS = 300


def runtime(name, binary=None):
    text = f'[{CRI}.runtimes.{name}]\n  runtime_type = "io.containerd.runc.v2"\n'
    if binary:
        text += f'  [{CRI}.runtimes.{name}.options]\n    BinaryName = "{binary}"\n'
    return text


NVIDIA = runtime("nvidia", f"{NVIDIA_DIR}/nvidia-container-runtime")
NVIDIA_CDI = runtime("nvidia-cdi", f"{NVIDIA_DIR}/nvidia-container-runtime.cdi")


def root_config(release, body):
    return "version = 2\n" + cri_base(release) + '  default_runtime_name = "runc"\n' + runtime("runc") + body


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """``{"cluster", "nodes": {name: RealNode}, "work"}``; everything stopped after the module, and checked stopped."""
    work = tmp_path_factory.mktemp("node-status-equality")
    release_of = {release.name: release for release in releases()}
    trees = {"eq-24": (release_of["2.4"], NVIDIA), "eq-22": (release_of["2.2"], NVIDIA + NVIDIA_CDI)}
    try:
        cluster = start_cluster(work / "cluster", kwok=False)
    except ClusterNotReady as err:
        pytest.fail(f"the test cluster did not start: {err}", pytrace=False)
    nodes = {}
    try:
        for name, (release, body) in trees.items():
            config = work / name / "etc" / "containerd" / "config.toml"
            config.parent.mkdir(parents=True)
            config.write_text(root_config(release, body), encoding="utf-8")
            for binary in ("nvidia-container-runtime", "nvidia-container-runtime.cdi"):
                runtime_wrapper(work / name / NVIDIA_DIR.lstrip("/") / binary, shutil.which("runc") or "/usr/sbin/runc")
            nodes[name] = start_real_node(cluster, name, release, work / name)
        cluster.apply_objects(*({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name},
                                 "handler": handler} for name, handler in CLASSES.items()))
        yield {"cluster": cluster, "nodes": nodes, "work": work}
    finally:
        for node in nodes.values():
            remove_real_node(node)
        cluster.stop()
    left = {name: node.leftovers() for name, node in nodes.items() if node.leftovers()}
    assert not left, f"still running after the lab was stopped: {left}"


def run_crosscheck(lab, out: Path, verdict_source):
    """playbooks/crosscheck.yml over the real nodes in ``verdict_source`` mode: their trees (host_root) run by their own
    containerd release, their daemons asked on their sockets, the cluster read with the admin kubeconfig.
    (host -> verdict, the completed run)."""
    hosts = {}
    for name, node in lab["nodes"].items():
        hosts[name] = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                       "runtime_gate_host_root": str(node.node_root),
                       "runtime_gate_containerd_config": "/etc/containerd/config.toml",
                       "runtime_gate_containerd_bin": containerd_wrapper(node.release, node.work),
                       "runtime_gate_containerd_socket": str(node.socket)}
    out.mkdir(parents=True, exist_ok=True)
    inventory = {"all": {"hosts": {"localhost": {"ansible_connection": "local"}},
                         "children": {"gpu_nodes": {"hosts": hosts}}}}
    (out / "hosts.yml").write_text(yaml.safe_dump(inventory), encoding="utf-8")
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("K8S_AUTH_") and key not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    env.update(ANSIBLE_CONFIG=str(REPO_ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               K8S_AUTH_KUBECONFIG=str(lab["cluster"].admin_kubeconfig),
               PATH=os.path.dirname(crictl()) + os.pathsep + env.get("PATH", ""))
    completed = subprocess.run([str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(out / "hosts.yml"),
                                str(REPO_ROOT / "playbooks" / "crosscheck.yml"),
                                "-e", f"runtime_gate_verdict_source={verdict_source}",
                                "-e", f"runtime_gate_verdicts_file={out / 'verdicts.json'}"],
                               cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=PLAYBOOK_SECONDS,
                               check=False)
    verdicts_file = out / "verdicts.json"
    assert verdicts_file.exists(), completed.stdout[-4000:] + completed.stderr[-2000:]
    return json.loads(verdicts_file.read_text(encoding="utf-8"))["hosts"], completed


def outcome(verdict):
    return verdict["status"], verdict["missing_handlers"]


def listed_by_node(cluster, name):
    """The handler names the Node's status lists (None: no list)."""
    handlers = (cluster.get("node", name).get("status") or {}).get("runtimeHandlers")
    return None if handlers is None else sorted(entry["name"] for entry in handlers)


def served_by_daemon(node):
    """The handler names the node's containerd itself serves now: its CRI status (``crictl info``), which the kubelet
    copies into the Node's status. crictl prints them beside ``status``, as Go's encoding/json marshals the CRI
    message (cri-tools v1.37.0, cmd/crictl/info.go): ``name`` is left out when empty, the default handler."""
    info = json.loads(node.crictl("info").stdout)
    assert "runtimeHandlers" in info, f"{node.name}: crictl info without runtimeHandlers: {sorted(info)}"
    return sorted(entry.get("name", "") for entry in info["runtimeHandlers"])


def settle(lab):
    """Wait (deadline SETTLE_SECONDS) until every Node's status lists what its daemon serves."""
    for name, node in lab["nodes"].items():
        started = time.monotonic()
        lab["cluster"].wait_for(f"status.runtimeHandlers of {name} equal to its daemon's",
                                lambda node=node, name=name: listed_by_node(lab["cluster"], name) == served_by_daemon(node),
                                SETTLE_SECONDS, interval=0.5)
        print(f"\n{name}: Node status equal to the daemon's handlers after {time.monotonic() - started:.1f} s")


def judge_every_way(lab, label):
    """{mode: (verdicts, run)} for ssh, node-status and hybrid, after the Nodes' status settled."""
    settle(lab)
    return {mode: run_crosscheck(lab, lab["work"] / f"{label}-{mode}", mode) for mode in ("ssh", "node-status", "hybrid")}


def assert_equal_verdicts(runs, expected):
    ssh, _ssh_run = runs["ssh"]
    from_status, status_run = runs["node-status"]
    hybrid, hybrid_run = runs["hybrid"]
    # The node's own evidence is the truth the other modes are measured against.
    assert {host: outcome(verdict) for host, verdict in ssh.items()} == expected, ssh
    assert all(verdict["verdict_source"] == "node" for verdict in ssh.values()), ssh
    # node-status: the same verdict per node, every one from the Node's status, no node contacted.
    assert {host: outcome(verdict) for host, verdict in from_status.items()} == expected, status_run.stdout[-3000:]
    assert all(verdict["verdict_source"] == "node-status" for verdict in from_status.values()), from_status
    # hybrid: the same verdicts; the OK ones from the status, the MISSING ones explained from the node.
    assert {host: outcome(verdict) for host, verdict in hybrid.items()} == expected, hybrid_run.stdout[-3000:]
    assert {host: verdict["verdict_source"] for host, verdict in hybrid.items()} == {
        host: "node-status" if status == "OK" else "node" for host, (status, _missing) in expected.items()}, hybrid
    expected_exit = 0 if all(status == "OK" for status, _missing in expected.values()) else 2
    assert (_ssh_run.returncode, status_run.returncode, hybrid_run.returncode) == (expected_exit,) * 3


def test_node_status_verdicts_equal_the_nodes_own(lab):
    runs = judge_every_way(lab, "before")
    assert_equal_verdicts(runs, {"eq-24": ("MISSING", ["nvidia-cdi"]), "eq-22": ("OK", [])})

    # eq-22 loses nvidia; containerd restarts. The status lags (the restart window), so the test waits for it to settle.
    node = lab["nodes"]["eq-22"]
    config = node.node_root / "etc" / "containerd" / "config.toml"
    config.write_text(config.read_text(encoding="utf-8").replace(NVIDIA, ""), encoding="utf-8")
    node.restart_containerd()
    runs = judge_every_way(lab, "after")
    assert_equal_verdicts(runs, {"eq-24": ("MISSING", ["nvidia-cdi"]), "eq-22": ("MISSING", ["nvidia"])})
