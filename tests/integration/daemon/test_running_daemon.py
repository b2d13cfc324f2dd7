"""The running daemon's view through the production path: real containerd daemons, real ansible-playbook
running ``gpufleet.runtime_gate.containerd_facts`` (local connection; the node's Python is the venv's, which has
grpcio, so the module's gRPC client talks to the daemon's socket, or the real crictl does), the action plugin parsing
on the controller.

Debian's 1.6 runs on trees whose config names private root/state/socket paths (conftest.py). Every release (1.6, 1.7,
2.2, 2.3, 2.4; support.containerd_daemons) also runs a scenario tree of tests/fixtures/containerd as the node's
/etc/containerd in a private mount namespace with containerd's defaults; the module then gathers with that node root as
``host_root`` and containerd run on it through the containerd-at-etc wrapper, and asks the daemon with the real crictl.

- A healthy daemon: the daemon's view equals the dump; then a runtime is deleted from the drop-in without a
  restart: the dump loses it, the daemon still serves it (what PENDING_RESTART reports).
- A config whose default runtime was dropped: the daemon runs, its CRI plugin failed, RuntimeService is
  unimplemented on the socket (verified on 1.6.20 with `ctr plugins ls`): the view is ``cri_unavailable`` with
  the plugin's init error (what CRI_UNAVAILABLE reports).
- No client, no socket, not asked: ``unknown``, never the dump's runtimes.
- crictl, when installed, is what the module asks (the real crictl).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support.containerd_daemons import containerd_wrapper, crictl
from support.containerd_trees import SERVING_SCENARIO, copy_tree, release_named, running_daemon, scenario_etc
from support.paths import REPO_ROOT
from support.tools import require_tool

from .conftest import cri_settings, daemon_settings

VENV_PYTHON = str(Path(sys.executable))
SYSTEM_PYTHON = "/usr/bin/python3"
CRI = 'plugins."io.containerd.grpc.v1.cri"'
NVIDIA_BINARY = "/usr/bin/nvidia-container-runtime"
NVIDIA_CDI_BINARY = "/usr/bin/nvidia-container-runtime.cdi"
PLAYBOOK = """
- hosts: nodes
  gather_facts: false
  tasks:
    - name: Gather through the production module
      gpufleet.runtime_gate.containerd_facts:
        config_path: "{{ config_path }}"
        containerd_bin: "{{ containerd_bin | default(omit) }}"
        host_root: "{{ host_root | default(omit) }}"
        socket: "{{ socket }}"
        crictl_bin: "{{ crictl_bin | default('/nonexistent/crictl') }}"
        dump_file: "{{ dump_file | default(omit) }}"
        ask_daemon: "{{ ask_daemon | default(true) }}"
        dropin_dirs: "{{ dropin_dirs | default(omit) }}"
        cdi_spec_dirs: "{{ cdi_spec_dirs | default(omit) }}"
      register: gathered
    - name: Keep what the controller made of it
      ansible.builtin.copy:
        content: "{{ gathered | to_json }}"
        dest: "{{ results_dir }}/{{ inventory_hostname }}.json"
        mode: "0644"
