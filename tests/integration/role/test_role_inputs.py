"""The role's inputs are refused before the node is read, in check mode too.

The first probe of containerd_runtime_config globs the import pattern (``<dropin_dir>/*.toml``) and reads what it
matches; a drop-in directory such as /etc/cron.d, or a drop-in name with a newline, must fail the task before that.
The containerd binary given does not exist: a task that got as far as the node would fail on that instead.
"""
import json
import os
import subprocess

import pytest
from support.paths import REPO_ROOT

VENV_PYTHON = REPO_ROOT / ".venv" / "bin" / "python"


def run_check_mode(**args):
    module_args = {"runtimes": [{"name": "nvidia", "binary_name": "/usr/bin/nvidia-container-runtime"}],
                   "containerd_bin": "/nonexistent/containerd", **args}
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO_ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.minimal")
    completed = subprocess.run(
        [str(REPO_ROOT / ".venv" / "bin" / "ansible"), "localhost", "-c", "local", "-i", "localhost,", "--check",
         "-m", "gpufleet.runtime_gate.containerd_runtime_config", "-a", json.dumps(module_args),
         "-e", f"ansible_python_interpreter={VENV_PYTHON}"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=180, check=False)
    return completed.returncode, completed.stdout + completed.stderr


@pytest.mark.parametrize(("args", "refusal"), [
    ({"dropin_dir": "/etc/cron.d"}, "option dropin_dir '/etc/cron.d' is outside /etc/containerd"),
    ({"dropin_dir": "/etc/containerd/../cron.d"}, "option dropin_dir '/etc/cron.d' is outside /etc/containerd"),
    ({"dropin_name": "99-gpufleet.toml\n"}, "option dropin_name '99-gpufleet.toml\\\\n' must be a plain file name"),
    ({"runtimes": [{"name": "nvidia\n"}]}, "runtime name 'nvidia\\\\n' is not a DNS-1123 label"),
])
def test_bad_inputs_fail_in_check_mode_before_the_node_is_read(args, refusal):
    returncode, output = run_check_mode(**args)
    assert returncode != 0 and "FAILED" in output, output
    assert refusal in output, output
    assert "/nonexistent/containerd" not in output.partition("\"msg\"")[2], "the node was probed before the inputs were checked"
