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
  - Constructable like P(ansible.builtin.constructed#inventory) (O(compose), O(groups), O(keyed_groups), O(strict)), over the
    host variables above and C(ansible_host); e.g. a group per GPU product from
    C(runtime_gate_node_labels['nvidia.com/gpu.product']).
  - An option the plugin does not know (a typo such as C(node_group)) is an error, not ignored.
  - The configuration file's name must end in C(.k8s_nodes.yml) or C(.k8s_nodes.yaml).
  - Each cluster access option not set in the file is read from its E(K8S_AUTH_*) environment variable
    (E(K8S_AUTH_KUBECONFIG), E(K8S_AUTH_HOST), E(K8S_AUTH_API_KEY), ...). The connection then comes from, in this
    order (as the collection's modules and C(rc-crosscheck) do) - 1. O(host) with O(api_key) (or with O(client_cert)
    and O(client_key)), no file read; 2. O(kubeconfig) (or only O(context), in the default kubeconfig); 3. the
    in-cluster service account; 4. the default kubeconfig (E(KUBECONFIG), else C(~/.kube/config)). Options set
    explicitly override what a kubeconfig says.
  - Any failure to read the cluster is one error naming the API server and the problem (never the token). With
    Ansible's default C(inventory_unparsed_failed=false) a failed source only warns and leaves an empty inventory;
    set E(ANSIBLE_INVENTORY_UNPARSED_FAILED=true) (or C([inventory] unparsed_is_failed = true)) so the run fails instead.
version_added: 0.1.0
author: gpufleet platform team (@gpufleet)
extends_documentation_fragment:
  - ansible.builtin.constructed
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
  verdict_source:
    description:
      - Where the collection's crosscheck playbooks take each node's verdict from, set for the whole inventory as the
        variable C(runtime_gate_verdict_source) of the group C(all) (an extra variable still wins).
      - C(hybrid) - from the Node's C(status.runtimeHandlers) when the Node vouches for it (Ready, a fresh heartbeat,
        handlers listed) and it is C(OK), else over the host's connection; C(node-status) - from the Nodes' status
        alone, connecting to no host (a Node that cannot vouch is C(UNKNOWN)); C(ssh) - every host over its
        connection. See docs/usage.md of the collection, "Judging from the Nodes' status".
      - Not set - the playbooks' default, C(hybrid).
    type: str
    choices: [hybrid, node-status, ssh]
"""

EXAMPLES = r"""
# gpu.k8s_nodes.yml -- ansible-inventory -i gpu.k8s_nodes.yml --graph
plugin: gpufleet.runtime_gate.k8s_nodes
kubeconfig: ~/.kube/gpu-cluster.yaml
context: gpu-admin

---
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

---
# A group per GPU product (gpu_product_NVIDIA_A100_SXM4_80GB, ...) and per pool, a variable from a label.
plugin: gpufleet.runtime_gate.k8s_nodes
keyed_groups:
  - key: runtime_gate_node_labels['nvidia.com/gpu.product'] | default('none')
    prefix: gpu_product
  - key: runtime_gate_node_labels.pool | default('none')
    prefix: pool
groups:
  canary_gpus: runtime_gate_node_labels.pool | default('') == 'canary'
compose:
  node_zone: runtime_gate_node_labels['topology.kubernetes.io/zone'] | default('unknown')
strict: true

