#!/usr/bin/python
# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)

DOCUMENTATION = r"""
module: runtimeclass_info
short_description: Read the cluster's RuntimeClasses (and Nodes, Pods) from the API server or a YAML file
version_added: 0.1.0
description:
  - Lists C(node.k8s.io/v1) RuntimeClasses, and with O(nodes=true) also C(v1) Nodes, from a Kubernetes
    API server, page by page (C(limit) and C(continue)).
  - With O(pods=true) also the Pods of all namespaces, and the C(FailedCreatePodSandBox) Events (field selector
    C(reason=FailedCreatePodSandBox)) that tell which pods the kubelet could not start, for example because the node's
    runtime does not serve their RuntimeClass's handler.
  - The number of requests depends on the number of objects and O(page_size), never on the number of inventory hosts.
  - An expired C(continue) token (HTTP 410) restarts that list once; HTTP 429 is retried up to 3 times as its
    C(Retry-After) header asks (at most 10 seconds each), then the task fails.
  - Every answer must be a well-formed list of the kind asked for (C(RuntimeClassList), C(NodeList), C(PodList),
    C(EventList), with C(items) a list of mappings); anything else (an empty object, a C(Status), C(items) null,
    another kind's list) fails the task, naming the server and what was wrong.
  - Every run is bounded by O(request_deadline), O(list_page_budget), O(list_time_budget) and O(max_response_bytes); a continue token the
    server already sent fails the list at once. Each limit fails the task with a message that names it.
  - With O(src), reads the same objects from a YAML file instead, for example the output of
    C(kubectl get runtimeclass,node,pod,event -A -o yaml); the connection options are then ignored.
  - Both sources give the same normalised shape, so later checks do not care where the data came from.
  - Run it once per play (C(run_once) plus C(delegate_to=localhost)); the cluster view is the same for every host.
extends_documentation_fragment:
  - gpufleet.runtime_gate._attributes
  - gpufleet.runtime_gate.k8s_auth_options
  - gpufleet.runtime_gate.k8s_auth_options.request_timeout
options:
  src:
    description:
      - Path of a YAML or JSON file on the host that runs the module (the controller in the shipped playbooks).
      - A C(List) as printed by C(kubectl get -o yaml) or C(-o json), or multi-document manifests. Objects of other kinds are skipped.
      - C(-o json) reads many times faster than C(-o yaml) (about 20 times for 2,000 Pods, see benchmarks/README.md in the
        collection), so prefer it for a large cluster.
      - The file must hold at least one RuntimeClass or Node, or be the export of a cluster without RuntimeClasses
        (C(kubectl get runtimeclass -o yaml) then prints a C(List) whose C(items) is empty; every node is then judged on its
        default runtime alone). Empty files, YAML that holds no Kubernetes object, malformed YAML, YAML aliases,
        a key given twice in one mapping, RuntimeClasses without a string C(handler), duplicate names, and files
        of 50 MB or more fail the task.
    type: path
  nodes:
    description:
      - Also return the Nodes, with their labels, allocatable resources, addresses and C(status.runtimeHandlers).
    type: bool
    default: false
  pods:
    description:
      - Also return the Pods of all namespaces that name a RuntimeClass (C(spec.runtimeClassName)) with their requests,
        overhead and RuntimeClass, each with the messages of its C(FailedCreatePodSandBox) Events. Every Pod is read and
        checked; one without a RuntimeClass runs on the node's default runtime, which no finding concerns, and is left out.
      - Needs C(list) on C(pods) and C(events) cluster-wide (see C(docs/rbac.yaml)).
    type: bool
    default: false
  page_size:
    description:
      - How many objects to ask for per list request (C(limit)); the server may return fewer.
    type: int
    default: 500
  request_deadline:
    description:
      - Seconds the whole answer to one request may take, headers and body (O(request_timeout) bounds each read only,
        so a server that sends a byte now and then would never time out).
      - When not set, the environment variable E(RUNTIME_GATE_REQUEST_DEADLINE) is used.
    type: int
    default: 120
  list_page_budget:
    description:
      - At most this many pages (requests) per list, a restart after HTTP 410 included; a server that keeps sending
        new continue tokens fails the list there.
      - When not set, the environment variable E(RUNTIME_GATE_LIST_PAGE_BUDGET) is used.
    type: int
    default: 1000
  list_time_budget:
    description:
      - Seconds one list may take in all, its pages, retries and waits included.
      - When not set, the environment variable E(RUNTIME_GATE_LIST_TIME_BUDGET) is used.
    type: int
    default: 600
  max_response_bytes:
    description:
      - Bytes one answer's body may hold once decoded (a gzip body counts inflated); a larger one fails the read.
      - When not set, the environment variable E(RUNTIME_GATE_MAX_RESPONSE_BYTES) is used.
    type: int
    default: 67108864
attributes:
  check_mode:
    support: full
    description: Only reads; runs the same in check mode.
  diff_mode:
    support: none
    description: Changes nothing, so there is nothing to diff.
  idempotent:
    support: full
    description: Only reads.
author:
  - gpufleet platform team (@gpufleet)
"""

