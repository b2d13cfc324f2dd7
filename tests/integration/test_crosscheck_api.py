"""crosscheck.yml and rc-crosscheck reading the cluster over HTTPS from the API stand-in.

The demo fleet's committed dumps (real containerd 1.6.20 output) are judged against the demo cluster,
served by the stand-in instead of a file: same verdicts, the cluster asked once per run whatever the
number of hosts, and a refused token turns every host UNKNOWN, never OK.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import yaml
from support.paths import REPO_ROOT

DEMO = REPO_ROOT / "inventory" / "demo"
BIN = Path(sys.executable).parent
EXPECTED = yaml.safe_load((DEMO / "expected-verdicts.yml").read_text())["hosts"]


def load_demo_cluster(kube_api):
    items = yaml.safe_load((DEMO / "cluster.yaml").read_text())["items"]
    kube_api.set_objects(
        runtimeclasses=[item for item in items if item["kind"] == "RuntimeClass"],
        nodes=[item for item in items if item["kind"] == "Node"],
    )


def write_inventory(path, hosts):
    inventory = {
        "all": {
            "hosts": {"localhost": {"ansible_connection": "local"}},
            "children": {
                "gpu_nodes": {
                    "vars": {
                        "ansible_connection": "local",
                        "ansible_python_interpreter": sys.executable,
                        "runtime_gate_dump_file": str(DEMO / "nodes" / "{{ inventory_hostname }}" / "config-dump.toml"),
                    },
                    "hosts": {host: None for host in hosts},
                }
            },
        }
    }
    path.write_text(yaml.safe_dump(inventory))
    return path


def crosscheck(tmp_path, hosts, kubeconfig, context="standin"):
    verdicts_file = tmp_path / f"verdicts-{len(hosts)}.json"
    environment = {
        **os.environ,
        "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"),
        "K8S_AUTH_KUBECONFIG": str(kubeconfig),
        "K8S_AUTH_CONTEXT": context,
    }
    completed = subprocess.run(
        [BIN / "ansible-playbook", "-i", str(write_inventory(tmp_path / f"hosts-{len(hosts)}.yml", hosts)),
         str(REPO_ROOT / "playbooks" / "crosscheck.yml"), "-e", f"runtime_gate_verdicts_file={verdicts_file}"],
        cwd=REPO_ROOT, env=environment, capture_output=True, text=True, check=False,
    )
    verdicts = json.loads(verdicts_file.read_text())["hosts"] if verdicts_file.exists() else None
    return completed, verdicts


def test_cluster_is_asked_once_per_run_whatever_the_host_count(kube_api, tmp_path):
    load_demo_cluster(kube_api)
    kubeconfig = kube_api.write_kubeconfig(tmp_path / "kubeconfig")
    calls = {}
    for hosts in (["gpu-node-01", "gpu-node-02"], [f"gpu-node-0{number}" for number in range(1, 8)]):
        before_rc, before_nodes = len(kube_api.list_calls("runtimeclasses")), len(kube_api.list_calls("nodes"))
        completed, verdicts = crosscheck(tmp_path, hosts, kubeconfig)
        assert completed.returncode == 2, completed.stdout + completed.stderr
        assert {host: (v["status"], v["missing_handlers"]) for host, v in verdicts.items()} == {
            host: (EXPECTED[host]["status"], EXPECTED[host]["missing_handlers"]) for host in hosts
        }
        calls[len(hosts)] = (len(kube_api.list_calls("runtimeclasses")) - before_rc, len(kube_api.list_calls("nodes")) - before_nodes)
    # one list request per page of max_page objects, the same for 2 hosts as for 7
    items = yaml.safe_load((DEMO / "cluster.yaml").read_text())["items"]
    pages = tuple(-(-sum(item["kind"] == kind for item in items) // kube_api.max_page) for kind in ("RuntimeClass", "Node"))
    assert pages[0] >= 2
    assert calls[2] == calls[7] == pages
    continued = [request for request in kube_api.list_calls("runtimeclasses") if "continue" in request.query]
    assert continued and all("limit" in request.query for request in kube_api.list_calls("runtimeclasses"))


def test_refused_token_makes_every_host_unknown(kube_api, tmp_path):
    load_demo_cluster(kube_api)
    kubeconfig = kube_api.write_kubeconfig(tmp_path / "kubeconfig")
    completed, verdicts = crosscheck(tmp_path, ["gpu-node-01", "gpu-node-06"], kubeconfig, context="standin-bad-token")
    assert completed.returncode == 2
    assert {verdict["status"] for verdict in verdicts.values()} == {"UNKNOWN"}
    for verdict in verdicts.values():
        assert "401" in verdict["reason"] and kube_api.url in verdict["reason"], verdict["reason"]
    assert "not-the-standin-token" not in completed.stdout + completed.stderr


def test_server_error_makes_every_host_unknown(kube_api, tmp_path):
    load_demo_cluster(kube_api)
    kube_api.fail("nodes", 500, "etcdserver: request timed out")
    completed, verdicts = crosscheck(tmp_path, ["gpu-node-01"], kube_api.write_kubeconfig(tmp_path / "kubeconfig"))
    assert completed.returncode == 2
    reason = verdicts["gpu-node-01"]["reason"]
    assert verdicts["gpu-node-01"]["status"] == "UNKNOWN"
    assert "500" in reason and "etcdserver: request timed out" in reason and "Nodes" in reason


def test_rc_crosscheck_reads_the_cluster(kube_api, tmp_path):
    load_demo_cluster(kube_api)
    kubeconfig = kube_api.write_kubeconfig(tmp_path / "kubeconfig")
    dump = DEMO / "nodes" / "gpu-node-03" / "config-dump.toml"
    completed = subprocess.run(
        [str(REPO_ROOT / "bin" / "rc-crosscheck"), "--kubeconfig", str(kubeconfig), "--context", "standin", str(dump)],
        capture_output=True, text=True, check=False,
    )
    assert (completed.returncode, completed.stdout, completed.stderr) == (1, "MISSING=nvdia\nMISSING=nvidia-cdi\n", "")
    assert len(kube_api.list_calls("runtimeclasses")) >= 2  # paginated: 3 classes, at most max_page (2) a page

    refused = subprocess.run(
        [str(REPO_ROOT / "bin" / "rc-crosscheck"), "--kubeconfig", str(kubeconfig), "--context", "standin-bad-token", str(dump)],
        capture_output=True, text=True, check=False,
    )
    assert (refused.returncode, refused.stdout) == (2, "")
    assert "401" in refused.stderr and "not-the-standin-token" not in refused.stderr
