# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Kubernetes objects from a YAML file: what ``kubectl get runtimeclass,node,pod,event -A -o yaml`` prints.

Controller side. Every document goes through the normalisers of ``_k8s/objects.py``, so a file and the API give the
core one shape. Anything that cannot describe a real cluster raises ``RuntimeGateError`` with one sentence naming the
file and the problem.
"""

import contextlib
import gc
import os
import re
import traceback

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError, cut_text, shown_value
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._strict_json import StrictJsonError, loads_strict
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.objects import (
    EVENT_API_VERSIONS,
    NODE_API_VERSION,
    POD_API_VERSION,
    RUNTIMECLASS_API_VERSION,
    normalise_located,
    where,
    yaml_type,
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

    ``text`` is either what ``kubectl get runtimeclass,node,pod,event -A -o yaml`` (or ``-o json``) prints (a ``List``,
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
        with _cyclic_gc_paused():
            documents = _json_documents(text)
            if documents is None:
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
    return normalise_located(located["RuntimeClass"], located["Node"], located["Pod"], located["Event"], source_name)


@contextlib.contextmanager
def _cyclic_gc_paused():
    """Python's cycle collector paused while the readers build the objects, then restored.

    Reading builds tens of thousands of dicts, lists and YAML nodes that all stay alive, and the collector runs again and
    again over the growing heap: two thirds of the time for 2,000 Pods (benchmarks/README.md). Nothing read forms a
    cycle, and reference counting still frees everything the readers drop; the collector runs normally again afterwards.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


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
    may_hold_alias = "*" in text
    documents = []
    try:
        while loader.check_node():
            root = loader.get_node()
            # An alias is written `*name`: text without a `*` has none, and skips the walk over every node.
            if may_hold_alias and _first_shared_node(root) is not None:
                raise RuntimeGateError(f"{source_name} uses a YAML alias ({_first_alias(text)}): aliases are refused, "
                                       "since kubectl never writes them and a few hundred bytes of them can expand "
                                       "into gigabytes; write the values out")
            document = loader.construct_document(root)
            if document is not None:
                documents.append(document)
    finally:
        loader.dispose()
    return documents


# A UTF-16 surrogate written as an escape: kubectl never writes one (Go's encoder writes UTF-8), JSON would read a lone
# one into a string nothing can encode, and the YAML reader refuses it with its position.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _json_documents(text):
    """``[document]`` for text that is one plain JSON value (``kubectl get … -o json``), else None.

    JSON is YAML, so both readers give the same objects; the JSON one is many times faster on a large export and has no
    aliases. Anything the YAML reader could read differently or refuses (a key given twice, NaN, a surrogate escape,
    nesting too deep for the JSON reader, text that is not JSON at all) is left to it.
    """
    if not text.lstrip().startswith("{") or _SURROGATE_ESCAPE.search(text):
        return None
    try:
        return [loads_strict(text)]
    except StrictJsonError:  # a key given twice, NaN, nesting too deep, not JSON: the YAML reader says what and where
        return None


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
_STR_TAG = "tag:yaml.org,2002:str"
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"


