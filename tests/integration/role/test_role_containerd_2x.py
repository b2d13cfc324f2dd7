"""The containerd_runtimes role on real containerd 1.7, 2.2, 2.3 and 2.4 daemons, restarted for real.

Each release gets one fleet of four nodes (local connection), each a tree in a short temp dir whose root config names
private ``root``/``state`` and sockets, and a real daemon started on it before the role runs. The daemons and trees are
set up once per release; every scenario is a node of the same three playbook runs (check, apply, apply again), so the
fleet costs three ansible-playbook runs per release:

* ``node-own``: the node's own root at the version its release writes (1.7: 2; 2.x: 3), runc with SystemdCgroup = true;
  the NVIDIA preset, which names no SystemdCgroup (issue 23 item 1). On 1.7 also ``containerd_runtimes_enable_cdi: true``,
  which 1.7 serves (item 6; 1.6 refuses it: test_role_containerd_16.py).
* ``node-managed``: ``containerd_runtimes_manage_root_config`` renders the root from ``root_settings`` — the same
  server settings the node runs with (private sockets, ``oom_score``, ``debug.level``, ``metrics.address``,
  ``grpc.max_recv_message_size``). On 2.3+ the rendered root is version 4, where a top-level ``[grpc]`` is ignored: the
  role must map the settings to their version 4 plugin tables, or the restarted daemon listens elsewhere and the
  verification (asking the daemon on its socket) fails.
* ``node-pending``: runc's SystemdCgroup removed from config.toml after the daemon started, no restart (item 2): the
  check and the apply run refuse, naming the key; the third run accepts it and it goes live.
* ``node-kata``: a runtime whose shim the node lacks: refused before anything is written, the daemon untouched.

No socket and no wait command is given: the role must use the gRPC address the node's configuration names (item 3),
with the machine's /run/containerd hidden. The restart command really stops the daemon and starts it again on the files
in place; the role verifies from the restarted daemon's CRI view (real crictl on PATH), and the test asks each daemon
with crictl on its private socket afterwards.
"""
from __future__ import annotations

import json
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

    def cri_config(self) -> dict:
        """The running daemon's CRI configuration, as crictl reads it on the node's private socket."""
        completed = subprocess.run([crictl(), "--runtime-endpoint", f"unix://{self.socket}", "info", "-o", "json"],
                                   capture_output=True, text=True, timeout=60, check=False, env=dict(os.environ, HOME=str(self.base)))
        assert completed.returncode == 0, completed.stderr
        return json.loads(completed.stdout)["config"]


GOOD = ("node-own", "node-managed")
REFUSED = ("node-pending", "node-kata")
ONE_X = ("1.7",)


def _release_ids():
    return ["1.7", "2.2", "2.3", "2.4"]


def _runc_table(release_name: str) -> str:
    return s.RUNC_SYSTEMD if release_name in ONE_X else RUNC_SYSTEMD_V3


def _root(release_name: str, settings: dict) -> str:
    version = 2 if release_name in ONE_X else 3
    return f"version = {version}\n" + settings_toml(settings) + _runc_table(release_name)


