"""The k8s_nodes inventory plugin, run by the real ``ansible-inventory --list`` against the HTTPS API stand-in.

The stand-in caps every page at 2 objects when a client sends ``limit``, so five Nodes are only all
there if the plugin followed the ``continue`` tokens.
"""
import json
import os
import subprocess

import pytest
import yaml
from support.kube_fixtures import node
from support.paths import COLLECTIONS_ROOT, REPO_ROOT

ANSIBLE_INVENTORY = REPO_ROOT / ".venv" / "bin" / "ansible-inventory"
PLUGIN = "gpufleet.runtime_gate.k8s_nodes"
GPU = {"kubernetes.io/os": "linux", "nvidia.com/gpu.present": "true"}


def with_addresses(node_obj, *addresses):
    node_obj["status"]["addresses"] = [{"type": kind, "address": address} for kind, address in addresses]
    return node_obj


NODES = [
    with_addresses(node("gpu-1", GPU), ("InternalIP", "10.0.0.11"), ("Hostname", "gpu-1")),
    with_addresses(node("gpu-2", dict(GPU, pool="canary")), ("Hostname", "gpu-2.lan"), ("InternalIP", "10.0.0.12"),
                   ("ExternalIP", "203.0.113.12")),
    # Reports only its host name (no InternalIP): still a host, with a warning, never silently dropped.
    with_addresses(node("gpu-3", GPU), ("Hostname", "gpu-3.lan")),
    with_addresses(node("cpu-1", {"kubernetes.io/os": "linux"}), ("InternalIP", "10.0.1.21")),
    with_addresses(node("cpu-2", {"kubernetes.io/os": "linux", "nvidia.com/gpu.present": "false"}),
                   ("InternalIP", "10.0.1.22")),
]


@pytest.fixture
def cluster(kube_api):
    kube_api.set_objects(nodes=NODES)
    return kube_api


