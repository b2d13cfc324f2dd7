"""RuntimeClasses, Nodes and Pods as plain dicts, from a manifest file or from raw API list items.

Both sources go through the same normalisers, so the rest of the core sees one shape:

- RuntimeClass: ``{"name", "handler", "overhead_pod_fixed", "node_selector", "tolerations"}``
- Node: ``{"name", "labels", "allocatable", "runtime_handlers", "addresses"}``
- Pod: ``{"namespace", "name", "node", "phase", "runtime_class", "containers", "init_containers",
  "overhead", "sandbox_failures"}``; ``sandbox_failures`` holds the messages of the pod's
  ``FailedCreatePodSandBox`` Events (how the kubelet reports a handler the runtime does not serve).

Input is the camelCase JSON/YAML shape the API server speaks (``scheduling.nodeSelector``,
``overhead.podFixed``, ``status.runtimeHandlers``). Anything that cannot describe a real cluster
raises ``RuntimeGateError`` with one sentence naming the source and the problem.
"""

import os
import traceback

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._errors import (
    RuntimeGateError,
    cut_text,
    shown_value,
)

try:
    import yaml
except ImportError:
    HAS_YAML = False
    YAML_IMPORT_ERROR = traceback.format_exc()
else:
    HAS_YAML = True
    YAML_IMPORT_ERROR = None

MAX_MANIFEST_BYTES = 50 * 1024 * 1024
RUNTIMECLASS_API_VERSION = "node.k8s.io/v1"
NODE_API_VERSION = "v1"
POD_API_VERSION = "v1"
# core/v1 Events (what the kubelet records) and their events.k8s.io/v1 view (what `kubectl events` shows).
EVENT_API_VERSIONS = ("v1", "events.k8s.io/v1")
SANDBOX_FAILURE_REASON = "FailedCreatePodSandBox"


def read_manifest_file(path):
    """Read a YAML file of Kubernetes objects (see ``parse_manifest_text``).

    Files of ``MAX_MANIFEST_BYTES`` or more are refused before they are read: a RuntimeClass and
    Node export of even a large fleet is a few MB, so a bigger file is the wrong file.
    """
    source_name = f"manifest file '{path}'"
    try:
        size = os.stat(path).st_size
        if os.path.isdir(path):
            raise RuntimeGateError(f"{source_name} is a directory, not a file")
        if size >= MAX_MANIFEST_BYTES:
            raise RuntimeGateError(
                f"{source_name} is {size / (1024 * 1024):.1f} MB; files of "
                f"{MAX_MANIFEST_BYTES // (1024 * 1024)} MB or more are refused. Export only what is "
                "needed: kubectl get runtimeclass,node -o yaml"
            )
        with open(path, "rb") as manifest:
            raw = manifest.read()
    except FileNotFoundError:
        raise RuntimeGateError(f"{source_name} does not exist") from None
    except OSError as err:
        raise RuntimeGateError(f"{source_name} cannot be read: {err.strerror or err}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise RuntimeGateError(
            f"{source_name} is not UTF-8 text: byte 0x{raw[err.start]:02x} at line {line} "
            f"(offset {err.start}) is not valid UTF-8"
        ) from None
    return parse_manifest_text(text.removeprefix("\ufeff"), source_name)


