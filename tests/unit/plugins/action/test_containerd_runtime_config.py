"""containerd_runtime_config parses each ``config dump`` once (issue 26 §2): the node's current dump and the candidate's
are each parsed into one ``_change/loaded_config.LoadedConfig`` that the facts, the proof, the whole-config comparison,
the effective change and the socket read, instead of each parsing the text again.

A real task run: ansible-playbook with the real action, the real probe and the real containerd 1.6 binary (Debian's)
on a tree under tmp_path, in a process whose ``tomllib.loads`` records every text it is given (the worker that runs
the action is forked from it). No daemon: ``ask_daemon: false``, so the node is read once and the candidate dumped once.
"""
import json
import os
import subprocess
import sys
import tomllib
from collections import Counter

import pytest
import yaml
from support.paths import REPO_ROOT
from support.tools import require_command

pytestmark = pytest.mark.components

# Every `containerd config dump` prints these top-level keys whatever the files say (_facts/containerd_config).
DUMP_KEYS = {"version", "root", "state", "plugins"}

COUNTING_PLAYBOOK = """\
import json, os, sys, tomllib

_loads = tomllib.loads


def recording_loads(text, *args, **kwargs):
    with open(os.environ["PARSE_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps(text) + "\\n")
    return _loads(text, *args, **kwargs)


tomllib.loads = recording_loads
from ansible.cli.playbook import main  # noqa: E402 - after the patch, so every import sees it

sys.argv[0] = "ansible-playbook"
main()
"""


def run_counted(tmp_path, options):
    """The task's registered result and every text ``tomllib.loads`` parsed in the controller's processes."""
    playbook, saved, log = tmp_path / "play.yml", tmp_path / "result.json", tmp_path / "parsed.jsonl"
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"gpufleet.runtime_gate.containerd_runtime_config": options, "register": "result", "no_log": True},
        {"ansible.builtin.copy": {"content": "{{ result | to_json }}", "dest": str(saved)}},
    ]}]))
    driver = tmp_path / "counting_playbook.py"
    driver.write_text(COUNTING_PLAYBOOK)
    environment = {**os.environ, "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
                   "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp"), "PARSE_LOG": str(log)}
    completed = subprocess.run([sys.executable, str(driver), "-i", "localhost,", "-c", "local",
                                "-e", f"ansible_python_interpreter={sys.executable}", str(playbook)],
                               cwd=REPO_ROOT, env=environment, capture_output=True, text=True, check=False, timeout=300)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    parsed = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []
    return json.loads(saved.read_text()), parsed


def test_each_config_dump_is_parsed_once_per_task(tmp_path):
    containerd = require_command("containerd", "containerd")
    etc = tmp_path / "etc" / "containerd"
    (etc / "conf.d").mkdir(parents=True)
    config = etc / "config.toml"
    config.write_text('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n')
    current_dump = subprocess.run([containerd, "--config", str(config), "config", "dump"], capture_output=True, text=True,
                                  check=True, cwd="/", timeout=60).stdout

    result, parsed = run_counted(tmp_path, {
        "runtimes": [{"name": "nvidia", "binary_name": "/bin/true"}], "config_path": str(config),
        "dropin_dir": str(etc / "conf.d"), "containerd_bin": containerd, "ask_daemon": False})

    assert not result.get("failed"), result.get("msg")
    assert sorted(result["changed_files"]) == sorted([str(config), str(etc / "conf.d" / "99-gpufleet.toml")])
    assert "nvidia" in result["proof"]["loaded_runtimes"]
    dumps = Counter(text for text in parsed if DUMP_KEYS <= set(tomllib.loads(text)))
    assert dumps[current_dump] == 1, f"the node's current dump was parsed {dumps[current_dump]} times"
    candidate = [text for text in dumps if "@@CANDIDATE@@" in text]
    assert len(candidate) == 1 and len(dumps) == 2, sorted(dumps.values())
    assert dumps[candidate[0]] == 1, f"the candidate's dump was parsed {dumps[candidate[0]]} times"
