#!/usr/bin/python
# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)

DOCUMENTATION = r"""
module: node_handler_labels
short_description: Label each judged Node with the handlers it serves, and bind RuntimeClasses to those labels
version_added: 0.3.0
description:
  - Closes the gate between the crosscheck and the scheduler. Nothing in Kubernetes checks that a RuntimeClass's
    handler exists on the node a pod lands on; pods placed on a node that lacks it fail with C(FailedCreatePodSandBox).
  - Labels each Node judged in O(verdicts) with one label per handler its verdict lists in C(loaded_runtimes),
    C(<label_prefix>/<handler>=served), and removes the labels under O(label_prefix) of handlers it no longer serves.
    A C(MISSING) node keeps the labels of the handlers it does serve; an C(UNKNOWN) node serves nothing proven and
    loses all of them.
  - Nodes of the cluster that O(verdicts) does not cover are left untouched and reported in RV(unjudged); a warning
    names those that carry labels of ours, which this run did not verify.
  - A served handler that cannot be a label name (more than 63 characters, or characters a label name cannot hold)
    gets no label and is reported with a warning. Labels outside O(label_prefix) are never touched.
  - With O(bind_runtimeclasses), adds C(<label_prefix>/<handler>=served) to each named class's
    C(scheduling.nodeSelector) (keeping its other keys), so the scheduler places the class's pods only on nodes
    proven to serve its handler. A warning names, before the bind, the nodes the class's current nodeSelector
    (every node, without one) matches that lack the label; new pods of the class will no longer go there.
  - A dry run unless O(apply=true); check mode never writes either. Labels are written with a JSON merge patch of the
    Node's C(metadata.labels) naming only keys under O(label_prefix); a class is bound with a conditional replace
    (C(resourceVersion) as read; labels and annotations kept). Labels are written before classes are bound.
  - Requests are one paginated list of Nodes (plus one of RuntimeClasses with O(bind_runtimeclasses)) and one write
    per changed Node or class, independent of the number of hosts. Run it once on the controller.
extends_documentation_fragment:
  - gpufleet.runtime_gate._attributes
  - gpufleet.runtime_gate.k8s_auth_options
  - gpufleet.runtime_gate.k8s_auth_options.request_timeout
options:
  verdicts:
    description:
      - The registered M(gpufleet.runtime_gate.node_crosscheck) results of the judged nodes, or the values of a
        verdicts file's C(hosts); each needs C(node) (the Node name), C(status) (C(OK), C(MISSING) or C(UNKNOWN))
        and, unless C(UNKNOWN), C(loaded_runtimes). A malformed entry or a Node judged twice fails the task before
        anything is written.
    type: list
    elements: dict
    required: true
  apply:
    description:
      - Write the labels and bindings. By default (V(false)) the module only reports what it would write.
    type: bool
    default: false
  bind_runtimeclasses:
    description:
      - Names of existing RuntimeClasses whose C(scheduling.nodeSelector) gets their handler's label. A name the
        cluster does not have fails the task before anything is written.
    type: list
    elements: str
    default: []
  label_prefix:
    description:
      - The label key prefix the module owns; every label under it on a judged Node is the module's to add or remove.
        A DNS-1123 subdomain, not C(kubernetes.io) or C(k8s.io) or a subdomain of them.
    type: str
    default: handler.runtime-gate.gpufleet.io
attributes:
  check_mode:
    support: full
    details: Reads the cluster and reports what would be labelled and bound (RV(changed) as with O(apply=true)), without writing.
  diff_mode:
    support: full
    details: Shows, per changed Node, its labels under O(label_prefix) before and after, and per bound class its nodeSelector.
  idempotent:
    support: full
    details: A Node whose labels already match its verdict, and a class already bound, are not written.
seealso:
  - module: gpufleet.runtime_gate.node_crosscheck
  - module: gpufleet.runtime_gate.runtimeclass_apply
author:
  - gpufleet platform team (@gpufleet)
"""

