"""The role's verification after a restart asks the running daemon (real containerd 1.6 daemon, real ansible-playbook).

The daemon is started by this test on the node tree's config and is *not* restarted by the role (the restart
stand-in only logs): its view lacks the new runtime while the files' `config dump` has it. The verification
must judge the daemon's view (loaded_source: daemon), fail with MISSING=nvidia and restore the files. Judged
from the dump, as before containerd_runtimes_socket was passed, it would pass. The node's Python is the venv's
(it has grpcio, the module's gRPC client).
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from integration.daemon.conftest import cri_settings, daemon_settings, start_daemon, stop_daemon
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
