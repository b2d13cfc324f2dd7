"""RuntimeClasses from a file, through the real crosscheck.yml, runtimeclass_info and bin/rc-crosscheck.

A cluster without RuntimeClasses is a real state: its export (what kubectl prints for it) is judged on the
default runtime alone. A file that holds no Kubernetes objects at all is still refused, and a file whose YAML
aliases make a value hold itself fails the module with one message instead of a result that cannot be returned.
"""
import re
import subprocess

import pytest
import yaml
from kube_runs import DEMO, VENV_BIN, ansible_env, assert_one_clear_failure, run_crosscheck, run_module
from support.paths import REPO_ROOT

# `kubectl get runtimeclass -o yaml` on a cluster without RuntimeClasses (kubectl 1.33), byte for byte.
KUBECTL_EMPTY_EXPORT = 'apiVersion: v1\nitems: []\nkind: List\nmetadata:\n  resourceVersion: ""\n'
DEMO_HOSTS = sorted(path.name for path in (DEMO / "nodes").iterdir())
MODULE = "gpufleet.runtime_gate.runtimeclass_info"


def default_runtime_of(host):
    dump = (DEMO / "nodes" / host / "config-dump.toml").read_text()
    return re.search(r'^\s*default_runtime_name = "([^"]*)"', dump, re.MULTILINE).group(1)


def default_runtime_missing(host):
    """From the hand-worked expected verdicts of the demo (inventory/demo/README.md), not from the collection."""
    expected = yaml.safe_load((DEMO / "expected-verdicts.yml").read_text())["hosts"][host]
    return default_runtime_of(host) in expected["missing_handlers"]


@pytest.fixture
def empty_export(tmp_path):
    path = tmp_path / "runtimeclasses.yaml"
    path.write_text(KUBECTL_EMPTY_EXPORT)
    return path


def test_a_cluster_without_runtimeclasses_is_judged_on_the_default_runtime(tmp_path, empty_export):
    run = run_crosscheck(tmp_path, DEMO_HOSTS, {}, extra_args=(
        "-e", f"runtime_gate_runtimeclasses_file={empty_export}",
        "-e", "runtime_gate_list_nodes=false", "-e", "runtime_gate_list_pods=false"))
    assert "Traceback" not in run.output
    assert sorted(run.verdicts) == DEMO_HOSTS, run.output
    assert any(default_runtime_missing(host) for host in DEMO_HOSTS), "the demo must have a node whose default is broken"
    for host, verdict in run.verdicts.items():
        default = default_runtime_of(host)
        assert verdict["required_handlers"] == [default], (host, verdict)
        if default_runtime_missing(host):
            assert (verdict["status"], verdict["missing_handlers"]) == ("MISSING", [default]), (host, verdict)
        else:
            assert verdict["status"] == "OK", (host, verdict)
    assert run.returncode == 2, run.output  # the broken default fails the run; nothing else does


@pytest.mark.parametrize("host", ["gpu-node-01", "gpu-node-04"])
def test_rc_crosscheck_with_an_empty_export_judges_the_default_runtime(empty_export, host):
    completed = subprocess.run(
        [str(VENV_BIN / "python"), str(REPO_ROOT / "bin" / "rc-crosscheck"),
         str(DEMO / "nodes" / host / "config-dump.toml"), "--runtimeclasses", str(empty_export)],
        cwd=REPO_ROOT, env=ansible_env(), capture_output=True, text=True, timeout=120, check=False)
    expected = (1, f"MISSING={default_runtime_of(host)}\n") if default_runtime_missing(host) else (0, "OK\n")
    assert (completed.returncode, completed.stdout) == expected, completed


def test_an_api_without_runtimeclasses_is_judged_on_the_default_runtime(tmp_path, kube_api):
    # The API's answer for a cluster without RuntimeClasses: a RuntimeClassList with `items: []`.
    items = yaml.safe_load((DEMO / "cluster.yaml").read_text())["items"]
    kube_api.set_objects(runtimeclasses=[], nodes=[item for item in items if item["kind"] == "Node"])
    run = run_crosscheck(tmp_path, DEMO_HOSTS, {"K8S_AUTH_KUBECONFIG": kube_api.kubeconfig_path},
                         extra_args=("-e", "runtime_gate_list_pods=false"))
    assert "Traceback" not in run.output
    assert sorted(run.verdicts) == DEMO_HOSTS, run.output
    for host, verdict in run.verdicts.items():
        if verdict["status"] == "UNKNOWN":
            assert "unreachable" in verdict["reason"], (host, verdict)  # the demo's host without SSH
            continue
        default = default_runtime_of(host)
        assert verdict["required_handlers"] == [default], (host, verdict)
        expected = ("MISSING", [default]) if default_runtime_missing(host) else ("OK", [])
        assert (verdict["status"], verdict["missing_handlers"]) == expected, (host, verdict)


@pytest.mark.parametrize("host", ["gpu-node-01", "gpu-node-04"])
def test_rc_crosscheck_against_an_api_without_runtimeclasses(kube_api, host):
    kube_api.set_objects(runtimeclasses=[], nodes=[])
    completed = subprocess.run(
        [str(VENV_BIN / "python"), str(REPO_ROOT / "bin" / "rc-crosscheck"),
         str(DEMO / "nodes" / host / "config-dump.toml"), "--kubeconfig", str(kube_api.kubeconfig_path)],
        cwd=REPO_ROOT, env=ansible_env(), capture_output=True, text=True, timeout=120, check=False)
    expected = (1, f"MISSING={default_runtime_of(host)}\n") if default_runtime_missing(host) else (0, "OK\n")
    assert (completed.returncode, completed.stdout) == expected, completed


@pytest.mark.parametrize("content,fragment", [
    ("", "is empty: it holds no Kubernetes objects"),
    ("# kubectl printed nothing\n", "is empty: it holds no Kubernetes objects"),
    ("runtimeclasses: []\n", "document 1 has no 'kind'; it is not a Kubernetes object"),
    ("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}\n",
     "holds no RuntimeClass and no Node object"),
])
def test_a_file_without_kubernetes_objects_is_still_refused(tmp_path, content, fragment):
    manifest = tmp_path / "cluster.yaml"
    manifest.write_text(content)
    run = run_module(MODULE, {"src": manifest})
    assert_one_clear_failure(run, f"manifest file '{manifest}'", fragment)


def test_an_empty_export_reads_as_no_runtimeclasses(empty_export):
    run = run_module(MODULE, {"src": empty_export, "nodes": True, "pods": True})
    assert run.returncode == 0, run.output
    assert (run.result["runtimeclasses"], run.result["nodes"], run.result["pods"]) == ([], [], [])


@pytest.mark.parametrize("features", ["&f {recursiveReadOnlyMounts: true, again: *f}", "&f [*f]"])
def test_a_value_that_holds_itself_fails_the_module_with_one_message(tmp_path, features):
    manifest = tmp_path / "cluster.yaml"
    manifest.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: gpu-1}\nstatus:\n  runtimeHandlers:\n"
                        f"  - name: nvidia\n    features: {features}\n")
    run = run_module(MODULE, {"src": manifest, "nodes": True})
    assert_one_clear_failure(run, f"manifest file '{manifest}' uses a YAML alias (*f at line 7, column",
                             "aliases are refused")
