"""RuntimeClasses and Nodes as plain dicts, from a manifest file or from raw API list items.

Both sources go through the same normalisers, so the rest of the core sees one shape:

- RuntimeClass: ``{"name", "handler", "overhead_pod_fixed", "node_selector", "tolerations"}``
- Node: ``{"name", "labels", "allocatable", "runtime_handlers"}``

Input is the camelCase JSON/YAML shape the API server speaks (``scheduling.nodeSelector``,
``overhead.podFixed``, ``status.runtimeHandlers``). Anything that cannot describe a real cluster
raises ``RuntimeGateError`` with one sentence naming the source and the problem.
"""

import os
import traceback

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._errors import RuntimeGateError

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
    """Turn YAML text into ``{"runtimeclasses": [...], "nodes": [...]}``, each sorted by name.

    ``text`` is either what ``kubectl get runtimeclass,node -o yaml`` prints (a ``List``, also
    ``RuntimeClassList``/``NodeList``) or multi-document manifests, or a mix. Objects of other kinds
    (ConfigMaps, Pods, ...) are skipped without a word, so a whole cluster dump can be passed.
    ``source_name`` is the subject of every error message, e.g. ``"manifest file '/x.yaml'"``.

    Refused, each with one message:

    - text with no YAML document at all, and text whose documents hold neither a RuntimeClass nor
      a Node: pointing at the wrong file must not read as "a cluster without requirements". A file
      with Nodes and no RuntimeClass is accepted (a cluster may have none, e.g. GPU Operator in
      NRI-plugin mode deletes them).
    - malformed YAML (with line and column), a document that is not a mapping or has no ``kind``.
    - a RuntimeClass whose apiVersion is not ``node.k8s.io/v1``: v1beta1 was removed in
      Kubernetes 1.25 and v1alpha1 had another shape, so such a file describes no cluster we check.
    - anything ``normalise_runtimeclass``/``normalise_node`` refuse, and duplicate names.
    """
    if not HAS_YAML:
        raise RuntimeGateError(f"reading {source_name} needs the Python library PyYAML (pip install PyYAML)")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        documents = [doc for doc in yaml.load_all(text, Loader=loader) if doc is not None]
    except yaml.YAMLError as err:
        raise RuntimeGateError(f"{source_name} is not valid YAML{_yaml_error_position(err)}") from None
    if not documents:
        raise RuntimeGateError(
            f"{source_name} is empty: it holds no Kubernetes objects, so it cannot stand for a "
            "cluster (expected the output of: kubectl get runtimeclass,node -o yaml)"
        )
    located_runtimeclasses = []
    located_nodes = []
    for doc_number, document in enumerate(documents, start=1):
        for location, obj in _objects_in_document(document, f"document {doc_number}", source_name):
            kind = obj.get("kind")
            if kind == "RuntimeClass":
                _require_api_version(obj, RUNTIMECLASS_API_VERSION, location, source_name)
                located_runtimeclasses.append((location, obj))
            elif kind == "Node":
                _require_api_version(obj, NODE_API_VERSION, location, source_name)
                located_nodes.append((location, obj))
    if not located_runtimeclasses and not located_nodes:
        raise RuntimeGateError(
            f"{source_name} holds no RuntimeClass and no Node object (expected the output of: "
            "kubectl get runtimeclass,node -o yaml)"
        )
    return _normalise_located(located_runtimeclasses, located_nodes, source_name)


def normalise_cluster_objects(runtimeclass_objs, node_objs, source_name):
    """Normalise raw API list items (camelCase dicts) into the same shape as ``parse_manifest_text``.

    List items from the API carry no ``kind``/``apiVersion``; the list they came from says what they are.
    """
    return _normalise_located(
        [(None, obj) for obj in runtimeclass_objs], [(None, obj) for obj in node_objs], source_name
    )


def normalise_runtimeclass(obj):
    """One RuntimeClass (camelCase dict) → ``{"name", "handler", "overhead_pod_fixed", "node_selector", "tolerations"}``.

    ``node_selector`` is None when ``scheduling.nodeSelector`` is absent or empty: the class then
    claims every node (``scheduling: nil`` means "supported by all nodes", node/v1 types.go).
    ``overhead_pod_fixed`` is None without ``overhead.podFixed``; quantities become strings
    (YAML may read ``cpu: 1`` as a number; the API server accepts both). Label values must already
    be strings: the API server rejects any other type, so a number or boolean is an error here.
    """
    name = _object_name(obj, "RuntimeClass")
    what = f"RuntimeClass '{name}'"
    handler = obj.get("handler")
    if handler is None:
        raise RuntimeGateError(f"{what} has no 'handler' (required in {RUNTIMECLASS_API_VERSION})")
    if not isinstance(handler, str):
        raise RuntimeGateError(
            f"{what} has a handler of type {type(handler).__name__} ({handler!r}); it must be a string"
        )
    if not handler:
        raise RuntimeGateError(f"{what} has an empty handler")
    overhead = _mapping_or_empty(obj.get("overhead"), f"{what}: overhead")
    scheduling = _mapping_or_empty(obj.get("scheduling"), f"{what}: scheduling")
    tolerations = scheduling.get("tolerations") or []
    if not isinstance(tolerations, list) or not all(isinstance(item, dict) for item in tolerations):
        raise RuntimeGateError(f"{what}: scheduling.tolerations must be a list of mappings")
    return {
        "name": name,
        "handler": handler,
        "overhead_pod_fixed": _quantities(overhead.get("podFixed"), f"{what}: overhead.podFixed") or None,
        "node_selector": _string_map(scheduling.get("nodeSelector"), f"{what}: scheduling.nodeSelector")
        or None,
        "tolerations": [dict(toleration) for toleration in tolerations],
    }