@pytest.fixture
def run_inventory(tmp_path):
    """``run_inventory(config, *extra_args, env=..., ansible_cfg=...)`` → (returncode, parsed --list or None, stderr)."""
    home = tmp_path / "home"
    home.mkdir()
    strict_cfg = tmp_path / "ansible.cfg"
    # Only this plugin, and a source that fails to parse fails the command (what a nightly run wants).
    strict_cfg.write_text(f"[defaults]\ncollections_path = {COLLECTIONS_ROOT}\n\n"
                          f"[inventory]\nenable_plugins = {PLUGIN}\nunparsed_is_failed = true\n")

    def run(config, *extra_args, env=None, ansible_cfg=strict_cfg, name="cluster.k8s_nodes.yml"):
        config_path = tmp_path / name
        config_path.write_text(yaml.safe_dump(config) if isinstance(config, dict) else config)
        environ = {key: value for key, value in os.environ.items()
                   if not key.startswith(("K8S_AUTH_", "ANSIBLE_")) and key not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
        environ.update(HOME=str(home), ANSIBLE_CONFIG=str(ansible_cfg), ANSIBLE_NOCOLOR="1",
                       ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="1")
        environ.update(env or {})
        completed = subprocess.run([str(ANSIBLE_INVENTORY), "-i", str(config_path), "--list", *extra_args],
                                   cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=120, check=False)
        listed = json.loads(completed.stdout, object_hook=_unwrap_unsafe) if completed.returncode == 0 else None
        return completed.returncode, listed, completed.stderr

    return run


def _unwrap_unsafe(obj):
    """ansible-core 2.19 marks strings from an inventory plugin as untrusted ({"__ansible_unsafe": ...})."""
    return UnsafeText(obj["__ansible_unsafe"]) if set(obj) == {"__ansible_unsafe"} else obj


class UnsafeText(str):
    """A string ansible-inventory marked as never to be templated."""


def plugin_config(kube_api, **options):
    return {"plugin": PLUGIN, "kubeconfig": str(kube_api.kubeconfig_path), **options}


def group_hosts(listed, group):
    return sorted(listed.get(group, {}).get("hosts", []))


def test_hosts_groups_addresses_and_hostvars_from_every_page(cluster, run_inventory):
    returncode, listed, stderr = run_inventory(plugin_config(cluster))
    assert returncode == 0, stderr
    hostvars = listed["_meta"]["hostvars"]
    assert sorted(hostvars) == ["cpu-1", "cpu-2", "gpu-1", "gpu-2", "gpu-3"]
    # Default group: nvidia.com/gpu.present=true exactly ("false" is not a GPU node).
    assert group_hosts(listed, "gpu_nodes") == ["gpu-1", "gpu-2", "gpu-3"]
    assert group_hosts(listed, "ungrouped") == ["cpu-1", "cpu-2"]
    assert hostvars["gpu-1"] == {"ansible_host": "10.0.0.11", "runtime_gate_node_name": "gpu-1",
                                 "runtime_gate_node_labels": GPU}
    # Values from the API are data, never templates: a label value of "{{ ... }}" stays text.
    assert isinstance(hostvars["gpu-1"]["runtime_gate_node_labels"]["nvidia.com/gpu.present"], UnsafeText)
    # InternalIP wins wherever it stands in the list.
    assert hostvars["gpu-2"]["ansible_host"] == "10.0.0.12"
    assert hostvars["gpu-2"]["runtime_gate_node_labels"]["pool"] == "canary"
    assert "ansible_host" not in hostvars["gpu-3"] and hostvars["gpu-3"]["runtime_gate_node_name"] == "gpu-3"
    warning = " ".join(stderr.split())
    assert "Node 'gpu-3' reports no InternalIP address (it reports: Hostname); added without ansible_host" in warning
    # 5 nodes, pages of at most 2: three list calls with limit, the later ones continuing; nothing else listed.
    node_calls = cluster.list_calls("nodes")
    assert len(node_calls) == 3
    assert all(call.query.get("limit") for call in node_calls)
    assert [bool(call.query.get("continue")) for call in node_calls] == [False, True, True]
    assert cluster.list_calls("runtimeclasses") == []


def test_custom_groups_and_address_preference(cluster, run_inventory):
    config = plugin_config(cluster, node_groups={"gpu_nodes": {"nvidia.com/gpu.present": "true"},
                                                 "canary": {"pool": "canary", "nvidia.com/gpu.present": "true"},
                                                 "linux": {"kubernetes.io/os": "linux"}, "everything": {}},
                           address_type=["ExternalIP", "Hostname"])
    returncode, listed, stderr = run_inventory(config)
    assert returncode == 0, stderr
    assert group_hosts(listed, "canary") == ["gpu-2"]
    assert group_hosts(listed, "linux") == ["cpu-1", "cpu-2", "gpu-1", "gpu-2", "gpu-3"]
    assert group_hosts(listed, "everything") == group_hosts(listed, "linux")
    addresses = {host: hostvars.get("ansible_host") for host, hostvars in listed["_meta"]["hostvars"].items()}
    assert addresses == {"gpu-1": "gpu-1", "gpu-2": "203.0.113.12", "gpu-3": "gpu-3.lan", "cpu-1": None, "cpu-2": None}
    warning = " ".join(stderr.split())
    assert "Node 'cpu-1' reports no ExternalIP or Hostname address (it reports: InternalIP)" in warning


def test_cache_answers_the_second_run_without_asking_the_api(cluster, run_inventory, tmp_path):
    config = plugin_config(cluster, cache=True, cache_plugin="ansible.builtin.jsonfile",
                           cache_connection=str(tmp_path / "inventory-cache"), cache_timeout=600)
    returncode, first, stderr = run_inventory(config)
    assert returncode == 0, stderr
    assert len(cluster.list_calls("nodes")) == 3
    assert list((tmp_path / "inventory-cache").iterdir()), "the cache plugin wrote nothing"
    cluster.requests.clear()
    cluster.set_objects(nodes=NODES[:1])  # the cluster changes; the cached inventory must not

    returncode, second, stderr = run_inventory(config)
    assert returncode == 0, stderr
    assert cluster.requests == [], "a cached inventory must not call the API"
    assert second == first

    returncode, refreshed, stderr = run_inventory(config, "--flush-cache")
    assert returncode == 0, stderr
    assert len(cluster.list_calls("nodes")) == 1
    assert sorted(refreshed["_meta"]["hostvars"]) == ["gpu-1"]


def test_cache_off_asks_every_time(cluster, run_inventory):
    for _run in range(2):
        returncode, _listed, stderr = run_inventory(plugin_config(cluster))
        assert returncode == 0, stderr
    assert len(cluster.list_calls("nodes")) == 6


def test_auth_from_the_environment_and_the_repo_config(cluster, run_inventory):
    # The repository's ansible.cfg enables no plugin by name: the 'auto' plugin finds it from `plugin:`.
    returncode, listed, stderr = run_inventory({"plugin": PLUGIN}, env={"K8S_AUTH_KUBECONFIG": str(cluster.kubeconfig_path)},
                                               ansible_cfg=REPO_ROOT / "ansible.cfg")
    assert returncode == 0, stderr
    assert group_hosts(listed, "gpu_nodes") == ["gpu-1", "gpu-2", "gpu-3"]
    returncode, listed, stderr = run_inventory(
        {"plugin": PLUGIN, "host": cluster.url, "ca_cert": str(cluster.ca_path)}, env={"K8S_AUTH_API_KEY": cluster.token})
    assert returncode == 0, stderr
    assert len(listed["_meta"]["hostvars"]) == 5


def test_validate_certs_from_the_environment_is_not_hidden_by_the_default(cluster, run_inventory):
    config = {"plugin": PLUGIN, "host": cluster.url, "api_key": cluster.token}  # no ca_cert: the CA is unknown
    returncode, _listed, stderr = run_inventory(config)
    assert returncode != 0 and "TLS verification of the server certificate failed" in " ".join(stderr.split())
    returncode, listed, stderr = run_inventory(config, env={"K8S_AUTH_VERIFY_SSL": "false"})
    assert returncode == 0, stderr
    assert len(listed["_meta"]["hostvars"]) == 5
    assert "validate_certs is false" in " ".join(stderr.split())


@pytest.mark.parametrize("config_of, secret", [
    (lambda api: plugin_config(api, context="standin-bad-token"), "not-the-standin-token"),
    (lambda api: {"plugin": PLUGIN, "host": api.url, "ca_cert": str(api.ca_path), "api_key": "wrong-token-5d2e77"},
     "wrong-token-5d2e77"),
])
def test_rejected_credentials_are_one_clear_error_without_the_token(cluster, run_inventory, config_of, secret):
    returncode, listed, stderr = run_inventory(config_of(cluster))
    assert returncode != 0 and listed is None
    text = " ".join(stderr.split())
    assert (f"{PLUGIN} (" in text and "cannot build the inventory: listing Nodes (v1) from "
            f"{cluster.url} failed: HTTP 401" in text), stderr
    assert "credentials were not accepted" in text
    assert secret not in stderr and cluster.token not in stderr
    assert "Traceback" not in stderr


def test_server_error_names_the_server_and_the_problem(cluster, run_inventory):
    cluster.fail("nodes", 403)
    returncode, _listed, stderr = run_inventory(plugin_config(cluster))
    text = " ".join(stderr.split())
    assert returncode != 0
    assert f"listing Nodes (v1) from {cluster.url} failed: HTTP 403" in text and "cannot list resource" in text


def test_unreachable_server_fails_with_the_default_config_as_a_warning(run_inventory, tmp_path):
    # Ansible's default: an unparsed source warns and leaves an empty inventory (docs say to turn that off).
    config = {"plugin": PLUGIN, "host": "https://127.0.0.1:1", "api_key": "x-token-1234"}
    returncode, listed, stderr = run_inventory(config, ansible_cfg=REPO_ROOT / "ansible.cfg")
    text = " ".join(stderr.split())
    assert returncode == 0 and listed["_meta"]["hostvars"] == {}
    assert "from https://127.0.0.1:1 failed: connection refused" in text
    assert "x-token-1234" not in stderr


@pytest.mark.parametrize("options, message", [
    ({"node_groups": {"gpu_nodes": {"nvidia.com/gpu.present": True}}},
     "node_groups.gpu_nodes has 'nvidia.com/gpu.present': True; labels and values must be strings"),
    ({"node_groups": {"gpu-nodes": {}}}, "node_groups: 'gpu-nodes' is not a valid group name"),
    ({"node_groups": {"gpu_nodes\n": {}}}, "node_groups: 'gpu_nodes\\n' is not a valid group name"),
    ({"node_groups": {"gpu_nodes": ["nvidia.com/gpu.present=true"]}}, "node_groups.gpu_nodes must be a mapping"),
    ({"address_type": []}, "address_type must name at least one address type"),
    # A misspelt option would otherwise silently leave its default in place (here: only gpu_nodes).
    ({"node_group": {"canary": {"pool": "canary"}}}, "unknown option(s) node_group for gpufleet.runtime_gate.k8s_nodes"),
    ({"keyed_group": [{"key": "runtime_gate_node_name"}], "stict": True}, "unknown option(s) keyed_group, stict"),
])
def test_bad_configuration_is_one_clear_error(cluster, run_inventory, options, message):
    returncode, _listed, stderr = run_inventory(plugin_config(cluster, **options))
    assert returncode != 0
    assert message in " ".join(stderr.split()), stderr
    assert cluster.requests == [], "a bad configuration must be refused before the API is asked"


def test_files_with_other_names_are_not_this_plugins(cluster, run_inventory):
    returncode, _listed, stderr = run_inventory(plugin_config(cluster), name="cluster.yml")
    assert returncode != 0 and cluster.requests == []


def test_constructable_compose_groups_and_keyed_groups(cluster, run_inventory):
    config = plugin_config(
        cluster,
        compose={"node_pool": "runtime_gate_node_labels.pool | default('general')",
                 "ansible_host": "ansible_host | default(runtime_gate_node_name ~ '.nodes.example')"},
        groups={"canary_gpus": "node_pool == 'canary'", "no_internal_ip": "not ansible_host.startswith('10.')"},
        keyed_groups=[{"key": "node_pool", "prefix": "pool"},
                      {"key": "runtime_gate_node_labels['nvidia.com/gpu.present'] | default('unset')", "prefix": "gpu"}],
        strict=True)
    returncode, listed, stderr = run_inventory(config)
    assert returncode == 0, stderr
    hostvars = listed["_meta"]["hostvars"]
    assert hostvars["gpu-2"]["node_pool"] == "canary" and hostvars["gpu-1"]["node_pool"] == "general"
    assert hostvars["gpu-3"]["ansible_host"] == "gpu-3.nodes.example"  # composed over what the Node left unset
    assert hostvars["gpu-1"]["ansible_host"] == "10.0.0.11"
    assert group_hosts(listed, "canary_gpus") == ["gpu-2"]
    assert group_hosts(listed, "no_internal_ip") == ["gpu-3"]
    assert group_hosts(listed, "pool_canary") == ["gpu-2"]
    assert group_hosts(listed, "pool_general") == ["cpu-1", "cpu-2", "gpu-1", "gpu-3"]
    assert group_hosts(listed, "gpu_true") == ["gpu-1", "gpu-2", "gpu-3"]
    assert group_hosts(listed, "gpu_false") == ["cpu-2"] and group_hosts(listed, "gpu_unset") == ["cpu-1"]
    assert group_hosts(listed, "gpu_nodes") == ["gpu-1", "gpu-2", "gpu-3"]  # node_groups still apply


def test_strict_makes_an_undefined_variable_an_error(cluster, run_inventory):
    # Only gpu-2 has the label pool: without strict the others are left out of the keyed groups, with it the source fails.
    keyed = [{"key": "runtime_gate_node_labels.pool", "prefix": "pool"}]
    returncode, listed, stderr = run_inventory(plugin_config(cluster, keyed_groups=keyed, strict=False))
    assert returncode == 0, stderr
    assert group_hosts(listed, "pool_canary") == ["gpu-2"] and len(listed["_meta"]["hostvars"]) == 5
    returncode, _listed, stderr = run_inventory(plugin_config(cluster, keyed_groups=keyed, strict=True))
    assert returncode != 0
    assert "pool" in stderr, stderr


def test_nodes_named_all_localhost_or_a_group_are_renamed_and_shared_addresses_warned(kube_api, run_inventory):
    # Issue 22 item 10: such a Node broke the inventory or took over the group; two Nodes on one address were silent.
    kube_api.set_objects(nodes=[
        with_addresses(node("all", GPU), ("InternalIP", "10.0.0.31")),
        with_addresses(node("localhost", GPU), ("InternalIP", "10.0.0.32")),
        with_addresses(node("linux", GPU), ("InternalIP", "10.0.0.33")),
        with_addresses(node("gpu-1", GPU), ("InternalIP", "10.0.0.40")),
        with_addresses(node("gpu-2", GPU), ("InternalIP", "10.0.0.40")),
    ])
    returncode, listed, stderr = run_inventory(plugin_config(kube_api, node_groups={"linux": {"kubernetes.io/os": "linux"}}))
    assert returncode == 0, stderr
    assert group_hosts(listed, "linux") == ["gpu-1", "gpu-2", "k8s-node-all", "k8s-node-linux", "k8s-node-localhost"]
    hostvars = listed["_meta"]["hostvars"]
    assert (hostvars["k8s-node-all"]["runtime_gate_node_name"], hostvars["k8s-node-all"]["ansible_host"]) == ("all", "10.0.0.31")
    warning = " ".join(stderr.split())
    assert "Node 'linux' has the name of a group; added as host 'k8s-node-linux' (runtime_gate_node_name stays 'linux')" in warning
    assert "Node 'localhost' has the name of a name Ansible reserves; added as host 'k8s-node-localhost'" in warning
    assert "Nodes gpu-1, gpu-2 share the address 10.0.0.40" in warning
