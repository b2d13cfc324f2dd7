"""One way to run the real ansible-playbook of the test venv: the repository's ansible.cfg, no colour, captured output."""
import os
import subprocess
import sys
from pathlib import Path

from support.paths import REPO_ROOT

ANSIBLE_PLAYBOOK = Path(sys.executable).with_name("ansible-playbook")


def ansible_playbook(playbook, inventory, *args, env=None, cwd=REPO_ROOT, timeout=300, wrapper=()) -> subprocess.CompletedProcess:
    """``ansible-playbook -i inventory playbook *args`` (``wrapper``: a command prefix such as ``unshare …``); ``env``
    adds to this process's environment. Never raises on a failing run: the caller asserts on the outcome."""
    environment = {**os.environ, "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1", **(env or {})}
    command = [*wrapper, str(ANSIBLE_PLAYBOOK), "-i", str(inventory), str(playbook), *args]
    return subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=timeout, check=False)