EXAMPLES = r"""
- name: Read RuntimeClasses and Nodes from the cluster of the current kubeconfig context
  gpufleet.runtime_gate.runtimeclass_info:
    nodes: true
  delegate_to: localhost
  run_once: true
  register: cluster

- name: Read them with a service-account token
  gpufleet.runtime_gate.runtimeclass_info:
    host: https://10.0.0.1:6443
    api_key: "{{ lookup('ansible.builtin.file', '/etc/gpufleet/checker.token') }}"
    ca_cert: /etc/gpufleet/cluster-ca.crt
  delegate_to: localhost
  run_once: true
  register: cluster

- name: Carry the connection for every module of the group
  module_defaults:
    group/gpufleet.runtime_gate.k8s:
      kubeconfig: ~/.kube/gpu-cluster
      context: gpu-prod
  block:
    - name: Read RuntimeClasses of the gpu-prod context
      gpufleet.runtime_gate.runtimeclass_info:
      delegate_to: localhost
      run_once: true
      register: cluster

- name: Read Pods too, with their sandbox failures
  gpufleet.runtime_gate.runtimeclass_info:
    nodes: true
    pods: true
  delegate_to: localhost
  run_once: true
  register: cluster

- name: Use an export instead of a live cluster (kubectl get runtimeclass,node,pod,event -A -o yaml > cluster.yaml)
  gpufleet.runtime_gate.runtimeclass_info:
    src: "{{ playbook_dir }}/cluster.yaml"
    nodes: true
    pods: true
  delegate_to: localhost
  run_once: true
  register: cluster
"""

