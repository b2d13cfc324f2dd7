"""Fuzzing the dump parser and the verdict: ``facts_from_dump`` + ``judge``.

Generated ``containerd config dump`` documents (version 2 and 3/4 layouts, odd handler names, decoy
runtimes under the key the version ignores, disabled CRI, deep junk tables, wrong types), truncated real
dumps and arbitrary text. Properties:

- the only exception is RuntimeGateError (a message for the user), never another one;
- a node is never OK when the input lacks a required runtime (a RuntimeClass handler or the default);
- a well-formed dump is always judged, and exactly as the containerd rules say (reference model below);
- the verdict does not depend on the order of tables and keys.
"""
import tomllib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.containerd_config import facts_from_dump
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._verdict import judge_and_explain
from fuzz.fuzzing import fuzz_settings, toml_dumps
from support.containerd_daemons import releases
from support.containerd_trees import copy_tree, dump_node, scenarios
from support.paths import REPO_ROOT

CRI_V2 = "io.containerd.grpc.v1.cri"
CRI_V3 = "io.containerd.cri.v1.runtime"
KNOWN_HANDLERS = ["runc", "nvidia", "nvidia-cdi", "kata-qemu", "crun"]
# Names a RuntimeClass may carry that TOML must quote: dots, quotes, spaces, backslashes, unicode.
HANDLER_NAMES = st.one_of(st.sampled_from(KNOWN_HANDLERS), st.sampled_from(['a.b', 'x"y', "sp ace", "back\\slash", "ñvidia"]),
                          st.text(min_size=1, max_size=10))
SCALARS = st.one_of(st.booleans(), st.integers(-2**63, 2**63 - 1), st.text(max_size=20),
                    st.floats(allow_nan=False))
OPTIONS = st.dictionaries(st.sampled_from(["BinaryName", "SystemdCgroup", "Root", "ShimCgroup", "x.y"]), SCALARS, max_size=3)
RUNTIME = st.fixed_dictionaries({"runtime_type": st.sampled_from(["io.containerd.runc.v2", "io.containerd.kata.v2", ""])},
                                optional={"options": OPTIONS, "privileged_without_host_devices": st.booleans()})
DISABLED = st.lists(st.sampled_from([CRI_V2, CRI_V3, "cri", "io.containerd.snapshotter.v1.btrfs", "io.containerd.internal.v1.tracing"]),
                    max_size=2, unique=True)

# Wrong types where the parser expects a table, array, string or integer: (path, value).
MUTATIONS = [
    (("plugins", "{cri}", "containerd", "runtimes"), "x"),
    (("plugins", "{cri}", "containerd", "runtimes"), []),
    (("plugins", "{cri}", "containerd", "runtimes", "{runtime}", "options"), []),
    (("plugins", "{cri}", "containerd", "runtimes", "{runtime}", "options"), "x"),
    (("plugins", "{cri}", "containerd", "runtimes", "{runtime}"), "x"),
    (("plugins", "{cri}", "containerd", "runtimes", "{runtime}"), 7),
    (("plugins", "{cri}", "containerd"), 1),
    (("plugins", "{cri}"), ["x"]),
    (("plugins",), "x"),
    (("plugins", "{cri}", "containerd", "default_runtime_name"), 1),
    (("plugins", "{cri}", "containerd", "default_runtime_name"), ["runc"]),
    (("version",), "2"),
    (("version",), True),
    (("version",), 2.0),
    (("disabled_plugins",), "x"),
    (("disabled_plugins",), [{"id": CRI_V2}]),
    (("disabled_plugins",), [[CRI_V2]]),
    (("disabled_plugins",), [1, True]),
]


def deep_table(depth, leaf):
    table = {"leaf": leaf}
    for level in range(depth):
        table = {f"k{level % 3}": table}
    return table


