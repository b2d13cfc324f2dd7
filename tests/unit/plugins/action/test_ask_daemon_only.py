"""The pre-release option name ``daemon`` is gone: containerd_facts and node_crosscheck refuse it by name."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support.paths import REPO_ROOT

# Every test here runs real containerd (or its dumps): `make test` only.
pytestmark = pytest.mark.components

CONFIG = "version = 2\n"
RUNTIMECLASSES = [{"name": "nvidia-cdi", "handler": "nvidia-cdi", "node_selector": None}]


def run_task(tmp_path, module, options):
    playbook, saved = tmp_path / "play.yml", tmp_path / "result.json"
    playbook.write_text(yaml.safe_dump([{
        "hosts": "localhost", "gather_facts": False,
        "tasks": [
            {module: options, "register": "result"},
            {"ansible.builtin.copy": {"content": "{{ result | to_json }}", "dest": str(saved)}},
        ],
    }]))
    environment = {**os.environ, "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
                   "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp"), "ANSIBLE_DEPRECATION_WARNINGS": "1"}
    completed = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
                                "-e", f"ansible_python_interpreter={sys.executable}", str(playbook)],
                               cwd=REPO_ROOT, env=environment, capture_output=True, text=True, check=False, timeout=300)
    return completed.returncode, completed.stdout + completed.stderr


@pytest.mark.parametrize("module,options", [
    ("gpufleet.runtime_gate.containerd_facts", {}),
    ("gpufleet.runtime_gate.node_crosscheck", {"runtimeclasses": RUNTIMECLASSES, "node_name": "gpu-node-03",
                                               "fail_on_verdict": False}),
], ids=["containerd_facts", "node_crosscheck"])
def test_daemon_is_refused_by_name(tmp_path, module, options):
    (tmp_path / "config.toml").write_text(CONFIG)
    args = {**options, "config_path": str(tmp_path / "config.toml"), "dropin_dirs": [], "cdi_spec_dirs": []}
    returncode, output = run_task(tmp_path, module, {**args, "daemon": False})
    assert returncode != 0 and "Unsupported parameters" in output and "daemon" in output, output
    assert "deprecat" not in output.lower(), output
