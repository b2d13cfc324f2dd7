"""Make the cluster's RuntimeClasses match a plan from ``_runtimeclass_plan``: two lists, then create or replace.

Controller side. Requests: the paginated lists of Nodes and RuntimeClasses plus one write per class that
changes, whatever the number of inventory hosts. The Nodes are listed here, never taken from the caller: the plan
must see every node a class would select (an empty or stale list would let a class without nodeSelector reach
nodes nobody judged). Updates are conditional replaces (PUT with the
``resourceVersion`` read), so a concurrent edit fails with 409 instead of being overwritten.
"""

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.limits import DEFAULT_PAGE_SIZE, DEFAULT_REQUEST_TIMEOUT
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._cluster_writers.gate_labels import DEFAULT_LABEL_PREFIX
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.objects import normalise_cluster_objects, normalise_runtimeclass
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.session import ApiSession
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._cluster_writers.runtimeclass_plan import (
    desired_body,
    needed_change,
    plan_runtimeclasses,
    refusals,
)

try:
    from kubernetes import client as kube_client
except ImportError:
    kube_client = None  # ApiSession raises KubernetesLibraryMissing first


def apply_runtimeclasses(options, desired_classes, verdicts, check_mode=False, request_timeout=DEFAULT_REQUEST_TIMEOUT,
                         page_size=DEFAULT_PAGE_SIZE, allow_unjudged_nodes=False, label_prefix=DEFAULT_LABEL_PREFIX):
    """List the Nodes, plan, then create/update what the plan allows. Nothing is written when any class is refused.

    Returns ``{"changed", "refused": [sentence...], "runtimeclasses": [plan + "action"], "diff": {"before", "after"},
    "server", "api_requests"}``. ``action`` is ``create``, ``update``, ``none`` or ``refused``.
    Raises ``RuntimeGateError``/``KubeAccessError`` for bad input and API failures.
    """
    desired_by_name = {desired["name"]: desired_body(desired) for desired in desired_classes}  # bad input: no request
    result = {"changed": False, "refused": [], "runtimeclasses": [], "diff": {"before": {}, "after": {}},
              "server": None, "api_requests": 0}
    with ApiSession(options, request_timeout) as session:
        result["server"] = session.server
        result["warnings"] = session.warnings
        node_items = session.list_all("Nodes (v1)", kube_client.CoreV1Api(session.client).list_node, page_size,
                                      list_kind="NodeList")
        nodes = normalise_cluster_objects([], node_items, f"the API server {session.server}")["nodes"]
        plans = plan_runtimeclasses(desired_classes, verdicts, nodes, allow_unjudged_nodes, label_prefix)
        result["refused"] = refusals(plans)
        if result["refused"]:
            result["runtimeclasses"] = [dict(plan, action="refused" if plan["refusal"] else "none") for plan in plans]
            result["api_requests"] = session.api_requests
            return result
        nodev1 = kube_client.NodeV1Api(session.client)
        live_items = session.list_all("RuntimeClasses (node.k8s.io/v1)", nodev1.list_runtime_class, page_size,
                                      list_kind="RuntimeClassList")
        live_by_name = {(item.get("metadata") or {}).get("name"): item for item in live_items}
        changes = []
        for plan in plans:
            live = live_by_name.get(plan["name"])
            action, body = needed_change(desired_by_name[plan["name"]], live)
            result["runtimeclasses"].append(dict(plan, action=action))
            if action != "none":
                changes.append((plan["name"], action, body))
                result["diff"]["before"][plan["name"]] = normalise_runtimeclass(live) if live else None
                result["diff"]["after"][plan["name"]] = normalise_runtimeclass(body)
        for name, action, body in changes if not check_mode else ():
            if action == "create":
                session.request(f"creating RuntimeClass '{name}' on {session.server}", nodev1.create_runtime_class, body)
            else:
                session.request(f"updating RuntimeClass '{name}' on {session.server}", nodev1.replace_runtime_class,
                                name, body)
        result["changed"] = bool(changes)
        result["api_requests"] = session.api_requests
    return result


def refusal_message(refused):
    """The one failure message for a refused plan."""
    return f"{len(refused)} RuntimeClass(es) refused, nothing applied: " + " | ".join(refused)


def unjudged_warnings(runtimeclass_results):
    """One warning per class applied although it targets cluster nodes this run did not judge (allow_unjudged_nodes)."""
    return [f"RuntimeClass '{item['name']}' also targets node(s) this run did not judge: {', '.join(item['unjudged'])}"
            for item in runtimeclass_results if item["unjudged"] and not item["refusal"]]
