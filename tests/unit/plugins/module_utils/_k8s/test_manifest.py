"""Manifests that are small on disk but not in memory or in a message: YAML aliases, duplicate keys, long values.

A 600-byte "billion laughs" (each anchor nine aliases of the one before) is refused as an alias wherever it is
put, before anything is expanded; values of the wrong type are shown in messages cut to a few dozen characters;
a key given twice in one mapping is refused instead of the last one winning.
"""
import gc
import json

import pytest
import yaml

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.manifest import parse_manifest_text
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.objects import normalise_cluster_objects
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError

SOURCE = "manifest file 'bomb.yaml'"
# Seven levels of nine: 9**7 (4.8 million) "lol"s once expanded.
LAUGHS = "".join(
    f"    l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * 9) if level else ', '.join(['lol'] * 9)}]\n"
    for level in range(7))
ANCHORS = "metadata:\n  name: {name}\n  annotations:\n" + LAUGHS
BOMB = "*l6"
# One document per place a value is read from; {bomb} is where the expansion is put.
PLACES = {
    "handler": "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\n" + ANCHORS.format(name="rc") + "handler: {bomb}\n",
    "nodeSelector label": "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\n" + ANCHORS.format(name="rc")
                          + "handler: runc\nscheduling:\n  nodeSelector:\n    pool: {bomb}\n",
    "overhead quantity": "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\n" + ANCHORS.format(name="rc")
                         + "handler: runc\noverhead:\n  podFixed:\n    cpu: {bomb}\n",
    "node label": "apiVersion: v1\nkind: Node\n" + ANCHORS.format(name="gpu-1") + "  labels:\n    pool: {bomb}\n",
    "node runtimeHandlers features": "apiVersion: v1\nkind: Node\n" + ANCHORS.format(name="gpu-1")
                                     + "status:\n  runtimeHandlers:\n  - name: nvidia\n    features: {{laughs: {bomb}}}\n",
    "pod namespace": "apiVersion: v1\nkind: Pod\n" + ANCHORS.format(name="p") + "  namespace: {bomb}\n"
                     + "spec:\n  containers: []\n",
    "event message": "apiVersion: v1\nkind: Event\n" + ANCHORS.format(name="e")
                     + "reason: FailedCreatePodSandBox\ninvolvedObject: {{kind: Pod, name: p, namespace: default}}\n"
                       "message: {bomb}\n",
}
NODE = "---\napiVersion: v1\nkind: Node\nmetadata: {name: other}\n"


def refusal(text):
    with pytest.raises(RuntimeGateError) as raised:
        parse_manifest_text(text, SOURCE)
    return str(raised.value)


def test_the_bomb_is_small_on_disk():
    text = PLACES["handler"].format(bomb=BOMB)
    assert len(text.encode()) < 700


@pytest.mark.parametrize("place", sorted(PLACES))
def test_an_alias_bomb_is_refused_wherever_it_is_put(place):
    # The anchors alone (no alias used) are harmless: only a second use of a value is refused.
    message = refusal(PLACES[place].format(bomb=BOMB) + NODE)
    assert message.startswith(f"{SOURCE} uses a YAML alias (*l0 at line 7, column 14): "), message
    assert "aliases are refused" in message and len(message) < 300, message


@pytest.mark.parametrize("text,alias", [
    ("apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus:\n  runtimeHandlers:\n  - name: x\n    features: &f {a: *f}\n",
     "*f at line 7, column 22"),
    ("apiVersion: v1\nkind: Node\nmetadata: &m {name: n, labels: {a: b}}\nspec: {<<: *m}\n", "*m at line 4, column 12"),
    ("- &rc {apiVersion: node.k8s.io/v1, kind: RuntimeClass, metadata: {name: a}, handler: a}\n- *rc\n",
     "*rc at line 2, column 3"),
], ids=["self-reference", "merge-key", "whole-object"])
def test_self_references_merges_and_repeated_objects_are_refused_as_aliases(text, alias):
    message = refusal(text)
    assert message.startswith(f"{SOURCE} uses a YAML alias ({alias}): "), message


def test_an_anchor_that_is_never_used_is_fine():
    text = "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: a}\nhandler: &h nvidia\n"
    assert parse_manifest_text(text, SOURCE)["runtimeclasses"][0]["handler"] == "nvidia"