def parse_manifest_text(text, source_name):
    """Turn YAML text into ``{"runtimeclasses": [...], "nodes": [...], "pods": [...]}``, each sorted by name.

    ``text`` is either what ``kubectl get runtimeclass,node,pod,event -A -o yaml`` prints (a ``List``,
    also ``RuntimeClassList``/``NodeList``/...) or multi-document manifests, or a mix. Events give the
    pods their ``sandbox_failures``. Objects of other kinds (ConfigMaps, Deployments, ...) are skipped
    without a word, so a whole cluster dump can be passed.
    ``source_name`` is the subject of every error message, e.g. ``"manifest file '/x.yaml'"``.

    Refused, each with one message:

    - text with no YAML document at all, and text whose documents hold neither a RuntimeClass, a
      Node, a RuntimeClassList/NodeList nor an empty ``List``: pointing at the wrong file must not
      read as "a cluster without requirements". Zero RuntimeClasses is a real state, though (a new
      cluster; GPU Operator in NRI-plugin mode deletes them): what ``kubectl get runtimeclass -o yaml``
      prints for it (``kind: List``, ``items: []``) and a file with Nodes only are accepted.
    - malformed YAML (with line and column), a document that is not a mapping or has no ``kind``.
    - YAML aliases (``*name``), merge keys that use them included: kubectl never writes them, and a
      few hundred bytes of them expand into gigabytes once a value is printed or returned. A key
      given twice in one mapping is refused too (PyYAML would silently keep the last one).
    - a RuntimeClass whose apiVersion is not ``node.k8s.io/v1``: v1beta1 was removed in
      Kubernetes 1.25 and v1alpha1 had another shape, so such a file describes no cluster we check.
    - anything ``normalise_runtimeclass``/``normalise_node`` refuse, and duplicate names.
    """
    if not HAS_YAML:
        raise RuntimeGateError(f"reading {source_name} needs the Python library PyYAML (pip install PyYAML)")
    try:
        documents = _load_documents(text, source_name)
    except yaml.YAMLError as err:
        raise RuntimeGateError(f"{source_name} is not valid YAML{_yaml_error_position(err)}") from None
    except ValueError as err:
        # PyYAML's constructors let a few ValueErrors through (an integer of more than 4300 digits).
        raise RuntimeGateError(f"{source_name} holds a value that cannot be read: {cut_text(err, 200)}") from None
    if not documents:
        raise RuntimeGateError(
            f"{source_name} is empty: it holds no Kubernetes objects, so it cannot stand for a "
            "cluster (expected the output of: kubectl get runtimeclass,node -o yaml)"
        )
    located = {"RuntimeClass": [], "Node": [], "Pod": [], "Event": []}
    expected_versions = {"RuntimeClass": (RUNTIMECLASS_API_VERSION,), "Node": (NODE_API_VERSION,),
                         "Pod": (POD_API_VERSION,), "Event": EVENT_API_VERSIONS}
    lists_the_cluster = False
    for doc_number, document in enumerate(documents, start=1):
        lists_the_cluster = lists_the_cluster or _lists_runtimeclasses_or_nodes(document)
        for location, obj in _objects_in_document(document, f"document {doc_number}", source_name):
            kind = obj.get("kind")
            if kind in located:
                _require_api_version(obj, expected_versions[kind], location, source_name)
                located[kind].append((location, obj))
    if not located["RuntimeClass"] and not located["Node"] and not lists_the_cluster:
        raise RuntimeGateError(
            f"{source_name} holds no RuntimeClass and no Node object (expected the output of: "
            "kubectl get runtimeclass,node -o yaml)"
        )
    return _normalise_located(located["RuntimeClass"], located["Node"], located["Pod"], located["Event"], source_name)


def _lists_runtimeclasses_or_nodes(document):
    """Whether ``document`` is a RuntimeClassList/NodeList, or the empty ``List`` kubectl prints for a kind with
    no objects: proof that the file was exported from a cluster, even one without RuntimeClasses."""
    if not isinstance(document, dict) or not isinstance(document.get("items"), list):
        return False
    kind = document.get("kind")
    return kind in ("RuntimeClassList", "NodeList") or (kind == "List" and not document["items"])


def _load_documents(text, source_name):
    """The YAML documents of ``text`` (empty ones dropped); raises ``yaml.YAMLError`` or ``RuntimeGateError``.

    Each document's node graph is checked for aliases before any value is built from it: an alias makes
    two places share one node, so a node reached twice is an alias, and nothing has been expanded yet.
    """
    loader = _ManifestLoader(text)
    documents = []
    try:
        while loader.check_node():
            root = loader.get_node()
            if _first_shared_node(root) is not None:
                raise RuntimeGateError(f"{source_name} uses a YAML alias ({_first_alias(text)}): aliases are refused, "
                                       "since kubectl never writes them and a few hundred bytes of them can expand "
                                       "into gigabytes; write the values out")
            document = loader.construct_document(root)
            if document is not None:
                documents.append(document)
    finally:
        loader.dispose()
    return documents


