"""Fuzzing the fail-closed classes of issue 11: API answers of the wrong shape, and chains of symbolic links.

- An HTTP 200 answer counts only when it is a well-formed list of the kind asked for: any other JSON object (no kind,
  a Status, another kind's list, items that are not a list of mappings, odd metadata) is refused with a message that
  names the kind asked for and stays short — in the shape check, and through a real server on loopback.
- Under ``host_root``, a chain of links of any length, relative or absolute, climbing past the root or not, never
  leads a read out of the root: a file outside it is never shipped; a chain within the hop limit to a file inside
  reads it; past the limit nothing is read.
- Registry credentials of any type in any place of a config are never in its redacted text, and any TOML document
  without them is shipped unchanged (the node reads TOML without tomllib: it must accept what tomllib accepts).
"""
import json
import os
import tomllib

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node import gather as node_gather
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node import imports as node_imports
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node import redaction as node_redaction
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.answers import list_shape_problem
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.errors import KubeAccessError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.lists import list_cluster_objects
from fuzz.fuzzing import fuzz_settings, toml_dumps, toml_key, toml_string
from support.kube_standin import KubeStandIn

LIST_KINDS = ["RuntimeClassList", "NodeList", "PodList", "EventList"]
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=6))
JSON_VALUES = st.recursive(SCALARS, lambda children: st.lists(children, max_size=3)
                           | st.dictionaries(st.text(max_size=4), children, max_size=3), max_leaves=6)
MAPPINGS = st.dictionaries(st.sampled_from(["metadata", "handler", "kind", "x"]), JSON_VALUES, max_size=3)
PAGES = st.fixed_dictionaries({}, optional={
    "kind": st.one_of(st.sampled_from(LIST_KINDS + ["Status", "List", "RuntimeClass", ""]), JSON_VALUES),
    "apiVersion": st.sampled_from(["v1", "node.k8s.io/v1", "meta.k8s.io/v1"]),
    "items": st.one_of(st.lists(MAPPINGS, max_size=3), st.lists(JSON_VALUES, min_size=1, max_size=3), JSON_VALUES),
    "metadata": st.one_of(st.fixed_dictionaries({}, optional={"continue": st.one_of(st.just(""), JSON_VALUES),
                                                              "resourceVersion": st.text(max_size=4)}), JSON_VALUES),
    "status": st.one_of(st.just("Failure"), JSON_VALUES),
    "message": st.text(max_size=2000),
})


def well_formed(page, list_kind):
    metadata = page.get("metadata")
    token = (metadata or {}).get("continue") if isinstance(metadata, dict) else None
    return (page.get("kind") == list_kind and isinstance(page.get("items"), list)
            and all(isinstance(item, dict) for item in page["items"])
            and (metadata is None or isinstance(metadata, dict)) and (token is None or isinstance(token, str)))


@fuzz_settings(400)
@given(page=PAGES, list_kind=st.sampled_from(LIST_KINDS))
def test_only_a_well_formed_list_of_the_kind_asked_for_counts(page, list_kind):
    problem = list_shape_problem(page, list_kind)
    if well_formed(page, list_kind):
        assert problem is None
    else:
        assert isinstance(problem, str) and list_kind in problem and len(problem) < 600, problem


@pytest.fixture(scope="module")
def shaped_server(kube_tls, tmp_path_factory):
    with KubeStandIn(kube_tls, tmp_path_factory.mktemp("shaped-api")) as standin:
        yield standin


@settings(fuzz_settings(30), suppress_health_check=list(HealthCheck))  # a module-scoped server, reused
@given(page=PAGES)
def test_a_real_server_answering_any_shape_gives_a_list_or_one_clear_error(shaped_server, page):
    shaped_server.answer_with("runtimeclasses", page)
    options = {"host": shaped_server.url, "api_key": shaped_server.token, "ca_cert": str(shaped_server.ca_path)}
    try:
        cluster = list_cluster_objects(options, request_deadline=10, list_page_budget=5, list_time_budget=20)
    except KubeAccessError as err:
        message = str(err)
        assert message.startswith(f"listing RuntimeClasses (node.k8s.io/v1) from {shaped_server.url} failed: "), message
        assert len(message) < 800 and shaped_server.token not in message
        problem = list_shape_problem(page, "RuntimeClassList")
        # A well-formed page with a continue token comes back with the same token: caught as a repeat.
        assert problem in message if problem else "continue token the server already sent" in message, message
    else:
        assert well_formed(page, "RuntimeClassList") and not (page.get("metadata") or {}).get("continue")
        assert len(cluster["runtimeclasses"]) <= len(page["items"])
    finally:
        shaped_server.clear_failures()


HARMLESS = "version = 2\n"
SECRET = "outside-secret-7c21"
LINK_DIRS = ["", "a", "a/b", "c/d/e"]


@st.composite
def link_chains(draw):
    length = draw(st.integers(min_value=1, max_value=node_gather.MAX_SYMLINK_HOPS + 4))
    places = [draw(st.sampled_from(LINK_DIRS)) for _link in range(length)]
    styles = [draw(st.sampled_from(["relative", "absolute", "climbing"])) for _link in range(length)]
    last = draw(st.sampled_from(["inside", "outside-absolute", "outside-climbing"]))
    return places, styles, last


def target_towards(style, from_dir, to_node_path):
    """A link target from ``from_dir`` (node path) to ``to_node_path``: absolute, relative, or climbing past /."""
    if style == "absolute":
        return to_node_path
    relative = os.path.relpath(to_node_path, "/" + from_dir)
    return "../" * 12 + to_node_path.lstrip("/") if style == "climbing" else relative


