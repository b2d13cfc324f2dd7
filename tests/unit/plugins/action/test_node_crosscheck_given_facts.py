"""node_crosscheck given facts (or a registered containerd_facts result) judges them and contacts no node; the cluster
comes as an argument, as a stored variable, or not at all with expected_handlers. No deprecation warning either way."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support.paths import REPO_ROOT

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.containerd_config import facts_from_dump

DUMP = REPO_ROOT / "inventory" / "demo" / "nodes" / "gpu-node-03" / "config-dump.toml"
CLUSTER = {"changed": False, "source": {"type": "file", "path": "x"}, "nodes": [], "pods": [],
           "runtimeclasses": [{"name": "nvidia-cdi", "handler": "nvidia-cdi", "node_selector": None}]}
# A node module run would fail on these (UNKNOWN): the given facts are judged instead.
NO_NODE = {"containerd_bin": "/nonexistent/containerd", "config_path": "/nonexistent/config.toml"}
CASES = {
    "cluster_result": {"cluster_result": "{{ cluster }}"},
    "cluster_result_var": {"cluster_result_var": "cluster"},
    "gather_result": {"gather_result": "{{ {'changed': False, 'ansible_facts': {'containerd': facts}} }}",
                      "cluster_result": "{{ cluster }}"},
    "expected_served": {"expected_handlers": ["nvidia"]},
    "expected_missing": {"expected_handlers": ["nvidia-cdi"], "cluster_result_var": "no_such_variable"},
}


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("given_facts")
    facts = facts_from_dump(DUMP.read_text(), source="file", source_name="gpu-node-03", version_text="1.6.20")
    playbook, saved = tmp_path / "play.yml", tmp_path / "result.json"
    tasks = [{"ansible.builtin.set_fact": {"cluster": CLUSTER, "facts": facts}}]
    for case, options in CASES.items():
        arguments = {**NO_NODE, "node_name": "gpu-node-03", "node_labels": {}, "fail_on_verdict": False, **options}
        if "gather_result" not in options:
            arguments["facts"] = "{{ facts }}"
        tasks.append({"gpufleet.runtime_gate.node_crosscheck": arguments, "register": case})
    results = "{{ {" + ", ".join(f"'{case}': {case}" for case in CASES) + "} | to_json }}"
    tasks.append({"ansible.builtin.copy": {"content": results, "dest": str(saved)}})
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": tasks}]))
    environment = {**os.environ, "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
                   "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp"), "ANSIBLE_DEPRECATION_WARNINGS": "1"}
    completed = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
                                "-e", f"ansible_python_interpreter={sys.executable}", str(playbook)],
                               cwd=REPO_ROOT, env=environment, capture_output=True, text=True, check=False, timeout=300)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return json.loads(saved.read_text()), completed.stdout + completed.stderr


@pytest.mark.parametrize("case", ["cluster_result", "cluster_result_var", "gather_result"])
def test_the_given_facts_are_judged_against_the_cluster(judged, case):
    verdict = judged[0][case]
    assert (verdict["status"], verdict["lines"]) == ("MISSING", ["MISSING=nvidia-cdi"]), verdict


def test_expected_handlers_judge_without_the_cluster(judged):
    served, missing = judged[0]["expected_served"], judged[0]["expected_missing"]
    assert served["status"] == "OK" and "nvidia" in served["required_handlers"], served
    assert missing["lines"] == ["MISSING=nvidia-cdi"], missing
    (requirement,) = [entry for entry in missing["requirements"] if entry["handler"] == "nvidia-cdi"]
    assert requirement["required_by"] == ["expected_handlers (the task's own list)"]


def test_no_deprecation_warning(judged):
    assert "DEPRECATION" not in judged[1] and "deprecat" not in judged[1].lower(), judged[1]
