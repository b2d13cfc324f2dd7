"""A handler whose pods cannot start is not served: its shim (runtime_type → containerd-shim-<name>-<version>,
runtime/v2/shim/util.go) or, without BinaryName, its runc must exist on the node — and the finding names the file.

Each node is a directory of its own (host_root) holding the config at /etc/containerd and executable stand-ins for the
binaries it has; the dump is the config itself with the top-level root and state every dump prints, read as
containerd 1.6.20's, so no binary of this machine is asked.
"""
import pytest
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.node_facts import NodeFacts
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._verdict import judge_and_explain
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.evidence import gather, gather_surroundings

CONFIG = """\
version = 2

[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
    BinaryName = "/usr/bin/nvidia-container-runtime"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]
  runtime_type = "io.containerd.kata.v2"
"""
EVERY_BINARY = ("usr/bin/runc", "usr/bin/containerd-shim-runc-v2", "usr/bin/nvidia-container-runtime",
                "usr/bin/containerd-shim-kata-v2")
CLASSES = [{"name": name, "handler": name, "overhead_pod_fixed": None, "node_selector": None, "tolerations": []}
           for name in ("runc", "nvidia", "kata")]


def verdict_on_node(tmp_path, absent):
    node_root = tmp_path / "node"
    (node_root / "etc" / "containerd").mkdir(parents=True)
    (node_root / "etc" / "containerd" / "config.toml").write_text(CONFIG)
    for binary in EVERY_BINARY:
        if binary not in absent:
            (node_root / binary).parent.mkdir(parents=True, exist_ok=True)
            (node_root / binary).write_text("#!/bin/sh\nexit 0\n")
            (node_root / binary).chmod(0o755)
    dump = tmp_path / "config-dump.toml"
    dump.write_text('root = "/var/lib/containerd"\nstate = "/run/containerd"\n' + CONFIG)
    params = {"containerd_bin": "/nonexistent/containerd", "config_path": "/etc/containerd/config.toml",
              "dump_file": str(dump), "containerd_version": "1.6.20", "timeout": 10, "dropin_dirs": [],
              "cdi_spec_dirs": [], "ask_daemon": False, "socket": "/nonexistent.sock", "crictl_bin": "crictl",
              "host_root": str(node_root)}
    evidence, error = gather(params)
    assert error is None, error
    node = NodeFacts.from_evidence(gather_surroundings(params, evidence))
    return judge_and_explain(node, CLASSES, node_name="node-under-test", node_labels={})


def missing_files(verdict):
    return {finding["evidence"]["runtime"]: finding["evidence"]["binary"] for finding in verdict["findings"]
            if finding["code"] == "RUNTIME_BINARY_MISSING"}


def test_a_node_with_every_binary_serves_every_handler(tmp_path):
    verdict = verdict_on_node(tmp_path, absent=())
    assert verdict["missing_handlers"] == [] and missing_files(verdict) == {}


@pytest.mark.parametrize(("absent", "unserved"), [
    # The runc shim starts runc and every runtime built on it (BinaryName replaces only runc).
    (("usr/bin/containerd-shim-runc-v2",), {"runc": "containerd-shim-runc-v2", "nvidia": "containerd-shim-runc-v2"}),
    # runc is what a runc runtime without BinaryName runs; nvidia runs its own binary instead.
    (("usr/bin/runc",), {"runc": "runc"}),
    (("usr/bin/containerd-shim-kata-v2",), {"kata": "containerd-shim-kata-v2"}),
])
def test_a_handler_whose_shim_or_runc_is_absent_is_not_served(tmp_path, absent, unserved):
    verdict = verdict_on_node(tmp_path, absent)
    assert verdict["missing_handlers"] == sorted(unserved)
    assert missing_files(verdict) == unserved
    for name, binary in unserved.items():
        assert f"MISSING={name}" in verdict["lines"]
        message = next(finding["message"] for finding in verdict["findings"] if finding["code"] == "RUNTIME_BINARY_MISSING"
                       and finding["evidence"]["runtime"] == name)
        assert f"{binary!r}, which does not exist on the node" in message, message