"""


def runtime_block(name, binary=None):
    block = f'  [{CRI}.containerd.runtimes.{name}]\n    runtime_type = "io.containerd.runc.v2"\n'
    if binary:
        block += f'    [{CRI}.containerd.runtimes.{name}.options]\n      BinaryName = "{binary}"\n'
    return block


def cri_block(runtimes, default_runtime="runc"):
    text = f"[{CRI}.containerd]\n"
    if default_runtime:
        text += f'  default_runtime_name = "{default_runtime}"\n'
    return text + "".join(runtime_block(name, binary) for name, binary in runtimes)


ALL_RUNTIMES = [("runc", None), ("nvidia", NVIDIA_BINARY), ("nvidia-cdi", NVIDIA_CDI_BINARY)]


def tree_with_dropin(base_dir, imports):
    """Root with runc; a drop-in that repeats the whole CRI block (1.x replaces the table: S3full's layout)."""
    (base_dir / "conf.d").mkdir()
    (base_dir / "cdi").mkdir()
    (base_dir / "cdi" / "nvidia.yaml").write_text("cdiVersion: 0.5.0\n", encoding="utf-8")
    root = base_dir / "config.toml"
    root.write_text(f'version = 2\nimports = ["{imports}"]\n' + daemon_settings(base_dir) + cri_settings(base_dir)
                    + cri_block([("runc", None)]), encoding="utf-8")
    (base_dir / "conf.d" / "99-nvidia.toml").write_text("version = 2\n" + cri_block(ALL_RUNTIMES), encoding="utf-8")
    return root


def healthy_tree(base_dir):
    return tree_with_dropin(base_dir, f"{base_dir}/conf.d/*.toml")


def relative_glob_tree(base_dir):
    return tree_with_dropin(base_dir, "conf.d/*.toml")


def default_dropped_tree(base_dir):
    """1.x: the runtimes table holds only nvidia; default_runtime_name stays "runc" → the CRI plugin fails."""
    root = base_dir / "config.toml"
    root.write_text("version = 2\n" + daemon_settings(base_dir) + cri_settings(base_dir)
                    + cri_block([("nvidia", NVIDIA_BINARY)], default_runtime=None), encoding="utf-8")
    return root


def run_playbook(work_dir: Path, hosts: dict, limit=None) -> dict:
    """One ansible-playbook run over ``hosts`` (name → vars); returns {host: registered result}."""
    results_dir = work_dir / "results"
    shutil.rmtree(results_dir, ignore_errors=True)
    results_dir.mkdir(parents=True)
    inventory = {"nodes": {"hosts": {name: {"ansible_connection": "local", "ansible_python_interpreter": VENV_PYTHON,
                                            "results_dir": str(results_dir), **host_vars}
                                     for name, host_vars in hosts.items()}}}
    (work_dir / "inventory.yml").write_text(yaml.safe_dump(inventory), encoding="utf-8")
    (work_dir / "playbook.yml").write_text(PLAYBOOK, encoding="utf-8")
    command = [str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(work_dir / "inventory.yml"),
               str(work_dir / "playbook.yml")] + (["--limit", limit] if limit else [])
    environment = dict(os.environ, ANSIBLE_CONFIG=str(REPO_ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
                       ANSIBLE_LOCAL_TEMP=str(work_dir / "ansible-tmp"))
    completed = subprocess.run(command, cwd=REPO_ROOT, env=environment, capture_output=True, text=True, timeout=300,
                               check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in results_dir.glob("*.json")}


def facts_of(result):
    assert not result.get("failed"), result
    return result["ansible_facts"]["containerd"]


def host_finding_codes(facts):
    """Codes the findings core raises for these facts, or None while it does not exist yet."""
    try:
        from ansible_collections.gpufleet.runtime_gate.plugins.module_utils import (
            _findings,
        )
    except ImportError:
        return None
    if not hasattr(_findings, "host_findings"):
        return None
    return {finding["code"] for finding in _findings.host_findings(facts, {"missing_handlers": [], "node": "n"})}


def test_daemon_view_then_edit_without_restart(containerd_daemon, tmp_path):
    daemon = containerd_daemon(healthy_tree)
    node = {"config_path": str(daemon.config_path), "socket": str(daemon.socket),
            "dropin_dirs": [str(daemon.base_dir / "conf.d")], "cdi_spec_dirs": [str(daemon.base_dir / "cdi")]}
    facts = facts_of(run_playbook(tmp_path, {"serving": node})["serving"])

    view = facts["daemon"]
    assert (view["state"], view["source"], view["socket"]) == ("serving", "grpc", str(daemon.socket)), view
    assert view["runtimes"] == ["nvidia", "nvidia-cdi", "runc"] == sorted(facts["runtimes"])
    assert view["default_runtime"] == "runc" and view["cri_ready"] is True
    assert view["runtime_handlers"] is None, "containerd 1.x never reports runtimeHandlers"
    assert view["runtime_details"]["nvidia"]["binary_name"] == NVIDIA_BINARY

    # The evidence around the dump, from the same round trip.
    dropin = str(daemon.base_dir / "conf.d" / "99-nvidia.toml")
    assert [(entry["path"], entry["role"]) for entry in facts["config_files"]] == [
        (str(daemon.config_path), "root"), (dropin, "import")]
    assert facts["import_globs"][0]["matches"] == [dropin]
    assert [entry["name"] for entry in facts["dropin_dirs"][0]["entries"]] == ["99-nvidia.toml"]
    assert [entry["name"] for entry in facts["cdi_dirs"][0]["entries"]] == ["nvidia.yaml"]
    assert facts["binaries"]["containerd-shim-runc-v2"]["exists"] is True  # shipped with Debian's containerd
    assert facts["binaries"][NVIDIA_BINARY]["exists"] is os.path.exists(NVIDIA_BINARY)
    if (codes := host_finding_codes(facts)) is not None:
        assert "PENDING_RESTART" not in codes and "CRI_UNAVAILABLE" not in codes, codes

    # Delete nvidia-cdi from the drop-in; do not restart.
    (daemon.base_dir / "conf.d" / "99-nvidia.toml").write_text(
        "version = 2\n" + cri_block(ALL_RUNTIMES[:2]), encoding="utf-8")
    edited = facts_of(run_playbook(tmp_path, {"serving": node})["serving"])
    assert sorted(edited["runtimes"]) == ["nvidia", "runc"], "the dump re-reads the edited files"
    assert edited["daemon"]["runtimes"] == ["nvidia", "nvidia-cdi", "runc"], "the daemon still runs the old config"
    assert daemon.process.poll() is None
    if (codes := host_finding_codes(edited)) is not None:
        assert "PENDING_RESTART" in codes, codes


def test_default_runtime_dropped_daemon_serves_no_cri(containerd_daemon, tmp_path):
    daemon = containerd_daemon(default_dropped_tree)
    assert "failed to load plugin io.containerd.grpc.v1.cri" in daemon.log()
    facts = facts_of(run_playbook(tmp_path, {"cri-down": {"config_path": str(daemon.config_path),
                                                          "socket": str(daemon.socket)}})["cri-down"])
    # The dump does not validate the CRI config: it lists nvidia as if all were well.
    assert sorted(facts["runtimes"]) == ["nvidia"]
    view = facts["daemon"]
    assert (view["state"], view["runtimes"], view["cri_ready"]) == ("cri_unavailable", [], False), view
    assert "unknown service runtime.v1.RuntimeService" in view["reason"]
    assert any("no corresponding runtime configured" in error for error in view["cri_plugin_errors"]), view
    if (codes := host_finding_codes(facts)) is not None:
        assert "CRI_UNAVAILABLE" in codes, codes


def test_without_a_usable_client_or_socket_the_view_is_unknown(containerd_daemon, tmp_path):
    daemon = containerd_daemon(healthy_tree)
    node = {"config_path": str(daemon.config_path), "socket": str(daemon.socket)}
    hosts = {"not-asked": {**node, "ask_daemon": False},
             "no-socket": {**node, "socket": str(daemon.base_dir / "absent.sock")}}
    system_python_lacks_grpc = subprocess.run([SYSTEM_PYTHON, "-c", "import grpc"], capture_output=True,
                                              check=False).returncode != 0 if os.path.exists(SYSTEM_PYTHON) else False
    if system_python_lacks_grpc:
        hosts["no-client"] = {**node, "ansible_python_interpreter": SYSTEM_PYTHON}
    results = run_playbook(tmp_path, hosts)
    expected_reasons = {"not-asked": "not asked", "no-socket": "does not exist",
                        "no-client": "neither crictl nor grpcio on the node"}
    for host in hosts:
        facts = facts_of(results[host])
        view = facts["daemon"]
        assert view["state"] == "unknown" and view["runtimes"] is None, (host, view)
        assert expected_reasons[host] in view["reason"], (host, view)
        assert sorted(facts["runtimes"]) == ["nvidia", "nvidia-cdi", "runc"], host


def test_a_dump_file_is_never_judged_by_this_nodes_daemon(containerd_daemon, tmp_path):
    """Another node's capture, judged on a node whose daemon serves nvidia: still MISSING (module and rc-crosscheck)."""
    daemon = containerd_daemon(healthy_tree)
    (tmp_path / "other-node").mkdir()
    (tmp_path / "other-node" / "config.toml").write_text("version = 2\n", encoding="utf-8")
    other_dump = tmp_path / "other-node-dump.toml"  # the real containerd's dump of a node with only the built-in runc
    other_dump.write_bytes(subprocess.run(["containerd", "--config", str(tmp_path / "other-node" / "config.toml"), "config", "dump"],
                                          capture_output=True, check=True, cwd="/").stdout)
    runtimeclasses = tmp_path / "rc.yaml"
    runtimeclasses.write_text("apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: nvidia}\nhandler: nvidia\n",
                              encoding="utf-8")
    completed = subprocess.run([str(REPO_ROOT / "bin" / "rc-crosscheck"), "--runtimeclasses", str(runtimeclasses),
                                "--socket", str(daemon.socket), str(other_dump)], capture_output=True, text=True, check=False)
    assert (completed.returncode, completed.stdout, completed.stderr) == (1, "MISSING=nvidia\n", "")

    facts = facts_of(run_playbook(tmp_path, {"with-file": {"config_path": str(daemon.config_path), "socket": str(daemon.socket),
                                                           "dump_file": str(other_dump)}})["with-file"])
    assert facts["source"] == "file" and sorted(facts["runtimes"]) == ["runc"]
    view = facts["daemon"]  # not even asked, and says why
    assert (view["state"], view["runtimes"]) == ("unknown", None) and "dump_file" in view["reason"], view
    from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._verdict import judge
    verdict = judge(facts, [{"name": "nvidia", "handler": "nvidia", "overhead_pod_fixed": None, "node_selector": None,
                             "tolerations": []}], node_name="with-file", node_labels={})
    assert (verdict["lines"], verdict["loaded_source"]) == (["MISSING=nvidia"], "dump"), verdict
    assert daemon.process.poll() is None


def test_relative_glob_on_1_6_20_loads_nothing_from_the_daemon_cwd(containerd_daemon, tmp_path):
    """1.6.0-1.6.28 glob a relative pattern from the daemon's working directory (`/`), not the config's directory."""
    daemon = containerd_daemon(relative_glob_tree)
    facts = facts_of(run_playbook(tmp_path, {"relative": {"config_path": str(daemon.config_path),
                                                          "socket": str(daemon.socket)}})["relative"])
    (expansion,) = facts["import_globs"]
    assert (expansion["pattern"], expansion["absolute"]) == ("conf.d/*.toml", False)
    assert expansion["matches"] == [str(daemon.base_dir / "conf.d" / "99-nvidia.toml")], "what 1.6.29+ would load"
    assert expansion["matches_from_cwd"] == [], "what 1.6.20 loads"
    # The real daemon agrees with the `/` reading, and so does the dump, which the module runs from `/` too.
    assert facts["daemon"]["runtimes"] == ["runc"] == sorted(facts["runtimes"]), facts["daemon"]


def test_crictl_is_preferred_when_installed(containerd_daemon, tmp_path):
    """With crictl installed the module asks it (the real crictl), not its own gRPC client: the same view."""
    daemon = containerd_daemon(healthy_tree)
    node = {"config_path": str(daemon.config_path), "socket": str(daemon.socket)}
    results = run_playbook(tmp_path, {"crictl": {**node, "crictl_bin": crictl()}, "grpc": node})
    view, grpc_view = facts_of(results["crictl"])["daemon"], facts_of(results["grpc"])["daemon"]
    assert (view["state"], view["source"], grpc_view["source"]) == ("serving", "crictl", "grpc"), view
    assert view["runtimes"] == ["nvidia", "nvidia-cdi", "runc"] and view["default_runtime"] == "runc"
    assert view["runtime_handlers"] is None, "containerd 1.x never reports runtimeHandlers"
    assert {**grpc_view, "source": "crictl"} == view


# ------------------------------------------------------------------ every release, on a scenario tree at /etc/containerd

RELEASES = sorted(SERVING_SCENARIO)  # support.containerd_daemons.releases(), by name


def on_node(release, node_root, daemon, work_dir, **extra):
    """Host variables for a node whose / is ``node_root``: containerd runs on it through the containerd-at-etc wrapper,
    the real crictl asks its running daemon."""
    return {"config_path": "/etc/containerd/config.toml", "host_root": str(node_root),
            "containerd_bin": containerd_wrapper(release, work_dir), "socket": str(daemon.socket),
            "crictl_bin": crictl(), "dropin_dirs": ["/etc/containerd/conf.d"], **extra}


@pytest.mark.parametrize("release_name", RELEASES)
def test_every_release_daemon_view_then_edit_without_restart(release_name, tmp_path):
    release, scenario = release_named(release_name), SERVING_SCENARIO[release_name]
    node_root = copy_tree(scenario, tmp_path / "node")
    with running_daemon(release, node_root) as daemon:
        node = on_node(release, node_root, daemon, tmp_path)
        facts = facts_of(run_playbook(tmp_path, {"serving": node})["serving"])
        assert (facts["source"], facts["containerd_version"]) == ("command", release.version)
        view = facts["daemon"]
        assert (view["state"], view["source"], view["socket"]) == ("serving", "crictl", str(daemon.socket)), view
        assert view["runtimes"] == ["nvidia", "nvidia-cdi", "runc"] == sorted(facts["runtimes"])
        assert view["default_runtime"] == "runc" and view["cri_ready"] is True
        # runtimeHandlers came with containerd 2.0; the unnamed default entry is left out.
        expected_handlers = None if release.name.startswith("1.") else ["nvidia", "nvidia-cdi", "runc"]
        assert view["runtime_handlers"] == expected_handlers, view
        assert view["runtime_details"]["nvidia-cdi"]["binary_name"] == NVIDIA_CDI_BINARY
        dropin = "/etc/containerd/conf.d/99-nvidia.toml"
        assert [(entry["path"], entry["role"]) for entry in facts["config_files"]] == [
            ("/etc/containerd/config.toml", "root"), (dropin, "import")]
        if (codes := host_finding_codes(facts)) is not None:
            assert "PENDING_RESTART" not in codes and "CRI_UNAVAILABLE" not in codes, codes

        # Delete nvidia-cdi from the drop-in; do not restart.
        shutil.copy(scenario_etc(f"{scenario}-after-edit") / "conf.d" / "99-nvidia.toml",
                    node_root / "etc" / "containerd" / "conf.d" / "99-nvidia.toml")
        edited = facts_of(run_playbook(tmp_path, {"serving": node})["serving"])
        assert sorted(edited["runtimes"]) == ["nvidia", "runc"], "the dump re-reads the edited files"
        assert edited["daemon"]["runtimes"] == ["nvidia", "nvidia-cdi", "runc"], "the daemon still runs the old config"
        assert daemon.running()
    if (codes := host_finding_codes(edited)) is not None:
        assert "PENDING_RESTART" in codes, codes


@pytest.mark.parametrize("release_name", RELEASES)
def test_every_release_with_a_failed_cri_plugin_is_cri_unavailable(release_name, tmp_path):
    """default_runtime_name names no runtime: the daemon runs, its CRI plugin failed. crictl and the gRPC client both
    find RuntimeService unimplemented; the gRPC client also names the plugin's init error."""
    release, scenario = release_named(release_name), SERVING_SCENARIO[release_name]
    etc = scenario_etc(scenario)
    node_root = copy_tree(scenario, tmp_path / "node", {  # every file that names the default (S3full's drop-in too)
        str(path.relative_to(etc)): path.read_text().replace('default_runtime_name = "runc"', 'default_runtime_name = "kata"')
        for path in etc.rglob("*.toml")})
    with running_daemon(release, node_root) as daemon:
        node = on_node(release, node_root, daemon, tmp_path)
        results = run_playbook(tmp_path, {"by-crictl": node, "by-grpc": {**node, "crictl_bin": "/nonexistent/crictl"}})
        assert daemon.running()
    for host, source in (("by-crictl", "crictl"), ("by-grpc", "grpc")):
        facts = facts_of(results[host])
        # The dump does not validate the CRI config: it lists every runtime, and the default no runtime has.
        assert sorted(facts["runtimes"]) == ["nvidia", "nvidia-cdi", "runc"] and facts["default_runtime_name"] == "kata"
        view = facts["daemon"]
        assert (view["state"], view["source"], view["runtimes"], view["cri_ready"]) == ("cri_unavailable", source, [], False), view
        assert "unknown service runtime.v1.RuntimeService" in view["reason"], view
        if (codes := host_finding_codes(facts)) is not None:
            assert "CRI_UNAVAILABLE" in codes, (host, codes)
    assert any('default_runtime_name = "kata"' in error for error in facts_of(results["by-grpc"])["daemon"]["cri_plugin_errors"])


@pytest.fixture(autouse=True)
def _node_python_has_grpc():
    completed = subprocess.run([VENV_PYTHON, "-c", "import grpc"], capture_output=True, check=False)
    require_tool(completed.returncode == 0, "grpcio is not installed in the venv (requirements.txt)")
