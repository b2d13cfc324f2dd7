"""A real containerd daemon (Debian's 1.6) with the CRI plugin, private to one test.

Everything the daemon writes lives under a short temp dir (unix socket paths must fit in 108 bytes):
``root``, ``state``, the ``[grpc]``/``[ttrpc]``/``[debug]`` sockets, CNI and ``opt`` paths. It is started
with ``setsid`` as root and stopped by its PID. Without root or the binary the tests skip locally and
fail under CI (support.tools.require_tool).
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.tools import require_command, require_tool

BOOT_SECONDS = 60
STOP_SECONDS = 30


@dataclass
class Daemon:
    base_dir: Path
    config_path: Path
    socket: Path
    log_path: Path
    process: subprocess.Popen

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")


def daemon_settings(base_dir: Path) -> str:
    """The top of a root config: everything the daemon would otherwise share with the host."""
    return (
        f'root = "{base_dir}/root"\n'
        f'state = "{base_dir}/state"\n'
        f'[grpc]\n  address = "{base_dir}/c.sock"\n'
        f'[ttrpc]\n  address = "{base_dir}/c.sock.ttrpc"\n'
        f'[debug]\n  address = "{base_dir}/debug.sock"\n'
        f'[plugins."io.containerd.internal.v1.opt"]\n  path = "{base_dir}/opt"\n'
    )


def cri_settings(base_dir: Path) -> str:
    return (
        '[plugins."io.containerd.grpc.v1.cri"]\n'
        '  stream_server_port = "0"\n'
        '  [plugins."io.containerd.grpc.v1.cri".cni]\n'
        f'    bin_dir = "{base_dir}/cni/bin"\n'
        f'    conf_dir = "{base_dir}/cni/net.d"\n'
    )


def start_daemon(containerd_bin: str, base_dir: Path, config_path: Path) -> Daemon:
    log_path = base_dir / "containerd.log"
    with open(log_path, "wb") as log, open(os.devnull, "rb") as devnull:
        process = subprocess.Popen([containerd_bin, "--config", str(config_path)], stdin=devnull, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True, cwd="/")
    daemon = Daemon(base_dir, config_path, base_dir / "c.sock", log_path, process)
    deadline = time.monotonic() + BOOT_SECONDS
    # The gRPC socket serves once every plugin has loaded (or failed): "containerd successfully booted".
    while "containerd successfully booted" not in daemon.log():
        if process.poll() is not None or time.monotonic() > deadline:
            stop_daemon(daemon)
            raise RuntimeError(f"containerd did not boot (exit {process.poll()}):\n{daemon.log()[-3000:]}")
        time.sleep(0.1)
    return daemon


def stop_daemon(daemon: Daemon):
    if daemon.process.poll() is None:
        daemon.process.send_signal(signal.SIGTERM)
        try:
            daemon.process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            daemon.process.kill()
            daemon.process.wait(timeout=STOP_SECONDS)


@pytest.fixture
def containerd_daemon():
    """``containerd_daemon(write_tree)`` → a running Daemon; ``write_tree(base_dir)`` writes the config, returns its path."""
    containerd_bin = require_command("containerd", "containerd")
    require_tool(os.geteuid() == 0, "a containerd daemon needs root")
    started = []
    base_dirs = []

    def start(write_tree):
        base_dir = Path(tempfile.mkdtemp(prefix="ctrd-", dir="/tmp"))
        base_dirs.append(base_dir)
        daemon = start_daemon(containerd_bin, base_dir, write_tree(base_dir))
        started.append(daemon)
        return daemon

    try:
        yield start
    finally:
        for daemon in started:
            stop_daemon(daemon)
        for base_dir in base_dirs:
            shutil.rmtree(base_dir, ignore_errors=True)