@pytest.mark.parametrize("text,message", [
    ("apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: a}\nhandler: runc\nhandler: nvidia\n",
     f"{SOURCE} is not valid YAML at line 5, column 1: the key 'handler' is given twice in one mapping "
     "(also at line 4); a reader would silently keep only one"),
    ("apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-1\n  labels: {pool: a, pool: b}\n",
     f"{SOURCE} is not valid YAML at line 5, column 21: the key 'pool' is given twice in one mapping "
     "(also at line 5); a reader would silently keep only one"),
])
def test_a_key_given_twice_is_refused_not_overwritten(text, message):
    assert refusal(text) == message


@pytest.mark.parametrize("labels,key", [
    ("{on: a, true: b}", "True"),  # two spellings of one YAML 1.1 boolean: one key once built
    ("{<<: {zone: x}, pool: a, pool: b}", "'pool'"),  # beside a merge key, the mapping's own keys are still searched
])
def test_keys_equal_once_built_are_refused_too(labels, key):
    message = refusal(f"apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-1\n  labels: {labels}\n")
    assert f"the key {key} is given twice in one mapping" in message, message


def test_a_key_a_merge_brings_may_be_overridden():
    text = "apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-1\n  labels: {<<: {pool: a, zone: x}, pool: b}\n"
    assert parse_manifest_text(text, SOURCE)["nodes"][0]["labels"] == {"pool": "b", "zone": "x"}


def test_a_star_in_a_value_is_not_an_alias():
    # Text with a `*` is walked for shared nodes; a quoted star shares none.
    text = "apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-1\n  labels: {glob: '*.d'}\n"
    assert parse_manifest_text(text, SOURCE)["nodes"][0]["labels"] == {"glob": "*.d"}


LONG_LIST = "[" + ", ".join(f"item-{number}" for number in range(2000)) + "]"


@pytest.mark.parametrize("text,start", [
    (f"apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {{name: a}}\nhandler: {LONG_LIST}\n",
     f"{SOURCE} document 1: RuntimeClass 'a' has a handler of type list (['item-0', 'item-1',"),
    (f"apiVersion: v1\nkind: Node\nmetadata: {{name: n, labels: {{pool: {LONG_LIST}}}}}\n",
     f"{SOURCE} document 1: Node 'n': metadata.labels has 'pool': ['item-0', 'item-1',"),
    (f"apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {{name: a}}\nhandler: a\n"
     f"overhead: {{podFixed: {{cpu: {LONG_LIST}}}}}\n",
     f"{SOURCE} document 1: RuntimeClass 'a': overhead.podFixed has 'cpu': ['item-0', 'item-1',"),
    (f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p, namespace: {LONG_LIST}}}\n" + NODE,
     f"{SOURCE} document 1: Pod 'p' has a non-string metadata.namespace ['item-0', 'item-1',"),
    (f"apiVersion: node.k8s.io/{'v' * 5000}\nkind: RuntimeClass\nmetadata: {{name: a}}\nhandler: a\n",
     f"{SOURCE} document 1: RuntimeClass 'a' has apiVersion 'node.k8s.io/vvvv"),
    (f"apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {{name: {'n' * 5000}}}\n",
     f"{SOURCE} document 1: a RuntimeClass: metadata.name 'nnnn"),
], ids=["handler", "label", "quantity", "namespace", "apiVersion", "name"])
def test_values_shown_in_messages_are_cut_short(text, start):
    message = refusal(text)
    assert message.startswith(start), message
    assert "…" in message and len(message) < 400, message


def test_api_items_with_huge_values_give_short_messages_too():
    huge_handler = {"metadata": {"name": "a"}, "handler": {"nested": ["x" * 100] * 1000}}
    with pytest.raises(RuntimeGateError) as raised:
        normalise_cluster_objects([huge_handler], [], "the API server https://x")
    assert len(str(raised.value)) < 300 and "…" in str(raised.value)


