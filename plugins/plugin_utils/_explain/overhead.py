"""Does a pod still fit once its RuntimeClass's overhead is added? Warnings for the fleet report.

The scheduler's ``NodeResourcesFit`` filter compares a pod's request with the node's allocatable,
and that request includes ``pod.spec.overhead``, which the RuntimeClass admission plugin copies from
``overhead.podFixed`` at pod creation (``k8s.io/component-helpers/resource/helpers.go`` ``PodRequests``;
``pkg/scheduler/framework/plugins/noderesources/fit.go``). So a pod requesting 900m CPU fits a node
with 1 allocatable CPU, and the same pod with 250m of RuntimeClass overhead (1150m) never does: it
stays Pending with ``Insufficient cpu``. ``overhead_findings`` finds these before anyone waits for them.

Input: the cluster result of ``runtimeclass_info`` (``runtimeclasses``, ``nodes``, ``pods``). Output:
Findings (severity ``warning``, host = the node's name). Nodes whose allocatable is unknown (a manifest
without ``status``) are not judged. A quantity that cannot be read gives an ``OVERHEAD_FIT_UNKNOWN``
finding naming it instead of a silent pass.
"""

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._explain.finding_codes import WARNING, make_finding
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.quantity import (
    QuantityError,
    format_quantity,
    parse_resource_list,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.requirements import selector_matches

POD_CODE = "POD_DOES_NOT_FIT_WITH_OVERHEAD"
CLASS_CODE = "RUNTIMECLASS_OVERHEAD_EXCEEDS_ALLOCATABLE"
UNKNOWN_CODE = "OVERHEAD_FIT_UNKNOWN"
# Pods in these phases hold no resources; the scheduler and kubelet no longer count them.
TERMINAL_PHASES = ("Succeeded", "Failed")


def overhead_findings(cluster, judged_nodes=None):
    """Findings for classes whose overhead alone outgrows a node, then for pods that do not fit with it.

    ``judged_nodes``: the names of the nodes the run covers (``-l``); findings about any other node are left out
    (a pending pod is still weighed against every node it may go to: one that fits anywhere is no finding). None:
    every node. Findings about no node (an unreadable class overhead) are always kept.
    Ordered by node, then code, then subject, so two runs over the same cluster compare equal.
    """
    cluster = cluster or {}
    runtimeclasses = {rc["name"]: rc for rc in cluster.get("runtimeclasses") or () if rc.get("name")}
    nodes = [node for node in cluster.get("nodes") or () if node.get("name") and node.get("allocatable")]
    findings = []
    allocatable_by_node = {}
    for node in nodes:
        try:
            allocatable_by_node[node["name"]] = parse_resource_list(
                node["allocatable"], f"Node '{node['name']}' allocatable")
        except QuantityError as err:
            findings.append(_unknown(node["name"], str(err), {"node": node["name"]}))
    for runtimeclass in runtimeclasses.values():
        findings.extend(_class_findings(runtimeclass, nodes, allocatable_by_node))
    for pod in cluster.get("pods") or ():
        findings.extend(_pod_findings(pod, runtimeclasses, nodes, allocatable_by_node))
    if judged_nodes is not None:
        judged_nodes = set(judged_nodes)
        findings = [finding for finding in findings if finding["host"] is None or finding["host"] in judged_nodes]
    return sorted(findings, key=lambda f: (f["host"] or "", f["code"], f["message"]))


def pod_request(pod, overhead):
    """The scheduler's view of one pod's request, per resource (``PodRequests`` without sidecars).

    Regular containers run together, so they add up; init containers run one at a time before them,
    so each only raises the floor: ``max(sum(containers), max(init))``, then plus ``overhead``.
    Returns ``(without_overhead, with_overhead)``; raises ``QuantityError``.
    """
    what = f"pod {pod.get('namespace')}/{pod.get('name')}"
    containers_total = {}
    for container in pod.get("containers") or ():
        requests = parse_resource_list(container.get("requests"), f"{what} container '{container.get('name')}' requests")
        for resource, amount in requests.items():
            containers_total[resource] = containers_total.get(resource, 0) + amount
    without_overhead = dict(containers_total)
    for container in pod.get("init_containers") or ():
        requests = parse_resource_list(container.get("requests"), f"{what} init container '{container.get('name')}' requests")
        for resource, amount in requests.items():
            without_overhead[resource] = max(without_overhead.get(resource, 0), amount)
    with_overhead = dict(without_overhead)
    for resource, amount in overhead.items():
        with_overhead[resource] = with_overhead.get(resource, 0) + amount
    return without_overhead, with_overhead


def _class_findings(runtimeclass, nodes, allocatable_by_node):
    if not runtimeclass.get("overhead_pod_fixed"):
        return []
    name = runtimeclass["name"]
    try:
        overhead = parse_resource_list(runtimeclass["overhead_pod_fixed"], f"RuntimeClass '{name}' overhead.podFixed")
    except QuantityError as err:
        return [_unknown(None, str(err), {"runtimeclass": name})]
    findings = []
    for node in _selected_nodes(runtimeclass, nodes, allocatable_by_node):
        allocatable = allocatable_by_node[node["name"]]
        exceeded = _exceeded(overhead, allocatable)
        if not exceeded:
            continue
        shown = ", ".join(f"{resource} {format_quantity(overhead[resource], resource)} > "
                          f"{format_quantity(allocatable.get(resource, 0), resource)}" for resource in exceeded)
        findings.append(_finding(
            CLASS_CODE, node["name"],
            f"RuntimeClass {name}'s overhead alone exceeds node {node['name']}'s allocatable ({shown}): "
            "no pod of this class can ever be scheduled there",
            f"Lower overhead.podFixed of RuntimeClass {name}, or narrow its scheduling.nodeSelector to nodes "
            "that can hold it",
            {"runtimeclass": name, "node": node["name"], "resources": exceeded,
             "overhead": _shown(overhead), "allocatable": _shown(allocatable, exceeded)}))
    return findings


def _pod_findings(pod, runtimeclasses, nodes, allocatable_by_node):
    if pod.get("phase") in TERMINAL_PHASES or not pod.get("runtime_class"):
        return []
    runtimeclass = runtimeclasses.get(pod["runtime_class"])
    pod_name = f"{pod.get('namespace')}/{pod.get('name')}"
    # The pod's own spec.overhead is what the scheduler counts; a pod created before its class had
    # overhead has none, and gets the class's the next time it is re-created.
    if pod.get("overhead"):
        overhead_source, overhead_text = "pod.spec.overhead", pod["overhead"]
    elif runtimeclass and runtimeclass.get("overhead_pod_fixed"):
        overhead_source, overhead_text = f"RuntimeClass {runtimeclass['name']} overhead.podFixed", runtimeclass["overhead_pod_fixed"]
    else:
        return []
    node_name = pod.get("node")
    if node_name:
        candidates = [node for node in nodes if node["name"] == node_name and node_name in allocatable_by_node]
    else:
        candidates = _selected_nodes(runtimeclass or {}, nodes, allocatable_by_node)
    if not candidates:
        return []
    try:
        overhead = parse_resource_list(overhead_text, f"pod {pod_name} {overhead_source}")
        without_overhead, with_overhead = pod_request(pod, overhead)
    except QuantityError as err:
        return [_unknown(candidate["name"], str(err), {"pod": pod_name}) for candidate in candidates]
    misfits = []
    for candidate in candidates:
        exceeded = _exceeded(with_overhead, allocatable_by_node[candidate["name"]])
        if not exceeded:
            # Scheduled: only its own node matters. Pending: one node it fits is enough.
            return []
        misfits.append((candidate, exceeded))
    return [_pod_finding(pod, pod_name, runtimeclass, overhead_source, overhead, without_overhead, with_overhead,
                         node, exceeded, allocatable_by_node[node["name"]])
            for node, exceeded in misfits]


def _pod_finding(pod, pod_name, runtimeclass, overhead_source, overhead, without_overhead, with_overhead,
                 node, exceeded, allocatable):
    fits_without_overhead = not _exceeded(without_overhead, allocatable)
    shown = ", ".join(
        f"{resource} {format_quantity(without_overhead.get(resource, 0), resource)} requested + "
        f"{format_quantity(overhead.get(resource, 0), resource)} overhead = "
        f"{format_quantity(with_overhead[resource], resource)} > {format_quantity(allocatable.get(resource, 0), resource)}"
        " allocatable" for resource in exceeded)
    where = f"is on node {node['name']}" if pod.get("node") else "is not scheduled and"
    verdict = "only because of the overhead" if fits_without_overhead else "even without the overhead"
    class_name = pod["runtime_class"]
    return _finding(
        POD_CODE, node["name"],
        f"Pod {pod_name} (RuntimeClass {class_name}) {where} does not fit node {node['name']} "
        f"{verdict} ({shown})",
        "Lower the pod's requests or the RuntimeClass overhead.podFixed, or run it on nodes with more allocatable "
        + "/".join(exceeded),
        {"pod": pod_name, "runtimeclass": class_name, "node": node["name"], "scheduled": bool(pod.get("node")),
         "phase": pod.get("phase"), "resources": exceeded, "fits_without_overhead": fits_without_overhead,
         "overhead_source": overhead_source, "requests": _shown(without_overhead, exceeded),
         "overhead": _shown(overhead), "requests_with_overhead": _shown(with_overhead, exceeded),
         "allocatable": _shown(allocatable, exceeded),
         "handler": runtimeclass["handler"] if runtimeclass else None})


def _selected_nodes(runtimeclass, nodes, allocatable_by_node):
    """Judged nodes a class can place pods on; no nodeSelector means every node (``scheduling: nil``)."""
    node_selector = runtimeclass.get("node_selector") or {}
    return [node for node in nodes if node["name"] in allocatable_by_node
            and selector_matches(node_selector, node.get("labels") or {})]


def _exceeded(requested, allocatable):
    """Resources asked for (non-zero) beyond allocatable; one the node does not list has 0 of it."""
    return sorted(resource for resource, amount in requested.items() if amount > 0 and amount > allocatable.get(resource, 0))


def _shown(resources, only=None):
    return [f"{resource}={format_quantity(amount, resource)}" for resource, amount in sorted(resources.items())
            if only is None or resource in only]


def _unknown(host, problem, evidence):
    return _finding(UNKNOWN_CODE, host, f"Overhead fit was not checked: {problem}",
                    "Fix the quantity in the object named; the API server only accepts valid quantities", evidence)


def _finding(code, host, message, remedy, evidence):
    """A warning Finding; message and remedy are sentences, as every other finding's are."""
    return make_finding(code, WARNING, _sentence(message), _sentence(remedy), evidence, host=host)


def _sentence(text):
    return text if text.endswith(".") else text + "."