@st.composite
def dump_documents(draw, mutate):
    """(document, mutation applied or None). Without ``mutate`` the document is a well-formed dump."""
    version = draw(st.sampled_from([2, 2, 3, 4]))
    cri, ignored = (CRI_V3, CRI_V2) if version >= 3 else (CRI_V2, CRI_V3)
    containerd = {"runtimes": draw(st.dictionaries(HANDLER_NAMES, RUNTIME, max_size=5))}
    default = draw(st.one_of(st.none(), HANDLER_NAMES))
    if default is not None:
        containerd["default_runtime_name"] = default
    plugins = {cri: {"containerd": containerd, "sandbox_image": "registry.k8s.io/pause:3.6"}}
    if draw(st.booleans()):
        # Runtimes under the key this version ignores: containerd does not serve them.
        plugins[ignored] = {"containerd": {"runtimes": draw(st.dictionaries(HANDLER_NAMES, RUNTIME, max_size=3))}}
    if draw(st.booleans()):
        plugins["io.containerd.junk.v1"] = deep_table(draw(st.integers(0, 40)), draw(SCALARS))
    document = {"version": version, "root": "/var/lib/containerd", "plugins": plugins}
    disabled = draw(DISABLED)
    if disabled or draw(st.booleans()):
        document["disabled_plugins"] = disabled
    mutation = draw(st.one_of(st.none(), st.sampled_from(MUTATIONS))) if mutate else None
    if mutation:
        _apply(document, mutation, cri, draw)
    return document, mutation


def _apply(document, mutation, cri, draw):
    path, value = mutation
    table = document
    for key in path[:-1]:
        key = cri if key == "{cri}" else key
        if key == "{runtime}":
            if not table:
                table["runc"] = {}
            key = draw(st.sampled_from(sorted(table)))
        table = table.setdefault(key, {}) if isinstance(table, dict) else {}
    last = cri if path[-1] == "{cri}" else path[-1]
    if isinstance(table, dict):
        table[last] = value


@st.composite
def runtimeclasses(draw):
    """RuntimeClasses as the core normalises them; a selector the (label-less) node does not match opts one out."""
    classes = []
    for index, handler in enumerate(draw(st.lists(HANDLER_NAMES, max_size=4))):
        selector = draw(st.one_of(st.none(), st.just({"pool": "elsewhere"})))
        classes.append({"name": f"rc-{index}", "handler": handler, "overhead_pod_fixed": None,
                        "node_selector": selector, "tolerations": []})
    return classes


def outcome(text, classes):
    """The verdict's judged fields, or the error — anything else propagates and fails the test."""
    try:
        facts = facts_from_dump(text, source="file", source_name="dump_file 'fuzz.toml'")
    except RuntimeGateError as error:
        assert str(error).startswith("dump_file 'fuzz.toml'"), str(error)
        return "error"
    verdict = judge_and_explain(facts, classes, node_name="fuzz-node", node_labels={})
    return {key: verdict[key] for key in ("status", "missing_handlers", "required_handlers", "loaded_runtimes")}


def model_verdict(document, classes):
    """What containerd's rules give for a well-formed dump (reference/containerd-loading.md §2, §3, §8)."""
    cri = CRI_V3 if document["version"] >= 3 else CRI_V2
    containerd = document["plugins"][cri]["containerd"]
    runtimes = set(containerd["runtimes"])
    default = containerd.get("default_runtime_name") or "runc"
    cri_ids = {CRI_V2, CRI_V3, "cri"} if document["version"] >= 3 else {CRI_V2, "cri"}
    disabled = {plugin for plugin in document.get("disabled_plugins", []) if isinstance(plugin, str)}
    # An empty runtime_type names no shim: listed, never usable (reference: docs/cri-startup.md).
    usable = {name for name in runtimes if containerd["runtimes"][name].get("runtime_type")}
    if document["version"] < 3:
        # 1.x matches the list by URI under a version 2 root, by ID under version 1; the dump prints version = 2 for both.
        # Only a version 1 root can have printed an entry that is no URI (fewer than 4 dotted parts).
        version_1 = any(len(plugin.split(".")) < 4 for plugin in disabled)
        if not version_1 and CRI_V2 in disabled:
            return "UNKNOWN", []
        cri_ids = {"cri"} if version_1 else {CRI_V2}
    served = usable if default in runtimes and not cri_ids & disabled else set()
    required = {rc["handler"] for rc in classes if rc["node_selector"] is None} | {default}
    return ("OK" if required <= served else "MISSING"), sorted(required - served)