def test_the_same_document_without_aliases_reads_back():
    # What the bomb documents hold once the anchors are gone: read, and JSON as a module returns it.
    text = ("apiVersion: v1\nkind: Node\nmetadata: {name: gpu-1}\n"
            "status:\n  runtimeHandlers:\n  - name: nvidia\n    features: {laughs: [lol]}\n")
    nodes = json.loads(json.dumps(parse_manifest_text(text, SOURCE)))["nodes"]
    assert nodes[0]["runtime_handlers"] == [{"name": "nvidia", "features": {"laughs": ["lol"]}}]


KUBECTL_LIST = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": [
    {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "nvidia"}, "handler": "nvidia",
     "overhead": {"podFixed": {"cpu": "250m"}}, "scheduling": {"nodeSelector": {"gpu": "true"}}},
    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-1", "labels": {"gpu": "true"}},
     "status": {"allocatable": {"cpu": "4"}, "runtimeHandlers": [{"name": "nvidia", "features": {}}]}},
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train-0", "namespace": "ml"},
     "spec": {"nodeName": "gpu-1", "runtimeClassName": "nvidia", "containers": [{"name": "main", "resources": {
         "requests": {"cpu": "1", "memory": "1Gi"}}}]}, "status": {"phase": "Running"}},
]}


def test_kubectl_json_reads_as_its_yaml_does():
    from_yaml = parse_manifest_text(yaml.safe_dump(KUBECTL_LIST), SOURCE)
    from_json = parse_manifest_text(json.dumps(KUBECTL_LIST, indent=4), SOURCE)
    assert from_json == from_yaml and from_json["pods"][0]["runtime_class"] == "nvidia"


@pytest.mark.parametrize("text,expected", [
    # A key given twice: the YAML reader refuses it with its position.
    ('{"apiVersion": "v1", "kind": "Node",\n "metadata": {"name": "a", "name": "b"}}',
     f"{SOURCE} is not valid YAML at line 2, column 28: the key 'name' is given twice in one mapping"),
    # Not JSON (NaN): YAML reads it as the string it is to YAML.
    ('{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "labels": {"x": NaN}}}', None),
    # A lone surrogate escape: JSON would read it into a string nothing can encode; YAML refuses it.
    ('{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n\\ud800"}}',
     f"{SOURCE} is not valid YAML at line 1, column 63: found invalid Unicode character escape code"),
    # Not JSON at all past the brace: YAML's flow mapping reads it.
    ("{apiVersion: v1, kind: Node, metadata: {name: n, labels: {x: NaN}}}", None),
])
def test_json_the_json_reader_would_read_differently_is_left_to_yaml(text, expected):
    if expected:
        assert refusal(text).startswith(expected), refusal(text)
    else:
        assert parse_manifest_text(text, SOURCE)["nodes"][0]["labels"] == {"x": "NaN"}


def test_plain_json_never_reaches_the_yaml_reader(monkeypatch):
    from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s import manifest

    def no_yaml(_text, _source_name):
        raise AssertionError("read as YAML")
    monkeypatch.setattr(manifest, "_load_documents", no_yaml)
    assert parse_manifest_text(json.dumps(KUBECTL_LIST), SOURCE)["nodes"][0]["name"] == "gpu-1"
    with pytest.raises(AssertionError, match="read as YAML"):
        parse_manifest_text(yaml.safe_dump(KUBECTL_LIST), SOURCE)


@pytest.mark.parametrize("text", [yaml.safe_dump(KUBECTL_LIST), json.dumps(KUBECTL_LIST), "kind: [unclosed\n"])
def test_the_cycle_collector_is_paused_while_reading_and_restored_after(monkeypatch, text):
    """Reading a large export builds objects that all stay alive: the collector would rescan them again and again."""
    from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s import manifest

    seen = []
    for reader in ("_json_documents", "_load_documents"):
        def recording(*args, _read=getattr(manifest, reader)):
            seen.append(gc.isenabled())
            return _read(*args)
        monkeypatch.setattr(manifest, reader, recording)
    assert gc.isenabled()
    try:
        parse_manifest_text(text, SOURCE)
    except RuntimeGateError as refused:
        assert "is not valid YAML" in str(refused)
    assert seen and not any(seen)
    assert gc.isenabled()


def test_a_collector_paused_by_the_caller_stays_paused():
    gc.disable()
    try:
        parse_manifest_text(json.dumps(KUBECTL_LIST), SOURCE)
        assert not gc.isenabled()
    finally:
        gc.enable()
