"""_node_imports on real file trees: the import walk in containerd's order, globs by release, under host_root."""
import json
import os

import pytest
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.containerd_release import relative_globs_from_cwd
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.config_tree import containerd_version
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.imports import (
    imports_loaded,
    non_magic_directory,
    walk_imports,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.listings import (
    dropin_listings,
    list_directory,
)
from support.node_trees import node_tree, write
from support.tools import require_command


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


@pytest.mark.components
def test_probe_resolves_a_relative_glob_by_the_rule_of_the_node_containerd_version(tmp_path):
    """1.6.0-1.6.28/1.7.0-1.7.15 glob a relative import from `/` (the daemon's cwd); 1.6.29+/1.7.16+ from the config's dir."""
    root = write(tmp_path / "etc/config.toml", "version = 2\n")
    from_config_dir = write(tmp_path / "etc/dropins/a.toml", "version = 2\n")
    from_cwd = write(tmp_path / "dropins/b.toml", "version = 2\n")
    relative = os.path.relpath(tmp_path / "dropins", "/") + "/*.toml"  # tmp/.../dropins/*.toml: from `/` it is tmp_path's
    literal = "dropins/a.toml"  # a literal entry joins the config's directory on every version

    _result, node_version = containerd_version(require_command("containerd", "containerd"), 60)  # the real binary: 1.6.20
    assert node_version is not None and relative_globs_from_cwd(node_version)
    globs, errors = imports_loaded([relative, literal], root, node_version)
    assert (globs, errors) == ({relative: [from_cwd], literal: [from_config_dir]}, [])
    for old in ((1, 6, 0), (1, 6, 28), (1, 7, 15)):
        assert imports_loaded([relative], root, old)[0] == {relative: [from_cwd]}
    for new in ((1, 6, 29), (1, 7, 16), (2, 2, 0), None):  # unknown: the current rule
        assert imports_loaded([relative], root, new)[0] == {relative: []}
    (tmp_path / "etc" / os.path.dirname(relative)).mkdir(parents=True)
    mirrored = write(tmp_path / "etc" / os.path.dirname(relative) / "c.toml", "version = 2\n")
    assert imports_loaded([relative], root, (1, 7, 16))[0] == {relative: [mirrored]}
    assert imports_loaded(["missing.toml", "[.toml"], root, (1, 7, 16))[0] == {"missing.toml": [], "[.toml": []}
    assert imports_loaded(["*[.toml"], root, (1, 7, 16))[1] != []


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


@pytest.mark.parametrize(("pattern", "directory"), [
    ("/etc/containerd/conf.d/*.toml", "/etc/containerd/conf.d"),
    ("/etc/*/conf.d/*.toml", "/etc"),
    ("/*.toml", "/"),
    ("conf.d/*.toml", "conf.d"),
    ("*.toml", "."),
])
def test_non_magic_directory(pattern, directory):
    assert non_magic_directory(pattern) == directory


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