@pytest.fixture(scope="module", params=_release_ids())
def fleet(request):
    require_tool(os.geteuid() == 0, "real containerd daemons need root")
    release = {item.name: item for item in releases()}[request.param]
    top = Path(tempfile.mkdtemp(prefix="rg2-", dir="/tmp"))  # unix socket paths must fit in 108 bytes
    bin_dir = top / "bin"
    s.make_executable(bin_dir / "restart-containerd", s.RESTART_SCRIPT)
    for suffix in ("", ".cdi", ".legacy"):
        s.make_executable(bin_dir / f"nvidia-container-runtime{suffix}", "#!/bin/sh\nexit 0\n")
    nodes = {name: Node(name, top / name, release.binary, bin_dir) for name in (*GOOD, *REFUSED)}
    hosts = {}
    for name, node in nodes.items():
        s.write_tree(node.tree, {"config.toml": _root(release.name, server_settings(node.base))})
        (node.tree / "conf.d").mkdir()
        hosts[name] = {"containerd_runtimes_config_path": str(node.config), "containerd_runtimes_dropin_dir": str(node.tree / "conf.d"),
                       "containerd_runtimes_containerd_bin": release.binary, "containerd_runtimes_restart_command": node.restart,
                       "containerd_runtimes_ask_daemon": True}
    managed_settings = server_settings(nodes["node-managed"].base)
    runc = {"runc": {"runtime_type": "io.containerd.runc.v2", "options": {"SystemdCgroup": True}}}
    if release.name in ONE_X:
        managed_settings["plugins"][s.CRI.strip('"')]["containerd"] = {"runtimes": runc}
    else:
        managed_settings["plugins"][V3_RUNTIME.strip('"')] = {"containerd": {"runtimes": runc}}
    hosts["node-managed"].update(containerd_runtimes_manage_root_config=True, containerd_runtimes_root_settings=managed_settings)
    if release.name in ONE_X:
        hosts["node-own"]["containerd_runtimes_enable_cdi"] = True
    hosts["node-pending"]["containerd_runtimes_runtimes"] = [{"name": "gpu2", "binary_name": str(bin_dir / "nvidia-container-runtime")}]
    # A runtime type whose shim the node lacks: the proof refuses it before anything is written.
    hosts["node-kata"].update(containerd_runtimes_presets=[], containerd_runtimes_runtimes=[
        {"name": "kata", "runtime_type": "io.containerd.kata.v2"}])
    # The NVIDIA preset names no SystemdCgroup: each runtime must start from runc's table, as nvidia-ctk writes it.
    # No socket and no wait command given: the role must use the gRPC address the node's configuration names (its own
    # private socket; on 2.3+ in the version 4 grpc plugin table) and wait with the real ctr on it (issue 23 item 3).
    group_vars = {"containerd_runtimes_presets": ["nvidia"], "containerd_runtimes_nvidia_binary_dir": str(bin_dir),
                  "containerd_runtimes_runtimes": []}
    inventory = top / "inventory.yml"
    s.write_inventory(inventory, hosts, group_vars)
    env = {"PATH": f"{Path(crictl()).parent}:{os.environ['PATH']}"}
    runs = {}
    try:
        for node in nodes.values():
            node.start()
        # An edit the daemon has not loaded (issue 23 item 2): runc's SystemdCgroup removed from the file, no restart.
        pending = nodes["node-pending"]
        pending.config.write_text(pending.config.read_text().replace("    SystemdCgroup = true\n", ""))
        before = {name: s.snapshot(node.tree) for name, node in nodes.items()}
        runs["check"] = play(inventory, "--check", "--diff", env=env)
        after_check = {name: s.snapshot(node.tree) for name, node in nodes.items()}
        restarts_after_check = {name: node.restarts() for name, node in nodes.items()}
        runs["apply"] = play(inventory, "--diff", env=env)
        after_apply = {name: s.snapshot(node.tree) for name, node in nodes.items()}
        restarts_after_apply = {name: node.restarts() for name, node in nodes.items()}
        served_after_refusal = {name: nodes[name].cri_config()["containerd"]["runtimes"] for name in REFUSED}
        # The third run: the good nodes again (no change, no restart); the pending edit accepted, it goes live.
        hosts["node-pending"]["containerd_runtimes_accept_pending_edits"] = ["runtimes.runc.options.SystemdCgroup"]
        del hosts["node-kata"]
        s.write_inventory(inventory, hosts, group_vars)
        runs["again"] = play(inventory, env=env)
        config = {name: node.cri_config() for name, node in nodes.items()}
        restarts_after_again = {name: node.restarts() for name, node in nodes.items()}
        yield {"release": release, "nodes": nodes, "runs": runs, "before": before, "after_check": after_check,
               "after_apply": after_apply, "restarts_after_check": restarts_after_check,
               "restarts_after_apply": restarts_after_apply, "restarts_after_again": restarts_after_again,
               "served": {name: config[name]["containerd"]["runtimes"] for name in nodes}, "cri_config": config,
               "served_after_refusal": served_after_refusal}
    finally:
        for node in nodes.values():
            node.stop()
        shutil.rmtree(top, ignore_errors=True)


def test_check_mode_writes_nothing_and_restarts_nothing(fleet):
    run = fleet["runs"]["check"]
    assert fleet["after_check"] == fleet["before"]
    assert fleet["restarts_after_check"] == dict.fromkeys(fleet["nodes"], 0)
    recap = run.recap()
    assert all(recap[name]["changed"] > 0 and recap[name]["failed"] == 0 for name in GOOD), run.explain()
    # Issue 23 item 7: the new runtimes' keys at the release's defaults are counted, not listed; Ansible's own diff.
    assert "keys at the release defaults (listed with -v)" in run.stdout, run.explain()
    assert ".runtimes.nvidia-legacy.cni_conf_dir:" not in run.stdout, run.explain()
    assert ".runtimes.nvidia-legacy.options.BinaryName: (absent) -> " in run.stdout, run.explain()
    assert "\n+++ after: " + str(fleet["nodes"]["node-own"].tree / "conf.d" / "99-gpufleet.toml") + "\n" in run.stdout, run.explain()


def test_apply_restarts_each_daemon_once_and_verifies_from_it(fleet):
    run = fleet["runs"]["apply"]
    recap = run.recap()
    assert all(recap[name]["changed"] > 0 and recap[name]["failed"] == 0 for name in GOOD), run.explain()
    assert fleet["restarts_after_apply"] == {**dict.fromkeys(GOOD, 1), **dict.fromkeys(REFUSED, 0)}
    assert run.stdout.count("verified from the running daemon (loaded_source: daemon)") == len(GOOD), run.explain()


