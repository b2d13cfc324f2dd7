"""Nodes judged from real config trees: the facts production makes for a tree (the real node code, then the
controller's parse), judged and explained as the entry points do. Shared by the findings tests."""
import os
import shutil
import tempfile
from pathlib import Path

from support.containerd_trees import dumped
from support.files import write_files
from support.judged import runtimeclass
from support.tools import require_tool

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.node_facts import NodeFacts
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._verdict import judge_and_explain
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.evidence import gather, gather_surroundings

CONTAINERD = "/usr/bin/containerd"
GPU_LABELS = {"nvidia.com/gpu.present": "true", "gpufleet.example/pool": "main"}


CLASSES = [runtimeclass("nvidia"), runtimeclass("nvidia-cdi", node_selector={"nvidia.com/gpu.present": "true"})]

V2_ROOT_RUNC = """\
version = 2
imports = [{imports}]

[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
"""
V2_FULL_DROPIN = """\
version = 2

[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
    BinaryName = "/usr/sbin/runc"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia-cdi]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia-cdi.options]
    BinaryName = "/usr/sbin/runc"
"""


def params(config_path, **overrides):
    values = {"containerd_bin": CONTAINERD, "config_path": str(config_path), "dump_file": None, "timeout": 60,
              "dropin_dirs": [], "cdi_spec_dirs": [], "ask_daemon": False, "socket": "/nonexistent/containerd.sock",
              "crictl_bin": "crictl"}
    values.update(overrides)
    return values


def gathered_facts(config_path, **overrides):
    """Facts as production makes them: node module gather + surroundings, then the controller's parse."""
    require_tool(os.access(CONTAINERD, os.X_OK), f"{CONTAINERD} is not installed (apt-get install containerd)")
    module_params = params(config_path, **overrides)
    evidence, error = gather(module_params)
    assert error is None, error
    return NodeFacts.from_evidence(gather_surroundings(module_params, evidence)).facts


def write_tree(base, files):
    """Write ``{relative path: text}`` under ``base``; ``{d}`` in a text is the tree's absolute path. Returns the root
    config's path (``base/config.toml``)."""
    write_files(base, files, placeholder="{d}")
    return base / "config.toml"


# The binaries every fixture tree's runtimes name (tests/fixtures/containerd/README.md): the node has them all.
NODE_BINARIES = ("usr/bin/runc", "usr/bin/containerd-shim-runc-v2", "usr/bin/nvidia-container-runtime",
                 "usr/bin/nvidia-container-runtime.cdi")


def facts_at_etc(tree, dump_file, containerd_version, **overrides):
    """Facts for a tree that lies at /etc/containerd on its node, judged from a captured dump.

    The node is a directory of its own given as ``host_root``: the tree copied to its etc/containerd, and stand-ins for
    the runtime binaries the fixtures name, so absolute node paths in ``imports`` resolve inside it and nothing of this
    machine is read.
    """
    node_root = Path(tempfile.mkdtemp(prefix="node-"))
    shutil.copytree(tree, node_root / "etc" / "containerd")
    for binary in NODE_BINARIES:
        (node_root / binary).parent.mkdir(parents=True, exist_ok=True)
        (node_root / binary).write_text("#!/bin/sh\nexit 0\n")
        (node_root / binary).chmod(0o755)
    module_params = params("/etc/containerd/config.toml", dump_file=str(dump_file), containerd_bin="/nonexistent/containerd",
                           dropin_dirs=["/etc/containerd/conf.d"], host_root=str(node_root), containerd_version=containerd_version,
                           **overrides)
    try:
        evidence, error = gather(module_params)
        assert error is None, error
        return NodeFacts.from_evidence(gather_surroundings(module_params, evidence)).facts
    finally:
        shutil.rmtree(node_root, ignore_errors=True)


def read_as_release(facts, version):
    """The same facts as if containerd ``version`` had printed the dump (version-gated rules)."""
    exact = [int(part) for part in version.split(".")]
    facts["containerd_version"] = version
    facts["containerd_release"] = {"low": exact, "high": exact, "text": version, "source": "the test"}


def real_dump_facts(tmp_path, scenario, release_name, extra=None):
    """``(dump, facts)``: the scenario tree (with ``extra`` files) dumped by the real release, and the facts the node
    code gathers for that tree at /etc/containerd, judged from that dump as the release's."""
    dump = dumped(scenario, release_name, tmp_path, extra)
    assert dump.returncode == 0, f"containerd {dump.release} refused the tree: {dump.stderr[-600:]}"
    return dump, facts_at_etc(dump.etc, dump.path, dump.release.version)


def verdict_of(facts, classes=None):
    """The verdict with its explanation, as node_crosscheck and rc-crosscheck return it."""
    return judge_and_explain(facts, classes or CLASSES, node_name="node-under-test", node_labels=GPU_LABELS)


def only(verdict, code):
    found = [finding for finding in verdict["findings"] if finding["code"] == code]
    assert len(found) == 1, f"expected one {code}, got {[finding['code'] for finding in verdict['findings']]}"
    return found[0]


def codes(verdict):
    return {finding["code"] for finding in verdict["findings"]}


def line_of(path, text):
    return next(number for number, line in enumerate(path.read_text().splitlines(), start=1) if text in line)
