"""_node_binaries: the runtime binaries a dump or the daemon names, stat'ed on this machine or under host_root."""
import os

import pytest
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.binaries import (
    runtime_binaries,
    shim_binary_name,
)
from support.containerd_trees import dump_text
from support.node_trees import node_tree, write


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
@pytest.mark.components
def test_binary_names_found_in_real_dumps(release, scenario, tmp_path):
    # The dump the real release prints for the tree: its runtimes' BinaryNames, the runc shim, runc.
    binaries = runtime_binaries(dump_text(scenario, release, tmp_path), None, str(tmp_path / "no-containerd"))
    assert {"/usr/bin/nvidia-container-runtime", "/usr/bin/nvidia-container-runtime.cdi",
            "containerd-shim-runc-v2", "runc"} <= set(binaries)
    assert all(stat_entry["kind"] in ("BinaryName", "shim", "default_runc") for stat_entry in binaries.values())


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
