"""A test daemon (support.containerd_daemons.start_daemon) ends with the test process that started it.

A test process killed mid-run never calls ``stop``: before its watchdog, its daemons ran on (one was found two hours
later, stop 31's note), holding their namespaces, sockets and CPU. A Python process starts a daemon and is killed with
SIGKILL; the daemon must be gone within a few seconds.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from support.containerd_daemons import releases
from support.paths import REPO_ROOT

STARTER = """
import sys, time
from pathlib import Path
from support.containerd_daemons import releases, start_daemon
release = next(release for release in releases() if release.name == sys.argv[1])
daemon = start_daemon(release, Path(sys.argv[2]))
print(daemon.process.pid, daemon.work_dir, daemon.running(), flush=True)
time.sleep(600)
"""


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state == "Z"


def test_a_daemon_dies_with_the_test_process_that_started_it():
    release = releases()[-1]
    node_root = Path(tempfile.mkdtemp(prefix="lifetime-"))
    (node_root / "etc" / "containerd").mkdir(parents=True)
    (node_root / "etc" / "containerd" / "config.toml").write_text("version = 2\n" if release.name.startswith("1.") else "version = 3\n")
    starter = subprocess.Popen([sys.executable, "-c", STARTER, release.name, str(node_root)], stdout=subprocess.PIPE, text=True,
                               cwd=REPO_ROOT / "tests", env=dict(os.environ, PYTHONPATH=str(REPO_ROOT / "tests")))
    work_dir = daemon_pid = None
    try:
        pid_text, work_dir, running = starter.stdout.readline().split()
        daemon_pid = int(pid_text)
        assert running == "True" and not _gone(daemon_pid), f"containerd {release} did not start"
        os.kill(starter.pid, signal.SIGKILL)
        starter.wait(timeout=10)
        deadline = time.monotonic() + 10
        while not _gone(daemon_pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _gone(daemon_pid), f"containerd {release} (pid {daemon_pid}) outlived the killed test process"
    finally:
        if starter.poll() is None:
            starter.kill()
        if daemon_pid and not _gone(daemon_pid):
            os.killpg(daemon_pid, signal.SIGKILL)  # the daemon leads its own session (start_daemon)
        if work_dir:
            shutil.rmtree(work_dir, ignore_errors=True)
        shutil.rmtree(node_root, ignore_errors=True)
