"""The order of cluster access sources, as the README, the k8s_nodes plugin docs and ``rc-crosscheck --help`` state it
(issue 14), and as the plugin and the CLI follow it against the API stand-in.

Each text names four steps; each step must name the same sources (host + api_key; kubeconfig or context; the
in-cluster service account; the default kubeconfig), in that order, in all three.
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support.kube_fixtures import node
from support.paths import COLLECTIONS_ROOT, REPO_ROOT

BIN = Path(sys.executable).parent
PLUGIN = "gpufleet.runtime_gate.k8s_nodes"
# What each step must name, lower-cased, after markup (O(), E(), C(), backticks) is stripped.
STEP_TERMS = [
    ("host", "api_key", "client_cert", "client_key", "no file read"),
    ("kubeconfig", "context", "default kubeconfig"),
    ("in-cluster service account",),
    ("default kubeconfig", "kubeconfig", "~/.kube/config"),
]
STEPS = re.compile(r"1\. (?P<s1>.*?) 2\. (?P<s2>.*?) 3\. (?P<s3>.*?) 4\. (?P<s4>.*?\))")


def plain(text):
    text = re.sub(r"\b[OECVP]\(([^)]*)\)", r"\1", text)
    return " ".join(text.replace("`", "").split()).lower()


def readme_text():
    section = (REPO_ROOT / "README.md").read_text().split("### Cluster access", 1)[1].split("\n#", 1)[0]
    return plain(section)


def plugin_doc_text():
    completed = subprocess.run([BIN / "ansible-doc", "-t", "inventory", "--json", PLUGIN], cwd=REPO_ROOT,
                               capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stderr
    return plain(" ".join(json.loads(completed.stdout)[PLUGIN]["doc"]["description"]))


def cli_help_text():
    completed = subprocess.run([sys.executable, REPO_ROOT / "bin" / "rc-crosscheck", "--help"], cwd=REPO_ROOT,
                               capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stderr
    return plain(completed.stdout)


@pytest.mark.parametrize("source", [readme_text, plugin_doc_text, cli_help_text], ids=["readme", "plugin-docs", "cli-help"])
def test_every_text_states_the_same_order(source):
    text = source()
    assert "k8s_auth_" in text, text  # each option falls back to its K8S_AUTH_* variable
    found = STEPS.search(text)
    assert found, text
    for number, terms in enumerate(STEP_TERMS, start=1):
        step = found[f"s{number}"]
        for term in terms:
            assert term in step, (number, term, step)
    # The default kubeconfig is named only in steps 2 and 4, never before the in-cluster service account as a source.
    assert "in-cluster" not in found["s1"] + found["s2"]


NODES = [node("gpu-1", {"nvidia.com/gpu.present": "true"})]


@pytest.fixture
def cluster(kube_api):
    kube_api.set_objects(nodes=NODES, runtimeclasses=[])
    return kube_api


def clean_environment(home, **extra):
    environ = {key: value for key, value in os.environ.items()
               if not key.startswith(("K8S_AUTH_", "ANSIBLE_")) and key not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    return {**environ, "HOME": str(home), **extra}


def write_kubeconfig(path, server):
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "not-a-secret"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    return path


def run_inventory(tmp_path, config, environment):
    cfg = tmp_path / "ansible.cfg"
    cfg.write_text(f"[defaults]\ncollections_path = {COLLECTIONS_ROOT}\n\n[inventory]\nenable_plugins = {PLUGIN}\n"
                   "unparsed_is_failed = true\n")
    source = tmp_path / "cluster.k8s_nodes.yml"
    source.write_text(yaml.safe_dump({"plugin": PLUGIN, **config}))
    return subprocess.run([BIN / "ansible-inventory", "-i", source, "--list"], cwd=tmp_path,
                          env={**environment, "ANSIBLE_CONFIG": str(cfg)}, capture_output=True, text=True, check=False)


def test_host_with_api_key_comes_before_a_kubeconfig(cluster, tmp_path):
    # Step 1 before step 2: the kubeconfig names a server where nothing listens, and is not read.
    home = tmp_path / "home"
    home.mkdir()
    elsewhere = write_kubeconfig(tmp_path / "elsewhere.yaml", "https://127.0.0.1:1")
    environment = clean_environment(home, K8S_AUTH_KUBECONFIG=str(elsewhere), K8S_AUTH_HOST=cluster.url,
                                    K8S_AUTH_API_KEY=cluster.token, K8S_AUTH_SSL_CA_CERT=str(cluster.ca_path))
    listed = run_inventory(tmp_path, {}, environment)
    assert listed.returncode == 0, listed.stderr
    assert "gpu-1" in json.loads(listed.stdout)["_meta"]["hostvars"]
    judged = subprocess.run([sys.executable, REPO_ROOT / "bin" / "rc-crosscheck",
                             REPO_ROOT / "inventory" / "demo" / "nodes" / "gpu-node-01" / "config-dump.toml"],
                            cwd=tmp_path, env=environment, capture_output=True, text=True, check=False)
    assert (judged.returncode, judged.stdout) == (0, "OK\n"), judged


def test_a_kubeconfig_comes_before_the_default_kubeconfig(cluster, tmp_path):
    # Step 2 before step 4: ~/.kube/config names a server where nothing listens; the given kubeconfig wins.
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    write_kubeconfig(home / ".kube" / "config", "https://127.0.0.1:1")
    listed = run_inventory(tmp_path, {"kubeconfig": str(cluster.kubeconfig_path)}, clean_environment(home))
    assert listed.returncode == 0, listed.stderr
    # Without it, the default kubeconfig is the source (not running in a pod): its server is the one refused.
    refused = run_inventory(tmp_path, {}, clean_environment(home))
    assert refused.returncode != 0 and "127.0.0.1:1" in refused.stderr, refused.stderr
