# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Inventory of a cluster's Nodes: the GPU fleet as Kubernetes knows it, for the crosscheck playbooks."""

DOCUMENTATION = r"""
name: k8s_nodes
short_description: Hosts from the Nodes of a Kubernetes cluster, grouped by node labels
description:
  - Lists the cluster's Nodes (paginated, once per run or from the inventory cache) and adds one host per Node,
    named after the Node.
  - Puts each host into every group of O(node_groups) whose label selector its labels match; by default the group
    C(gpu_nodes) gets the nodes labelled C(nvidia.com/gpu.present=true), the label the GPU Operator sets.
  - Sets C(ansible_host) to the first address of the types in O(address_type) the Node reports in C(status.addresses).
    A Node that reports none of them is still added, without C(ansible_host) (Ansible then connects to the Node name),
    and a warning names it, so a node is never dropped from the check unnoticed.
  - Sets the host variables C(runtime_gate_node_name) (the Node name) and C(runtime_gate_node_labels) (its labels),
    which the collection's crosscheck playbooks read.
  - The configuration file's name must end in C(.k8s_nodes.yml) or C(.k8s_nodes.yaml).
  - Cluster access options not set in the file are read from the E(K8S_AUTH_*) environment variables
    (E(K8S_AUTH_KUBECONFIG), E(K8S_AUTH_HOST), E(K8S_AUTH_API_KEY), ...), then the in-cluster service account,
    then the default kubeconfig, as the collection's modules do.
  - Any failure to read the cluster is one error naming the API server and the problem (never the token). With
    Ansible's default C(inventory_unparsed_failed=false) a failed source only warns and leaves an empty inventory;
    set E(ANSIBLE_INVENTORY_UNPARSED_FAILED=true) (or C([inventory] unparsed_is_failed = true)) so the run fails instead.
version_added: 0.1.0
author: gpufleet platform team (@gpufleet)
extends_documentation_fragment:
  - ansible.builtin.inventory_cache
  - gpufleet.runtime_gate.k8s_auth_options
options:
  plugin:
    description: Marks the file as this plugin's configuration.
    type: str
    required: true
    choices: [gpufleet.runtime_gate.k8s_nodes]
  node_groups:
    description:
      - Groups to create, each mapped to a label selector the Node's labels must match to join it.
      - A selector is a mapping of label to value; a Node matches when it has every label with exactly that value
        (Kubernetes C(nodeSelector) semantics). An empty mapping selects every Node. Set-based selectors
        (C(in), C(notin), C(exists)) are not supported.
      - Label values are strings; quote C("true") in YAML, an unquoted C(true) is refused.
      - Group names may hold letters, digits and C(_), and do not start with a digit.
      - Setting this replaces the default; keep C(gpu_nodes) in it for the crosscheck playbooks' default host pattern.
    type: dict
    default:
      gpu_nodes:
        nvidia.com/gpu.present: "true"
  address_type:
    description:
      - Which C(status.addresses) entry becomes C(ansible_host), as a list in order of preference; the first type the
        Node reports wins, and the first address of that type is used.
      - Types a kubelet or cloud provider reports are C(InternalIP), C(ExternalIP), C(Hostname), C(InternalDNS) and
        C(ExternalDNS).
    type: list
    elements: str
    default: [InternalIP]
"""

EXAMPLES = r"""
# gpu.k8s_nodes.yml -- ansible-inventory -i gpu.k8s_nodes.yml --graph
plugin: gpufleet.runtime_gate.k8s_nodes
kubeconfig: ~/.kube/gpu-cluster.yaml
context: gpu-admin

# Groups per GPU model besides gpu_nodes; prefer the InternalIP, fall back to the node's host name.
plugin: gpufleet.runtime_gate.k8s_nodes
node_groups:
  gpu_nodes:
    nvidia.com/gpu.present: "true"
  gpu_a100:
    nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB
  canary:
    pool: canary
address_type: [InternalIP, Hostname]

# Ask the API server once an hour at most (cache kept in JSON files on the controller).
plugin: gpufleet.runtime_gate.k8s_nodes
cache: true
cache_plugin: ansible.builtin.jsonfile
cache_connection: ~/.cache/runtime_gate_inventory
cache_timeout: 3600
"""

import re

