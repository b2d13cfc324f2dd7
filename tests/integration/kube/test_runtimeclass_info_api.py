"""runtimeclass_info run by real Ansible against the HTTPS API stand-in; kubectl against the same stand-in.

The stand-in caps pages at 2 objects whenever a client sends ``limit``, so five RuntimeClasses
can only be read completely by following ``continue`` tokens.
"""
import json
import socket
import subprocess

import kube_runs
import pytest
import yaml
from kube_runs import ansible_env, assert_one_clear_failure
from support.tools import require_command

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.errors import KubeAccessError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.lists import list_cluster_objects
from support.kube_fixtures import node, runtimeclass
from support.kube_standin import make_tls_material

MODULE = "gpufleet.runtime_gate.runtimeclass_info"
GPU_LABELS = {"kubernetes.io/os": "linux", "nvidia.com/gpu.present": "true"}
RUNTIMECLASSES = [
    runtimeclass("nvidia", "nvidia"),
    runtimeclass("nvidia-cdi", "nvidia-cdi", node_selector={"nvidia.com/gpu.present": "true"},
                 overhead={"cpu": "250m", "memory": "120Mi"},
                 tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]),
    runtimeclass("nvidia-legacy", "nvidia-legacy"),
    runtimeclass("kata", "kata-qemu", node_selector={"katacontainers.io/kata-runtime": "true"}),
    runtimeclass("gvisor", "runsc"),
]
RUNTIMECLASS_NAMES = sorted(rc["metadata"]["name"] for rc in RUNTIMECLASSES)
NODES = [
    node("gpu-1", GPU_LABELS, ["", "nvidia", "nvidia-cdi", "nvidia-legacy", "runc"]),
    node("gpu-2", GPU_LABELS),  # containerd 1.7: no runtimeHandlers reported
    node("cpu-1", {"kubernetes.io/os": "linux"}, ["", "runc"]),
]


def run_module(args, env=None, check_mode=False):
    return kube_runs.run_module(MODULE, args, env=env, check_mode=check_mode)


@pytest.fixture
def cluster(kube_api):
    kube_api.set_objects(runtimeclasses=RUNTIMECLASSES, nodes=NODES)
    return kube_api


