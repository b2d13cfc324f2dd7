"""_node_gather on real file trees: node paths mapped under host_root, file texts capped, links kept inside the root."""
import json
import os

import pytest
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.gather import (
    host_path,
    node_path_of,
    read_text_file,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.imports import walk_imports
from support.node_trees import write


def test_file_text_is_capped_and_must_be_utf8(tmp_path):
    big = write(tmp_path / "big.toml", "#" * 100)
    assert read_text_file(big, limit=10)["error"] == "is 100 bytes, larger than the 10 byte limit"
    assert read_text_file(big, limit=10)["size"] == 100
    latin1 = tmp_path / "latin1.toml"
    latin1.write_bytes("# r\xe9sum\xe9\n".encode("latin-1"))
    assert "not UTF-8" in read_text_file(str(latin1))["error"]
    assert read_text_file(str(tmp_path))["error"] == "is not a regular file"


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
