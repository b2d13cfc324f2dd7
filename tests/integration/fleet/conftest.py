"""Fixtures for fleet-level integration tests: containerd and sshd on this machine, and playbook runs.

Tools these tests need are real binaries. When one is absent the tests skip locally, but FAIL under CI
(env ``CI`` set): a CI run that silently skips its integration tests proves nothing.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import fleet as fleet_support
from support import sshd as sshd_support
from support.console import printed_results
from support.paths import REPO_ROOT
from support.tools import require_command, require_tool

CROSSCHECK_PLAYBOOK = REPO_ROOT / "playbooks" / "crosscheck.yml"
SSH_ADDRESSES = ("127.0.0.2", "127.0.0.3", "127.0.0.4")


@pytest.fixture(scope="session")
def containerd_bin() -> str:
    return require_command("containerd", "containerd")


@pytest.fixture(scope="module")
def ssh_server(tmp_path_factory):
    """A private sshd on 127.0.0.2-4 accepting the fixture's client key for root; stopped afterwards."""
    require_tool(sshd_support.SSHD_BIN.exists() and shutil.which("ssh") is not None,
                 sshd_support.MISSING_SSHD_MESSAGE)
    server = sshd_support.start_sshd(tmp_path_factory.mktemp("sshd"), list(SSH_ADDRESSES))
    try:
        yield server
    finally:
        sshd_support.stop_sshd(server)


@dataclass
class PlaybookRun:
    fleet: fleet_support.Fleet
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def verdicts(self) -> dict:
        return fleet_support.read_verdicts(self.fleet.verdicts_path)

    def failure_text(self, host_name: str) -> str:
        """Every ``fatal:``/``failed:`` result Ansible printed for ``host_name``: its ``msg`` as printed
        (real line breaks), then its other fields as one JSON line.

        ansible-core 2.19 may print an ``[ERROR]: Task failed`` block *before* a result, so only the result
        itself is attributable to the host.
        """
        blocks = []
        for result in printed_results(self.stdout, host_name):
            others = {key: value for key, value in result.items() if key != "msg"}
            blocks.append(f"{result.get('msg', '')}\n{json.dumps(others, sort_keys=True)}")
        return "\n".join(blocks)

    def missing_lines(self, host_name: str) -> set:
        return set(re.findall(r"MISSING=([A-Za-z0-9._-]+)", self.failure_text(host_name)))

    def explain(self) -> str:
        return f"rc={self.returncode} after {self.seconds:.1f}s\n--- stdout ---\n{self.stdout}\n--- stderr ---\n{self.stderr}"


def _run_crosscheck(fleet, *extra_args, timeout=300) -> PlaybookRun:
    """One real ``ansible-playbook playbooks/crosscheck.yml`` over the fleet's inventory and cluster file."""
    if fleet.verdicts_path.exists():
        fleet.verdicts_path.unlink()
    command = [str(Path(sys.executable).with_name("ansible-playbook")), str(CROSSCHECK_PLAYBOOK),
               "-i", str(fleet.inventory_path),
               "-e", f"runtime_gate_runtimeclasses_file={fleet.cluster_path}",
               "-e", f"runtime_gate_verdicts_file={fleet.verdicts_path}"]
    command += list(extra_args)
    environment = dict(os.environ)
    environment.update({
        "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_LOCAL_TEMP": str(fleet.base_dir / "ansible-tmp"),
        # Short and private: ControlPath sockets must fit in 108 bytes, and other sessions use ~/.ansible/cp.
        "ANSIBLE_SSH_CONTROL_PATH_DIR": tempfile.mkdtemp(prefix="rg-cp-"),
    })
    started = time.monotonic()
    completed = subprocess.run(command, cwd=REPO_ROOT, env=environment, capture_output=True, text=True,
                               timeout=timeout, check=False)
    _close_ssh_masters(Path(environment["ANSIBLE_SSH_CONTROL_PATH_DIR"]))
    return PlaybookRun(fleet, completed.returncode, completed.stdout, completed.stderr,
                       time.monotonic() - started)


def _close_ssh_masters(control_dir: Path):
    """End the ControlPersist masters of a run (they would outlive it by 60 s), then drop their sockets."""
    for socket_path in control_dir.iterdir():
        subprocess.run(["ssh", "-o", f"ControlPath={socket_path}", "-O", "exit", "control-master"],
                       capture_output=True, timeout=10, check=False)
    shutil.rmtree(control_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def run_crosscheck(containerd_bin):
    """``run_crosscheck(fleet, *extra_ansible_playbook_args)`` → PlaybookRun."""
    if not CROSSCHECK_PLAYBOOK.exists():
        pytest.fail(f"{CROSSCHECK_PLAYBOOK} does not exist", pytrace=False)
    return _run_crosscheck