EXAMPLES = r"""
- name: Show what the gate would label (dry run)
  gpufleet.runtime_gate.node_handler_labels:
    verdicts: "{{ ansible_play_hosts_all | map('extract', hostvars, 'runtime_gate_verdict') | list }}"
  run_once: true
  delegate_to: localhost

- name: Label the judged nodes and bind the nvidia RuntimeClass to its handler's label
  gpufleet.runtime_gate.node_handler_labels:
    verdicts: "{{ ansible_play_hosts_all | map('extract', hostvars, 'runtime_gate_verdict') | list }}"
    bind_runtimeclasses: [nvidia]
    apply: true
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
changed:
  description: Whether any Node or RuntimeClass was written (in check mode with O(apply=true), would be); always V(false) in a dry run.
  returned: always
  type: bool
applied:
  description: Whether writes were allowed (O(apply=true) and not check mode).
  returned: success, and when the verdicts, the classes named or the cluster fail the task
  type: bool
msg:
  description: One line saying what was written, or in a dry run what would be.
  returned: success
  type: str
  sample: "dry run, nothing written (apply: true writes it); planned: 1 node(s) relabelled (1 label(s) added, 0 removed), ..."
nodes:
  description: One entry per judged node, by name.
  returned: success
  type: list
  elements: dict
  contains:
    node:
      description: The Node name.
      type: str
    status:
      description: C(OK), C(MISSING) or C(UNKNOWN).
      type: str
    served:
      description: The handlers the verdict proves served (none when C(UNKNOWN)).
      type: list
      elements: str
    action:
      description: C(label) (labels added or removed), C(none) (already as the verdict says) or C(not_found) (no Node of that name; nothing written).
      type: str
    add:
      description: Label keys set to C(served).
      type: list
      elements: str
    remove:
      description: Label keys removed.
      type: list
      elements: str
    labels_before:
      description: The Node's labels under O(label_prefix) as read.
      type: dict
    labels_after:
      description: Its labels under O(label_prefix) once written.
      type: dict
    unlabelable:
      description: Served handlers that cannot be a label name, each with C(handler) and C(problem).
      type: list
      elements: dict
unjudged:
  description: The cluster's other Nodes, left untouched, each with C(node) and its C(labels) under O(label_prefix).
  returned: success
  type: list
  elements: dict
runtimeclasses:
  description: One entry per O(bind_runtimeclasses) name, in the same order.
  returned: success
  type: list
  elements: dict
  contains:
    name:
      description: The class name.
      type: str
    handler:
      description: Its handler.
      type: str
    label:
      description: The label key its nodeSelector requires to be C(served).
      type: str
    action:
      description: C(bind) (nodeSelector changed) or C(none) (already bound).
      type: str
    node_selector_before:
      description: Its nodeSelector as read; null when it had none.
      type: dict
    node_selector_after:
      description: Its nodeSelector once bound.
      type: dict
    labelled_nodes:
      description: Nodes the bound nodeSelector matches, once the labels are written.
      type: list
      elements: str
    unlabelled_nodes:
      description: Nodes the current nodeSelector matches (every node, without one) that lack the label; new pods of the class will no longer be placed there.
      type: list
      elements: str
server:
  description: The API server read and written.
  returned: success, and on an API failure when known
  type: str
api_requests:
  description: Requests sent to the API server.
  returned: success
  type: int
http_status:
  description: The HTTP status of the API server's answer that failed the task.
  returned: on an API failure that had an HTTP status
  type: int
  sample: 409
diff:
  description: Before and after of the changed Nodes' labels under O(label_prefix) and of the bound classes' nodeSelector.
  returned: in diff mode, when something changed
  type: dict
"""

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._cluster_writers.gate_labels_apply import label_nodes, summary_message
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.module import call_cluster, kube_module
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._specs.node_handler_labels import get_node_handler_labels_argument_spec


def main():
    module, auth_options = kube_module(get_node_handler_labels_argument_spec())
    params = module.params
    applied = params["apply"] and not module.check_mode
    result = call_cluster(
        module,
        lambda: label_nodes(auth_options, params["verdicts"], params["bind_runtimeclasses"], params["label_prefix"],
                            write=applied, request_timeout=params["request_timeout"]),
        # A label written before an API failure is a change (KubeAccessError.written); a refused input writes nothing.
        failure_fields=lambda err: {"applied": applied, "changed": bool(getattr(err, "written", None))})
    for warning in result.pop("warnings"):
        module.warn(warning)
    diff = result.pop("diff")
    if not params["apply"]:
        result["changed"] = False
    result.update(applied=applied, msg=summary_message(result, applied))
    if module._diff and result["changed"]:
        result["diff"] = diff
    module.exit_json(**result)


if __name__ == "__main__":
    main()
