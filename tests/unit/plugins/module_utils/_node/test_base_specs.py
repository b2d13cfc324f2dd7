"""_node/base_specs: the base_runtime_spec files a dump names, checked under host_root (bounded), as the CRI plugin
opens them (tests/integration/daemon/test_daemon_startup_rules.py shows the daemons agree)."""
import os

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.base_specs import (
    MAX_BASE_SPEC_BYTES,
    MAX_BASE_SPECS,
    base_runtime_specs,
)

DUMP = """version = 2
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.a]
  base_runtime_spec = "/etc/containerd/a.json"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.b]
  base_runtime_spec = "/etc/containerd/b.json"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.c]
  base_runtime_spec = ""
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.d]
  base_runtime_spec = "/etc/containerd/\\u0064.json"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.e]
  base_runtime_spec = "/etc/containerd/list.json"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.f]
  base_runtime_spec = "/etc/containerd/big.json"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.g]
  base_runtime_spec = "/etc/containerd"
"""


def _tree(tmp_path):
    etc = tmp_path / "etc" / "containerd"
    etc.mkdir(parents=True)
    (etc / "a.json").write_text('{"ociVersion": "1.1.0"}')
    (etc / "b.json").write_text("version = 2\n")
    (etc / "d.json").write_text("null")
    (etc / "list.json").write_text("[1]")
    with open(etc / "big.json", "wb") as handle:
        handle.truncate(MAX_BASE_SPEC_BYTES + 1)
    return str(tmp_path)


def test_each_named_file_is_checked_under_host_root(tmp_path):
    specs = base_runtime_specs(DUMP, host_root=_tree(tmp_path))
    states = {path: entry["state"] for path, entry in specs.items()}
    assert states == {"/etc/containerd/a.json": "ok", "/etc/containerd/b.json": "invalid", "/etc/containerd/d.json": "ok",
                      "/etc/containerd/list.json": "invalid", "/etc/containerd/big.json": "unchecked",
                      "/etc/containerd": "invalid"}
    assert base_runtime_specs(DUMP.replace("a.json", "gone.json"), host_root=str(tmp_path))["/etc/containerd/gone.json"] == {
        "state": "missing", "detail": "does not exist"}


def test_the_number_of_files_looked_at_is_bounded(tmp_path):
    many = "".join(f'  base_runtime_spec = "/spec/{index}.json"\n' for index in range(MAX_BASE_SPECS * 20))
    specs = base_runtime_specs(many, host_root=str(tmp_path))
    assert len(specs) == MAX_BASE_SPECS + 1
    assert list(specs.values())[-1]["state"] == "unchecked"
    assert os.listdir(tmp_path) == []