class _ManifestLoader(_YAML_LOADER):
    """PyYAML's safe loader (libyaml's when there), refusing a key given twice in one mapping.

    What kubectl writes (strings, mappings, sequences) is built directly from the node graph, and a plain scalar's tag
    is looked up once per distinct value: PyYAML's generic constructor and resolver took two thirds of the time a big
    export takes to read (benchmarks/README.md). Every other node (numbers, booleans, null, timestamps, merge keys, any
    explicit tag) is PyYAML's to build, so what is read and what is refused stay PyYAML's.
    """

    def __init__(self, stream):
        super().__init__(stream)
        self._plain_scalar_tags = {}

    def resolve(self, kind, value, implicit):
        # A plain scalar's tag depends on its text alone while no path resolver is registered (SafeLoader has none).
        if kind is not yaml.ScalarNode or not implicit[0] or self.yaml_path_resolvers:
            return super().resolve(kind, value, implicit)
        tag = self._plain_scalar_tags.get(value)
        if tag is None:
            tag = self._plain_scalar_tags[value] = super().resolve(kind, value, implicit)
        return tag

    def construct_document(self, node):
        try:
            document = self._construct_plain(node)
        except RecursionError:
            # Nested deeper than Python's stack: PyYAML's constructor builds it without recursion.
            document = None
            deep = True
        else:
            deep = False
        # What PyYAML's construct_document resets after a document, for the nodes its constructors built.
        self.constructed_objects = {}
        self.recursive_objects = {}
        self.deep_construct = False
        return super().construct_document(node) if deep else document

    def _construct_plain(self, node):
        """``node`` as Python data: strings, mappings and sequences here, everything else by PyYAML's constructors.

        Aliases were refused before (``_first_shared_node``), so every node is reached once and nothing is shared."""
        tag = node.tag
        if tag == _STR_TAG and isinstance(node, yaml.ScalarNode):
            return node.value
        if tag == _SEQ_TAG and isinstance(node, yaml.SequenceNode):
            return [self._construct_plain(item) for item in node.value]
        if tag == _MAP_TAG and isinstance(node, yaml.MappingNode):
            mapping = {}
            for key_node, value_node in node.value:
                if key_node.tag == _MERGE_TAG:
                    return self.construct_object(node, deep=True)
                key = self._construct_plain(key_node)
                if not isinstance(key, str):
                    try:
                        hash(key)
                    except TypeError:
                        return self.construct_object(node, deep=True)  # PyYAML refuses it, with its own message
                mapping[key] = self._construct_plain(value_node)
            if len(mapping) < len(node.value):
                self._refuse_duplicate_key(node)
            return mapping
        return self.construct_object(node, deep=True)

    def construct_mapping(self, node, deep=False):
        if not isinstance(node, yaml.MappingNode) or _has_merge_key(node):
            # Merged keys may be overridden: only the mapping's own keys are searched, before the merge flattens them.
            self._refuse_duplicate_key(node)
            return super().construct_mapping(node, deep=deep)
        mapping = super().construct_mapping(node, deep=deep)
        # Without merge keys, a mapping built with fewer keys than the node holds had a key given twice; only then is
        # the node searched for it (searching every mapping costs a quarter of the time a big file takes to read).
        if len(mapping) < len(node.value):
            self._refuse_duplicate_key(node)
        return mapping

    def _refuse_duplicate_key(self, node):
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


def _has_merge_key(node):
    return any(key_node.tag == _MERGE_TAG for key_node, _value_node in node.value)


def _objects_in_document(document, location, source_name):
    """Yield ``(location, object)``; a List's items inherit kind/apiVersion from a typed list."""
    if not isinstance(document, dict):
        raise RuntimeGateError(
            f"{where(source_name, location)} is a {yaml_type(document)}, not a mapping "
            "(a Kubernetes object or List)"
        )
    kind = document.get("kind")
    if not isinstance(kind, str) or not kind:
        raise RuntimeGateError(f"{where(source_name, location)} has no 'kind'; it is not a Kubernetes object")
    if not kind.endswith("List") or "items" not in document:
        yield location, document
        return
    items = document.get("items") or []
    if not isinstance(items, list):
        raise RuntimeGateError(f"{where(source_name, location)}: {cut_text(kind)} 'items' is not a list")
    item_kind = None if kind == "List" else kind[: -len("List")]
    for item_number, item in enumerate(items, start=1):
        item_location = f"{location}, item {item_number}"
        if not isinstance(item, dict):
            raise RuntimeGateError(f"{where(source_name, item_location)} is a {yaml_type(item)}, not a mapping")
        if item_kind and "kind" not in item:
            item = {**item, "kind": item_kind, "apiVersion": document.get("apiVersion")}
        if not isinstance(item.get("kind"), str):
            raise RuntimeGateError(f"{where(source_name, item_location)} has no 'kind'")
        yield item_location, item


def _require_api_version(obj, expected, location, source_name):
    api_version = obj.get("apiVersion")
    if api_version not in expected:
        name = (obj.get("metadata") or {}).get("name") if isinstance(obj.get("metadata"), dict) else None
        name = name if isinstance(name, str) else None
        label = f"{cut_text(obj['kind'])} '{cut_text(name)}'" if name else f"a {cut_text(obj['kind'])}"
        readable = " or ".join(repr(version) for version in expected)
        raise RuntimeGateError(
            f"{where(source_name, location)}: {label} has apiVersion {shown_value(api_version)}; only {readable} is "
            "read (re-export it with kubectl get, which prints the served version)"
        )


def _yaml_error_position(err):
    mark = getattr(err, "problem_mark", None)
    # PyYAML's problem text can quote the input (an anchor, a tag): keep it short like every other value shown.
    problem = cut_text(getattr(err, "problem", None) or str(err), 300)
    if mark is None:
        return f": {problem}"
    return f" at line {mark.line + 1}, column {mark.column + 1}: {problem}"
