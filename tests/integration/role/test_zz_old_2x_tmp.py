"""The containerd_runtimes role on real containerd 2.2, 2.3 and 2.4 daemons, restarted for real.

Each release gets a fleet of two nodes (local connection), each a tree in a short temp dir whose root config names
private ``root``/``state`` and sockets, and a real daemon started on it before the role runs:

* ``node-v3``: the node's own version 3 root (runc with SystemdCgroup = true); the role writes a version 3 drop-in.
* ``node-managed``: ``containerd_runtimes_manage_root_config`` renders the root from ``root_settings`` — the same
  server settings the node runs with (private sockets, ``oom_score``, ``debug.level``, ``metrics.address``,
  ``grpc.max_recv_message_size``). On 2.3+ the rendered root is version 4, where a top-level ``[grpc]`` is ignored: the
  role must map the settings to their version 4 plugin tables, or the restarted daemon listens elsewhere and the
  verification (asking the daemon on its socket) fails.

The restart command really stops the daemon and starts it again on the files in place; the role verifies from the
restarted daemon's CRI view (real crictl on PATH). Sequence: check → apply (restart, verify) → check (no change) →
apply (no change, no restart) → independent validation with crictl on the running daemons. A last run with a
runtime whose binary the restarted daemon cannot find proves the rollback on a real daemon.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from support.containerd_daemons import crictl, releases
from support.tools import require_tool

from . import _support as s

ROLE_PLAYBOOK = Path(__file__).with_name("role.yml")
NVIDIA_PRESET = ("nvidia", "nvidia-cdi", "nvidia-legacy")
V3_RUNTIME = '"io.containerd.cri.v1.runtime"'
RUNC_SYSTEMD_V3 = f"""[plugins.{V3_RUNTIME}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
  [plugins.{V3_RUNTIME}.containerd.runtimes.runc.options]
    SystemdCgroup = true
"""


def play(inventory: Path, *args, env):
    return s.run_playbook(ROLE_PLAYBOOK, inventory, *args, env=env, wrapper=s.HIDE_MACHINE_SOCKET)


def server_settings(base: Path) -> dict:
    """What the node runs with besides runtimes, as top-level (version 2/3) settings."""
    return {
        "root": f"{base}/root", "state": f"{base}/state", "oom_score": -999,
        "grpc": {"address": f"{base}/c.sock", "max_recv_message_size": 16777216},
        "ttrpc": {"address": f"{base}/c.sock.ttrpc"},
        "debug": {"level": "info"},
        "metrics": {"address": "127.0.0.1:0"},
        # NRI (on by default in 2.x) binds /var/run/nri/nri.sock: two daemons restarted at once on this machine would
        # race for that one socket ("bind: address already in use"), so each node has its own.
        "plugins": {"io.containerd.internal.v1.opt": {"path": f"{base}/opt"},
                    "io.containerd.nri.v1.nri": {"socket_path": f"{base}/nri.sock"},
                    "io.containerd.grpc.v1.cri": {"stream_server_port": "0"}},
    }


def settings_toml(settings: dict) -> str:
    lines = [f'root = "{settings["root"]}"', f'state = "{settings["state"]}"', f'oom_score = {settings["oom_score"]}']
    for table in ("grpc", "ttrpc", "debug", "metrics"):
        lines.append(f"[{table}]")
        for key, value in settings[table].items():
            lines.append(f"  {key} = {value!r}".replace("'", '"'))
    lines.append(f'[plugins."io.containerd.internal.v1.opt"]\n  path = "{settings["plugins"]["io.containerd.internal.v1.opt"]["path"]}"')
    lines.append(f'[plugins."io.containerd.nri.v1.nri"]\n  socket_path = "{settings["plugins"]["io.containerd.nri.v1.nri"]["socket_path"]}"')
    lines.append('[plugins."io.containerd.grpc.v1.cri"]\n  stream_server_port = "0"')
    return "\n".join(lines) + "\n"


class Node:
    def __init__(self, name: str, base: Path, binary: str, bin_dir: Path):
        self.name, self.base, self.binary = name, base, binary
        self.tree = base / "etc"
        self.config = self.tree / "config.toml"
        self.pidfile, self.log = base / "containerd.pid", base / "containerd.log"
        self.socket = base / "c.sock"
        self.restart = [str(bin_dir / "restart-containerd"), str(self.pidfile), str(self.log), binary, str(self.config)]

    def start(self):
        completed = subprocess.run(self.restart, capture_output=True, text=True, timeout=60, check=False)
        assert completed.returncode == 0, completed.stderr + self.log.read_text()
        (self.base / "containerd.pid.restarts").unlink()

    def restarts(self) -> int:
        path = self.base / "containerd.pid.restarts"
        return len(path.read_text().splitlines()) if path.exists() else 0

    def stop(self):
        if self.pidfile.exists() and self.pidfile.read_text().strip():
            try:
                os.kill(int(self.pidfile.read_text()), signal.SIGTERM)
            except ProcessLookupError:
                return
            for _attempt in range(100):
                try:
                    os.kill(int(self.pidfile.read_text()), 0)
                except ProcessLookupError:
                    return
                time.sleep(0.1)

    def cri_runtimes(self) -> dict:
        completed = subprocess.run([crictl(), "--runtime-endpoint", f"unix://{self.socket}", "info", "-o", "json"],
                                   capture_output=True, text=True, timeout=60, check=False, env=dict(os.environ, HOME=str(self.base)))
        assert completed.returncode == 0, completed.stderr
        import json

        return json.loads(completed.stdout)["config"]["containerd"]["runtimes"]


def _release_ids():
    return ["2.2", "2.3", "2.4"]


@pytest.fixture(scope="module", params=_release_ids())
def fleet(request):
    require_tool(os.geteuid() == 0, "real containerd daemons need root")
    release = {item.name: item for item in releases()}[request.param]
    top = Path(tempfile.mkdtemp(prefix="rg2-", dir="/tmp"))  # unix socket paths must fit in 108 bytes
    bin_dir = top / "bin"
    s.make_executable(bin_dir / "restart-containerd", s.RESTART_SCRIPT)
    for suffix in ("", ".cdi", ".legacy"):
        s.make_executable(bin_dir / f"nvidia-container-runtime{suffix}", "#!/bin/sh\nexit 0\n")
    nodes = {name: Node(name, top / name, release.binary, bin_dir) for name in ("node-v3", "node-managed")}
    hosts = {}
    for name, node in nodes.items():
        settings = server_settings(node.base)
        s.write_tree(node.tree, {"config.toml": "version = 3\n" + settings_toml(settings) + RUNC_SYSTEMD_V3})
        (node.tree / "conf.d").mkdir()
        hosts[name] = {"containerd_runtimes_config_path": str(node.config), "containerd_runtimes_dropin_dir": str(node.tree / "conf.d"),
                       "containerd_runtimes_containerd_bin": release.binary, "containerd_runtimes_restart_command": node.restart,
                       "containerd_runtimes_ask_daemon": True}
    managed_settings = server_settings(nodes["node-managed"].base)
    managed_settings["plugins"][V3_RUNTIME.strip('"')] = {"containerd": {"runtimes": {"runc": {
        "runtime_type": "io.containerd.runc.v2", "options": {"SystemdCgroup": True}}}}}
    hosts["node-managed"].update(containerd_runtimes_manage_root_config=True, containerd_runtimes_root_settings=managed_settings)
    # The NVIDIA preset names no SystemdCgroup: each runtime must start from runc's table, as nvidia-ctk writes it.
    # No socket and no wait command given: the role must use the gRPC address the node's configuration names (its own
    # private socket; on 2.3+ in the version 4 grpc plugin table) and wait with the real ctr on it (issue 23 item 3).
    group_vars = {"containerd_runtimes_presets": ["nvidia"], "containerd_runtimes_nvidia_binary_dir": str(bin_dir),
                  "containerd_runtimes_runtimes": []}
    s.write_inventory(top / "inventory.yml", hosts, group_vars)
    env = {"PATH": f"{Path(crictl()).parent}:{os.environ['PATH']}"}
    runs = {}
    try:
        for node in nodes.values():
            node.start()
        before = {name: s.snapshot(node.tree) for name, node in nodes.items()}
        runs["check"] = play(top / "inventory.yml", "--check", "--diff", env=env)
        after_check = {name: s.snapshot(node.tree) for name, node in nodes.items()}
        runs["apply"] = play(top / "inventory.yml", "--diff", env=env)
        restarts_after_apply = {name: node.restarts() for name, node in nodes.items()}
        runs["check-again"] = play(top / "inventory.yml", "--check", "--diff", env=env)
        runs["apply-again"] = play(top / "inventory.yml", env=env)
        served = {name: node.cri_runtimes() for name, node in nodes.items()}
        restarts_after_again = {name: node.restarts() for name, node in nodes.items()}
        # Rollback on a real daemon: a runtime whose type names a shim the node lacks fails the verification.
        broken = dict(group_vars, containerd_runtimes_runtimes=[{"name": "kata", "runtime_type": "io.containerd.kata.v2"}])
        s.write_inventory(top / "inventory-broken.yml", {"node-v3": hosts["node-v3"]}, broken)
        before_broken = s.snapshot(nodes["node-v3"].tree)
        runs["broken"] = play(top / "inventory-broken.yml", env=env)
        after_broken = s.snapshot(nodes["node-v3"].tree)
        served_after_broken = nodes["node-v3"].cri_runtimes()
        # An edit the daemon has not loaded (issue 23 item 2): runc's SystemdCgroup removed from the file, no restart.
        node = nodes["node-v3"]
        node.config.write_text(node.config.read_text().replace("    SystemdCgroup = true\n", ""))
        pending_vars = dict(group_vars, containerd_runtimes_runtimes=[
            {"name": "gpu2", "binary_name": str(bin_dir / "nvidia-container-runtime")}])
        s.write_inventory(top / "inventory-pending.yml", {"node-v3": hosts["node-v3"]}, pending_vars)
        before_pending, restarts_before_pending = s.snapshot(node.tree), node.restarts()
        runs["pending-check"] = play(top / "inventory-pending.yml", "--check", "--diff", env=env)
        runs["pending-apply"] = play(top / "inventory-pending.yml", env=env)
        after_pending, restarts_after_pending = s.snapshot(node.tree), node.restarts()
        s.write_inventory(top / "inventory-accepted.yml", {"node-v3": hosts["node-v3"]}, dict(
            pending_vars, containerd_runtimes_accept_pending_edits=["runtimes.runc.options.SystemdCgroup"]))
        runs["pending-accepted"] = play(top / "inventory-accepted.yml", env=env)
        served_after_accepted = node.cri_runtimes()
        yield {"release": release, "nodes": nodes, "runs": runs, "before": before, "after_check": after_check,
               "restarts_after_apply": restarts_after_apply, "restarts_after_again": restarts_after_again, "served": served,
               "before_broken": before_broken, "after_broken": after_broken, "served_after_broken": served_after_broken,
               "pending_unchanged": after_pending == before_pending,
               "pending_restarts": restarts_after_pending - restarts_before_pending,
               "served_after_accepted": served_after_accepted}
    finally:
        for node in nodes.values():
            node.stop()
        shutil.rmtree(top, ignore_errors=True)


def test_check_mode_writes_nothing_and_restarts_nothing(fleet):
    run = fleet["runs"]["check"]
    assert run.returncode == 0, run.explain()
    assert fleet["after_check"] == fleet["before"]
    assert all(run.recap()[name]["changed"] > 0 for name in fleet["nodes"]), run.explain()
    # Issue 23 item 7: the new runtimes' keys at the release's defaults are counted, not listed; Ansible's own diff.
    assert "keys at the release defaults (listed with -v)" in run.stdout, run.explain()
    assert ".runtimes.nvidia-legacy.cni_conf_dir:" not in run.stdout, run.explain()
    assert ".runtimes.nvidia-legacy.options.BinaryName: (absent) -> " in run.stdout, run.explain()
    assert "\n+++ after: " + str(fleet["nodes"]["node-v3"].tree / "conf.d" / "99-gpufleet.toml") + "\n" in run.stdout, run.explain()


def test_apply_restarts_each_daemon_once_and_verifies_from_it(fleet):
    run = fleet["runs"]["apply"]
    assert run.returncode == 0, run.explain()
    assert fleet["restarts_after_apply"] == dict.fromkeys(fleet["nodes"], 1)
    assert run.stdout.count("verified from the running daemon (loaded_source: daemon)") == len(fleet["nodes"]), run.explain()


def test_second_check_and_apply_change_nothing(fleet):
    for name in ("check-again", "apply-again"):
        run = fleet["runs"][name]
        assert run.returncode == 0, run.explain()
        assert {host: run.recap()[host]["changed"] for host in fleet["nodes"]} == dict.fromkeys(fleet["nodes"], 0), run.explain()
    assert fleet["restarts_after_again"] == dict.fromkeys(fleet["nodes"], 1)


def test_running_daemons_serve_the_preset_with_runcs_options_and_keep_runc(fleet):
    """Independent of the role: crictl asks each restarted daemon on its private socket. The preset names no
    SystemdCgroup; nvidia-ctk copies runc's table into each new runtime, and so must the role on 2.x (issue 23 item 1)."""
    for name, runtimes in fleet["served"].items():
        for runtime in NVIDIA_PRESET:
            assert runtimes[runtime]["options"]["SystemdCgroup"] is True, (name, runtime, runtimes[runtime])
        assert runtimes["runc"]["options"]["SystemdCgroup"] is True, name


def test_managed_root_keeps_the_server_settings_at_the_version_this_release_reads(fleet):
    node = fleet["nodes"]["node-managed"]
    root = node.config.read_text()
    if fleet["release"].name == "2.2":
        assert "version = 3" in root
    else:
        # Version 4: the socket lives in the grpc server plugin's table (a top-level [grpc] would be ignored).
        assert "version = 4" in root and '"io.containerd.server.v1.grpc"' in root and "\n[grpc]" not in root
    # The restarted daemon listens where the node's settings say: the role's own verification asked it there.
    assert node.socket.is_socket()


def test_failed_verification_restores_the_files_and_the_daemon_serves_as_before(fleet):
    run = fleet["runs"]["broken"]
    assert run.recap()["node-v3"]["failed"] == 1, run.explain()
    assert "MISSING=kata" in run.failures("node-v3") or "kata" in run.failures("node-v3"), run.failures("node-v3")
    assert fleet["after_broken"] == fleet["before_broken"]
    assert set(fleet["served_after_broken"]) == {"runc", *NVIDIA_PRESET}


def test_an_edit_the_daemon_has_not_loaded_refuses_the_change_and_is_named(fleet):
    """Issue 23 item 2: --check --diff and apply both refuse, naming the key, its running and its file value."""
    for name in ("pending-check", "pending-apply"):
        run = fleet["runs"][name]
        assert run.recap()["node-v3"]["failed"] == 1, run.explain()
        failure = run.failures("node-v3")
        assert "runtimes.runc.options.SystemdCgroup: True (running) -> (absent) (files)" in failure, failure
        assert "containerd_runtimes_accept_pending_edits: ['runtimes.runc.options.SystemdCgroup']" in failure, failure
    assert fleet["pending_unchanged"] and fleet["pending_restarts"] == 0


def test_an_accepted_pending_edit_goes_live_with_the_change(fleet):
    run = fleet["runs"]["pending-accepted"]
    assert run.returncode == 0, run.explain()
    assert "runtimes.runc.options.SystemdCgroup: True (running) -> (absent) (files)" in run.stdout, run.explain()
    served = fleet["served_after_accepted"]
    assert "gpu2" in served and not served["runc"]["options"].get("SystemdCgroup"), served


def test_the_socket_and_the_wait_default_to_the_address_the_configuration_names(fleet):
    """Issue 23 item 3: no socket or wait command given; the machine's /run/containerd hidden. The apply run above
    verified from each daemon on its private socket (2.2: [grpc]; 2.3+: io.containerd.server.v1.grpc)."""
    run = fleet["runs"]["apply"]
    assert run.returncode == 0, run.explain()
    assert run.stdout.count("verified from the running daemon (loaded_source: daemon)") == len(fleet["nodes"]), run.explain()