from ansible.errors import AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._cluster_objects import normalise_cluster_objects
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._kube import (
    AUTH_ARG_SPEC,
    DEFAULT_PAGE_SIZE,
    ApiSession,
    insecure_warning,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._requirements import selector_matches

try:
    from kubernetes import client as kube_client
except ImportError:
    # ApiSession then raises KubernetesLibraryMissing, which says what to install.
    kube_client = None

GROUP_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class InventoryModule(BaseInventoryPlugin, Cacheable):
    NAME = "gpufleet.runtime_gate.k8s_nodes"

    def verify_file(self, path):
        return super().verify_file(path) and path.endswith((".k8s_nodes.yml", ".k8s_nodes.yaml"))

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path, cache)
        self._read_config_data(path)
        node_groups = _checked_node_groups(self.get_option("node_groups"), path)
        address_types = _checked_address_types(self.get_option("address_type"), path)
        cache_key = self.get_cache_key(path)
        # Ansible's inventory cache protocol: read the cache unless told to refresh it (cache=False,
        # e.g. --flush-cache or meta: refresh_inventory), and write it whenever the cluster was asked.
        use_cache = self.get_option("cache")
        nodes = None
        if use_cache and cache:
            try:
                nodes = self._cache[cache_key]
            except KeyError:
                nodes = None
        if nodes is None:
            nodes = self._list_nodes(path)
            if use_cache:
                self._cache[cache_key] = nodes
        self._populate(nodes, node_groups, address_types)

    def _list_nodes(self, path):
        # Only Nodes: the inventory needs no RuntimeClass, so no permission on them either.
        auth_options = {}
        for name in AUTH_ARG_SPEC:
            value, origin = self.get_option_and_origin(name)
            # A documented default (validate_certs: true) must not hide K8S_AUTH_* from the environment,
            # which resolve_auth_options reads for every option left None, as the modules' fallbacks do.
            auth_options[name] = None if origin == "default" else value
        try:
            with ApiSession(auth_options) as session:
                node_items = session.list_all("Nodes (v1)", kube_client.CoreV1Api(session.client).list_node,
                                              DEFAULT_PAGE_SIZE, list_kind="NodeList")
            nodes = normalise_cluster_objects([], node_items, f"the API server {session.server}")["nodes"]
        except RuntimeGateError as err:
            raise AnsibleParserError(f"{self.NAME} ({path}): cannot build the inventory: {err}") from None
        warning = insecure_warning(auth_options)
        if warning:
            self.display.warning(f"{self.NAME}: {warning}")
        return [{"name": node["name"], "labels": node["labels"], "addresses": node["addresses"]} for node in nodes]

    def _populate(self, nodes, node_groups, address_types):
        for group in node_groups:
            self.inventory.add_group(group)
        for node in nodes:
            host = node["name"]
            self.inventory.add_host(host)
            for group, node_selector in node_groups.items():
                if selector_matches(node_selector, node["labels"]):
                    self.inventory.add_child(group, host)
            self.inventory.set_variable(host, "runtime_gate_node_name", host)
            self.inventory.set_variable(host, "runtime_gate_node_labels", dict(node["labels"]))
            address = _preferred_address(node["addresses"], address_types)
            if address:
                self.inventory.set_variable(host, "ansible_host", address)
            else:
                reported = ", ".join(sorted({entry.get("type", "?") for entry in node["addresses"]})) or "none"
                self.display.warning(
                    f"{self.NAME}: Node '{host}' reports no {' or '.join(address_types)} address (it reports: {reported}); "
                    f"added without ansible_host, so Ansible connects to the name '{host}'")


def _preferred_address(addresses, address_types):
    for address_type in address_types:
        for entry in addresses:
            if entry.get("type") == address_type and entry.get("address"):
                return entry["address"]
    return None


def _checked_node_groups(node_groups, path):
    if not isinstance(node_groups, dict):
        raise AnsibleParserError(f"{path}: node_groups must be a mapping of group name to label selector")
    checked = {}
    for group, node_selector in node_groups.items():
        if not isinstance(group, str) or not GROUP_NAME.match(group):
            raise AnsibleParserError(
                f"{path}: node_groups: {group!r} is not a valid group name (letters, digits and _, not starting with a digit)")
        # `group_name:` with nothing after it reads as None in YAML: the empty selector, every Node.
        node_selector = {} if node_selector is None else node_selector
        if not isinstance(node_selector, dict):
            raise AnsibleParserError(
                f"{path}: node_groups.{group} must be a mapping of label to value, not a {type(node_selector).__name__}")
        for label, value in node_selector.items():
            if not isinstance(label, str) or not isinstance(value, str):
                raise AnsibleParserError(
                    f"{path}: node_groups.{group} has {label!r}: {value!r}; labels and values must be strings "
                    "(quote them in YAML, e.g. \"true\")")
        checked[group] = dict(node_selector)
    return checked


def _checked_address_types(address_types, path):
    if not address_types or not all(isinstance(item, str) and item for item in address_types):
        raise AnsibleParserError(f"{path}: address_type must name at least one address type, e.g. InternalIP")
    return list(address_types)