def test_a_second_apply_changes_nothing_and_restarts_nothing(fleet):
    run = fleet["runs"]["again"]
    assert {host: run.recap()[host]["changed"] for host in GOOD} == dict.fromkeys(GOOD, 0), run.explain()
    assert {host: fleet["restarts_after_again"][host] for host in GOOD} == dict.fromkeys(GOOD, 1)


def test_running_daemons_serve_the_preset_with_runcs_options_and_keep_runc(fleet):
    """Independent of the role: crictl asks each restarted daemon on its private socket. The preset names no
    SystemdCgroup; nvidia-ctk copies runc's table into each new runtime, and so must the role on 1.7 and 2.x (issue 23
    item 1)."""
    for name in GOOD:
        runtimes = fleet["served"][name]
        for runtime in NVIDIA_PRESET:
            assert runtimes[runtime]["options"]["SystemdCgroup"] is True, (name, runtime, runtimes[runtime])
        assert runtimes["runc"]["options"]["SystemdCgroup"] is True, name


def test_enable_cdi_is_served_from_17_on(fleet):
    """Issue 23 item 6 where it applies: 1.7 reads enable_cdi (off by default), and node-own's daemon serves CDI after
    the role set it (node-managed, which does not set it, shows 1.7's default). 2.x has CDI on by default (2.4's CRI
    status no longer lists the switch). The 1.6 refusal is test_role_containerd_16.py's host cdi-on-16."""
    served = {name: fleet["cri_config"][name].get("enableCDI") for name in GOOD}
    if fleet["release"].name in ONE_X:
        assert served == {"node-own": True, "node-managed": False}
    else:
        assert set(served.values()) <= {True, None}, served


def test_managed_root_keeps_the_server_settings_at_the_version_this_release_reads(fleet):
    node = fleet["nodes"]["node-managed"]
    root = node.config.read_text()
    if fleet["release"].name in ONE_X:
        assert "version = 2" in root
    elif fleet["release"].name == "2.2":
        assert "version = 3" in root
    else:
        # Version 4: the socket lives in the grpc server plugin's table (a top-level [grpc] would be ignored).
        assert "version = 4" in root and '"io.containerd.server.v1.grpc"' in root and "\n[grpc]" not in root
    # The restarted daemon listens where the node's settings say: the role's own verification asked it there.
    assert node.socket.is_socket()


def test_a_runtime_whose_shim_is_missing_is_refused_and_the_daemon_serves_as_before(fleet):
    for name in ("check", "apply"):
        run = fleet["runs"][name]
        assert run.recap()["node-kata"]["failed"] == 1, run.explain()
        assert "RUNTIME_BINARY_MISSING: runtime 'kata'" in run.failures("node-kata"), run.failures("node-kata")
    assert fleet["after_apply"]["node-kata"] == fleet["before"]["node-kata"]
    assert set(fleet["served_after_refusal"]["node-kata"]) == {"runc"}


def test_an_edit_the_daemon_has_not_loaded_refuses_the_change_and_is_named(fleet):
    """Issue 23 item 2: --check --diff and apply both refuse, naming the key, its running and its file value."""
    for name in ("check", "apply"):
        run = fleet["runs"][name]
        assert run.recap()["node-pending"]["failed"] == 1, run.explain()
        failure = run.failures("node-pending")
        assert "runtimes.runc.options.SystemdCgroup: True (running) -> (absent) (files)" in failure, failure
        assert "option accept_pending_edits: ['runtimes.runc.options.SystemdCgroup']" in failure, failure
    assert fleet["after_apply"]["node-pending"] == fleet["before"]["node-pending"]
    assert fleet["restarts_after_apply"]["node-pending"] == 0
    assert (fleet["served_after_refusal"]["node-pending"]["runc"].get("options") or {}).get("SystemdCgroup") is True


def test_an_accepted_pending_edit_goes_live_with_the_change(fleet):
    run = fleet["runs"]["again"]
    assert run.recap()["node-pending"]["changed"] > 0 and run.recap()["node-pending"]["failed"] == 0, run.explain()
    assert "runtimes.runc.options.SystemdCgroup: True (running) -> (absent) (files)" in run.stdout, run.explain()
    assert fleet["restarts_after_again"]["node-pending"] == 1
    served = fleet["served"]["node-pending"]
    assert "gpu2" in served and not (served["runc"].get("options") or {}).get("SystemdCgroup"), served


def test_the_socket_and_the_wait_default_to_the_address_the_configuration_names(fleet):
    """Issue 23 item 3: no socket or wait command given; the machine's /run/containerd hidden. Each restart above was
    waited for with ctr and verified from the daemon on its private socket (1.7, 2.2: [grpc]; 2.3+:
    io.containerd.server.v1.grpc), and the pending edit was found by asking the daemon there before any change."""
    for name, count in (("apply", len(GOOD)), ("again", 1)):
        run = fleet["runs"][name]
        assert run.stdout.count("verified from the running daemon (loaded_source: daemon)") == count, run.explain()
