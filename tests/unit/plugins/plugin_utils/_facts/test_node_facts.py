"""NodeFacts: the facts of one node split into the parsed dump, the evidence and the daemon's view, and every file text
of the evidence parsed once per judgement, however many rules read it."""
import tomllib

from support.judged import runtimeclass

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.node_facts import NodeFacts
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._verdict import judge_and_explain

ROOT = 'version = 2\nimports = ["/etc/containerd/conf.d/*.conf"]\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n'
DROPIN = '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n  runtime_type = "io.containerd.runc.v2"\n'
FACTS = {
    "default_runtime_name": "runc", "source": "command", "containerd_version": "1.7.35",
    "runtimes": {"runc": {"runtime_type": "io.containerd.runc.v2", "binary_name": None, "options": {}}},
    "config_files": [{"path": "/etc/containerd/config.toml", "role": "root", "text": ROOT}],
    "dropin_dirs": [{"path": "/etc/containerd/conf.d", "exists": True, "texts_for": [".toml", ".conf"],
                     "entries": [{"name": "99-nvidia.toml", "is_file": True, "text": DROPIN}]}],
    "import_globs": [{"pattern": "/etc/containerd/conf.d/*.conf", "declared_in": "/etc/containerd/config.toml", "matches": []}],
    "binaries": None, "cdi_dirs": None,
    "daemon": {"state": "serving", "runtimes": ["runc"], "source": "crictl"},
}


def test_the_facts_are_split_by_what_they_are():
    node = NodeFacts(FACTS)
    assert node.evidence["config_files"] == FACTS["config_files"] and "runtimes" not in node.evidence
    assert node.dump["runtimes"] == FACTS["runtimes"] and "config_files" not in node.dump and "daemon" not in node.dump
    assert node.daemon == FACTS["daemon"] and node.loaded_daemon_view["runtimes"] == ["runc"]


def test_each_file_text_is_parsed_once_per_judgement(monkeypatch):
    parsed, loads = [], tomllib.loads
    monkeypatch.setattr(tomllib, "loads", lambda text: parsed.append(text) or loads(text))
    verdict = judge_and_explain(FACTS, [runtimeclass("nvidia")], node_name="n1", node_labels={})
    assert verdict["lines"] == ["MISSING=nvidia"]
    assert verdict["missing_explained"] == {"nvidia": ["DROPIN_NOT_IMPORTED", "IMPORT_GLOB_MATCHES_NOTHING"]}
    assert sorted(parsed) == sorted([ROOT, DROPIN])
