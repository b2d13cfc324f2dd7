# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The cluster's RuntimeClasses (and Nodes, Pods with their sandbox failures) in one paginated pass.

Controller side. ``list_cluster_objects(options)`` takes a plain dict of the auth options (``_k8s/auth.py``), so
modules and the CLI ``bin/rc-crosscheck`` share it; every failure is a ``KubeAccessError``.
"""

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import shown_value
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.client import kube_client
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.errors import KubeAccessError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.limits import DEFAULT_PAGE_SIZE, DEFAULT_REQUEST_TIMEOUT
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.objects import SANDBOX_FAILURE_REASON, normalise_cluster_objects
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.session import ApiSession


def list_cluster_objects(options, include_nodes=False, page_size=DEFAULT_PAGE_SIZE,
                         request_timeout=DEFAULT_REQUEST_TIMEOUT, include_pods=False, request_deadline=None,
                         list_page_budget=None, list_time_budget=None, max_response_bytes=None):
    """List node.k8s.io/v1 RuntimeClasses (and core/v1 Nodes, Pods) with ``limit``/``continue`` pagination.

    Returns ``{"runtimeclasses": [...], "nodes": [...], "pods": [...], "server": "https://host:port",
    "api_requests": <HTTP requests sent>}``; items normalised by ``objects``
    (``nodes``/``pods`` are ``[]`` unless asked for). Pods come with their ``FailedCreatePodSandBox``
    Events, listed cluster-wide with a field selector: a fixed number of lists, whatever the fleet size.
    The limits left None come from ``RUNTIME_GATE_*`` or their defaults (``resolve_limits``).
    Raises ``KubeAccessError``.
    """
    if not isinstance(page_size, int) or isinstance(page_size, bool) or page_size < 1:
        raise KubeAccessError(f"page_size must be a whole number of at least 1, not {shown_value(page_size)}")
    limits = {"request_deadline": request_deadline, "list_page_budget": list_page_budget,
              "list_time_budget": list_time_budget, "max_response_bytes": max_response_bytes}
    with ApiSession(options, request_timeout, limits=limits) as session:
        core = kube_client.CoreV1Api(session.client)
        runtimeclass_items = session.list_all(
            "RuntimeClasses (node.k8s.io/v1)", kube_client.NodeV1Api(session.client).list_runtime_class, page_size,
            list_kind="RuntimeClassList")
        node_items = session.list_all("Nodes (v1)", core.list_node, page_size,
                                      list_kind="NodeList") if include_nodes else []
        pod_items, event_items = [], []
        if include_pods:
            pod_items = session.list_all("Pods (v1, all namespaces)", core.list_pod_for_all_namespaces, page_size,
                                         list_kind="PodList")
            event_items = session.list_all(
                f"Events (v1, all namespaces, reason={SANDBOX_FAILURE_REASON})", core.list_event_for_all_namespaces,
                page_size, list_kind="EventList", field_selector=f"reason={SANDBOX_FAILURE_REASON}")
    cluster_objects = normalise_cluster_objects(runtimeclass_items, node_items, f"the API server {session.server}",
                                                pod_objs=pod_items, event_objs=event_items)
    return dict(cluster_objects, server=session.server, api_requests=session.api_requests, warnings=session.warnings)
