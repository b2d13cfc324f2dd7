"""CRI_UNAVAILABLE and PENDING_RESTART from a real running containerd 1.6.20 (private root, state and socket).

The daemon runs gpu-node-04's failure in a temp tree: a drop-in replaces the CRI table, `runc` is gone,
the CRI plugin fails validation and containerd runs on without CRI. Its status is read through the
production path (``containerd_facts.gather_surroundings`` → ``_cri_status`` → ``_daemon_view``).
"""
import importlib.util
import os
import shutil
import subprocess
import time

import pytest
from support.tools import require_tool
from support.judged_trees import CONTAINERD, V2_ROOT_RUNC, gathered_facts, only, verdict_of, write_tree

# Every test here runs real containerd (or its dumps): `make test` only.
pytestmark = pytest.mark.components

# gpu-node-04's root, with the daemon's root, state and sockets under the temp tree.
DAEMON_ROOT = V2_ROOT_RUNC.format(imports='"{d}/conf.d/*.toml"').replace(
    "version = 2\n", 'version = 2\nroot = "{d}/root"\nstate = "{d}/state"\n', 1
) + '\n[grpc]\n  address = "{d}/containerd.sock"\n\n[ttrpc]\n  address = "{d}/containerd.sock.ttrpc"\n'
NVIDIA_ONLY_DROPIN = """\
version = 2

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
"""


@pytest.fixture
def broken_cri_daemon(tmp_path):
    require_tool(os.geteuid() == 0 and os.access(CONTAINERD, os.X_OK), "needs root and /usr/bin/containerd to run a private daemon")
    require_tool(_has_grpc(), "grpcio is needed to read the daemon's CRI status without crictl")
    base = tmp_path / "ctrd"  # short: the socket path must stay under 108 bytes
    config = write_tree(base, {"config.toml": DAEMON_ROOT, "conf.d/99-nvidia.toml": NVIDIA_ONLY_DROPIN})
    socket = base / "containerd.sock"
    log = (tmp_path / "containerd.log").open("w")
    daemon = subprocess.Popen([CONTAINERD, "--config", str(config)], stdout=log, stderr=subprocess.STDOUT, cwd="/")
    try:
        for _attempt in range(200):
            if socket.exists() or daemon.poll() is not None:
                break
            time.sleep(0.1)
        assert socket.exists(), f"containerd did not create {socket}: {(tmp_path / 'containerd.log').read_text()[-2000:]}"
        yield config, socket
    finally:
        daemon.terminate()
        try:
            daemon.wait(timeout=20)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
        log.close()
        shutil.rmtree(base / "state", ignore_errors=True)


def _has_grpc():
    return importlib.util.find_spec("grpc") is not None


def test_cri_unavailable_from_a_real_daemon(broken_cri_daemon):
    config, socket = broken_cri_daemon
    facts = gathered_facts(config, ask_daemon=True, socket=str(socket), crictl_bin="/nonexistent/crictl")
    verdict = verdict_of(facts)
    assert facts["daemon"]["state"] == "cri_unavailable"
    assert verdict["loaded_source"] == "daemon" and verdict["loaded_runtimes"] == []
    assert verdict["lines"] == ["MISSING=nvidia", "MISSING=nvidia-cdi", "MISSING=runc"]
    finding = only(verdict, "CRI_UNAVAILABLE")
    assert finding["severity"] == "error" and finding["handlers"] == ["nvidia", "nvidia-cdi", "runc"]
    assert finding["evidence"]["socket"] == str(socket)
    # The files say why: the drop-in replaced the CRI table and took the default runtime with it.
    assert set(verdict["missing_explained"]["runc"]) == {"CRI_TABLE_REPLACED", "CRI_UNAVAILABLE", "DEFAULT_RUNTIME_UNDEFINED"}
