"""_node_evidence on real file trees: the import walk in containerd's order, listings, binary stats."""
import json
import os

import pytest
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils import _node_evidence as node_evidence
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils import _node_redaction as node_redaction
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._cri_status import (
    decode_status_response,
    encode_status_request,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node_evidence import (
    dropin_listings,
    host_path,
    list_directory,
    node_path_of,
    non_magic_directory,
    read_text_file,
    runtime_binaries,
    shim_binary_name,
    walk_imports,
)
from support.containerd_trees import dump_text
from support.tools import require_command, require_tool


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_walk_is_breadth_first_deduplicated_and_follows_nested_imports(tmp_path):
    root = write(tmp_path / "config.toml", f'version = 2\nimports = ["{tmp_path}/conf.d/*.toml", "conf.d/20-b.toml"]\n')
    # 10-a imports a file one level down: containerd applies it after 20-b (verified; reference §1).
    write(tmp_path / "conf.d/10-a.toml", 'version = 2\nimports = ["../extra/x.toml"]\n')
    write(tmp_path / "conf.d/20-b.toml", "version = 2\n")
    # A cycle back to the root terminates: each path is applied once.
    write(tmp_path / "extra/x.toml", f'version = 2\nimports = ["{root}"]\n')
    config_files, import_globs = walk_imports(root)
    assert [(entry["path"], entry["role"], entry["imported_by"], entry["pattern"]) for entry in config_files] == [
        (root, "root", None, None),
        (f"{tmp_path}/conf.d/10-a.toml", "import", root, f"{tmp_path}/conf.d/*.toml"),
        (f"{tmp_path}/conf.d/20-b.toml", "import", root, f"{tmp_path}/conf.d/*.toml"),
        (f"{tmp_path}/extra/x.toml", "import", f"{tmp_path}/conf.d/10-a.toml", "../extra/x.toml"),
    ]
    for entry in config_files:
        assert entry["error"] is None and entry["text"] == (tmp_path / entry["path"]).read_text()
        assert entry["size"] == len(entry["text"]) and entry["mtime"] == os.stat(entry["path"]).st_mtime
    assert [(g["pattern"], g["glob"], g["absolute"], g["matches"]) for g in import_globs] == [
        (f"{tmp_path}/conf.d/*.toml", True, True, [f"{tmp_path}/conf.d/10-a.toml", f"{tmp_path}/conf.d/20-b.toml"]),
        ("conf.d/20-b.toml", False, False, [f"{tmp_path}/conf.d/20-b.toml"]),
        ("../extra/x.toml", False, False, [f"{tmp_path}/extra/x.toml"]),
        (root, False, True, [root]),
    ]


def test_relative_glob_is_expanded_from_the_config_dir_and_from_the_daemon_cwd(tmp_path):
    root = write(tmp_path / "config.toml", 'version = 2\nimports = ["conf.d/*.toml"]\n')
    write(tmp_path / "conf.d/99-nvidia.toml", "version = 2\n")
    _files, (expansion,) = walk_imports(root)
    assert expansion["resolved_pattern"] == f"{tmp_path}/conf.d/*.toml"
    assert expansion["matches"] == [f"{tmp_path}/conf.d/99-nvidia.toml"]
    # containerd 1.6.0-1.6.28/1.7.0-1.7.15 pass the pattern to Glob unchanged: resolved from `/`.
    assert expansion["cwd"] == "/"
    assert expansion["matches_from_cwd"] == []


def test_probe_resolves_a_relative_glob_by_the_rule_of_the_node_containerd_version(tmp_path):
    """1.6.0-1.6.28/1.7.0-1.7.15 glob a relative import from `/` (the daemon's cwd); 1.6.29+/1.7.16+ from the config's dir."""
    from ansible_collections.gpufleet.runtime_gate.plugins.modules import containerd_runtime_config_probe as probe

    root = write(tmp_path / "etc/config.toml", "version = 2\n")
    from_config_dir = write(tmp_path / "etc/dropins/a.toml", "version = 2\n")
    from_cwd = write(tmp_path / "dropins/b.toml", "version = 2\n")
    relative = os.path.relpath(tmp_path / "dropins", "/") + "/*.toml"  # tmp/.../dropins/*.toml: from `/` it is tmp_path's
    literal = "dropins/a.toml"  # a literal entry joins the config's directory on every version

    _result, node_version = probe._version(require_command("containerd", "containerd"), 60)  # the real binary: 1.6.20
    assert node_version is not None and node_evidence.relative_globs_from_cwd(node_version)
    globs, errors = probe._expand([relative, literal], root, node_version)
    assert (globs, errors) == ({relative: [from_cwd], literal: [from_config_dir]}, [])
    for old in ((1, 6, 0), (1, 6, 28), (1, 7, 15)):
        assert probe._expand([relative], root, old)[0] == {relative: [from_cwd]}
    for new in ((1, 6, 29), (1, 7, 16), (2, 2, 0), None):  # unknown: the current rule
        assert probe._expand([relative], root, new)[0] == {relative: []}
    (tmp_path / "etc" / os.path.dirname(relative)).mkdir(parents=True)
    mirrored = write(tmp_path / "etc" / os.path.dirname(relative) / "c.toml", "version = 2\n")
    assert probe._expand([relative], root, (1, 7, 16))[0] == {relative: [mirrored]}
    assert probe._expand(["missing.toml", "[.toml"], root, (1, 7, 16))[0] == {"missing.toml": [], "[.toml": []}
    assert probe._expand(["*[.toml"], root, (1, 7, 16))[1] != []


def test_missing_import_unreadable_imports_and_bad_patterns_are_reported(tmp_path):
    root = write(tmp_path / "config.toml", f'imports = ["{tmp_path}/absent.toml", "{tmp_path}/bad/[*.toml", "x.toml"]\n')
    write(tmp_path / "x.toml", 'imports = "not-an-array.toml"\n')
    config_files, import_globs = walk_imports(root)
    by_path = {entry["path"]: entry for entry in config_files}
    assert by_path[f"{tmp_path}/absent.toml"]["error"] == "does not exist"
    assert by_path[f"{tmp_path}/absent.toml"]["text"] is None
    assert by_path[f"{tmp_path}/x.toml"]["imports"] is None
    assert "imports is not an array" in by_path[f"{tmp_path}/x.toml"]["imports_error"]
    bad = next(expansion for expansion in import_globs if "[" in expansion["pattern"])
    assert bad["matches"] == [] and "syntax error in pattern" in bad["error"]


def test_root_that_does_not_exist(tmp_path):
    (entry,), import_globs = walk_imports(str(tmp_path / "config.toml"))
    assert (entry["role"], entry["error"], entry["text"], entry["imports"]) == ("root", "does not exist", None, None)
    assert import_globs == []


def test_file_text_is_capped_and_must_be_utf8(tmp_path):
    big = write(tmp_path / "big.toml", "#" * 100)
    assert read_text_file(big, limit=10)["error"] == "is 100 bytes, larger than the 10 byte limit"
    assert read_text_file(big, limit=10)["size"] == 100
    latin1 = tmp_path / "latin1.toml"
    latin1.write_bytes("# r\xe9sum\xe9\n".encode("latin-1"))
    assert "not UTF-8" in read_text_file(str(latin1))["error"]
    assert read_text_file(str(tmp_path))["error"] == "is not a regular file"


@pytest.mark.parametrize(("pattern", "directory"), [
    ("/etc/containerd/conf.d/*.toml", "/etc/containerd/conf.d"),
    ("/etc/*/conf.d/*.toml", "/etc"),
    ("/*.toml", "/"),
    ("conf.d/*.toml", "conf.d"),
    ("*.toml", "."),
])
def test_non_magic_directory(pattern, directory):
    assert non_magic_directory(pattern) == directory


def test_listings_cover_glob_dirs_and_configured_dropin_dirs_once(tmp_path):
    conf_d = tmp_path / "conf.d"
    write(conf_d / "99-nvidia.toml", "version = 2\n")
    (conf_d / "sub").mkdir()
    root = write(tmp_path / "config.toml", f'imports = ["{conf_d}/*.conf", "conf.d/*.toml"]\n')
    _files, import_globs = walk_imports(root)
    listings = dropin_listings(import_globs, [f"{conf_d}/", str(tmp_path / "absent.d")])
    assert [(listing["path"], listing["listed_because"]) for listing in listings] == [
        (str(conf_d), [f"import {conf_d}/*.conf", "import conf.d/*.toml", "option dropin_dirs"]),
        (str(tmp_path / "absent.d"), ["option dropin_dirs"]),
    ]
    entries = {entry["name"]: entry for entry in listings[0]["entries"]}
    assert entries["99-nvidia.toml"]["is_file"] is True and entries["99-nvidia.toml"]["size"] == 12
    assert entries["sub"]["is_file"] is False
    assert listings[1]["exists"] is False and listings[1]["entries"] == []
    assert list_directory(root)["error"] == "is not a directory"


def test_listings_carry_the_text_of_unloaded_dropins_only(tmp_path, monkeypatch):
    conf_d = tmp_path / "conf.d"
    write(conf_d / "10-loaded.toml", "version = 2\n")
    write(conf_d / "50-other.conf", "version = 2\n")
    write(conf_d / "99-nvidia.toml", "version = 2\n# nvidia\n")
    write(conf_d / "README", "not a config\n")
    write(conf_d / "huge.toml", "#" * (node_evidence.MAX_CONFIG_TEXT_BYTES + 1))
    (conf_d / "dir.toml").mkdir()
    (conf_d / "dangling.conf").symlink_to(tmp_path / "nowhere")
    root = write(tmp_path / "config.toml", f'imports = ["{conf_d}/10-*.toml"]\n')
    config_files, import_globs = walk_imports(root)
    reached = {entry["path"] for entry in config_files}
    [listing] = dropin_listings(import_globs, [str(conf_d)], reached=reached)
    assert listing["texts_for"] == [".toml", ".conf"]
    texts = {entry["name"]: (entry["text"], entry["text_error"]) for entry in listing["entries"] if "text" in entry}
    assert texts == {
        "50-other.conf": ("version = 2\n", None),
        "99-nvidia.toml": ("version = 2\n# nvidia\n", None),
        "huge.toml": (None, "is 1048577 bytes, larger than the 1048576 byte limit"),
    }
    monkeypatch.setattr(node_evidence, "MAX_CONFIG_FILES", 1)
    [listing] = dropin_listings(import_globs, [str(conf_d)], reached=reached)
    texts = {entry["name"]: (entry["text"], entry["text_error"]) for entry in listing["entries"] if "text" in entry}
    assert texts["50-other.conf"] == ("version = 2\n", None)
    assert texts["99-nvidia.toml"] == (None, "not read: more than 1 unloaded drop-in files")


@pytest.mark.parametrize(("runtime_type", "shim"), [
    ("io.containerd.runc.v2", "containerd-shim-runc-v2"),
    ("io.containerd.kata.v2", "containerd-shim-kata-v2"),
    ("io.containerd.runsc.v1", "containerd-shim-runsc-v1"),
    ("/opt/bin/containerd-shim-custom", "/opt/bin/containerd-shim-custom"),
    ("runc", None),
    ("io.containerd.", None),
])
def test_shim_binary_name(runtime_type, shim):
    assert shim_binary_name(runtime_type) == shim


def test_binaries_from_dump_and_daemon_text(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    executable = write(bin_dir / "nvidia-container-runtime", "#!/bin/sh\n")
    os.chmod(executable, 0o755)
    not_executable = write(bin_dir / "plain-file", "")
    containerd = write(bin_dir / "containerd", "#!/bin/sh\n")
    os.chmod(containerd, 0o755)
    shim_beside = write(bin_dir / "containerd-shim-foo-v9", "#!/bin/sh\n")
    os.chmod(shim_beside, 0o755)
    empty_path = tmp_path / "empty-path"
    empty_path.mkdir()
    monkeypatch.setenv("PATH", str(empty_path))
    dump_text = (
        "[plugins.x.containerd.runtimes.a]\n"
        "  runtime_type = 'io.containerd.foo.v9'\n"
        "  [plugins.x.containerd.runtimes.a.options]\n"
        f"    BinaryName = '{executable}'\n"
        f'    BinaryName = "{not_executable}"  # a second table\n'
        "    BinaryName = ''\n"
        "  runtime_type = \"io.containerd.runc.v2\"\n")
    daemon_text = '{"runtimes":{"b":{"runtimeType":"io.containerd.bar.v1","options":{"BinaryName":"\\/gone\\/bin"}}}}'
    binaries = runtime_binaries(dump_text, daemon_text, containerd)
    assert set(binaries) == {executable, not_executable, "/gone/bin", "containerd-shim-foo-v9",
                             "containerd-shim-runc-v2", "containerd-shim-bar-v1", "runc"}
    assert binaries[executable] == {"kind": "BinaryName", "exists": True, "executable": True,
                                    "resolved": executable, "runtime_types": []}
    assert (binaries[not_executable]["exists"], binaries[not_executable]["executable"]) == (True, False)
    assert binaries["/gone/bin"] == {"kind": "BinaryName", "exists": False, "executable": False, "resolved": None,
                                     "runtime_types": []}
    # Not in PATH, but beside containerd: containerd runs it from there (shim.Command).
    assert binaries["containerd-shim-foo-v9"]["resolved"] == shim_beside
    assert binaries["containerd-shim-foo-v9"]["runtime_types"] == ["io.containerd.foo.v9"]
    assert binaries["containerd-shim-bar-v1"]["exists"] is False
    assert binaries["runc"]["kind"] == "default_runc" and binaries["runc"]["exists"] is False


@pytest.mark.parametrize("release, scenario", [("1.7", "S3full"), ("2.2", "S1"), ("2.3", "S1v4")])
def test_binary_names_found_in_real_dumps(release, scenario, tmp_path):
    # The dump the real release prints for the tree: its runtimes' BinaryNames, the runc shim, runc.
    binaries = runtime_binaries(dump_text(scenario, release, tmp_path), None, str(tmp_path / "no-containerd"))
    assert {"/usr/bin/nvidia-container-runtime", "/usr/bin/nvidia-container-runtime.cdi",
            "containerd-shim-runc-v2", "runc"} <= set(binaries)
    assert all(stat_entry["kind"] in ("BinaryName", "shim", "default_runc") for stat_entry in binaries.values())


def test_status_request_and_malformed_responses():
    # The live decoding is exercised against a real daemon in tests/integration/daemon; here only what no
    # daemon sends: truncated or mistyped bytes must be a ValueError (the view is then unknown), never a guess.
    assert encode_status_request(verbose=True) == b"\x08\x01"
    assert decode_status_response(b"") == {"status": {"conditions": []}, "info": {}}
    for broken in (b"\x0a\x05ab", b"\x08", b"\x0d\x01\x02", b"\x0b", b"\x10\x01\x12\x02\x08\x01"):
        with pytest.raises(ValueError):
            decode_status_response(broken)


# ------------------------------------------------------------------------ host_root: the node's / elsewhere


def executable(path, text="#!/bin/sh\nexit 1\n"):
    write(path, text)
    path.chmod(0o755)
    return str(path)


def node_tree(tmp_path):
    """A node filesystem under tmp_path/host: imports written as node paths, a drop-in, CDI spec, binaries."""
    host = tmp_path / "host"
    write(host / "etc/containerd/config.toml", 'version = 2\nimports = ["/etc/containerd/conf.d/*.toml", "conf.d/*.conf"]\n')
    write(host / "etc/containerd/conf.d/99-nvidia.toml", "version = 2\n")
    write(host / "etc/containerd/conf.d/10-relative.conf", "version = 2\n")
    write(host / "etc/cdi/nvidia.yaml", "cdiVersion: 0.5.0\n")
    executable(host / "usr/bin/nvidia-container-runtime")
    executable(host / "usr/local/sbin/runc")
    write(host / "usr/bin/containerd-shim-runc-v2", "not executable\n")
    return host


@pytest.mark.parametrize("node_path, relative", [
    ("/etc/containerd/config.toml", "etc/containerd/config.toml"),
    ("/", ""),
    ("/etc/../etc/./cdi", "etc/cdi"),
    ("/../../etc/cdi", "etc/cdi"),  # `..` stops at the node's /
    ("etc/cdi", "etc/cdi"),  # relative: from the node's /
])
def test_host_path_maps_node_paths_under_the_root(tmp_path, node_path, relative):
    assert host_path(str(tmp_path), node_path) == (os.path.join(str(tmp_path), relative) if relative else str(tmp_path))
    assert host_path("/", node_path) == node_path  # on the node itself: unchanged


def test_host_path_follows_links_inside_the_root(tmp_path):
    host = tmp_path / "host"
    write(host / "etc/k3s/config.toml", "inside\n")
    (host / "etc/containerd").mkdir(parents=True)
    # Absolute targets restart at the node's /, never this machine's; relative ones resolve as usual, and
    # `..` stops at the node's /.
    (host / "etc/containerd/config.toml").symlink_to("/etc/k3s/config.toml")
    (host / "etc/containerd/rel.toml").symlink_to("../k3s/config.toml")
    (host / "etc/containerd/climb.toml").symlink_to("../../../../../../../../etc/k3s/config.toml")
    assert host_path(str(host), "/etc/containerd/climb.toml") == str(host / "etc/k3s/config.toml")
    (host / "loop").symlink_to("/loop")
    real = host_path(str(host), "/etc/containerd/config.toml")
    assert real == str(host / "etc/k3s/config.toml") and open(real).read() == "inside\n"
    assert host_path(str(host), "/etc/containerd/rel.toml") == str(host / "etc/k3s/config.toml")
    assert not os.path.exists(host_path(str(host), "/loop/x"))  # a loop gives up, as ELOOP would
    assert node_path_of(str(host), real) == "/etc/k3s/config.toml"
    assert node_path_of(str(host), str(host)) == "/" and node_path_of(str(host), "/elsewhere") == "/elsewhere"
    assert node_path_of("/", "/etc/cdi") == "/etc/cdi"


def test_walk_and_listings_under_host_root_report_node_paths(tmp_path):
    host = node_tree(tmp_path)
    # The same node paths exist on this machine only by accident; the walk must not look there.
    config_files, import_globs = walk_imports("/etc/containerd/config.toml", str(host))
    assert [(entry["path"], entry["role"], entry["error"]) for entry in config_files] == [
        ("/etc/containerd/config.toml", "root", None),
        ("/etc/containerd/conf.d/99-nvidia.toml", "import", None),
        ("/etc/containerd/conf.d/10-relative.conf", "import", None),
    ]
    absolute, relative = import_globs
    assert absolute["matches"] == ["/etc/containerd/conf.d/99-nvidia.toml"] and absolute["error"] is None
    assert relative["resolved_pattern"] == "/etc/containerd/conf.d/*.conf"
    assert relative["matches"] == ["/etc/containerd/conf.d/10-relative.conf"]
    assert relative["matches_from_cwd"] == []  # /conf.d/*.conf under the node's /: nothing
    listings = dropin_listings(import_globs, ["/etc/containerd/conf.d", "/etc/containerd/nowhere"], str(host))
    assert [(listing["path"], listing["exists"], [entry["name"] for entry in listing["entries"]]) for listing in listings] == [
        ("/etc/containerd/conf.d", True, ["10-relative.conf", "99-nvidia.toml"]),
        ("/etc/containerd/nowhere", False, []),
    ]
    cdi = list_directory("/etc/cdi", str(host))
    assert (cdi["path"], [entry["name"] for entry in cdi["entries"]]) == ("/etc/cdi", ["nvidia.yaml"])


def test_glob_under_a_root_whose_name_has_glob_characters(tmp_path):
    host = node_tree(tmp_path / "node[1]*?")
    _config_files, import_globs = walk_imports("/etc/containerd/config.toml", str(host))
    assert import_globs[0]["matches"] == ["/etc/containerd/conf.d/99-nvidia.toml"]


def test_binaries_under_host_root_are_the_nodes(tmp_path):
    host = node_tree(tmp_path)
    dump = ('[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n  runtime_type = "io.containerd.runc.v2"\n'
            '  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]\n'
            '    BinaryName = "/usr/bin/nvidia-container-runtime"\n'
            '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.cdi.options]\n'
            '    BinaryName = "/usr/bin/nvidia-container-runtime.cdi"\n')
    binaries = runtime_binaries(dump, None, "containerd", str(host))
    assert binaries["/usr/bin/nvidia-container-runtime"] == {
        "kind": "BinaryName", "exists": True, "executable": True, "resolved": "/usr/bin/nvidia-container-runtime", "runtime_types": []}
    assert binaries["/usr/bin/nvidia-container-runtime.cdi"]["exists"] is False  # this machine's copy never counts
    # Bare names: the node's standard PATH under the root, never this machine's PATH or containerd's directory.
    assert (binaries["runc"]["exists"], binaries["runc"]["resolved"]) == (True, "/usr/local/sbin/runc")
    shim = binaries["containerd-shim-runc-v2"]
    assert (shim["exists"], shim["executable"]) == (False, False)  # not executable: not found on PATH


def test_module_reads_root_config_and_passes_host_root_to_containerd(tmp_path):
    require_tool(os.path.exists("/bin/sh"), "needs /bin/sh for the stand-in containerd")
    from ansible_collections.gpufleet.runtime_gate.plugins.modules.containerd_facts import gather, gather_surroundings

    host = node_tree(tmp_path)
    # A wrapper as containerd_bin sees the node path and RUNTIME_GATE_HOST_ROOT (what containerd-at-etc reads).
    fake = executable(tmp_path / "containerd", '#!/bin/sh\n[ "$1" = --version ] && { echo "containerd x 1.6.20 y"; exit 0; }\n'
                                               'echo "# $RUNTIME_GATE_HOST_ROOT $2"\necho "version = 2"\n')
    params = {"containerd_bin": fake, "config_path": "/etc/containerd/config.toml", "dump_file": None, "timeout": 10,
              "dropin_dirs": [], "cdi_spec_dirs": ["/etc/cdi"], "daemon": False, "socket": "/nonexistent.sock",
              "crictl_bin": "crictl", "host_root": str(host)}
    evidence, error = gather(params)
    assert error is None, error
    assert evidence["dump_text"].splitlines()[0] == f"# {host} /etc/containerd/config.toml"
    assert evidence["root_config_text"].startswith("version = 2\nimports")
    evidence = gather_surroundings(params, evidence)
    assert [entry["path"] for entry in evidence["config_files"]][0] == "/etc/containerd/config.toml"
    assert evidence["cdi_dirs"][0]["entries"][0]["name"] == "nvidia.yaml"


REGISTRY_CONFIG = '''version = 2
# password = "old-secret-1"
[plugins."io.containerd.grpc.v1.cri".registry.configs."reg.example".auth]
  username = "robot"
  password = "s3cr3t-PW"
  Auth = 'cm9ib3Q6czNjcjN0'
  identitytoken = "id-token-2"
[plugins."io.containerd.cri.v1.images".registry.configs."other".auth]
  "token" = "tok-3"
  registrytoken = """multi
line-4"""
[plugins."io.containerd.cri.v1.images".registry.configs."x"]
  tls = { insecure_skip_verify = true, password = "inline-5" }
  note = "a, token = 'inside-6'"
  auth.password = "dotted-7"
  BinaryName = "/usr/bin/runc"
'''


def test_secrets_are_redacted_keeping_the_toml_valid_and_its_lines():
    import tomllib

    redacted = node_redaction.redact_toml_secrets(REGISTRY_CONFIG)
    for secret in ("old-secret-1", "s3cr3t-PW", "cm9ib3Q6czNjcjN0", "id-token-2", "tok-3", "line-4", "inline-5",
                   "inside-6", "dotted-7"):
        assert secret not in redacted, secret
    assert redacted.count("\n") == REGISTRY_CONFIG.count("\n")
    document = tomllib.loads(redacted)
    auth = document["plugins"]["io.containerd.grpc.v1.cri"]["registry"]["configs"]["reg.example"]["auth"]
    assert auth == {"username": "robot", "password": "<redacted>", "Auth": "<redacted>", "identitytoken": "<redacted>"}
    other = document["plugins"]["io.containerd.cri.v1.images"]["registry"]["configs"]
    assert other["x"]["tls"] == {"insecure_skip_verify": True, "password": "<redacted>"}
    assert other["x"]["auth"]["password"] == "<redacted>" and other["x"]["note"] == "a, token = '<redacted>'"
    assert other["x"]["BinaryName"] == "/usr/bin/runc" and other["other"]["auth"]["token"] == "<redacted>"
    daemon_json = '{"config": {"registry": {"configs": {"r": {"auth": {"username": "u", "password": "p\\"w", "auth": "YQ=="}}}}}}'
    assert json.loads(node_redaction.redact_json_secrets(daemon_json))["config"]["registry"]["configs"]["r"]["auth"] == {
        "username": "u", "password": "<redacted>", "auth": "<redacted>"}


@pytest.mark.parametrize("containerd_bin", ["containerd", "/usr/bin/containerd"])
def test_the_containerd_binary_itself_cannot_stand_for_another_root(tmp_path, containerd_bin):
    """containerd ignores RUNTIME_GATE_HOST_ROOT: run as the node's wrapper it would dump this machine's config."""
    require_tool(os.access("/usr/bin/containerd", os.X_OK), "needs Debian's containerd (a compiled program)")
    from ansible_collections.gpufleet.runtime_gate.plugins.modules.containerd_facts import gather

    params = {"containerd_bin": containerd_bin, "config_path": "/etc/containerd/config.toml", "dump_file": None, "timeout": 10,
              "dropin_dirs": [], "cdi_spec_dirs": [], "daemon": False, "socket": "/nonexistent.sock",
              "crictl_bin": "crictl", "host_root": str(node_tree(tmp_path))}
    evidence, error = gather(params)
    assert evidence is None
    assert f"containerd_bin '{containerd_bin}' is a compiled program" in error and "not a wrapper" in error


def test_a_chain_of_links_past_the_hop_limit_reads_nothing_outside_host_root(tmp_path):
    """41 relative links, the last one absolute to a 0600 file outside the node's root: nothing is read or shipped."""
    outside = tmp_path / "outside" / "secret.toml"
    outside.parent.mkdir()
    outside.write_text('version = 2\n# password = "outside-secret"\n')
    outside.chmod(0o600)
    host = tmp_path / "node"
    etc = host / "etc" / "containerd"
    etc.mkdir(parents=True)
    (etc / "config.toml").write_text('version = 2\nimports = ["/etc/containerd/l0.toml"]\n')
    for hop in range(41):
        (etc / f"l{hop}.toml").symlink_to(f"l{hop + 1}.toml")
    (etc / "l41.toml").symlink_to(outside)
    config_files, _globs = walk_imports("/etc/containerd/config.toml", str(host))
    imported = [entry for entry in config_files if entry["path"] == "/etc/containerd/l0.toml"]
    assert imported and imported[0]["text"] is None and "symbolic links" in imported[0]["error"]
    assert "outside-secret" not in json.dumps(config_files)


def test_a_glob_through_an_absolute_directory_link_lists_nothing_outside_host_root(tmp_path):
    outside = tmp_path / "outside-dir"
    outside.mkdir()
    (outside / "x.toml").write_text("version = 2\n")
    host = tmp_path / "node"
    etc = host / "etc" / "containerd"
    etc.mkdir(parents=True)
    (etc / "config.toml").write_text('version = 2\nimports = ["/etc/containerd/*/x.toml"]\n')
    (etc / "d").symlink_to(outside)  # absolute: on the node it points at a path under the node's own /
    _files, globs = walk_imports("/etc/containerd/config.toml", str(host))
    assert globs[0]["matches"] == []


@pytest.mark.parametrize("pattern", ["/proc/self/environ", "/proc/*/environ", "/dev/null", "/sys/kernel/hostname"])
def test_imports_into_pseudo_file_systems_ship_nothing(tmp_path, pattern, monkeypatch):
    """/proc/<pid>/environ holds the playbook's own K8S_AUTH_API_KEY under a local connection: never read."""
    monkeypatch.setenv("K8S_AUTH_API_KEY", "environ-secret-123")
    root = tmp_path / "config.toml"
    root.write_text(f'version = 2\nimports = ["{pattern}"]\n')
    config_files, _globs = walk_imports(str(root))
    assert "environ-secret-123" not in json.dumps(config_files)
    assert all(entry["text"] is None for entry in config_files if entry["path"] != str(root))
