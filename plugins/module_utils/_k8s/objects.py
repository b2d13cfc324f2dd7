# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""RuntimeClasses, Nodes and Pods as plain dicts, from raw API list items or a manifest file's objects.

Both sources go through the same normalisers, so the rest of the core sees one shape:

- RuntimeClass: ``{"name", "handler", "overhead_pod_fixed", "node_selector", "tolerations"}``
- Node: ``{"name", "labels", "allocatable", "runtime_handlers", "addresses", "ready"}``
- Pod: ``{"namespace", "name", "node", "phase", "runtime_class", "containers", "init_containers",
  "overhead", "sandbox_failures"}``; ``sandbox_failures`` holds the messages of the pod's
  ``FailedCreatePodSandBox`` Events (how the kubelet reports a handler the runtime does not serve). Only Pods that
  name a RuntimeClass are kept (``normalise_located``).

Input is the camelCase JSON/YAML shape the API server speaks (``scheduling.nodeSelector``,
``overhead.podFixed``, ``status.runtimeHandlers``). Anything that cannot describe a real cluster
raises ``RuntimeGateError`` with one sentence naming the source and the problem. Names are checked here, where
cluster data enters from a file and from the API alike, with the apiserver's own rules (a RuntimeClass handler and a
namespace are DNS-1123 labels, object names DNS-1123 subdomains): a real apiserver never serves anything else, so such
input is corrupted or hostile, and is refused naming the object, the field and the rule. Manifest files are read by
``_k8s/manifest.py``, the API by ``_k8s/lists.py``.
"""

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import (
    RuntimeGateError,
    cut_text,
    shown_value,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.dns_names import DNS_LABEL, DNS_SUBDOMAIN, LABEL_RULE, SUBDOMAIN_RULE
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.quantity import QuantityError, parse_quantity


RUNTIMECLASS_API_VERSION = "node.k8s.io/v1"
NODE_API_VERSION = "v1"
POD_API_VERSION = "v1"
# core/v1 Events (what the kubelet records) and their events.k8s.io/v1 view (what `kubectl events` shows).
EVENT_API_VERSIONS = ("v1", "events.k8s.io/v1")
SANDBOX_FAILURE_REASON = "FailedCreatePodSandBox"


def normalise_cluster_objects(runtimeclass_objs, node_objs, source_name, pod_objs=(), event_objs=()):
    """Normalise raw API list items (camelCase dicts) into the same shape as ``parse_manifest_text``.

    List items from the API carry no ``kind``/``apiVersion``; the list they came from says what they are.
    ``event_objs`` are core/v1 Events; only those with reason ``FailedCreatePodSandBox`` are used.
    """
    def unlocated(objs):
        return [(None, obj) for obj in objs]

    return normalise_located(unlocated(runtimeclass_objs), unlocated(node_objs), unlocated(pod_objs),
                             unlocated(event_objs), source_name)


def normalise_runtimeclass(obj):
    """One RuntimeClass (camelCase dict) → ``{"name", "handler", "overhead_pod_fixed", "node_selector", "tolerations"}``.

    ``node_selector`` is None when ``scheduling.nodeSelector`` is absent or empty: the class then
    claims every node (``scheduling: nil`` means "supported by all nodes", node/v1 types.go).
    ``overhead_pod_fixed`` is None without ``overhead.podFixed``; quantities become strings
    (YAML may read ``cpu: 1`` as a number; the API server accepts both). Label values must already
    be strings: the API server rejects any other type, so a number or boolean is an error here.
    """
    name = _object_name(obj, "RuntimeClass")
    what = f"RuntimeClass '{cut_text(name)}'"
    handler = obj.get("handler")
    if handler is None:
        raise RuntimeGateError(f"{what} has no 'handler' (required in {RUNTIMECLASS_API_VERSION})")
    if not isinstance(handler, str):
        raise RuntimeGateError(
            f"{what} has a handler of type {type(handler).__name__} ({shown_value(handler)}); it must be a string"
        )
    if not handler:
        raise RuntimeGateError(f"{what} has an empty handler")
    _check_name(handler, DNS_LABEL, what, "handler", LABEL_RULE)
    overhead = _mapping_or_empty(obj.get("overhead"), f"{what}: overhead")
    scheduling = _mapping_or_empty(obj.get("scheduling"), f"{what}: scheduling")
    tolerations = scheduling.get("tolerations") or []
    # Toleration fields are strings and tolerationSeconds (core/v1); anything nested (a YAML alias can even
    # make a toleration hold itself) would not survive the JSON a module returns.
    if not isinstance(tolerations, list) or not all(
            isinstance(item, dict) and all(value is None or isinstance(value, (str, int, float)) for value in item.values())
            for item in tolerations):
        raise RuntimeGateError(f"{what}: scheduling.tolerations must be a list of mappings of strings and numbers")
    overhead_pod_fixed = _quantities(overhead.get("podFixed"), f"{what}: overhead.podFixed")
    _refuse_negative(overhead_pod_fixed, f"{what}: overhead.podFixed")
    return {
        "name": name,
        "handler": handler,
        "overhead_pod_fixed": overhead_pod_fixed or None,
        "node_selector": _string_map(scheduling.get("nodeSelector"), f"{what}: scheduling.nodeSelector")
        or None,
        "tolerations": [dict(toleration) for toleration in tolerations],
    }


def normalise_node(obj):
    """One Node (camelCase dict) → ``{"name", "labels", "allocatable", "runtime_handlers", "addresses", "ready"}``.

    ``ready`` is the ``Ready`` condition as ``{"status", "heartbeat"}`` (``"True"``/``"False"``/``"Unknown"`` and
    ``lastHeartbeatTime`` as the API wrote it), each None when the Node does not say (``ready_condition``).

    ``addresses`` is ``status.addresses`` as ``[{"type", "address"}]`` (InternalIP, Hostname, ...), in
    the kubelet's order.

    ``runtime_handlers`` is ``status.runtimeHandlers`` as ``[{"name": str, "features": dict}]``;
    ``name`` ``""`` is the runtime's default handler (containerd and CRI-O list it besides its named
    entry). An EMPTY list means UNKNOWN, not "no handlers": the field is absent on containerd 1.7,
    on kubelets before 1.30, and when the RecursiveReadOnlyMounts and UserNamespacesSupport gates
    are both off. Callers must then fall back to node-side evidence.
    """
    name = _object_name(obj, "Node")
    what = f"Node '{cut_text(name)}'"
    metadata = obj.get("metadata") or {}
    status = _mapping_or_empty(obj.get("status"), f"{what}: status")
    handlers = status.get("runtimeHandlers") or []
    if not isinstance(handlers, list):
        raise RuntimeGateError(f"{what}: status.runtimeHandlers must be a list")
    runtime_handlers = []
    for handler in handlers:
        if not isinstance(handler, dict):
            raise RuntimeGateError(f"{what}: status.runtimeHandlers holds a non-mapping entry {shown_value(handler)}")
        handler_name = handler.get("name", "")
        if not isinstance(handler_name, str):
            raise RuntimeGateError(f"{what}: status.runtimeHandlers has a non-string name {shown_value(handler_name)}")
        if handler_name:
            _check_handler_name(handler_name, what)
        features = _mapping_or_empty(handler.get("features"), f"{what}: runtime handler '{cut_text(handler_name)}' features")
        runtime_handlers.append({"name": handler_name, "features": dict(features)})
    addresses = status.get("addresses") or []
    if not isinstance(addresses, list) or not all(
            isinstance(entry, dict) and isinstance(entry.get("type"), str) and isinstance(entry.get("address"), str)
            for entry in addresses):
        raise RuntimeGateError(f"{what}: status.addresses must be a list of mappings with string 'type' and 'address'")
    return {
        "name": name,
        "labels": _string_map(metadata.get("labels"), f"{what}: metadata.labels"),
        "allocatable": _quantities(status.get("allocatable"), f"{what}: status.allocatable"),
        "runtime_handlers": runtime_handlers,
        "addresses": [{"type": entry["type"], "address": entry["address"]} for entry in addresses],
        "ready": ready_condition(status.get("conditions")),
    }


def ready_condition(conditions):
    """``{"status", "heartbeat"}`` of the ``Ready`` condition among a Node's ``status.conditions``.

    Anything that is not a readable Ready condition (no conditions, a malformed list, a non-string status or time)
    leaves that part None: who reads it (``_facts/node_status``) counts None as "not proven ready", never as ready.
    """
    ready = {"status": None, "heartbeat": None}
    if not isinstance(conditions, list):
        return ready
    for condition in conditions:
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            for key, field in (("status", "status"), ("heartbeat", "lastHeartbeatTime")):
                value = condition.get(field)
                ready[key] = value if isinstance(value, str) and value else None
            break
    return ready


def normalise_pod(obj):
    """One Pod (camelCase dict) → the pod shape of the module docstring, ``sandbox_failures`` still empty.

    ``node`` is ``spec.nodeName`` (None while unscheduled), ``runtime_class`` ``spec.runtimeClassName``
    (None: the runtime's default handler), ``overhead`` ``spec.overhead`` as the RuntimeClass admission
    plugin set it at creation (empty without one). Requests are quantity strings per resource.
    """
    name = _object_name(obj, "Pod")
    metadata = obj.get("metadata") or {}
    namespace = metadata.get("namespace") or "default"
    if not isinstance(namespace, str):
        raise RuntimeGateError(f"Pod '{cut_text(name)}' has a non-string metadata.namespace {shown_value(namespace)}")
    _check_name(namespace, DNS_LABEL, f"Pod '{cut_text(name)}'", "metadata.namespace", LABEL_RULE)
    what = f"Pod '{cut_text(namespace)}/{cut_text(name)}'"
    spec = _mapping_or_empty(obj.get("spec"), f"{what}: spec")
    status = _mapping_or_empty(obj.get("status"), f"{what}: status")
    optional_strings = {}
    for field, value in (("spec.nodeName", spec.get("nodeName")), ("spec.runtimeClassName", spec.get("runtimeClassName")),
                         ("status.phase", status.get("phase"))):
        if value is not None and not isinstance(value, str):
            raise RuntimeGateError(f"{what}: {field} must be a string, not {yaml_type(value)}")
        optional_strings[field] = value or None
    return {
        "namespace": namespace,
        "name": name,
        "node": optional_strings["spec.nodeName"],
        # A pod without a phase (a manifest, not a live object) is in a state nobody reported.
        "phase": optional_strings["status.phase"] or "Unknown",
        "runtime_class": optional_strings["spec.runtimeClassName"],
        "containers": _container_requests(spec.get("containers"), f"{what}: spec.containers"),
        "init_containers": _container_requests(spec.get("initContainers"), f"{what}: spec.initContainers"),
        "overhead": _quantities(spec.get("overhead"), f"{what}: spec.overhead"),
        "sandbox_failures": [],
    }


def sandbox_failure_of(obj):
    """``(namespace, name, uid_or_None, message)`` for a FailedCreatePodSandBox Event about a Pod, else None.

    Reads both the core/v1 shape (``involvedObject``, ``message``) and the events.k8s.io/v1 one
    (``regarding``, ``note``); the API lists of this module ask for core/v1.
    """
    if not isinstance(obj, dict) or obj.get("reason") != SANDBOX_FAILURE_REASON:
        return None
    regarding = obj.get("involvedObject") if "involvedObject" in obj else obj.get("regarding")
    if not isinstance(regarding, dict) or regarding.get("kind", "Pod") != "Pod":
        return None
    message = obj.get("message") if "message" in obj else obj.get("note")
    name = regarding.get("name")
    if not isinstance(name, str) or not name:
        return None
    namespace = regarding.get("namespace") or (obj.get("metadata") or {}).get("namespace") or "default"
    return str(namespace), name, regarding.get("uid") or None, str(message or "").strip()


def _container_requests(containers, what):
    if containers is None:
        return []
    if not isinstance(containers, list):
        raise RuntimeGateError(f"{what} must be a list, not a {yaml_type(containers)}")
    normalised = []
    for number, container in enumerate(containers, start=1):
        if not isinstance(container, dict):
            raise RuntimeGateError(f"{what} item {number} is a {yaml_type(container)}, not a mapping")
        container_name = container.get("name")
        if not isinstance(container_name, str) or not container_name:
            raise RuntimeGateError(f"{what} item {number} has no name")
        shown_name = cut_text(container_name)
        resources = _mapping_or_empty(container.get("resources"), f"{what} '{shown_name}': resources")
        normalised.append({"name": container_name,
                           "requests": _quantities(resources.get("requests"), f"{what} '{shown_name}': resources.requests")})
    return normalised


def _attach_sandbox_failures(pods, pod_uids, located_events):
    """Each pod's FailedCreatePodSandBox messages, once each, in listing order.

    An Event names its pod by namespace/name and uid; a uid that differs from the pod's means an earlier
    pod of the same name (a recreated StatefulSet pod), whose failures are not this pod's.
    """
    by_key = {(pod["namespace"], pod["name"]): pod for pod in pods}
    for _location, obj in located_events:
        failure = sandbox_failure_of(obj)
        if failure is None:
            continue
        namespace, name, uid, message = failure
        pod = by_key.get((namespace, name))
        if pod is None or (uid and pod_uids.get((namespace, name)) and uid != pod_uids[(namespace, name)]):
            continue
        if message and message not in pod["sandbox_failures"]:
            pod["sandbox_failures"].append(message)


def normalise_located(located_runtimeclasses, located_nodes, located_pods, located_events, source_name):
    """The normalised objects; of the Pods only those that name a RuntimeClass (every Pod is still checked).

    A Pod without ``spec.runtimeClassName`` runs on the node's default runtime: no fleet finding, overhead fit or
    handler concerns it, and most of a cluster's Pods are such, so they are left out of what travels on.
    """
    pods = [pod for pod in _normalise_unique(located_pods, normalise_pod, "Pod", source_name) if pod["runtime_class"]]
    pod_uids = {}
    for _location, obj in located_pods:
        metadata = obj.get("metadata") or {}
        pod_uids[(metadata.get("namespace") or "default", metadata.get("name"))] = metadata.get("uid")
    _attach_sandbox_failures(pods, pod_uids, located_events)
    return {
        "runtimeclasses": _normalise_unique(located_runtimeclasses, normalise_runtimeclass, "RuntimeClass", source_name),
        "nodes": _normalise_unique(located_nodes, normalise_node, "Node", source_name),
        "pods": pods,
    }


def _normalise_unique(located_objects, normalise, kind, source_name):
    by_name = {}
    where_seen = {}
    for location, obj in located_objects:
        try:
            normalised = normalise(obj)
        except RuntimeGateError as err:
            raise RuntimeGateError(f"{where(source_name, location)}: {err}") from None
        name = f"{normalised['namespace']}/{normalised['name']}" if "namespace" in normalised else normalised["name"]
        if name in by_name:
            earlier = f" (also in {where_seen[name]})" if where_seen[name] else ""
            raise RuntimeGateError(f"{where(source_name, location)}: {kind} '{cut_text(name)}' is defined twice{earlier}")
        by_name[name] = normalised
        where_seen[name] = location
    return [by_name[name] for name in sorted(by_name)]


def _object_name(obj, kind):
    if not isinstance(obj, dict):
        raise RuntimeGateError(f"a {kind} is a {yaml_type(obj)}, not a mapping")
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if not isinstance(name, str) or not name:
        raise RuntimeGateError(f"a {kind} has no metadata.name")
    _check_name(name, DNS_SUBDOMAIN, f"a {kind}", "metadata.name", SUBDOMAIN_RULE)
    return name


def _check_name(value, rule, what, field, rule_text):
    if not rule.fullmatch(value):
        raise RuntimeGateError(f"{what}: {field} {shown_value(value)} is not {rule_text}; a real API server never "
                               "serves one, so the source is corrupted or hostile")


def _check_handler_name(value, what):
    """A Node's ``status.runtimeHandlers[].name``: the kubelet copies the runtime's handler names and the API server
    does not check them (k8s v1.34.4 pkg/apis/core/validation/validation.go has no rule for the field), so the rule
    is the one of the RuntimeClass handler they are matched against: a DNS-1123 label. A name that is not one can
    serve no RuntimeClass; it means a runtime named against Kubernetes' rule, or a corrupted or hostile source."""
    if not DNS_LABEL.fullmatch(value):
        raise RuntimeGateError(
            f"{what}: status.runtimeHandlers name {shown_value(value)} is not {LABEL_RULE}; no RuntimeClass can name "
            "such a handler, so the node's runtime configuration names it against Kubernetes' rule, or the source is "
            "corrupted or hostile")


def _mapping_or_empty(value, what):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RuntimeGateError(f"{what} must be a mapping, not a {yaml_type(value)}")
    return value


def _string_map(value, what):
    mapping = _mapping_or_empty(value, what)
    for key, item in mapping.items():
        if not isinstance(key, str) or not isinstance(item, str):
            raise RuntimeGateError(
                f"{what} has {shown_value(key)}: {shown_value(item)}; keys and values must be strings (quote them in YAML)"
            )
    return dict(mapping)


def _quantities(value, what):
    mapping = _mapping_or_empty(value, what)
    quantities = {}
    for resource, amount in mapping.items():
        if isinstance(amount, bool) or not isinstance(amount, (str, int, float)):
            raise RuntimeGateError(f"{what} has {shown_value(resource)}: {shown_value(amount)}; a quantity must be a "
                                   "string or number")
        quantities[str(resource)] = str(amount)
    return quantities


def _refuse_negative(quantities, what):
    """The apiserver refuses a negative overhead (pkg/apis/node/validation validateOverhead: ValidateResourceQuantityValue,
    "must be greater than or equal to 0"); a malformed one is left to the overhead findings."""
    for resource, amount in quantities.items():
        try:
            negative = parse_quantity(amount) < 0
        except QuantityError:
            continue
        if negative:
            raise RuntimeGateError(f"{what} {shown_value(resource)} is {shown_value(amount)}, negative; the API server "
                                   "refuses that (must be greater than or equal to 0)")


def where(source_name, location):
    return f"{source_name} {location}" if location else source_name


def yaml_type(value):
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    return type(value).__name__
