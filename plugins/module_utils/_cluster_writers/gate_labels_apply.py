"""Write what ``_gate_labels`` plans: handler labels on the judged Nodes, then the bound RuntimeClasses.

Controller side. Requests: one paginated list of Nodes (and of RuntimeClasses when classes are bound), then one
merge patch per Node whose labels change and one conditional replace per class bound, whatever the number of hosts.
Labels go first, so a class never requires a label before the nodes that serve its handler carry it.
"""

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._cluster_writers.gate_labels import (
    DEFAULT_LABEL_PREFIX,
    binding_warnings,
    bound_body,
    check_prefix,
    label_warnings,
    plan_binding,
    plan_labels,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.errors import KubeAccessError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.limits import DEFAULT_PAGE_SIZE, DEFAULT_REQUEST_TIMEOUT
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.session import ApiSession
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._specs.node_handler_labels import get_node_handler_labels_argument_spec

try:
    from kubernetes import client as kube_client
except ImportError:
    kube_client = None  # ApiSession raises KubernetesLibraryMissing first

# A JSON merge patch (RFC 7386) of metadata.labels: keys set to a value are added, keys set to null removed, every
# other label untouched. Not conditional on resourceVersion: the kubelet (kwok here) rewrites the Node's status every
# few seconds, and a patch that names only our keys cannot overwrite anyone else's change.
MERGE_PATCH = "application/merge-patch+json"


def argument_spec():
    """node_handler_labels's options (kept for callers of this name; the spec is ``_specs/node_handler_labels.py``)."""
    return get_node_handler_labels_argument_spec()["argument_spec"]


def label_nodes(options, verdicts, bind_runtimeclasses=(), label_prefix=DEFAULT_LABEL_PREFIX, write=False,
                request_timeout=DEFAULT_REQUEST_TIMEOUT, page_size=DEFAULT_PAGE_SIZE):
    """Plan from the cluster as it is now, then (``write``) patch the Nodes and replace the bound classes.

    Returns ``{"changed", "nodes", "unjudged", "runtimeclasses", "warnings", "diff", "server", "api_requests"}``;
    ``changed`` is whether anything was, or (``write`` false) would be, written. Every input problem is raised as
    ``RuntimeGateError`` before any write; an API failure as ``KubeAccessError`` naming what had been written.
    """
    check_prefix(label_prefix)
    names = list(bind_runtimeclasses or ())
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise RuntimeGateError(f"bind_runtimeclasses names {', '.join(duplicates)} more than once")
    with ApiSession(options, request_timeout) as session:
        core = kube_client.CoreV1Api(session.client)
        nodev1 = kube_client.NodeV1Api(session.client)
        node_items = session.list_all("Nodes (v1)", core.list_node, page_size, list_kind="NodeList")
        node_labels = {}
        for item in node_items:
            metadata = item.get("metadata") or {}
            labels = metadata.get("labels") or {}
            if not isinstance(metadata.get("name"), str) or not isinstance(labels, dict):
                raise KubeAccessError(f"listing Nodes (v1) on {session.server}: a Node without a name or with labels "
                                      "that are not a mapping; nothing labelled", session.server)
            node_labels[metadata["name"]] = labels
        label_plan = plan_labels(verdicts, node_labels, label_prefix)
        bindings, bodies = [], {}
        if names:
            class_items = session.list_all("RuntimeClasses (node.k8s.io/v1)", nodev1.list_runtime_class, page_size,
                                           list_kind="RuntimeClassList")
            live = {(item.get("metadata") or {}).get("name"): item for item in class_items}
            absent = [name for name in names if name not in live]
            if absent:
                raise RuntimeGateError(f"bind_runtimeclasses names RuntimeClass(es) the cluster does not have: "
                                       f"{', '.join(absent)}; nothing labelled or bound")
            for name in names:
                binding = plan_binding(live[name], label_plan["labels_after"], label_prefix)
                bindings.append(binding)
                if binding["action"] == "bind":
                    bodies[name] = bound_body(live[name], binding)
        warnings = label_warnings(label_plan) + [text for binding in bindings for text in binding_warnings(binding)]
        changing = [entry for entry in label_plan["nodes"] if entry["patch"]]
        done = []
        if write:
            try:
                for entry in changing:
                    session.request(f"labelling Node '{entry['node']}' on {session.server}", core.patch_node,
                                    entry["node"], entry["patch"], _content_type=MERGE_PATCH)
                    done.append(f"Node {entry['node']}")
                for name, body in bodies.items():
                    session.request(f"binding RuntimeClass '{name}' on {session.server}", nodev1.replace_runtime_class,
                                    name, body)
                    done.append(f"RuntimeClass {name}")
            except KubeAccessError as err:
                written = ", ".join(done) if done else "nothing"
                failure = KubeAccessError(f"{err} (written before this failure: {written})", err.server, err.http_status)
                failure.written = done
                raise failure from None
        nodes = [{key: value for key, value in entry.items() if key != "patch"} for entry in label_plan["nodes"]]
        diff = {"before": {"nodes": {entry["node"]: entry["labels_before"] for entry in changing},
                           "runtimeclasses": {binding["name"]: binding["node_selector_before"] for binding in bindings
                                              if binding["action"] == "bind"}},
                "after": {"nodes": {entry["node"]: entry["labels_after"] for entry in changing},
                          "runtimeclasses": {binding["name"]: binding["node_selector_after"] for binding in bindings
                                             if binding["action"] == "bind"}}}
        return {"changed": bool(changing or bodies), "nodes": nodes, "unjudged": label_plan["unjudged"],
                "runtimeclasses": bindings, "warnings": warnings, "diff": diff, "server": session.server,
                "api_requests": session.api_requests}


def summary_message(result, applied):
    """One line: what was (or would be) written."""
    labelled = [entry for entry in result["nodes"] if entry["action"] == "label"]
    added = sum(len(entry["add"]) for entry in labelled)
    removed = sum(len(entry["remove"]) for entry in labelled)
    bound = [binding["name"] for binding in result["runtimeclasses"] if binding["action"] == "bind"]
    what = (f"{len(labelled)} node(s) relabelled ({added} label(s) added, {removed} removed), "
            f"{len(bound)} RuntimeClass(es) bound{': ' + ', '.join(bound) if bound else ''}; "
            f"{len(result['unjudged'])} node(s) not judged, left as they are")
    if applied:
        return what
    return f"dry run, nothing written (apply: true writes it); planned: {what}"
