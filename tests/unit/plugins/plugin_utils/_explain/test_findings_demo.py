"""The demo fleet explained: each broken node shows the right reason, the healthy node shows nothing.

Each node's tree (inventory/demo/nodes/<host>/) is gathered by the real node code as the node's root, and
judged from its committed dump (real containerd 1.6.20 output, its version from containerd-version.txt beside it)
against inventory/demo/cluster.yaml — what inventory/demo/README.md describes by hand.
"""
import pytest
from support.paths import REPO_ROOT

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.manifest import read_manifest_file
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.node_facts import NodeFacts
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._explain.findings import fleet_findings, runtimeclass_summary
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._verdict import judge_and_explain, unknown
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.evidence import gather, gather_surroundings

DEMO = REPO_ROOT / "inventory" / "demo"
CLUSTER = read_manifest_file(str(DEMO / "cluster.yaml"))

# host → (missing_explained, codes of every finding) — docs/usage.md's demo fleet table, as findings.
EXPECTED = {
    "gpu-node-01": ({}, set()),
    "gpu-node-02": ({"nvidia": ["DROPIN_NOT_IMPORTED", "IMPORT_GLOB_MATCHES_NOTHING"],
                     "nvidia-cdi": ["DROPIN_NOT_IMPORTED", "IMPORT_GLOB_MATCHES_NOTHING"]},
                    {"DROPIN_NOT_IMPORTED", "IMPORT_GLOB_MATCHES_NOTHING"}),
    "gpu-node-03": ({"nvidia-cdi": ["NOT_CONFIGURED_ANYWHERE"]}, set()),
    "gpu-node-04": ({handler: ["CRI_TABLE_REPLACED", "DEFAULT_RUNTIME_UNDEFINED"] for handler in ("nvidia", "nvidia-cdi", "runc")},
                    {"CRI_TABLE_REPLACED", "DEFAULT_RUNTIME_UNDEFINED"}),
    "gpu-node-05": ({"nvidia": ["V3_CONFIG_ON_1X"], "nvidia-cdi": ["V3_CONFIG_ON_1X"]}, {"V3_CONFIG_ON_1X"}),
    "gpu-node-06": ({}, {"DEFAULT_RUNTIME_NOT_RUNC"}),
    "gpu-node-07": ({"nvdia": ["NOT_CONFIGURED_ANYWHERE"]}, set()),
}


def demo_node_facts(node):
    """Facts as the demo gathers them: the committed dump, the node's tree as host_root (config files, drop-in dirs,
    the usr/bin stand-ins, etc/cdi), the containerd-version.txt beside the dump."""
    params = {"containerd_bin": None, "config_path": "/etc/containerd/config.toml", "host_root": str(node),
              "dump_file": str(node / "config-dump.toml"), "containerd_version": None, "timeout": 60,
              "dropin_dirs": ["/etc/containerd/conf.d"], "cdi_spec_dirs": ["/etc/cdi"], "ask_daemon": False,
              "socket": "/nonexistent.sock", "crictl_bin": "crictl"}
    evidence, error = gather(params)
    assert error is None, error
    return NodeFacts.from_evidence(gather_surroundings(params, evidence))


@pytest.fixture(scope="module")
def demo_verdicts():
    verdicts = {}
    for host in EXPECTED:
        node = DEMO / "nodes" / host
        facts = demo_node_facts(node)
        verdicts[host] = judge_and_explain(facts, CLUSTER["runtimeclasses"], node_name=host, nodes=CLUSTER["nodes"])
    verdicts["gpu-node-08"] = unknown("gpu-node-08", "host unreachable while gathering containerd facts: refused")
    return verdicts


@pytest.mark.parametrize("host", sorted(EXPECTED))
def test_each_demo_node_shows_its_reason(demo_verdicts, host):
    explained, finding_codes = EXPECTED[host]
    verdict = demo_verdicts[host]
    assert verdict["missing_explained"] == explained
    assert {finding["code"] for finding in verdict["findings"]} == finding_codes
    assert all(finding["host"] == host and finding["remedy"] and finding["message"] for finding in verdict["findings"])


def test_healthy_node_is_silent_for_every_row(demo_verdicts):
    # gpu-node-01 had every kind of evidence the rules read (files, globs, drop-in and CDI listings).
    verdict = demo_verdicts["gpu-node-01"]
    assert verdict["lines"] == ["OK"] and verdict["findings"] == []


def test_fleet_findings_name_the_typo_and_its_pods(demo_verdicts):
    findings = {finding["code"]: finding for finding in fleet_findings(list(demo_verdicts.values()), CLUSTER)}
    served_nowhere = findings["HANDLER_SERVED_NOWHERE"]
    assert served_nowhere["handlers"] == ["nvdia"] and "did you mean `nvidia`?" in served_nowhere["message"]
    assert served_nowhere["evidence"]["required_on"] == ["gpu-node-07"]
    pods = [pod for pod in CLUSTER["pods"] if pod["runtime_class"] == "nvidia-typo"]
    assert pods and len(served_nowhere["evidence"]["pods"]) == len(pods)
    stuck = [pod for pod in pods if pod["sandbox_failures"]]
    assert len(served_nowhere["evidence"]["sandbox_failures"]) == len(stuck)
    without_selector = findings["RUNTIMECLASS_WITHOUT_NODESELECTOR"]
    assert without_selector["evidence"]["runtimeclass"] == "nvidia"
    assert without_selector["evidence"]["nodes_lacking"] == ["gpu-node-02", "gpu-node-04", "gpu-node-05"]


def test_runtimeclass_summary(demo_verdicts):
    summary = {row["name"]: row for row in runtimeclass_summary(demo_verdicts, CLUSTER)}
    assert summary["nvidia"]["serving"] == ["gpu-node-01", "gpu-node-03", "gpu-node-06", "gpu-node-07"]
    assert summary["nvidia"]["missing"] == ["gpu-node-02", "gpu-node-04", "gpu-node-05"]
    assert summary["nvidia-typo"] == {"name": "nvidia-typo", "handler": "nvdia", "serving": [], "required": ["gpu-node-07"],
                                      "missing": ["gpu-node-07"]}