@settings(fuzz_settings(120), suppress_health_check=list(HealthCheck))  # a fresh tree per example
@given(chain=link_chains())
def test_no_chain_of_links_reads_outside_host_root(tmp_path_factory, chain):
    places, styles, last = chain
    base = tmp_path_factory.mktemp("chain")
    root, outside = base / "node", base / "outside"
    (root / "etc").mkdir(parents=True)
    outside.mkdir()
    (root / "etc" / "inside.toml").write_text(HARMLESS)
    (outside / "secret.toml").write_text(SECRET)
    (outside / "secret.toml").chmod(0o600)
    node_paths = [f"/{place}/l{index}".replace("//", "/") for index, place in enumerate(places)]
    for index, node_path in enumerate(node_paths):
        os.makedirs(root / os.path.dirname(node_path).lstrip("/"), exist_ok=True)
        if index + 1 < len(node_paths):
            target = target_towards(styles[index], places[index], node_paths[index + 1])
        elif last == "inside":
            target = target_towards(styles[index], places[index], "/etc/inside.toml")
        elif last == "outside-absolute":
            target = str(outside / "secret.toml")  # this machine's path: on the node it is another one
        else:
            target = "../" * 40 + os.path.relpath(outside / "secret.toml", "/")
        os.symlink(target, root / node_path.lstrip("/"))

    resolved = node_gather.host_path(str(root), node_paths[0])
    entry = node_gather.read_text_file(resolved)
    assert entry["text"] in (None, HARMLESS), "a file outside host_root was read"
    real = os.path.realpath(resolved)
    assert real == str(root) or real.startswith(str(root) + os.sep), real
    if last == "inside" and len(places) <= node_gather.MAX_SYMLINK_HOPS:
        assert entry["text"] == HARMLESS, entry
    if len(places) > node_gather.MAX_SYMLINK_HOPS:
        assert entry["text"] is None and "symbolic links" in entry["error"], entry

    config = root / "etc" / "config.toml"
    config.write_text(f'version = 2\nimports = ["{node_paths[0]}", "/{places[0]}/*"]\n'.replace("//", "/"))
    config_files, _globs = node_imports.walk_imports("/etc/config.toml", str(root))
    assert SECRET not in json.dumps(config_files)


SECRET_KEY_SPELLINGS = st.sampled_from(['password', 'Password', '"password"', "'token'", '"pass\\u0077ord"',
                                        '"\\u0061uth"', 'identitytoken', '"registry\\u0074oken"'])
CREDENTIAL_VALUES = st.one_of(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789+/=", min_size=8, max_size=16).map(lambda text: ("s", text)),
    st.integers(min_value=10 ** 7, max_value=10 ** 12).map(lambda number: ("i", str(number))),
)


@fuzz_settings(300)
@given(key=SECRET_KEY_SPELLINGS, value=CREDENTIAL_VALUES, form=st.sampled_from(["string", "literal", "array", "bare",
                                                                               "inline", "dotted", "multiline"]),
       padding=st.sampled_from(["", "  ", "\t"]))
def test_a_credential_in_any_spelling_and_type_is_never_in_the_redacted_text(key, value, form, padding):
    kind, secret = value
    secret = "S" + secret  # never a substring of the surrounding TOML
    literal = {"string": toml_string(secret), "literal": f"'{secret}'", "array": f'[{toml_string(secret)}, 1]',
               "bare": secret if kind == "i" else toml_string(secret), "multiline": f'"""\n{secret}\n"""'}
    header = f'[plugins.{toml_key("io.containerd.grpc.v1.cri")}.registry.configs."r.example"]\n'
    if form == "inline":
        line = f"{padding}auth = {{ username = \"u\", {key} = {toml_string(secret)} }}\n"
    elif form == "dotted":
        line = f"{padding}auth.{key} = {toml_string(secret)}\n"
    else:
        line = f"{padding}{key} = {literal[form]}\n"
    if form == "bare" and kind == "i":
        secret = secret[1:]
        line = line.replace("S" + secret, secret)
    text = 'version = 2\nBinaryName = "/usr/bin/runc"\n' + header + line + "  username = \"after\"\n"
    redacted = node_redaction.redact_toml_secrets(text)
    assert secret not in redacted
    assert redacted.count("\n") == text.count("\n")
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return
    document = tomllib.loads(redacted)
    assert document["BinaryName"] == "/usr/bin/runc"
    assert document["plugins"]["io.containerd.grpc.v1.cri"]["registry"]["configs"]["r.example"]["username"] == "after"


TOML_KEYS = st.one_of(st.sampled_from(["version", "runtime_type", "BinaryName", "io.containerd.grpc.v1.cri", "a b"]),
                      st.text(max_size=6))
TOML_SCALARS = st.one_of(st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                         st.text(max_size=10))
TOML_VALUES = st.recursive(TOML_SCALARS, lambda children: st.lists(children, max_size=3)
                           | st.dictionaries(TOML_KEYS, children, max_size=3), max_leaves=8)
TOML_DOCUMENTS = st.recursive(st.dictionaries(TOML_KEYS, TOML_VALUES, max_size=4),
                              lambda tables: st.dictionaries(TOML_KEYS, tables, max_size=3), max_leaves=6)


@fuzz_settings(300)
@given(document=TOML_DOCUMENTS)
def test_a_toml_document_without_credentials_is_shipped_unchanged(document):
    text = toml_dumps(document)
    # Keys that name a credential or a header table are redacted by design (test_redaction covers them).
    assume(not any(key in text.lower() for key in node_redaction.SECRET_KEYS + node_redaction.HEADER_TABLES)
           and "://" not in text)
    entry = node_redaction.redact_evidence({"config_files": [{"path": "/x.toml", "text": text, "error": None}]})["config_files"][0]
    assert entry["text"] == text, entry["error"]