---
# Ask the API server once an hour at most (cache kept in JSON files on the controller).
plugin: gpufleet.runtime_gate.k8s_nodes
cache: true
cache_plugin: ansible.builtin.jsonfile
cache_connection: ~/.cache/runtime_gate_inventory
cache_timeout: 3600
"""

import re

from ansible.errors import AnsibleParserError
from ansible import constants as C
from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable, Constructable

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.auth import AUTH_ARG_SPEC, insecure_warning
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.limits import DEFAULT_PAGE_SIZE
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.objects import normalise_cluster_objects
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.session import ApiSession
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.requirements import selector_matches

try:
    from kubernetes import client as kube_client
except ImportError:
    # ApiSession then raises KubernetesLibraryMissing, which says what to install.
    kube_client = None

GROUP_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # fullmatch: "$" would accept a trailing newline


class InventoryModule(BaseInventoryPlugin, Constructable, Cacheable):
    NAME = "gpufleet.runtime_gate.k8s_nodes"

    def verify_file(self, path):
        return super().verify_file(path) and path.endswith((".k8s_nodes.yml", ".k8s_nodes.yaml"))

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path, cache)
        config = self._read_config_data(path)
        _refuse_unknown_options(config, C.config.get_configuration_definitions("inventory", self._load_name), path)
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
        if self.get_option("verdict_source"):
            # The playbooks read it on localhost, which sees the variables of the group all.
            self.inventory.set_variable("all", "runtime_gate_verdict_source", self.get_option("verdict_source"))

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
                for warning in session.warnings:
                    self.display.warning(f"{self.NAME}: {warning}")
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
        taken = {node["name"] for node in nodes}
        hosts_by_address = {}
        for node in nodes:
            host = self._host_name(node["name"], taken)
            self.inventory.add_host(host)
            for group, node_selector in node_groups.items():
                if selector_matches(node_selector, node["labels"]):
                    self.inventory.add_child(group, host)
            self.inventory.set_variable(host, "runtime_gate_node_labels", dict(node["labels"]))
            self.inventory.set_variable(host, "runtime_gate_node_name", node["name"])
            address = _preferred_address(node["addresses"], address_types)
            if address:
                self.inventory.set_variable(host, "ansible_host", address)
                hosts_by_address.setdefault(address, []).append(host)
            else:
                if host != node["name"]:
                    self.inventory.set_variable(host, "ansible_host", node["name"])  # renamed: still reached by its name
                reported = ", ".join(sorted({entry.get("type", "?") for entry in node["addresses"]})) or "none"
                self.display.warning(
                    f"{self.NAME}: Node '{host}' reports no {' or '.join(address_types)} address (it reports: {reported}); "
                    f"added without ansible_host, so Ansible connects to the name '{host}'")
            self._construct(host)
        for address, hosts in sorted(hosts_by_address.items()):
            if len(hosts) > 1:
                self.display.warning(f"{self.NAME}: Nodes {', '.join(hosts)} share the address {address}: Ansible connects "
                                     "to one machine for all of them, so one node's verdict would stand for the others")

    def _host_name(self, node_name, taken):
        """The inventory name of a Node: its name, unless that is ``all``, ``ungrouped``, ``localhost`` or a group's
        (a Node so named would break the inventory or take over the group): then ``k8s-node-<name>``, with a warning.
        ``runtime_gate_node_name`` keeps the Node's own name either way."""
        reserved = {"all", "ungrouped", "localhost"} | set(self.inventory.groups)
        if node_name not in reserved:
            return node_name
        host = f"k8s-node-{node_name}"
        while host in taken or host in reserved:
            host = f"k8s-node-{host}"
        taken.add(host)
        what = "a group" if node_name in self.inventory.groups else "a name Ansible reserves"
        self.display.warning(f"{self.NAME}: Node '{node_name}' has the name of {what}; added as host '{host}' "
                             f"(runtime_gate_node_name stays '{node_name}')")
        return host

    def _construct(self, host):
        """compose, then groups and keyed_groups over the host's variables (composed ones included), as constructed does."""
        strict = self.get_option("strict")
        self._set_composite_vars(self.get_option("compose"), self.inventory.get_host(host).get_vars(), host, strict=strict)
        host_vars = self.inventory.get_host(host).get_vars()
        self._add_host_to_composed_groups(self.get_option("groups"), host_vars, host, strict=strict)
        self._add_host_to_keyed_groups(self.get_option("keyed_groups"), host_vars, host, strict=strict)


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
        if not isinstance(group, str) or not GROUP_NAME.fullmatch(group):
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


def _refuse_unknown_options(config, definitions, path):
    """ansible-core ignores keys of an inventory file it has no option for: a misspelt option would silently be its default."""
    known = {"plugin"}
    for name, definition in definitions.items():
        known.add(name)
        known.update(definition.get("aliases") or ())
    unknown = sorted(str(key) for key in config if key not in known)
    if unknown:
        raise AnsibleParserError(
            f"{path}: unknown option(s) {', '.join(unknown)} for {InventoryModule.NAME}; "
            f"its options are {', '.join(sorted(known))} (ansible-doc -t inventory {InventoryModule.NAME})")


def _checked_address_types(address_types, path):
    if not address_types or not all(isinstance(item, str) and item for item in address_types):
        raise AnsibleParserError(f"{path}: address_type must name at least one address type, e.g. InternalIP")
    return list(address_types)
