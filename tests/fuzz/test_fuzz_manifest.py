"""Fuzzing the manifest reader: ``parse_manifest_text`` (what ``read_manifest_file`` calls after decoding).

Generated clusters written as a ``List``, a typed ``RuntimeClassList``/``NodeList`` pair or multi-document
YAML, with objects of other kinds mixed in, and with one defect at a time: a RuntimeClass without
``handler``, a duplicate name, a wrong apiVersion, a handler or label of the wrong type. And YAML aliases of every
class (billion laughs of any depth and width, a value that holds itself, a merge key, an aliased scalar, a whole
object repeated) put in every place a value is read from. Properties:

- the only exception is RuntimeGateError, and its message names the source;
- a clean cluster reads back exactly (names, handlers, selectors, labels), whatever the layout;
- each defect is refused with the message that names it;
- every alias is refused as an alias, before anything is expanded, in a short message;
- what is returned is JSON (a module returns it to Ansible).
"""
import cProfile
import copy
import json
import tracemalloc

from hypothesis import assume, given
from hypothesis import strategies as st

import yaml
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s import manifest
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.manifest import parse_manifest_text
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError
from fuzz.fuzzing import fuzz_settings

SOURCE = "manifest file 'fuzz.yaml'"
# Object names are DNS-1123 subdomains and handlers DNS-1123 labels, as the API server requires (others are refused:
# tests/fuzz/test_fuzz_names.py); YAML may still read some of them as other types ("1", "0x10").
NAMES = st.one_of(st.from_regex(r"[a-z0-9]([-a-z0-9]{0,10}[a-z0-9])?(\.[a-z0-9]{1,3})?", fullmatch=True),
                  st.sampled_from(["1", "0x10", "null", "true"]))
HANDLERS = st.one_of(st.from_regex(r"[a-z0-9]([-a-z0-9]{0,10}[a-z0-9])?", fullmatch=True), st.sampled_from(["yes", "1"]))
# Label values are strings to the API server, but may hold anything a YAML string can.
ODD_STRINGS = st.one_of(NAMES, st.text(min_size=1, max_size=12), st.sampled_from(["yes", "true", "1", "null", "~", "0x10", "a: b", "- x"]))
LABELS = st.dictionaries(st.sampled_from(["nvidia.com/gpu.present", "kubernetes.io/os", "pool", "odd key/ä"]), ODD_STRINGS, max_size=3)
OTHER_KINDS = [
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"handler": "nvidia"}},
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}, "spec": {"runtimeClassName": "x"}},
    {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClassBinding", "metadata": {"name": "not-a-kind"}},
]
DEFECTS = {
    "missing handler": "has no 'handler'",
    "duplicate runtimeclass": "is defined twice",
    "duplicate node": "is defined twice",
    "v1beta1 runtimeclass": "has apiVersion 'node.k8s.io/v1beta1'",
    "handler not a string": "must be a string",
    "label not a string": "keys and values must be strings",
    "toleration holds itself": "uses a YAML alias",
}


@st.composite
def clusters(draw):
    runtimeclasses = []
    for name in draw(st.lists(NAMES, max_size=4, unique=True)):
        obj = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name}, "handler": draw(HANDLERS)}
        selector = draw(LABELS)
        if selector:
            obj["scheduling"] = {"nodeSelector": selector}
        runtimeclasses.append(obj)
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": draw(LABELS)}}
             for name in draw(st.lists(NAMES, max_size=4, unique=True))]
    others = [OTHER_KINDS[index] for index in draw(st.lists(st.sampled_from(range(len(OTHER_KINDS))), max_size=2, unique=True))]
    return runtimeclasses, nodes, others


def apply_defect(defect, runtimeclasses, nodes):
    """Returns False when the cluster has nothing the defect could be put in."""
    if defect in ("missing handler", "duplicate runtimeclass", "v1beta1 runtimeclass", "handler not a string",
                  "toleration holds itself") and not runtimeclasses:
        return False
    if defect in ("duplicate node", "label not a string") and not nodes:
        return False
    if defect == "missing handler":
        del runtimeclasses[-1]["handler"]
    elif defect == "duplicate runtimeclass":
        # Copies, not shared dicts: yaml would write a shared dict as an alias, refused before any duplicate is seen.
        runtimeclasses.append({**copy.deepcopy(runtimeclasses[0]), "handler": "other"})
    elif defect == "duplicate node":
        nodes.append(copy.deepcopy(nodes[-1]))
    elif defect == "v1beta1 runtimeclass":
        runtimeclasses[0]["apiVersion"] = "node.k8s.io/v1beta1"
    elif defect == "handler not a string":
        runtimeclasses[-1]["handler"] = ["nvidia"]
    elif defect == "label not a string":
        nodes[0]["metadata"]["labels"] = {"nvidia.com/gpu.count": 8}
    elif defect == "toleration holds itself":
        toleration = {"key": "gpu", "operator": "Exists"}
        toleration["effect"] = toleration  # a YAML alias can make an object contain itself
        runtimeclasses[0]["scheduling"] = {"tolerations": [toleration]}
    return True


DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def render(layout, runtimeclasses, nodes, others):
    objects = runtimeclasses + nodes + others
    if layout == "list":
        return yaml.dump({"apiVersion": "v1", "kind": "List", "items": objects, "metadata": {"resourceVersion": ""}}, Dumper=DUMPER)
    if layout == "typed lists":
        return yaml.dump_all([
            {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClassList", "items": [_untyped(obj) for obj in runtimeclasses]},
            {"apiVersion": "v1", "kind": "NodeList", "items": [_untyped(obj) for obj in nodes]},
        ] + others, Dumper=DUMPER)
    return yaml.dump_all(objects, explicit_start=True, Dumper=DUMPER)


def _untyped(obj):
    """List items as the API server sends them: no kind, no apiVersion (the list's own say what they are)."""
    if obj.get("apiVersion") != "node.k8s.io/v1" and obj["kind"] == "RuntimeClass":
        return obj  # keeps a wrong apiVersion visible
    return {key: value for key, value in obj.items() if key not in ("kind", "apiVersion")}


def read(text):
    try:
        result = parse_manifest_text(text, SOURCE)
    except RuntimeGateError as error:
        assert str(error).startswith(SOURCE), str(error)
        return error
    json.dumps(result)
    return result


LAYOUTS = st.sampled_from(["list", "typed lists", "documents"])


@fuzz_settings(1200)
@given(clusters(), LAYOUTS)
def test_clean_clusters_read_back_exactly_in_every_layout(cluster, layout):
    runtimeclasses, nodes, others = cluster
    result = read(render(layout, runtimeclasses, nodes, others))
    if not runtimeclasses and not nodes and (layout == "typed lists" or (layout == "list" and not others)):
        # An empty RuntimeClassList/NodeList, or the empty List kubectl prints: a cluster without RuntimeClasses.
        assert not isinstance(result, RuntimeGateError), result
        assert (result["runtimeclasses"], result["nodes"]) == ([], []), result
        return
    if not runtimeclasses and not nodes:
        # Nothing at all reads as "empty"; other kinds only, as "no RuntimeClass and no Node": refused either way.
        assert isinstance(result, RuntimeGateError), result
        assert "no RuntimeClass and no Node" in str(result) or "is empty" in str(result), str(result)
        return
    assert not isinstance(result, RuntimeGateError), result
    assert [(rc["name"], rc["handler"], rc["node_selector"]) for rc in result["runtimeclasses"]] == sorted(
        (obj["metadata"]["name"], obj["handler"], obj.get("scheduling", {}).get("nodeSelector")) for obj in runtimeclasses)
    assert [(node["name"], node["labels"]) for node in result["nodes"]] == sorted(
        (obj["metadata"]["name"], obj["metadata"]["labels"]) for obj in nodes)


@fuzz_settings(1200)
@given(clusters(), LAYOUTS, st.sampled_from(sorted(DEFECTS)))
def test_each_defect_is_refused_with_a_message_naming_it(cluster, layout, defect):
    runtimeclasses, nodes, others = cluster
    assume(apply_defect(defect, runtimeclasses, nodes))
    # yaml's dumper writes a self-reference as an anchor and an alias: a file a user could write.
    result = read(render(layout, runtimeclasses, nodes, others))
    assert isinstance(result, RuntimeGateError), (defect, result)
    assert DEFECTS[defect] in str(result), str(result)


@fuzz_settings(800)
@given(st.one_of(st.text(max_size=200),
                 st.text(alphabet="kind: List\n items-[]{}&*!?|>'\"#RuntimeClassNode.handler/v1", max_size=200)))
def test_arbitrary_text_raises_only_runtime_gate_error(text):
    read(text)


def test_empty_and_comment_only_files_are_refused_as_empty():
    for text in ("", "\n\n", "# nothing here\n", "---\n---\n"):
        result = read(text)
        assert isinstance(result, RuntimeGateError) and "is empty" in str(result), (text, result)


# Where an alias can be put: one document per place a value is read from. {anchors} are lines under
# metadata.annotations (read by nothing), {value} is the aliased value.
ALIAS_PLACES = {
    "handler": "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata:\n  name: rc\n  annotations:\n{anchors}"
               "handler: {value}\n",
    "nodeSelector label": "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata:\n  name: rc\n  annotations:\n"
                          "{anchors}handler: runc\nscheduling:\n  nodeSelector:\n    pool: {value}\n",
    "overhead quantity": "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata:\n  name: rc\n  annotations:\n"
                         "{anchors}handler: runc\noverhead:\n  podFixed:\n    cpu: {value}\n",
    "node label": "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  annotations:\n{anchors}  labels:\n"
                  "    pool: {value}\n",
    "node runtimeHandlers features": "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  annotations:\n{anchors}"
                                     "status:\n  runtimeHandlers:\n  - name: nvidia\n    features:\n      x: {value}\n",
    "pod namespace": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n{anchors}  namespace: {value}\n"
                     "spec:\n  containers: []\n",
    "event message": "apiVersion: v1\nkind: Event\nmetadata:\n  name: e\n  annotations:\n{anchors}"
                     "reason: FailedCreatePodSandBox\ninvolvedObject: {{kind: Pod, name: p, namespace: default}}\n"
                     "message: {value}\n",
}


@st.composite
def aliases(draw):
    """``(anchors, value)``: annotation lines defining anchors, and a value that uses one of them (or itself)."""
    alias_class = draw(st.sampled_from(["billion laughs", "holds itself", "merge key", "aliased scalar"]))
    if alias_class == "billion laughs":
        levels, width = draw(st.integers(1, 8)), draw(st.integers(2, 10))
        lines = [f"    l0: &l0 [{', '.join(['lol'] * width)}]\n"]
        lines += [f"    l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * width)}]\n" for level in range(1, levels)]
        return "".join(lines), f"*l{levels - 1}"
    if alias_class == "holds itself":
        return "    x: y\n", draw(st.sampled_from(["&s [*s]", "&s {a: *s}", "&s [a, [b, *s]]"]))
    if alias_class == "merge key":
        return "    m: &m {a: b}\n", "{<<: *m}"
    return "    s: &s nvidia\n", "*s"


@fuzz_settings(600)
@given(clusters(), st.sampled_from(sorted(ALIAS_PLACES)), aliases(), st.booleans())
def test_every_alias_class_in_every_place_is_refused_short_and_unexpanded(cluster, place, alias, alias_first):
    runtimeclasses, nodes, others = cluster
    anchors, value = alias
    bomb = "---\n" + ALIAS_PLACES[place].format(anchors=anchors, value=value)
    clean = render("documents", runtimeclasses, nodes, others)
    text = bomb + clean if alias_first else clean + bomb
    # Expanded, the deepest billion laughs holds 10**8 strings: memory tells, where wall time would measure the load.
    tracemalloc.start()
    try:
        result = read(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert isinstance(result, RuntimeGateError), (place, alias, result)
    assert f"{SOURCE} uses a YAML alias (*" in str(result) and len(str(result)) < 300, str(result)
    assert peak < 8 * 2**20 + 200 * len(text), f"the alias was expanded: {peak} bytes at peak"


def test_a_whole_object_repeated_through_an_alias_is_refused():
    text = "- &rc {apiVersion: node.k8s.io/v1, kind: RuntimeClass, metadata: {name: a}, handler: a}\n- *rc\n"
    result = read(text)
    assert isinstance(result, RuntimeGateError) and "uses a YAML alias (*rc at line 2, column 3)" in str(result), result


# The reader builds strings, mappings and sequences itself and looks up a plain scalar's tag once per distinct text
# (manifest._ManifestLoader); PyYAML's own resolver and constructors, with the same duplicate-key refusal, are the
# reference. YAML texts of every node kind it may meet: every implicit scalar type, quoted and block scalars, explicit
# tags (standard, unknown, on collections), merge keys, keys given twice, unhashable and non-string keys, nesting.
SCALAR_TEXTS = st.one_of(
    st.sampled_from(["1", "-0x1F", "0o17", "1_000", "190:20:30", "3.5", ".nan", "-.inf", "1e3", "true", "yes", "off",
                     "null", "~", "", "2001-12-14", "2001-12-14t21:59:43.10-05:00", "=", "<<", "'quoted'", '"dq \\u00e9"',
                     "|\n  block\n", ">-\n  folded\n", "!!str 1", "!!int '7'", "!!float 2", "!!bool yes", "!!null ''",
                     "!!binary aGVsbG8=", "!!timestamp 2001-12-14", "!unknown x", "!!python/name:os.system x", "500m"]),
    st.from_regex(r"[a-zA-Z0-9./_-]{1,8}", fullmatch=True))


@st.composite
def yaml_values(draw, depth=0):
    kind = draw(st.sampled_from(["scalar", "scalar", "map", "seq", "flow map", "flow seq", "tagged"] if depth < 4 else ["scalar"]))
    if kind == "scalar":
        return draw(SCALAR_TEXTS)
    if kind == "tagged":
        return draw(st.sampled_from(["!!set {a, b}", "!!omap [a: 1]", "!!pairs [a: 1, a: 2]", "!!map {a: 1}",
                                     "!!seq [1]", "!custom {a: 1}", "!!str [1]"]))
    if kind in ("flow map", "flow seq"):
        items = draw(st.lists(st.sampled_from(["a", "b", "1", "true", "'x'", "[1]", "{c: d}", "<<: {m: 1}"]), max_size=4))
        if kind == "flow seq":
            return "[" + ", ".join(item.replace("<<: ", "") for item in items) + "]"
        keys = [item if ":" in item else f"{item}: v" for item in items]
        return "{" + ", ".join(keys) + "}"
    indent = "  " * (depth + 1)
    lines = []
    for _item in range(draw(st.integers(1, 4))):
        value = draw(yaml_values(depth + 1))
        if kind == "seq":
            lines.append(f"{indent}- {value.rstrip()}")
        else:
            key = draw(st.sampled_from(["a", "b", "<<", "1", "true", "null", "? [k]", "'q'", "x y"]))
            if key == "<<":
                value = draw(st.sampled_from(["{m: 1, a: 2}", "[{m: 1}, {n: 2}]", "x"]))
            lines.append(f"{indent}? [k]\n{indent}: {value}" if key == "? [k]" else f"{indent}{key}: {value}")
    return "\n" + "\n".join(lines)


class _ReferenceLoader(manifest._ManifestLoader):
    """The reader with PyYAML's own resolver and constructor put back."""

    def resolve(self, kind, value, implicit):
        return yaml.resolver.Resolver.resolve(self, kind, value, implicit)

    def construct_document(self, node):
        return yaml.constructor.BaseConstructor.construct_document(self, node)


def _documents_or_error(loader_class, text):
    original = manifest._ManifestLoader
    manifest._ManifestLoader = loader_class
    try:
        return manifest._load_documents(text, SOURCE)
    except (yaml.YAMLError, RuntimeGateError, ValueError) as error:
        return f"{type(error).__name__}: {error}"
    finally:
        manifest._ManifestLoader = original


@fuzz_settings(1500)
@given(st.lists(yaml_values(), min_size=1, max_size=3))
def test_the_reader_builds_what_pyyaml_builds_and_refuses_what_it_refuses(values):
    text = "---\n".join(f"doc: {value}\n" for value in values)
    built = _documents_or_error(manifest._ManifestLoader, text)
    reference = _documents_or_error(_ReferenceLoader, text)
    if isinstance(reference, str) or isinstance(built, str):
        # Both refuse. With two defects in one text each may name another first (PyYAML builds nested collections
        # breadth first), so only the kind of refusal is compared.
        assert isinstance(built, str) and isinstance(reference, str), (text, built, reference)
        assert built.partition(":")[0] == reference.partition(":")[0], (text, built, reference)
        return
    # NaN is not equal to itself: compare what each prints.
    assert repr(built) == repr(reference), text


def test_nesting_deeper_than_the_python_stack_is_built_as_pyyaml_builds_it():
    for depth in (50, 999):
        text = "a: " + "[" * depth + "x" + "]" * depth + "\n"
        for documents in (manifest._load_documents(text, SOURCE), _documents_or_error(_ReferenceLoader, text)):
            value, levels = documents[0]["a"], 0
            while isinstance(value, list):  # walked, not compared: == recurses as deep as the value
                assert len(value) == 1
                value, levels = value[0], levels + 1
            assert (levels, value) == (depth, "x")


def test_a_big_export_is_read_with_far_fewer_python_calls_than_pyyaml_makes():
    """The point of building plain nodes directly: counted, not timed (benchmarks/README.md times it)."""
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{index}", "namespace": "team", "labels": {"app": "x"}},
             "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}]},
             "status": {"phase": "Running"}} for index in range(200)]
    text = yaml.dump({"apiVersion": "v1", "kind": "List", "items": pods}, Dumper=DUMPER)
    calls = {}
    for label, loader_class in (("reader", manifest._ManifestLoader), ("reference", _ReferenceLoader)):
        profile = cProfile.Profile()
        profile.enable()
        documents = _documents_or_error(loader_class, text)
        profile.disable()
        calls[label] = sum(entry.callcount for entry in profile.getstats())
        assert documents[0]["items"][199]["metadata"]["name"] == "p199"
    assert calls["reader"] * 2 < calls["reference"], calls
