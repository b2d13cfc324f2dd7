"""Seed labs on real nodes: a real control plane (no kwok) and real kubelets (support/real_nodes.py), each on its own
containerd release and node tree, with the nvidia runtimes as runc wrappers under NVIDIA_DIR; and the collection's
playbooks run over those nodes as a user runs them. Shared by tests/integration/pods/test_seed_lab.py and
test_node_status_equality.py.

- ``runtime``, ``NVIDIA``, ``NVIDIA_CDI``, ``root_config``: the config text the trees are written from (version 2 keys,
  the CRI base of ``cri_base``);
- ``running_lab``: the cluster, the nodes and the RuntimeClasses, everything stopped afterwards and checked stopped;
- ``crosscheck_hosts`` / ``run_playbook``: a playbook over the nodes, with the admin kubeconfig and crictl on PATH.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from support.containerd_daemons import containerd_wrapper, crictl
from support.kube_cluster import ClusterNotReady, start_cluster
from support.paths import REPO_ROOT
from support.real_nodes import NVIDIA_DIR, cri_base, remove_real_node, runtime_wrapper, start_real_node

CRI = 'plugins."io.containerd.grpc.v1.cri".containerd'
PLAYBOOK_SECONDS = 300


def runtime(name, binary=None):
    """A runtime table of the version 2 CRI plugin (runc's shim; ``binary`` as its BinaryName)."""
    text = f'[{CRI}.runtimes.{name}]\n  runtime_type = "io.containerd.runc.v2"\n'
    if binary:
        text += f'  [{CRI}.runtimes.{name}.options]\n    BinaryName = "{binary}"\n'
    return text


NVIDIA = runtime("nvidia", f"{NVIDIA_DIR}/nvidia-container-runtime")
NVIDIA_CDI = runtime("nvidia-cdi", f"{NVIDIA_DIR}/nvidia-container-runtime.cdi")


def root_config(release, body="", imports=None, default="runc"):
    """A version 2 root config: ``imports``, the node's CRI base, runc as a runtime (the default unless ``default``
    names another), then ``body``."""
    head = "version = 2\n" + (f"imports = {json.dumps(imports)}\n" if imports else "")
    return head + cri_base(release) + f'  default_runtime_name = "{default}"\n' + runtime("runc") + body


def write_tree(node_root: Path, files: dict):
    """``files`` ({path under the node's /etc/containerd: text}) and the nvidia runtimes' binaries (runc wrappers)."""
    for relative, text in files.items():
        path = node_root / "etc" / "containerd" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for binary in ("nvidia-container-runtime", "nvidia-container-runtime.cdi"):
        runtime_wrapper(node_root / NVIDIA_DIR.lstrip("/") / binary, shutil.which("runc") or "/usr/sbin/runc")


def runtime_class(name, handler, **fields):
    return {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name}, "handler": handler,
            **fields}


@contextlib.contextmanager
def running_lab(work: Path, trees: dict, classes: dict, namespace=None):
    """The cluster, a real node per ``trees`` entry (name -> (release, files)) and the RuntimeClasses ``classes``
    (name -> handler), as ``{"cluster", "nodes": {name: RealNode}, "work"}``; everything stopped afterwards, and
    checked stopped. A cluster that does not start fails the test, naming why."""
    try:
        cluster = start_cluster(work / "cluster", kwok=False)
    except ClusterNotReady as err:
        pytest.fail(f"the test cluster did not start: {err}", pytrace=False)
    nodes = {}
    try:
        for name, (release, files) in trees.items():
            write_tree(work / name, files)
            nodes[name] = start_real_node(cluster, name, release, work / name)
        if namespace:
            cluster.namespace(namespace)
        cluster.apply_objects(*(runtime_class(name, handler) for name, handler in classes.items()))
        yield {"cluster": cluster, "nodes": nodes, "work": work}
    finally:
        for node in nodes.values():
            remove_real_node(node)
        cluster.stop()
    left = {name: node.leftovers() for name, node in nodes.items() if node.leftovers()}
    assert not left, f"still running after the lab was stopped: {left}"


def crosscheck_hosts(nodes: dict) -> dict:
    """Host vars judging each node from outside: its tree (host_root) run by its own containerd release, its running
    daemon asked on its socket (crictl)."""
    return {name: {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                   "runtime_gate_host_root": str(node.node_root),
                   "runtime_gate_containerd_config": "/etc/containerd/config.toml",
                   "runtime_gate_containerd_bin": containerd_wrapper(node.release, node.work),
                   "runtime_gate_containerd_socket": str(node.socket)}
            for name, node in nodes.items()}


def run_playbook(lab, out: Path, playbook: str, hosts: dict, extra_vars: dict, group_vars=None,
                 timeout=PLAYBOOK_SECONDS):
    """playbooks/``playbook`` over ``hosts`` (the gpu_nodes group, ``group_vars`` its vars) with ``extra_vars`` and
    the verdicts file in ``out``; the cluster read with the lab's admin kubeconfig (no K8S_AUTH_* or KUBECONFIG of the
    caller's). (host -> verdict, the completed run)."""
    out.mkdir(parents=True, exist_ok=True)
    group = {"hosts": hosts, **({"vars": group_vars} if group_vars else {})}
    inventory = {"all": {"hosts": {"localhost": {"ansible_connection": "local"}}, "children": {"gpu_nodes": group}}}
    (out / "hosts.yml").write_text(yaml.safe_dump(inventory), encoding="utf-8")
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("K8S_AUTH_") and key not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    env.update(ANSIBLE_CONFIG=str(REPO_ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               K8S_AUTH_KUBECONFIG=str(lab["cluster"].admin_kubeconfig),
               PATH=os.path.dirname(crictl()) + os.pathsep + env.get("PATH", ""))
    verdicts_file = out / "verdicts.json"
    completed = subprocess.run([str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(out / "hosts.yml"),
                                str(REPO_ROOT / "playbooks" / playbook), "-e", json.dumps(extra_vars),
                                "-e", f"runtime_gate_verdicts_file={verdicts_file}"],
                               cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert verdicts_file.exists(), completed.stdout[-4000:] + completed.stderr[-2000:]
    return json.loads(verdicts_file.read_text(encoding="utf-8"))["hosts"], completed