@pytest.mark.parametrize("check_mode", [False, True], ids=["run", "check-mode"])
def test_api_read_follows_every_page(cluster, check_mode):
    run = run_module({"kubeconfig": cluster.kubeconfig_path, "nodes": True}, check_mode=check_mode)

    assert run.returncode == 0, run.output
    assert run.result["changed"] is False
    assert [rc["name"] for rc in run.result["runtimeclasses"]] == RUNTIMECLASS_NAMES
    assert run.result["source"] == {"type": "api", "server": cluster.url}
    runtimeclass_pages = cluster.list_calls("runtimeclasses")
    node_pages = cluster.list_calls("nodes")
    assert len(runtimeclass_pages) == 3 and len(node_pages) == 2
    assert all(page.query.get("limit") == "500" for page in runtimeclass_pages + node_pages)
    assert "continue" not in runtimeclass_pages[0].query
    assert all(page.query.get("continue") for page in runtimeclass_pages[1:])
    assert run.result["api_requests"] == 5

    by_name = {rc["name"]: rc for rc in run.result["runtimeclasses"]}
    assert by_name["nvidia-cdi"] == {
        "name": "nvidia-cdi", "handler": "nvidia-cdi", "overhead_pod_fixed": {"cpu": "250m", "memory": "120Mi"},
        "node_selector": {"nvidia.com/gpu.present": "true"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}
    assert by_name["nvidia"]["node_selector"] is None
    nodes = {item["name"]: item for item in run.result["nodes"]}
    assert sorted(nodes) == ["cpu-1", "gpu-1", "gpu-2"]
    assert [handler["name"] for handler in nodes["gpu-1"]["runtime_handlers"]] == [
        "", "nvidia", "nvidia-cdi", "nvidia-legacy", "runc"]
    assert nodes["gpu-2"]["runtime_handlers"] == []
    assert nodes["gpu-1"]["labels"] == GPU_LABELS


def test_page_size_is_sent_as_limit(cluster):
    run = run_module({"kubeconfig": cluster.kubeconfig_path, "page_size": 1})
    assert run.returncode == 0, run.output
    assert [page.query["limit"] for page in cluster.list_calls("runtimeclasses")] == ["1"] * 5
    assert "nodes" not in run.result and not cluster.list_calls("nodes")


def test_file_source_gives_the_same_result_as_the_api(cluster, tmp_path):
    manifest = tmp_path / "cluster.yaml"
    manifest.write_text(yaml.safe_dump_all(list(reversed(RUNTIMECLASSES + NODES)), explicit_start=True))

    from_api = run_module({"kubeconfig": cluster.kubeconfig_path, "nodes": True})
    from_file = run_module({"src": manifest, "nodes": True})

    assert from_file.returncode == 0, from_file.output
    assert from_file.result["source"] == {"type": "file", "path": str(manifest)}
    assert from_file.result["api_requests"] == 0
    assert from_file.result["runtimeclasses"] == from_api.result["runtimeclasses"]
    assert from_file.result["nodes"] == from_api.result["nodes"]


def test_kubectl_reads_the_stand_in_and_its_export_feeds_the_module(cluster, tmp_path):
    kubectl = require_command("kubectl", "kubernetes-client")

    def kubectl_get(*args):
        completed = subprocess.run([kubectl, "--kubeconfig", str(cluster.kubeconfig_path), "--cache-dir",
                                    str(tmp_path / "kube-cache"), "get", *args],
                                   capture_output=True, text=True, timeout=60, check=False)
        assert completed.returncode == 0, completed.stderr
        return completed.stdout

    listed = json.loads(kubectl_get("runtimeclass", "-o", "json"))
    assert sorted(item["metadata"]["name"] for item in listed["items"]) == RUNTIMECLASS_NAMES
    assert {item["kind"] for item in listed["items"]} == {"RuntimeClass"}
    assert len(cluster.list_calls("runtimeclasses")) == 3  # kubectl's limit=500, capped at 2 per page

    cluster.requests.clear()
    export = kubectl_get("runtimeclass,node", "-o", "yaml", "--chunk-size=1")
    assert [page.query.get("limit") for page in cluster.list_calls("runtimeclasses")] == ["1"] * 5
    assert len(cluster.list_calls("nodes")) == 3

    manifest = tmp_path / "kubectl-export.yaml"
    manifest.write_text(export)
    from_file = run_module({"src": manifest, "nodes": True})
    from_api = run_module({"kubeconfig": cluster.kubeconfig_path, "nodes": True})
    assert from_file.returncode == 0, from_file.output
    assert (from_file.result["runtimeclasses"], from_file.result["nodes"]) == (
        from_api.result["runtimeclasses"], from_api.result["nodes"])


def test_kubectl_apply_writes_runtimeclasses_the_module_then_reads(cluster, tmp_path):
    kubectl = require_command("kubectl", "kubernetes-client")
    manifest = ("apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {{name: wasm, labels: {{rev: '{rev}'}}}}\n"
                "handler: {handler}\n")

    def apply(handler, rev=1):
        return subprocess.run([kubectl, "--kubeconfig", str(cluster.kubeconfig_path), "--cache-dir",
                               str(tmp_path / "kube-cache"), "apply", "--validate=false", "-f", "-"],
                              input=manifest.format(handler=handler, rev=rev), capture_output=True, text=True,
                              timeout=60, check=False)

    assert "created" in apply("spin").stdout
    assert "unchanged" in apply("spin").stdout
    assert "configured" in apply("spin", rev=2).stdout
    immutable = apply("wasmtime", rev=2)
    assert immutable.returncode != 0 and "field is immutable" in immutable.stderr
    assert [(r.method, r.path.rsplit("/", 1)[-1]) for r in cluster.requests if r.method != "GET"] == [
        ("POST", "runtimeclasses"), ("PATCH", "wasm"), ("PATCH", "wasm")]

    run = run_module({"kubeconfig": cluster.kubeconfig_path})
    assert {rc["name"]: rc["handler"] for rc in run.result["runtimeclasses"]}["wasm"] == "spin"


@pytest.mark.parametrize("resource,status,asked,server_says", [
    ("runtimeclasses", 401, "listing RuntimeClasses (node.k8s.io/v1)", "HTTP 401 Unauthorized: Unauthorized"),
    ("runtimeclasses", 403, "listing RuntimeClasses (node.k8s.io/v1)",
     'HTTP 403 Forbidden: runtimeclasses.node.k8s.io is forbidden: User "system:serviceaccount:gpu-checks:runtime-gate"'),
    ("runtimeclasses", 404, "listing RuntimeClasses (node.k8s.io/v1)",
     "HTTP 404 Not Found: the server could not find the requested resource"),
    ("runtimeclasses", 500, "listing RuntimeClasses (node.k8s.io/v1)",
     "HTTP 500 Internal Server Error: Internal error occurred: etcdserver: request timed out"),
    ("nodes", 403, "listing Nodes (v1)", 'cannot list resource "nodes"'),
])
def test_http_errors_say_what_was_asked_of_which_server(cluster, resource, status, asked, server_says):
    cluster.fail(resource, status)
    # The token comes from the kubeconfig: Ansible masks only no_log options, so a leak would show here.
    run = run_module({"kubeconfig": cluster.kubeconfig_path, "nodes": True})
    assert_one_clear_failure(run, f"{asked} from {cluster.url} failed", server_says, secrets=[cluster.token])
    assert run.result["http_status"] == status and run.result["server"] == cluster.url


@pytest.mark.parametrize("status", [401, 403, 500])
def test_api_key_never_reaches_an_error_message(cluster, status):
    # In-process: the module's output would hide it anyway, because api_key is no_log.
    cluster.fail("runtimeclasses", status)
    with pytest.raises(KubeAccessError) as raised:
        list_cluster_objects({"host": cluster.url, "api_key": cluster.token, "ca_cert": str(cluster.ca_path)})
    assert f"HTTP {status}" in str(raised.value) and cluster.url in str(raised.value)
    assert cluster.token not in str(raised.value) and raised.value.http_status == status


def test_rejected_api_key_fails_the_task(cluster):
    run = run_module({"host": cluster.url, "api_key": "wrong-token-5d1e0b7a", "ca_cert": cluster.ca_path})
    assert_one_clear_failure(run, "HTTP 401 Unauthorized", cluster.url, secrets=["wrong-token-5d1e0b7a"])


def test_wrong_ca_gives_a_tls_message(cluster, tmp_path):
    other_ca = make_tls_material(tmp_path / "other-ca", name="other").ca_path
    run = run_module({"host": cluster.url, "api_key": cluster.token, "ca_cert": other_ca})
    assert_one_clear_failure(run, f"from {cluster.url} failed", "TLS verification of the server certificate failed",
                             "ca_cert", secrets=[cluster.token])


def test_unreachable_port_gives_a_clear_message():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    server = f"https://127.0.0.1:{closed_port}"
    run = run_module({"host": server, "api_key": "token-for-nobody-1234"})
    assert_one_clear_failure(run, f"listing RuntimeClasses (node.k8s.io/v1) from {server} failed",
                             "connection refused", secrets=["token-for-nobody-1234"])


def test_slow_server_hits_request_timeout(cluster):
    cluster.delay_seconds = 3
    run = run_module({"kubeconfig": cluster.kubeconfig_path, "request_timeout": 1})
    assert_one_clear_failure(run, f"from {cluster.url} failed", "no answer within 1 s (request_timeout)")


def test_client_certificate_without_kubeconfig(cluster, kube_tls):
    run = run_module({"host": cluster.url, "client_cert": kube_tls.client_cert_path,
                      "client_key": kube_tls.client_key_path, "ca_cert": kube_tls.ca_path})
    assert run.returncode == 0, run.output
    assert [rc["name"] for rc in run.result["runtimeclasses"]] == RUNTIMECLASS_NAMES


@pytest.mark.parametrize("how", ["options", "environment"])
def test_kubeconfig_and_context_from_options_or_k8s_auth_environment(cluster, how):
    def read(context=None):
        options = {"kubeconfig": cluster.kubeconfig_path, **({"context": context} if context else {})}
        if how == "options":
            return run_module(options)
        return run_module({}, env=ansible_env(**{f"K8S_AUTH_{key.upper()}": value for key, value in options.items()}))

    default_context = read()
    assert default_context.returncode == 0, default_context.output
    assert default_context.result["source"] == {"type": "api", "server": cluster.url}
    bad_context = read("standin-bad-token")
    assert_one_clear_failure(bad_context, "HTTP 401", secrets=["not-the-standin-token", cluster.token])


def test_missing_kubernetes_library_is_a_clean_failure(cluster, tmp_path):
    blocker = tmp_path / "block-kubernetes" / "kubernetes"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError(\"No module named 'kubernetes' (blocked by the test)\")\n")
    env = ansible_env(PYTHONPATH=blocker.parent)

    run = run_module({"kubeconfig": cluster.kubeconfig_path}, env=env)
    assert run.status == "FAILED!" and "Failed to import the required Python library (kubernetes)" in run.result["msg"]
    manifest = tmp_path / "cluster.yaml"
    manifest.write_text(yaml.safe_dump_all(RUNTIMECLASSES))
    assert run_module({"src": manifest}, env=env).returncode == 0  # a file does not need the library


@pytest.mark.parametrize("content,fragment", [
    ("kind: [unclosed\n", "is not valid YAML at line"),
    ("apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: nvidia}\n", "RuntimeClass 'nvidia' has no 'handler'"),
])
def test_bad_src_file_fails_naming_the_file(tmp_path, content, fragment):
    manifest = tmp_path / "cluster.yaml"
    manifest.write_text(content)
    run = run_module({"src": manifest})
    assert_one_clear_failure(run, f"manifest file '{manifest}'", fragment)


def test_expired_continue_token_restarts_the_list_once(cluster):
    cluster.fail("runtimeclasses", 410, times=1, skip=1)
    listed = list_cluster_objects({"kubeconfig": str(cluster.kubeconfig_path)})
    assert [rc["name"] for rc in listed["runtimeclasses"]] == RUNTIMECLASS_NAMES
    assert listed["api_requests"] == 5 == len(cluster.list_calls("runtimeclasses"))


def test_module_defaults_shared_with_kubernetes_core(cluster, tmp_path):
    """One module_defaults block for both collections (issue 25 item 5): no_proxy and persist_config false are taken
    with kubernetes.core's meaning; impersonate_user is refused naming it and what to do instead, never ignored."""
    playbook = tmp_path / "shared-defaults.yml"
    shared = {"kubeconfig": str(cluster.kubeconfig_path), "no_proxy": "127.0.0.1,localhost", "persist_config": False}
    playbook.write_text(yaml.safe_dump([{
        "hosts": "localhost", "connection": "local", "gather_facts": False,
        "module_defaults": {"group/gpufleet.runtime_gate.k8s": shared},
        "tasks": [
            {"name": "read", "gpufleet.runtime_gate.runtimeclass_info": {}, "register": "plain"},
            {"name": "impersonating", "gpufleet.runtime_gate.runtimeclass_info": {"impersonate_user": "alice"},
             "register": "impersonating", "ignore_errors": True},
            {"ansible.builtin.copy": {"dest": str(tmp_path / "results.json"),
                                      "content": "{{ {'plain': plain, 'impersonating': impersonating} | to_json }}"}},
        ],
    }]))
    completed = subprocess.run([str(kube_runs.VENV_BIN / "ansible-playbook"), "-i", "localhost,", str(playbook),
                                "-e", f"ansible_python_interpreter={kube_runs.VENV_BIN / 'python'}"],
                               cwd=kube_runs.REPO_ROOT, env=ansible_env(), capture_output=True, text=True, timeout=180, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    results = json.loads((tmp_path / "results.json").read_text())
    assert [rc["name"] for rc in results["plain"]["runtimeclasses"]] == RUNTIMECLASS_NAMES
    refused = results["impersonating"]
    assert refused["failed"] is True and refused["msg"].startswith(
        "impersonate_user is set, which kubernetes.core takes but gpufleet.runtime_gate does not: give the credentials"), refused
