"""The deprecated option name ``daemon`` still works in containerd_facts and node_crosscheck, and says it is deprecated."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support.paths import REPO_ROOT
from support.tools import require_command

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
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return json.loads(saved.read_text()), completed.stdout + completed.stderr


@pytest.mark.parametrize("module,options", [
    ("gpufleet.runtime_gate.containerd_facts", {}),
    ("gpufleet.runtime_gate.node_crosscheck", {"runtimeclasses": RUNTIMECLASSES, "node_name": "gpu-node-03",
                                               "fail_on_verdict": False}),
], ids=["containerd_facts", "node_crosscheck"])
def test_daemon_is_ask_daemon_with_a_deprecation(tmp_path, module, options):
    # A live containerd (no dump file) with a socket that exists nowhere: asked, the daemon's view would name the
    # socket's absence; not asked, it says so.
    args = {**options, "containerd_bin": require_command("containerd", "containerd"), "config_path": str(tmp_path / "config.toml"),
            "socket": str(tmp_path / "no.sock"), "dropin_dirs": [], "cdi_spec_dirs": []}
    (tmp_path / "config.toml").write_text(CONFIG)
    asked, asked_output = run_task(tmp_path, module, {**args, "ask_daemon": False})
    aliased, aliased_output = run_task(tmp_path, module, {**args, "daemon": False})
    assert "daemon" in aliased_output and "deprecat" in aliased_output.lower(), aliased_output
    assert "deprecat" not in asked_output.lower(), asked_output
    if module.endswith("containerd_facts"):
        views = [result["ansible_facts"]["containerd"]["daemon"] for result in (asked, aliased)]
        assert views[0] == views[1] and "not asked" in json.dumps(views[0]), views
    else:
        assert asked["status"] == aliased["status"] and asked["daemon_runtimes"] is None and aliased["daemon_runtimes"] is None
