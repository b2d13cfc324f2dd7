"""A test daemon (support.containerd_daemons.start_daemon) keeps everything under /run to its own mount namespace.

containerd 2.x starts NRI by default, which binds /var/run/nri/nri.sock (a path under /run): before the namespace had
a /run of its own, every 2.x daemon of the test suite replaced this machine's /run/nri/nri.sock, and two daemons starting
at once (the differential's parallel jobs) could fail with "bind: address already in use" — a daemon that did not start
for a reason of the test bench, counted as a disagreement. Each 2.x release is started and must serve its NRI socket
inside its namespace (seen through /proc/<pid>/root) while this machine's /run/nri is as it was.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from support.containerd_daemons import releases, remove_daemon, start_daemon

MACHINE_NRI = Path("/run/nri")


def _entries(directory: Path) -> dict[str, tuple[int, int]] | None:
    """name -> (inode, ctime) of each entry of ``directory`` (None when it does not exist): a socket bound again is new."""
    try:
        return {entry.name: (entry.inode(), entry.stat(follow_symlinks=False).st_ctime_ns) for entry in os.scandir(directory)}
    except FileNotFoundError:
        return None


@pytest.mark.parametrize("release_name", ["2.0", "2.4"])
def test_a_2x_daemon_binds_its_nri_socket_in_its_own_run(release_name):
    release = next(release for release in releases() if release.name == release_name)
    before = _entries(MACHINE_NRI)
    node_root = Path(tempfile.mkdtemp(prefix="nri-"))
    (node_root / "etc" / "containerd").mkdir(parents=True)
    (node_root / "etc" / "containerd" / "config.toml").write_text("version = 3\n")
    daemon = start_daemon(release, node_root)
    try:
        assert daemon.running(), daemon.log()[-2000:]
        # start_daemon's process is unshare, which execs sh, which execs containerd: the PID sees the namespace's root.
        inside = Path(f"/proc/{daemon.process.pid}/root") / "run" / "nri" / "nri.sock"
        assert inside.is_socket(), f"containerd {release} served no NRI socket in its namespace:\n{daemon.log()[-2000:]}"
        assert _entries(MACHINE_NRI) == before, "the daemon changed this machine's /run/nri"
    finally:
        remove_daemon(daemon)
        shutil.rmtree(node_root, ignore_errors=True)