RETURN = r"""
runtimeclasses:
  description: The RuntimeClasses, sorted by name.
  returned: success
  type: list
  elements: dict
  contains:
    name:
      description: C(metadata.name), the value pods put in C(spec.runtimeClassName).
      type: str
      sample: nvidia
    handler:
      description: The CRI handler name, which must match a runtime loaded by the node's containerd.
      type: str
      sample: nvidia
    overhead_pod_fixed:
      description: C(overhead.podFixed) as resource name to quantity string; null when the class has none.
      type: dict
      sample: {cpu: 250m, memory: 120Mi}
    node_selector:
      description: C(scheduling.nodeSelector); null when absent or empty, meaning the class claims every node.
      type: dict
      sample: {nvidia.com/gpu.present: "true"}
    tolerations:
      description: C(scheduling.tolerations) as the API gives them (camelCase keys); empty when none.
      type: list
      elements: dict
      sample: []
nodes:
  description: The Nodes, sorted by name.
  returned: success and O(nodes=true)
  type: list
  elements: dict
  contains:
    name:
      description: C(metadata.name).
      type: str
    labels:
      description: C(metadata.labels); empty when none.
      type: dict
    allocatable:
      description: C(status.allocatable) as resource name to quantity string.
      type: dict
    runtime_handlers:
      description:
        - C(status.runtimeHandlers) as a list of C(name) and C(features); name C("") is the default handler.
        - An empty list means unknown (containerd 1.7, kubelet before 1.30, or feature gates off), not "no handlers".
      type: list
      elements: dict
      sample: [{name: "", features: {recursiveReadOnlyMounts: true, userNamespaces: false}}]
    addresses:
      description: C(status.addresses) as a list of C(type) (C(InternalIP), C(Hostname), ...) and C(address).
      type: list
      elements: dict
      sample: [{type: InternalIP, address: 10.0.0.11}]
    ready:
      description:
        - The C(Ready) condition of C(status.conditions) as C(status) (C(True), C(False), C(Unknown)) and C(heartbeat)
          (its C(lastHeartbeatTime)); each null when the Node does not say.
      type: dict
      sample: {status: "True", heartbeat: "2026-12-03T00:40:00Z"}
pods:
  description: The Pods of all namespaces that name a RuntimeClass, sorted by namespace and name; empty unless O(pods=true).
  returned: success
  type: list
  elements: dict
  contains:
    namespace:
      description: C(metadata.namespace).
      type: str
    name:
      description: C(metadata.name).
      type: str
    node:
      description: C(spec.nodeName); null while the pod is not scheduled.
      type: str
    phase:
      description: C(status.phase); C(Unknown) when the object has none (a manifest).
      type: str
      sample: Pending
    runtime_class:
      description: C(spec.runtimeClassName), the RuntimeClass the pod names.
      type: str
      sample: nvidia
    containers:
      description: C(spec.containers) as C(name) and C(requests) (resource name to quantity string).
      type: list
      elements: dict
      sample: [{name: main, requests: {cpu: 900m, memory: 1Gi}}]
    init_containers:
      description: C(spec.initContainers), same shape as RV(pods[].containers).
      type: list
      elements: dict
    overhead:
      description: C(spec.overhead) (set from the RuntimeClass at admission), resource name to quantity string.
      type: dict
      sample: {cpu: 250m, memory: 120Mi}
    sandbox_failures:
      description: Messages of the pod's C(FailedCreatePodSandBox) Events, oldest listed first, each once.
      type: list
      elements: str
      sample: ['Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for "nvidia" is configured']
source:
  description: Where the objects came from.
  returned: success
  type: dict
  sample: {type: api, server: "https://10.0.0.1:6443"}
  contains:
    type:
      description: C(api) or C(file).
      type: str
    server:
      description: The API server URL.
      type: str
      returned: when RV(source.type=api)
    path:
      description: The O(src) file.
      type: str
      returned: when RV(source.type=file)
api_requests:
  description: How many requests were sent to the API server (pages, restarts and retries included); 0 with O(src).
  returned: success
  type: int
  sample: 2
server:
  description: The API server that failed to answer, next to the failure message.
  returned: failure while reading the cluster, when the server is known
  type: str
http_status:
  description: The HTTP status the API server answered with.
  returned: failure with an HTTP error answer
  type: int
  sample: 403
"""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.client import HAS_KUBERNETES, KUBERNETES_IMPORT_ERROR
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.cluster_info import cluster_info_result
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.manifest import HAS_YAML, YAML_IMPORT_ERROR
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._specs.runtimeclass_info import get_runtimeclass_info_argument_spec


def main():
    module = AnsibleModule(**get_runtimeclass_info_argument_spec())
    if module.params["src"] and not HAS_YAML:
        module.fail_json(msg=missing_required_lib("PyYAML"), exception=YAML_IMPORT_ERROR)
    if not module.params["src"] and not HAS_KUBERNETES:
        module.fail_json(msg=missing_required_lib("kubernetes"), exception=KUBERNETES_IMPORT_ERROR)
    result, warnings = cluster_info_result(module.params)
    for warning in warnings:
        module.warn(warning)
    if result.pop("failed", False):
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
