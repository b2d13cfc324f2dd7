#!/usr/bin/python
# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)

DOCUMENTATION = r"""
module: runtimeclass_apply
short_description: Create or update RuntimeClasses only for handlers the judged nodes provably serve
version_added: 0.2.0
description:
  - Creates or updates C(node.k8s.io/v1) RuntimeClasses from O(runtimeclasses), after checking each against the
    verdicts of M(gpufleet.runtime_gate.node_crosscheck) for the nodes of the run.
  - A class is applied only when every judged node its C(node_selector) matches (every judged node without one)
    serves its handler, and at least one does. The apiserver itself never checks that a handler exists on any node.
  - A class whose handler no targeted node serves (for example the typo C(nvdia) for C(nvidia)) is refused with the
    nodes and what they serve. When any class is refused, the task fails and nothing is written.
  - The module lists the cluster's Nodes itself (one paginated list) and refuses a class whose C(node_selector) (every
    node, without one) matches Nodes the verdicts do not cover, naming them; the scheduler may place its pods there, and
    nothing proves they serve the handler (a class without C(node_selector) after a rollout over GPU nodes only would
    reach the CPU nodes). O(allow_unjudged_nodes=true) applies it anyway, with a warning naming those nodes. A class bound
    to the gate's label (its C(node_selector) holds C(<label_prefix>/<handler>=served), see
    M(gpufleet.runtime_gate.node_handler_labels)) reaches only nodes proven to serve it, so it is applied with that warning.
  - Updates replace the class conditionally (C(resourceVersion) as read); labels and annotations are kept.
    The C(handler) of an existing class is immutable; a different handler fails the task.
  - Requests are two paginated lists (Nodes, RuntimeClasses) plus one write per changed class, independent of the number
    of hosts.
  - Run it once on the controller (C(run_once) plus C(delegate_to=localhost)).
extends_documentation_fragment:
  - gpufleet.runtime_gate._attributes
  - gpufleet.runtime_gate.k8s_auth_options
  - gpufleet.runtime_gate.k8s_auth_options.request_timeout
options:
  runtimeclasses:
    description:
      - The RuntimeClasses as they should be. Fields not given are removed from an existing class
        (an absent O(runtimeclasses[].overhead_pod_fixed) removes its overhead).
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: C(metadata.name), a DNS-1123 subdomain; pods put it in C(spec.runtimeClassName).
        type: str
        required: true
      handler:
        description: The CRI handler, a DNS-1123 label; it must be a runtime the targeted nodes' containerd loads.
        type: str
        required: true
      node_selector:
        description: C(scheduling.nodeSelector); label values must be strings. Without it the class targets every node.
        type: dict
      overhead_pod_fixed:
        description:
          - C(overhead.podFixed), resource name to quantity, for example C(cpu) V(250m) and C(memory) V(120Mi).
        type: dict
      tolerations:
        description: C(scheduling.tolerations), as the API spells them (camelCase keys).
        type: list
        elements: dict
  verdicts:
    description:
      - The registered M(gpufleet.runtime_gate.node_crosscheck) results of the judged nodes; each needs C(node),
        C(status) and C(loaded_runtimes). An C(UNKNOWN) verdict counts as serving nothing.
    type: list
    elements: dict
    required: true
  allow_unjudged_nodes:
    description:
      - Apply a class even though its C(node_selector) matches cluster nodes that the O(verdicts) do not cover
        (a warning names them). By default such a class is refused.
    type: bool
    default: false
  label_prefix:
    description:
      - The prefix of the gate's handler labels, as O(gpufleet.runtime_gate.node_handler_labels#module:label_prefix).
        A class whose C(node_selector) holds C(<label_prefix>/<handler>=served) is bound to the gate.
    type: str
    default: handler.runtime-gate.gpufleet.io
attributes:
  check_mode:
    support: full
    details: Reads the cluster and reports what would be created or updated, without writing.
  diff_mode:
    support: full
    details: Shows each created or updated class before and after, in the normalised shape of runtimeclass_info.
  idempotent:
    support: full
    details: A class equal to the desired one (quantities compared by value) is left alone.
seealso:
  - module: gpufleet.runtime_gate.runtimeclass_info
  - module: gpufleet.runtime_gate.node_crosscheck
author:
  - gpufleet platform team (@gpufleet)
"""

EXAMPLES = r"""
- name: Create the nvidia RuntimeClass once the GPU nodes serve it
  gpufleet.runtime_gate.runtimeclass_apply:
    runtimeclasses:
      - name: nvidia
        handler: nvidia
        node_selector: {nvidia.com/gpu.present: "true"}
        overhead_pod_fixed: {cpu: 250m, memory: 120Mi}
    verdicts: "{{ ansible_play_hosts_all | map('extract', hostvars, 'runtime_gate_verdict') | list }}"
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
runtimeclasses:
  description: One entry per O(runtimeclasses) item, in the same order.
  returned: success, and on refusal
  type: list
  elements: dict
  contains:
    name:
      description: The class name.
      type: str
    handler:
      description: The class handler.
      type: str
    action:
      description: C(create), C(update), C(none) (already as desired) or C(refused).
      type: str
      sample: create
    targeted:
      description: Judged nodes the class's nodeSelector matches.
      type: list
      elements: str
    serving:
      description: Targeted nodes that serve the handler.
      type: list
      elements: str
    missing:
      description: Targeted nodes that do not serve the handler.
      type: list
      elements: str
    unjudged:
      description: Cluster nodes the nodeSelector matches that the verdicts do not cover (a refusal unless O(allow_unjudged_nodes=true)).
      type: list
      elements: str
    refusal:
      description: Why the class was refused; null when it was not.
      type: str
refused:
  description: The refusal sentences; the task fails when this is not empty.
  returned: success, and on refusal
  type: list
  elements: str
  sample: ["RuntimeClass 'nvidia' (handler 'nvdia'): no targeted node serves handler 'nvdia' (...); did you mean 'nvidia'?"]
server:
  description: The API server written to; null when the plan was refused before the cluster was asked.
  returned: success, on refusal, and on an API failure when known
  type: str
api_requests:
  description: Requests sent to the API server.
  returned: success, and on refusal
  type: int
http_status:
  description: The HTTP status of the API server's answer that failed the task.
  returned: on an API failure that had an HTTP status
  type: int
  sample: 403
diff:
  description: Before and after of each created or updated class, in the normalised shape of runtimeclass_info.
  returned: in diff mode, when something changed
  type: dict
"""

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._cluster_writers.gate_labels import check_prefix
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.module import call_cluster, kube_module
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._cluster_writers.runtimeclass_apply import (
    apply_runtimeclasses,
    refusal_message,
    unjudged_warnings,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._specs.runtimeclass_apply import get_runtimeclass_apply_argument_spec


def main():
    module, auth_options = kube_module(get_runtimeclass_apply_argument_spec())
    params = module.params
    result = call_cluster(
        module,
        lambda: apply_runtimeclasses(auth_options, params["runtimeclasses"], params["verdicts"],
                                     check_mode=module.check_mode, request_timeout=params["request_timeout"],
                                     allow_unjudged_nodes=params["allow_unjudged_nodes"],
                                     label_prefix=check_prefix(params["label_prefix"])))
    for warning in result.pop("warnings", []) + unjudged_warnings(result["runtimeclasses"]):
        module.warn(warning)
    diff = result.pop("diff")
    if result["refused"]:
        module.fail_json(msg=refusal_message(result["refused"]), **result)
    if module._diff and result["changed"]:
        result["diff"] = diff
    module.exit_json(**result)


if __name__ == "__main__":
    main()
