"""A private OpenSSH server on loopback addresses, for real-SSH Ansible runs without containers.

One ``sshd -f <conf>`` listens on several 127.0.0.x addresses (all of 127/8 is routed to ``lo`` without any
set-up), with its own host key, a fresh client key authorised for root, and every file under one work dir.
It is stopped through its PID file.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

SSHD_BIN = Path("/usr/sbin/sshd")
SSH_KEYGEN = "ssh-keygen"
MISSING_SSHD_MESSAGE = "openssh-server is not installed: run make test / apt-get install openssh-server"
# sshd refuses more than 16 ListenAddress sockets ("Too many listen sockets", MAX_LISTEN_SOCKS in sshd.c).
MAX_LISTEN_ADDRESSES = 16


@dataclass
class SshServer:
    addresses: list
    port: int
    work_dir: Path
    client_key: Path
    pid_file: Path
    log_file: Path
    process: subprocess.Popen | None = None

    def host_vars(self, address: str) -> dict:
        """Inventory variables that reach this server at ``address`` as root with the client key."""
        return {
            "ansible_connection": "ssh",
            "ansible_host": address,
            "ansible_port": self.port,
            "ansible_user": "root",
            "ansible_ssh_private_key_file": str(self.client_key),
            "ansible_ssh_common_args": "-o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no "
                                       "-o IdentitiesOnly=yes -o PasswordAuthentication=no",
            "ansible_python_interpreter": "/usr/bin/python3",
        }

    def log_text(self) -> str:
        return self.log_file.read_text(errors="replace") if self.log_file.exists() else ""


def _port_is_free(address: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((address, port))
        except OSError:
            return False
    return True


def free_port(addresses, first=22000, last=22999) -> int:
    """A port free on every address; spread by PID so parallel sessions rarely probe the same ports."""
    span = last - first + 1
    start = first + (os.getpid() * 7) % span
    for offset in range(span):
        port = first + (start - first + offset) % span
        if all(_port_is_free(address, port) for address in addresses):
            return port
    raise RuntimeError(f"no free TCP port in {first}-{last} on {', '.join(addresses)}")


def _keygen(path: Path):
    subprocess.run([SSH_KEYGEN, "-q", "-t", "ed25519", "-N", "", "-C", path.name, "-f", str(path)],
                   check=True, capture_output=True, timeout=30)


def _write_config(server: SshServer, host_key: Path, authorized_keys: Path) -> Path:
    config_lines = [f"ListenAddress {address}:{server.port}" for address in server.addresses] + [
        f"HostKey {host_key}",
        f"PidFile {server.pid_file}",
        f"AuthorizedKeysFile {authorized_keys}",
        "PermitRootLogin prohibit-password",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        # The work dir sits under /tmp (world-writable): StrictModes would reject the key files there.
        "StrictModes no",
        "MaxStartups 200:30:400",
        "MaxSessions 200",
        "LogLevel VERBOSE",
        "Subsystem sftp internal-sftp",
    ]
    config_path = server.work_dir / "sshd_config"
    config_path.write_text("\n".join(config_lines) + "\n", encoding="utf-8")
    return config_path


def _accepts(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=1) as connection:
            return connection.recv(64).startswith(b"SSH-")
    except OSError:
        return False


def start_sshd(work_dir: Path, addresses, port: int | None = None, timeout: float = 15.0) -> SshServer:
    """Start a private sshd on ``addresses`` and return once every address answers with an SSH banner."""
    if len(addresses) > MAX_LISTEN_ADDRESSES:
        raise ValueError(f"one sshd listens on at most {MAX_LISTEN_ADDRESSES} addresses, got {len(addresses)}")
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    # Privilege separation needs this directory; Debian creates it only from the service unit.
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    host_key, client_key = work_dir / "ssh_host_ed25519_key", work_dir / "client_ed25519"
    _keygen(host_key)
    _keygen(client_key)
    authorized_keys = work_dir / "authorized_keys"
    authorized_keys.write_text(Path(f"{client_key}.pub").read_text(), encoding="utf-8")
    server = SshServer(list(addresses), port or free_port(addresses), work_dir, client_key,
                       work_dir / "sshd.pid", work_dir / "sshd.log")
    config_path = _write_config(server, host_key, authorized_keys)
    check = subprocess.run([str(SSHD_BIN), "-t", "-f", str(config_path)], capture_output=True, text=True, check=False)
    if check.returncode != 0:
        raise RuntimeError(f"sshd rejects {config_path}: {check.stderr.strip()}")
    # -D keeps sshd a child of this process, so stopping it reaps it (a container's PID 1 may never reap
    # a detached daemon); it still writes its PID file. -E keeps its log out of the system journal.
    server.process = subprocess.Popen([str(SSHD_BIN), "-D", "-f", str(config_path), "-E", str(server.log_file)],
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + timeout
    pending = list(server.addresses)
    while pending:
        pending = [address for address in pending if not _accepts(address, server.port)]
        if pending and (time.monotonic() > deadline or server.process.poll() is not None):
            stop_sshd(server)
            raise RuntimeError(f"sshd did not accept on {pending} port {server.port} within {timeout}s; "
                               f"log:\n{server.log_text()}")
        if pending:
            time.sleep(0.05)
    return server


def _running(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return "\nState:\tZ" not in status


def stop_sshd(server: SshServer, timeout: float = 10.0):
    """Stop the listener whose PID is in the server's PID file, then reap it."""
    try:
        pid = int(server.pid_file.read_text().strip())
    except (FileNotFoundError, ValueError):
        pid = server.process.pid if server.process else None
    if pid is not None:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + timeout
        while _running(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _running(pid):
            os.kill(pid, signal.SIGKILL)
    if server.process is not None:
        try:
            server.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait()