def normalise_node(obj):
    """One Node (camelCase dict) → ``{"name", "labels", "allocatable", "runtime_handlers"}``.

    ``runtime_handlers`` is ``status.runtimeHandlers`` as ``[{"name": str, "features": dict}]``;
    ``name`` ``""`` is the runtime's default handler (containerd and CRI-O list it besides its named
    entry). An EMPTY list means UNKNOWN, not "no handlers": the field is absent on containerd 1.7,
    on kubelets before 1.30, and when the RecursiveReadOnlyMounts and UserNamespacesSupport gates
    are both off. Callers must then fall back to node-side evidence.
    """
    name = _object_name(obj, "Node")
    what = f"Node '{name}'"
    metadata = obj.get("metadata") or {}
    status = _mapping_or_empty(obj.get("status"), f"{what}: status")
    handlers = status.get("runtimeHandlers") or []
    if not isinstance(handlers, list):
        raise RuntimeGateError(f"{what}: status.runtimeHandlers must be a list")
    runtime_handlers = []
    for handler in handlers:
        if not isinstance(handler, dict):
            raise RuntimeGateError(f"{what}: status.runtimeHandlers holds a non-mapping entry {handler!r}")
        handler_name = handler.get("name", "")
        if not isinstance(handler_name, str):
            raise RuntimeGateError(f"{what}: status.runtimeHandlers has a non-string name {handler_name!r}")
        features = _mapping_or_empty(handler.get("features"), f"{what}: runtime handler '{handler_name}' features")
        runtime_handlers.append({"name": handler_name, "features": dict(features)})
    return {
        "name": name,
        "labels": _string_map(metadata.get("labels"), f"{what}: metadata.labels"),
        "allocatable": _quantities(status.get("allocatable"), f"{what}: status.allocatable"),
        "runtime_handlers": runtime_handlers,
    }


def _normalise_located(located_runtimeclasses, located_nodes, source_name):
    return {
        "runtimeclasses": _normalise_unique(located_runtimeclasses, normalise_runtimeclass, "RuntimeClass", source_name),
        "nodes": _normalise_unique(located_nodes, normalise_node, "Node", source_name),
    }


def _normalise_unique(located_objects, normalise, kind, source_name):
    by_name = {}
    where_seen = {}
    for location, obj in located_objects:
        try:
            normalised = normalise(obj)
        except RuntimeGateError as err:
            raise RuntimeGateError(f"{_where(source_name, location)}: {err}") from None
        name = normalised["name"]
        if name in by_name:
            earlier = f" (also in {where_seen[name]})" if where_seen[name] else ""
            raise RuntimeGateError(f"{_where(source_name, location)}: {kind} '{name}' is defined twice{earlier}")
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
        raise RuntimeGateError(f"{_where(source_name, location)}: {kind} 'items' is not a list")
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
    if api_version != expected:
        name = (obj.get("metadata") or {}).get("name") if isinstance(obj.get("metadata"), dict) else None
        label = f"{obj['kind']} '{name}'" if name else f"a {obj['kind']}"
        raise RuntimeGateError(
            f"{_where(source_name, location)}: {label} has apiVersion {api_version!r}; only {expected!r} is "
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
                f"{what} has {key!r}: {item!r}; keys and values must be strings (quote them in YAML)"
            )
    return dict(mapping)


def _quantities(value, what):
    mapping = _mapping_or_empty(value, what)
    quantities = {}
    for resource, amount in mapping.items():
        if isinstance(amount, bool) or not isinstance(amount, (str, int, float)):
            raise RuntimeGateError(f"{what} has {resource!r}: {amount!r}; a quantity must be a string or number")
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
    problem = getattr(err, "problem", None) or str(err)
    if mark is None:
        return f": {problem}"
    return f" at line {mark.line + 1}, column {mark.column + 1}: {problem}"
