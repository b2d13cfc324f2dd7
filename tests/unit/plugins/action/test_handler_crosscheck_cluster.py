"""handler_crosscheck takes the cluster as a task argument; the old cluster_result_var still works, with a deprecation."""
import json
import os
import subprocess
import sys
from pathlib import Path

import yaml
from support.paths import REPO_ROOT

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.containerd_config import facts_from_dump

DUMP = REPO_ROOT / "inventory" / "demo" / "nodes" / "gpu-node-03" / "config-dump.toml"
CLUSTER = {"changed": False, "source": {"type": "file", "path": "x"}, "nodes": [], "pods": [],
           "runtimeclasses": [{"name": "nvidia-cdi", "handler": "nvidia-cdi", "node_selector": None}]}


def judged(tmp_path, judge_args):
    facts = facts_from_dump(DUMP.read_text(), source="file", source_name="gpu-node-03", version_text="1.6.20")
    playbook, saved = tmp_path / "play.yml", tmp_path / "result.json"
    playbook.write_text(yaml.safe_dump([{
        "hosts": "localhost", "gather_facts": False,
        "tasks": [
            {"ansible.builtin.set_fact": {"cluster": CLUSTER}},
            {"gpufleet.runtime_gate.handler_crosscheck": {"facts": facts, "node_name": "gpu-node-03", "node_labels": {},
                                                          "fail_on_verdict": False, **judge_args},
             "register": "verdict"},
            {"ansible.builtin.copy": {"content": "{{ verdict | to_json }}", "dest": str(saved)}},
        ],
    }]))
    environment = {**os.environ, "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
                   "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp")}
    completed = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
                                "-e", f"ansible_python_interpreter={sys.executable}", str(playbook)],
                               cwd=REPO_ROOT, env=environment, capture_output=True, text=True, check=False, timeout=300)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return json.loads(saved.read_text()), completed.stdout + completed.stderr


def test_the_cluster_as_an_argument_judges_without_a_warning(tmp_path):
    verdict, output = judged(tmp_path, {"cluster_result": "{{ cluster }}"})
    assert verdict["lines"] == ["MISSING=nvidia-cdi"]
    assert "DEPRECATION" not in output and "deprecat" not in output.lower()


def test_cluster_result_var_still_judges_and_warns_it_is_deprecated(tmp_path):
    verdict, output = judged(tmp_path, {"cluster_result_var": "cluster"})
    assert verdict["lines"] == ["MISSING=nvidia-cdi"]
    assert "cluster_result_var" in output and "deprecat" in output.lower(), output
