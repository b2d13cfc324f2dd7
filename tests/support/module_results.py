"""One real run of every module of the collection (tests/support/module_results.yml), for the contract test.

The Kubernetes modules run against the real cluster of ``support.kube_cluster`` (its admin kubeconfig through
``K8S_AUTH_KUBECONFIG``); the node modules on the demo fleet's dumps (real containerd 1.6.20 output) and on a
config tree proved by the real containerd binary.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from support.paths import REPO_ROOT

PLAYBOOK = Path(__file__).with_suffix(".yml")
DEMO = REPO_ROOT / "inventory" / "demo"
# Their Node labels on the real cluster: two demo hosts that serve nvidia (OK), one that misses it (MISSING) and is
# no GPU node there, so the nvidia class's nodeSelector leaves it out and runtimeclass_apply creates the class.
JUDGED_HOSTS = {"gpu-node-01": {"nvidia.com/gpu.present": "true"}, "gpu-node-02": {},
                "gpu-node-06": {"nvidia.com/gpu.present": "true"}}
V2_CRI = '"io.containerd.grpc.v1.cri"'


def write_config_tree(tree: Path) -> None:
    """A version 2 root that imports conf.d/*.toml and serves runc (any containerd 1.6 to 2.x reads it)."""
    (tree / "conf.d").mkdir(parents=True)
    (tree / "config.toml").write_text(
        f'version = 2\nimports = ["{tree}/conf.d/*.toml"]\n\n[plugins.{V2_CRI}.containerd]\n  default_runtime_name = "runc"\n'
        f'[plugins.{V2_CRI}.containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n', encoding="utf-8")


def run_every_module(workdir: Path, cluster, containerd_bin: str) -> tuple[dict, subprocess.CompletedProcess]:
    """``({module: [registered results]}, the ansible-playbook run)``; the Nodes of the judged hosts are added first."""
    for host, labels in JUDGED_HOSTS.items():
        cluster.add_node(host, labels)
    tree = workdir / "tree"
    write_config_tree(tree)
    runtime_bin = workdir / "bin" / "nvidia-container-runtime"
    runtime_bin.parent.mkdir()
    runtime_bin.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    runtime_bin.chmod(0o755)
    inventory = workdir / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {
        "hosts": {"localhost": {"ansible_connection": "local"}},
        "children": {"nodes": {"vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
                               "hosts": {host: None for host in JUDGED_HOSTS}}}}}), encoding="utf-8")
    results_file = workdir / "results.json"
    env = {key: value for key, value in os.environ.items() if not key.startswith("K8S_AUTH_") and key != "KUBECONFIG"}
    env.update(cluster.auth_env(), ANSIBLE_CONFIG=str(REPO_ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default", ANSIBLE_LOCAL_TEMP=str(workdir / "ansible-tmp"))
    extra_vars = {"demo_dir": str(DEMO), "tree": str(tree), "containerd_bin": containerd_bin,
                  "runtime_bin": str(runtime_bin), "results_file": str(results_file), "report_dir": str(workdir / "report")}
    completed = subprocess.run(
        [str(Path(sys.executable).with_name("ansible-playbook")), str(PLAYBOOK), "-i", str(inventory),
         "-e", json.dumps(extra_vars)],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    results = json.loads(results_file.read_text(encoding="utf-8")) if results_file.is_file() else {}
    return results, completed