def _first_shared_node(root):
    """The first node reachable twice from ``root`` (through an alias), else None."""
    visited = set()
    pending = [root]
    while pending:
        node = pending.pop()
        if id(node) in visited:
            return node
        visited.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            pending.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                pending.extend((key_node, value_node))
    return None


def _first_alias(text):
    """``*name at line L, column C`` of the first alias in ``text`` (the node graph no longer says where it was)."""
    for event in yaml.parse(text, Loader=_YAML_LOADER):
        if isinstance(event, yaml.AliasEvent):
            mark = event.start_mark
            return f"*{cut_text(event.anchor, 40)} at line {mark.line + 1}, column {mark.column + 1}"
    return "an alias"


_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader) if HAS_YAML else object
_MERGE_TAG = "tag:yaml.org,2002:merge"


class _ManifestLoader(_YAML_LOADER):
    """PyYAML's safe loader (libyaml's when there), refusing a key given twice in one mapping."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            first_seen = {}
            for key_node, _value_node in node.value:
                if key_node.tag == _MERGE_TAG:
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    earlier = first_seen.get(key)
                except TypeError:
                    continue  # an unhashable key: the base class refuses it with its own message
                if earlier is not None:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"the key {shown_value(key)} is given twice in one mapping (also at line "
                        f"{earlier.line + 1}); a reader would silently keep only one", key_node.start_mark)
                first_seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)


def normalise_cluster_objects(runtimeclass_objs, node_objs, source_name, pod_objs=(), event_objs=()):
    """Normalise raw API list items (camelCase dicts) into the same shape as ``parse_manifest_text``.

    List items from the API carry no ``kind``/``apiVersion``; the list they came from says what they are.
    ``event_objs`` are core/v1 Events; only those with reason ``FailedCreatePodSandBox`` are used.
    """
    def unlocated(objs):
        return [(None, obj) for obj in objs]

    return _normalise_located(unlocated(runtimeclass_objs), unlocated(node_objs), unlocated(pod_objs),
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
    overhead = _mapping_or_empty(obj.get("overhead"), f"{what}: overhead")
    scheduling = _mapping_or_empty(obj.get("scheduling"), f"{what}: scheduling")
    tolerations = scheduling.get("tolerations") or []
    # Toleration fields are strings and tolerationSeconds (core/v1); anything nested (a YAML alias can even
    # make a toleration hold itself) would not survive the JSON a module returns.
    if not isinstance(tolerations, list) or not all(
            isinstance(item, dict) and all(value is None or isinstance(value, (str, int, float)) for value in item.values())
            for item in tolerations):
        raise RuntimeGateError(f"{what}: scheduling.tolerations must be a list of mappings of strings and numbers")
    return {
        "name": name,
        "handler": handler,
        "overhead_pod_fixed": _quantities(overhead.get("podFixed"), f"{what}: overhead.podFixed") or None,
        "node_selector": _string_map(scheduling.get("nodeSelector"), f"{what}: scheduling.nodeSelector")
        or None,
        "tolerations": [dict(toleration) for toleration in tolerations],
    }


def normalise_node(obj):
    """One Node (camelCase dict) → ``{"name", "labels", "allocatable", "runtime_handlers", "addresses"}``.

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
    }


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
    what = f"Pod '{cut_text(namespace)}/{cut_text(name)}'"
    spec = _mapping_or_empty(obj.get("spec"), f"{what}: spec")
    status = _mapping_or_empty(obj.get("status"), f"{what}: status")
    optional_strings = {}
    for field, value in (("spec.nodeName", spec.get("nodeName")), ("spec.runtimeClassName", spec.get("runtimeClassName")),
                         ("status.phase", status.get("phase"))):
        if value is not None and not isinstance(value, str):
            raise RuntimeGateError(f"{what}: {field} must be a string, not {_yaml_type(value)}")
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
        raise RuntimeGateError(f"{what} must be a list, not a {_yaml_type(containers)}")
    normalised = []
    for number, container in enumerate(containers, start=1):
        if not isinstance(container, dict):
            raise RuntimeGateError(f"{what} item {number} is a {_yaml_type(container)}, not a mapping")
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


