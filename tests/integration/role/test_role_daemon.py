"""The role's verification after a restart asks the running daemon (real containerd 1.6 daemon, real ansible-playbook).

The daemon is started by this test on the node tree's config and is *not* restarted by the role (the restart
stand-in only logs): its view lacks the new runtime while the files' `config dump` has it. The verification
must judge the daemon's view (loaded_source: daemon), fail with MISSING=nvidia and restore the files. Judged
from the dump, as before containerd_runtimes_socket was passed, it would pass. The node's Python is the venv's
(it has grpcio, the module's gRPC client).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from integration.daemon.conftest import cri_settings, daemon_settings, start_daemon, stop_daemon
from support.containerd_daemons import crictl
from support.tools import require_command, require_tool

from . import _support as s

ROLE_PLAYBOOK = Path(__file__).with_name("role.yml")


def test_a_restart_the_daemon_did_not_take_is_caught_from_its_view_and_rolled_back():
    containerd = require_command("containerd", "containerd")
    require_tool(os.geteuid() == 0, "a containerd daemon needs root")
    base = Path(tempfile.mkdtemp(prefix="rgv-", dir="/tmp"))  # unix socket paths must fit in 108 bytes
    daemon = None
    try:
        tree = base / "node"
        s.write_tree(tree, {"config.toml": "version = 2\n" + daemon_settings(base) + cri_settings(base) + s.RUNC_SYSTEMD})
        nvidia = s.make_executable(base / "bin" / "nvidia-container-runtime", "#!/bin/sh\nexit 0\n")
        standin = s.service_standin(base / "bin")
        s.write_inventory(base / "inventory.yml", {"node": {
            "ansible_python_interpreter": sys.executable,
            "containerd_runtimes_config_path": str(tree / "config.toml"),
            "containerd_runtimes_dropin_dir": str(tree / "conf.d"),
            "containerd_runtimes_restart_command": [str(standin), str(base / "restarts"), "ok"],
            "containerd_runtimes_ask_daemon": True,
            "containerd_runtimes_socket": str(base / "c.sock")}},
            {"containerd_runtimes_runtimes": [{"name": "nvidia", "binary_name": str(nvidia)}],
             "containerd_runtimes_wait_command": ["true"]})
        before = s.snapshot(tree)
        daemon = start_daemon(containerd, base, tree / "config.toml")
        run = s.run_playbook(ROLE_PLAYBOOK, base / "inventory.yml")
        assert run.recap()["node"]["failed"] == 1, run.explain()
        failure = run.failures("node")
        assert "Require every runtime of the plan loaded and served failed after the change" in failure, run.explain()
        assert "The previous files were restored and containerd answers again on node." in failure
        assert "MISSING=nvidia" in failure and "verified from the running daemon (loaded_source: daemon)" in failure
        assert s.snapshot(tree) == before
        assert (base / "restarts").read_text() == "restart\nrestart\n"
    finally:
        if daemon is not None:
            stop_daemon(daemon)
        shutil.rmtree(base, ignore_errors=True)


def test_an_edit_the_16_daemon_has_not_loaded_is_refused_then_goes_live_only_when_accepted():
    """Issue 23 items 2 and 3 on real containerd 1.6: the daemon runs with runc's SystemdCgroup = true, the line is then
    removed from config.toml without a restart. No socket and no wait command are given (the machine's /run/containerd
    is hidden): the role finds the daemon on the [grpc] address of the node's configuration, refuses the change naming
    the pending key, and with the key accepted restarts for real, waits with ctr on that socket and verifies there."""
    containerd = require_command("containerd", "containerd")
    require_tool(os.geteuid() == 0, "a containerd daemon needs root")
    base = Path(tempfile.mkdtemp(prefix="rgp-", dir="/tmp"))  # unix socket paths must fit in 108 bytes
    pidfile = base / "containerd.pid"
    try:
        tree = base / "node"
        config = tree / "config.toml"
        s.write_tree(tree, {"config.toml": "version = 2\n" + daemon_settings(base) + cri_settings(base) + s.RUNC_SYSTEMD})
        restart = [str(s.make_executable(base / "bin" / "restart-containerd", s.RESTART_SCRIPT)), str(pidfile),
                   str(base / "containerd.log"), containerd, str(config)]
        gpu = s.make_executable(base / "bin" / "gpu-runtime", "#!/bin/sh\nexit 0\n")
        subprocess.run(restart, check=True, timeout=60, capture_output=True)
        (base / "containerd.pid.restarts").unlink()
        config.write_text(config.read_text().replace("    SystemdCgroup = true\n", ""))
        host = {"ansible_python_interpreter": sys.executable, "containerd_runtimes_config_path": str(config),
                "containerd_runtimes_dropin_dir": str(tree / "conf.d"), "containerd_runtimes_restart_command": restart,
                "containerd_runtimes_ask_daemon": True}
        runtimes = {"containerd_runtimes_runtimes": [{"name": "gpu2", "binary_name": str(gpu)}]}
        s.write_inventory(base / "inventory.yml", {"node": host}, runtimes)
        env = {"PATH": f"{Path(crictl()).parent}:{os.environ['PATH']}"}
        before = s.snapshot(tree)
        refused = s.run_playbook(ROLE_PLAYBOOK, base / "inventory.yml", "--check", "--diff", env=env, wrapper=s.HIDE_MACHINE_SOCKET)
        assert refused.recap()["node"]["failed"] == 1, refused.explain()
        assert "runtimes.runc.options.SystemdCgroup: True (running) -> (absent) (files)" in refused.failures("node"), refused.explain()
        assert s.snapshot(tree) == before and not (base / "containerd.pid.restarts").exists()

        s.write_inventory(base / "inventory.yml", {"node": host}, {
            **runtimes, "containerd_runtimes_accept_pending_edits": ["runtimes.runc"]})
        accepted = s.run_playbook(ROLE_PLAYBOOK, base / "inventory.yml", env=env, wrapper=s.HIDE_MACHINE_SOCKET)
        assert accepted.returncode == 0, accepted.explain()
        assert "verified from the running daemon (loaded_source: daemon)" in accepted.stdout, accepted.explain()
        info = subprocess.run([crictl(), "--runtime-endpoint", f"unix://{base / 'c.sock'}", "info"], capture_output=True,
                              text=True, timeout=60, check=True, env=dict(os.environ, HOME=str(base))).stdout
        served = json.loads(info)["config"]["containerd"]["runtimes"]
        assert "gpu2" in served and not (served["runc"].get("options") or {}).get("SystemdCgroup"), served
    finally:
        if pidfile.exists() and pidfile.read_text().strip():
            try:
                os.kill(int(pidfile.read_text()), signal.SIGTERM)
            except ProcessLookupError:
                pass
        shutil.rmtree(base, ignore_errors=True)