def shuffled(value, rng):
    if isinstance(value, dict):
        items = [(key, shuffled(item, rng)) for key, item in value.items()]
        rng.shuffle(items)
        return dict(items)
    return value


@fuzz_settings(2000)
@given(dump_documents(mutate=True), runtimeclasses())
def test_generated_dumps_raise_only_runtime_gate_error_and_are_never_ok_without_the_runtimes(generated, classes):
    document, mutation = generated
    result = outcome(toml_dumps(document), classes)
    if mutation is None:
        assert result != "error", "a well-formed dump was refused"
        verdict, missing = model_verdict(document, classes)
        assert (result["status"], result["missing_handlers"]) == (verdict, missing)
    if result != "error" and result["status"] == "OK":
        verdict, _missing = model_verdict(document, classes)  # OK is only possible from well-formed parts
        assert verdict == "OK", (document, result)


@fuzz_settings(1000)
@given(dump_documents(mutate=True), runtimeclasses(), st.randoms(use_true_random=False))
def test_verdict_is_independent_of_table_and_key_order(generated, classes, rng):
    document, _mutation = generated
    first = outcome(toml_dumps(document), classes)
    assert outcome(toml_dumps(shuffled(document, rng)), classes) == first


def demo_dump_texts():
    paths = sorted((REPO_ROOT / "inventory" / "demo" / "nodes").glob("*/config-dump.toml"))
    return [path.read_text(encoding="utf-8") for path in paths if path.stat().st_size]


@pytest.fixture(scope="module")
def real_dumps(tmp_path_factory):
    """The demo nodes' committed dumps, and what every real release (support.containerd_daemons) prints now for every
    scenario tree of tests/fixtures/containerd it accepts."""
    texts = demo_dump_texts()
    directory = tmp_path_factory.mktemp("real-dumps")
    for release in releases():
        for scenario in scenarios():
            dump = dump_node(release, copy_tree(scenario, directory / f"{release.version}-{scenario}"))
            if dump.returncode == 0:
                texts.append(dump.text)
    return texts


EVERY_HANDLER = [{"name": handler, "handler": handler, "overhead_pod_fixed": None, "node_selector": None, "tolerations": []}
                 for handler in ("runc", "nvidia", "nvidia-cdi")]


@pytest.mark.components
def test_the_real_dumps_to_truncate_are_there(real_dumps):
    # The committed demo dumps are always there: finding none means the path broke, never a reason to skip.
    demo = demo_dump_texts()
    assert len(demo) >= 7  # inventory/demo/nodes/gpu-node-01..07
    # Every release accepts some scenario trees (1.7 only the version 2 ones): 34 dumps from 8 trees on 5 releases.
    assert len(real_dumps) - len(demo) >= 30
    assert {tomllib.loads(text)["version"] for text in real_dumps[len(demo):]} == {2, 3, 4}


@fuzz_settings(1000)
@given(st.data(), st.floats(0, 1, exclude_max=True))
@pytest.mark.components
def test_truncated_real_dumps_are_refused_or_judged_from_what_is_there(real_dumps, data, fraction):
    text = data.draw(st.sampled_from(real_dumps), label="dump")
    truncated = text[: int(len(text) * fraction)]
    result = outcome(truncated, EVERY_HANDLER)
    if result != "error" and result["status"] == "OK":
        # Never OK from a dump that lost a required runtime's table on the way.
        for handler in result["required_handlers"]:
            assert f".runtimes.{handler}]" in truncated or f'.runtimes."{handler}"]' in truncated, handler


@fuzz_settings(800)
@given(st.one_of(st.text(max_size=300), st.text(alphabet='[]{}="\'.,\n #\\abcrunimevsop23', max_size=300),
                 st.binary(max_size=200).map(lambda raw: raw.decode("latin-1"))))
def test_arbitrary_text_raises_only_runtime_gate_error(text):
    outcome(text, EVERY_HANDLER)
