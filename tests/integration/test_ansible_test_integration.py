"""`ansible-test integration --local` over the targets in tests/integration/targets (one per module and the role).

As tools/ansible-sanity does, the collection's files (tracked and new, not ignored) are copied to an
``ansible_collections/gpufleet/runtime_gate`` path, which ansible-test needs. ansible-test passes only a few
environment variables on to the playbooks, so what the targets need is written into the copy's
``tests/integration/integration_config.yml``, which ansible-test hands to every target as extra variables:

- ``runtime_gate_test_kubeconfig``, ``runtime_gate_test_kubectl``: the admin kubeconfig of a real cluster
  (``support.kube_cluster``) and the kubectl that validates what the Kubernetes modules wrote;
- ``runtime_gate_test_containerd``, ``runtime_gate_test_containerd_at_etc``: the real containerd binary and the
  wrapper that runs it on a config tree in a private mount namespace (root: the targets that need it say
  ``needs/root``; this machine's tests run as root);
- ``runtime_gate_test_demo_dir``: the demo fleet (its cluster file and the real 1.6.20 dumps).

Each target runs check mode, apply, check mode again (no change), apply again (no change), then validates with an
independent tool (community.crypto's ``tests/integration/targets/openssl_privatekey`` does the same with openssl).
"""
import os
import subprocess

import pytest
import yaml
from support.kube_cluster import ClusterNotReady, start_cluster
from support.paths import REPO_ROOT
from support.tools import require_command

TARGETS_DIR = REPO_ROOT / "tests" / "integration" / "targets"
TARGETS = sorted(path.name for path in TARGETS_DIR.iterdir() if (path / "tasks" / "main.yml").is_file())
CLUSTER_TARGETS = {"runtimeclass_apply", "node_handler_labels"}


@pytest.fixture(scope="module")
def collection_copy(tmp_path_factory):
    """The collection at .../ansible_collections/gpufleet/runtime_gate, as a git checkout (ansible-test wants one)."""
    require_command("git", "git")
    root = tmp_path_factory.mktemp("ansible-test-integration")
    collection = root / "ansible_collections" / "gpufleet" / "runtime_gate"
    collection.mkdir(parents=True)
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO_ROOT,
                            capture_output=True, check=True).stdout.split(b"\0")
    files = [name.decode() for name in listed if name and not name.startswith(b".collections/")
             and (REPO_ROOT / name.decode()).is_file()]
    subprocess.run(["cp", "--parents", "-t", str(collection), *files], cwd=REPO_ROOT, check=True)
    # ansible-test writes its inventory file at tests/integration/inventory, where this repository keeps the inventory
    # plugin's pytest files; the copy only runs the targets, so they are moved out of its way.
    (collection / "tests" / "integration" / "inventory").rename(collection / "tests" / "integration" / "inventory-tests")
    subprocess.run(["git", "init", "-q"], cwd=collection, check=True)
    subprocess.run(["git", "add", "-A"], cwd=collection, check=True)
    return collection


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    try:
        running = start_cluster(tmp_path_factory.mktemp("kube-cluster"))
    except ClusterNotReady as err:
        pytest.fail(f"the test cluster did not start: {err}", pytrace=False)
    try:
        yield running
    finally:
        running.stop()


def run_ansible_test(collection, target, integration_vars):
    (collection / "tests" / "integration" / "integration_config.yml").write_text(
        yaml.safe_dump(integration_vars), encoding="utf-8")
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("K8S_AUTH_", "ANSIBLE_")) and key != "KUBECONFIG"}
    command = [str(REPO_ROOT / ".venv" / "bin" / "ansible-test"), "integration", "--local", "--python", "3.11", "--color",
               "no", target]
    if os.geteuid() == 0:
        # Defence in depth for a target that would miss its tree: this machine's /etc/containerd is hidden under an
        # empty tmpfs in a mount namespace of the run's own (containerd-at-etc still finds its mount point there).
        command = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                   'mount -t tmpfs -o mode=0755 tmpfs /etc/containerd && exec "$@"', "ansible-test-integration", *command]
    return subprocess.run(command, cwd=collection, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          check=False, timeout=900)


@pytest.mark.parametrize("target", TARGETS)
def test_target_passes(target, collection_copy, request):
    containerd = require_command("containerd", "containerd")
    integration_vars = {
        "runtime_gate_test_demo_dir": str(collection_copy / "inventory" / "demo"),
        "runtime_gate_test_containerd": containerd,
        "runtime_gate_test_containerd_at_etc": str(collection_copy / "inventory" / "demo" / "bin" / "containerd-at-etc"),
    }
    if target in CLUSTER_TARGETS:
        running = request.getfixturevalue("cluster")
        integration_vars.update(runtime_gate_test_kubeconfig=str(running.admin_kubeconfig),
                                runtime_gate_test_kubectl=running.kubectl_bin)
    completed = run_ansible_test(collection_copy, target, integration_vars)
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output[-8000:]
    assert f"Running {target} integration test role" in output, output[-4000:]