def _normalise_located(located_runtimeclasses, located_nodes, located_pods, located_events, source_name):
    pods = _normalise_unique(located_pods, normalise_pod, "Pod", source_name)
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
            raise RuntimeGateError(f"{_where(source_name, location)}: {err}") from None
        name = f"{normalised['namespace']}/{normalised['name']}" if "namespace" in normalised else normalised["name"]
        if name in by_name:
            earlier = f" (also in {where_seen[name]})" if where_seen[name] else ""
            raise RuntimeGateError(f"{_where(source_name, location)}: {kind} '{cut_text(name)}' is defined twice{earlier}")
        by_name[name] = normalised
        where_seen[name] = location
    return [by_name[name] for name in sorted(by_name)]


def _objects_in_document(document, location, source_name):
    """Yield ``(location, object)``; a List's items inherit kind/apiVersion from a typed list."""
    if not isinstance(document, dict):
        raise RuntimeGateError(
            f"{_where(source_name, location)} is a {_yaml_type(document)}, not a mapping "
            "(a Kubernetes object or List)"
        )
    kind = document.get("kind")
    if not isinstance(kind, str) or not kind:
        raise RuntimeGateError(f"{_where(source_name, location)} has no 'kind'; it is not a Kubernetes object")
    if not kind.endswith("List") or "items" not in document:
        yield location, document
        return
    items = document.get("items") or []
    if not isinstance(items, list):
        raise RuntimeGateError(f"{_where(source_name, location)}: {cut_text(kind)} 'items' is not a list")
    item_kind = None if kind == "List" else kind[: -len("List")]
    for item_number, item in enumerate(items, start=1):
        item_location = f"{location}, item {item_number}"
        if not isinstance(item, dict):
            raise RuntimeGateError(f"{_where(source_name, item_location)} is a {_yaml_type(item)}, not a mapping")
        if item_kind and "kind" not in item:
            item = {**item, "kind": item_kind, "apiVersion": document.get("apiVersion")}
        if not isinstance(item.get("kind"), str):
            raise RuntimeGateError(f"{_where(source_name, item_location)} has no 'kind'")
        yield item_location, item


def _require_api_version(obj, expected, location, source_name):
    api_version = obj.get("apiVersion")
    if api_version not in expected:
        name = (obj.get("metadata") or {}).get("name") if isinstance(obj.get("metadata"), dict) else None
        name = name if isinstance(name, str) else None
        label = f"{cut_text(obj['kind'])} '{cut_text(name)}'" if name else f"a {cut_text(obj['kind'])}"
        readable = " or ".join(repr(version) for version in expected)
        raise RuntimeGateError(
            f"{_where(source_name, location)}: {label} has apiVersion {shown_value(api_version)}; only {readable} is "
            "read (re-export it with kubectl get, which prints the served version)"
        )


def _object_name(obj, kind):
    if not isinstance(obj, dict):
        raise RuntimeGateError(f"a {kind} is a {_yaml_type(obj)}, not a mapping")
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if not isinstance(name, str) or not name:
        raise RuntimeGateError(f"a {kind} has no metadata.name")
    return name


def _mapping_or_empty(value, what):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RuntimeGateError(f"{what} must be a mapping, not a {_yaml_type(value)}")
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


def _where(source_name, location):
    return f"{source_name} {location}" if location else source_name


def _yaml_type(value):
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    return type(value).__name__


def _yaml_error_position(err):
    mark = getattr(err, "problem_mark", None)
    # PyYAML's problem text can quote the input (an anchor, a tag): keep it short like every other value shown.
    problem = cut_text(getattr(err, "problem", None) or str(err), 300)
    if mark is None:
        return f": {problem}"
    return f" at line {mark.line + 1}, column {mark.column + 1}: {problem}"
