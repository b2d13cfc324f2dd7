"""Issue 13 on realistic 1.6 nodes: the role never loses a setting, never leaks a secret, never leaves containerd
down unreported. Real Debian containerd 1.6.20, real ``ansible-playbook`` over per-node trees (local connection).

Each root is what a kubeadm-style node has: the real ``containerd config default`` of the binary under test, with
``SystemdCgroup = true``, a registry mirror and a registry password, at mode 0600; ``conf.d`` at 0750 holding an
unrelated imported drop-in. Not real: systemd (``service-standin`` plays ``systemctl restart containerd``).
"""
from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest
from support.tools import require_command

from . import _support as s

ROLE_PLAYBOOK = Path(__file__).with_name("role.yml")
CRI = s.CRI
PASSWORD = "s3cr3t-Registry-Passw0rd"
NVIDIA_OLD = f"""
[plugins.{CRI}.containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
  pod_annotations = ["nvidia.com/*"]
  [plugins.{CRI}.containerd.runtimes.nvidia.options]
    SystemdCgroup = true
"""
REGISTRY = f"""
[plugins.{CRI}.registry.mirrors."docker.io"]
  endpoint = ["https://mirror.example.com"]
[plugins.{CRI}.registry.configs."registry.example.com".auth]
  username = "puller"
  password = "{PASSWORD}"
"""
# nvidia-ctk's drop-in as `nvidia-ctk runtime configure --runtime=containerd --drop-in-config=.../99-nvidia.toml
# --cdi.enabled` writes it on a version 2 node: only its modifications (NVIDIA/nvidia-container-toolkit
# pkg/config/engine/containerd/config_drop_in.go "an in-memory drop-in config that only contains modifications";
# runtimes as in cmd/nvidia-ctk-installer/container/runtime/containerd/containerd_test.go TestSetupCleanup; the runtime
# table copied from runc's by config_v2.go AddRuntime, enable_cdi by Set("enable_cdi", true)).
NVIDIA_CTK_DROPIN = f"""version = 2

[plugins]

  [plugins.{CRI}]
    enable_cdi = true

    [plugins.{CRI}.containerd]

      [plugins.{CRI}.containerd.runtimes]

        [plugins.{CRI}.containerd.runtimes.nvidia]
          runtime_type = "io.containerd.runc.v2"

          [plugins.{CRI}.containerd.runtimes.nvidia.options]
            BinaryName = "/usr/bin/nvidia-container-runtime"
            SystemdCgroup = true
"""


def kubeadm_root(imports: str) -> str:
    """The real `containerd config default` of the binary under test, as kubeadm guides tell to edit it."""
    text = subprocess.run(["containerd", "config", "default"], capture_output=True, text=True, check=True).stdout
    assert "SystemdCgroup = false" in text and "imports = []" in text
    return text.replace("SystemdCgroup = false", "SystemdCgroup = true").replace("imports = []", f"imports = {imports}")


def fleet_trees():
    return {
        # Items 1, 2, 4, 8: an existing nvidia runtime, a password, conf.d/* import (backups would be caught), conf.d 0750.
        "kubeadm": {"config.toml": kubeadm_root('["{tree}/conf.d/*"]') + NVIDIA_OLD + REGISTRY,
                    "conf.d/10-unrelated.toml": 'version = 2\n\n[plugins."io.containerd.internal.v1.opt"]\n  path = "/opt/containerd"\n'},
        # Item 9: nvidia-ctk configured it; its 99-nvidia.toml sorts after 99-gpufleet.toml.
        "nvidia-ctk": {"config.toml": kubeadm_root('["{tree}/conf.d/*.toml"]'),
                       "conf.d/99-nvidia.toml": NVIDIA_CTK_DROPIN},
    }


def all_output(runs):
    return "\n".join(run.stdout + run.stderr for run in runs)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    require_command("containerd", "containerd")
    base = tmp_path_factory.mktemp("never-lose16")
    bin_dir = base / "bin"
    first = s.make_executable(bin_dir / "nvidia-container-runtime", "#!/bin/sh\nexit 0\n")
    second = s.make_executable(bin_dir / "nvidia-container-runtime-v2", "#!/bin/sh\nexit 0\n")
    standin = s.service_standin(bin_dir)
    hosts = {}
    for host, files in fleet_trees().items():
        tree = base / host
        s.write_tree(tree, files)
        (tree / "config.toml").chmod(0o600)
        (tree / "conf.d").chmod(0o750)
        hosts[host] = {"containerd_runtimes_config_path": str(tree / "config.toml"),
                       "containerd_runtimes_dropin_dir": str(tree / "conf.d"),
                       "containerd_runtimes_restart_command": [str(standin), str(base / f"{host}.restarts"), "ok"]}
    inventory = base / "inventory.yml"
    group_vars = {"containerd_runtimes_runtimes": [{"name": "nvidia", "binary_name": str(first)}],
                  "containerd_runtimes_wait_command": ["true"]}
    s.write_inventory(inventory, hosts, group_vars)
    runs = {"check": s.run_playbook(ROLE_PLAYBOOK, inventory, "--check", "--diff"),
            "apply": s.run_playbook(ROLE_PLAYBOOK, inventory, "--diff", "-vvv")}
    after_apply = {host: s.snapshot(base / host) for host in hosts}
    # A second change: the drop-in now exists, so a backup of it is made.
    group_vars["containerd_runtimes_runtimes"] = [{"name": "nvidia", "binary_name": str(second)}]
    s.write_inventory(inventory, hosts, group_vars)
    runs["change"] = s.run_playbook(ROLE_PLAYBOOK, inventory, "--diff", "-vvv")
    runs["again"] = s.run_playbook(ROLE_PLAYBOOK, inventory, "--diff")
    return {"base": base, "runs": runs, "after_apply": after_apply, "first": str(first), "second": str(second)}


def nvidia_loaded(fleet, host):
    return s.cri_runtimes(s.dump(fleet["base"] / host / "config.toml"))["nvidia"]


def test_every_run_passes(fleet):
    for name, run in fleet["runs"].items():
        assert run.returncode == 0, (name, run.explain())
    assert {host: fleet["runs"]["again"].recap()[host]["changed"] for host in ("kubeadm", "nvidia-ctk")} == \
        {"kubeadm": 0, "nvidia-ctk": 0}, fleet["runs"]["again"].explain()


def test_an_existing_runtime_is_merged_not_replaced(fleet):
    """Item 1: keys the inputs do not name (SystemdCgroup, pod_annotations) stay loaded."""
    nvidia = nvidia_loaded(fleet, "kubeadm")
    assert nvidia["options"]["BinaryName"] == fleet["second"]
    assert nvidia["options"]["SystemdCgroup"] is True
    assert nvidia["pod_annotations"] == ["nvidia.com/*"]


def test_the_changed_option_is_loaded_and_no_backup_is_imported(fleet):
    """Item 2: the backup of the drop-in never sits where conf.d/* catches it."""
    base = fleet["base"] / "kubeadm"
    assert sorted(path.name for path in (base / "conf.d").iterdir()) == ["10-unrelated.toml", "99-gpufleet.toml"]
    backups = sorted((fleet["base"] / "kubeadm" / ".runtime-gate-backups").iterdir())
    assert [path.name.startswith("99-gpufleet.toml.") for path in backups] == [True], backups
    imports = s.dump(base / "config.toml")["imports"]
    assert not any(".runtime-gate-backups" in path for path in imports), imports


def test_written_files_are_never_more_open_than_their_source(fleet):
    """Item 4: the drop-in carries the root's registry password: it gets the root's mode, owner and group."""
    root = (fleet["base"] / "kubeadm" / "config.toml").stat()
    dropin = (fleet["base"] / "kubeadm" / "conf.d" / "99-gpufleet.toml").stat()
    assert stat.S_IMODE(dropin.st_mode) == 0o600
    assert (dropin.st_uid, dropin.st_gid) == (root.st_uid, root.st_gid)
    for backup in (fleet["base"] / "kubeadm" / ".runtime-gate-backups").iterdir():
        assert stat.S_IMODE(backup.stat().st_mode) == 0o600, backup


def test_no_secret_in_any_output(fleet):
    """Item 4: not in --diff, not at -vvv."""
    output = all_output(fleet["runs"].values())
    where = output.find(PASSWORD)
    task = output.rfind("TASK [", 0, where)
    assert where < 0, output[task:task + 3000]
    assert "+++ after: " + str(fleet["base"] / "kubeadm" / "conf.d" / "99-gpufleet.toml") in fleet["runs"]["check"].stdout


def test_dropin_dir_mode_is_kept(fleet):
    """Item 8."""
    assert stat.S_IMODE((fleet["base"] / "kubeadm" / "conf.d").stat().st_mode) == 0o750


def test_nvidia_ctk_node_is_changed_out_of_the_box(fleet):
    """Item 9: the role's drop-in sorts after nvidia-ctk's 99-nvidia.toml, and what nvidia-ctk set stays loaded."""
    document = s.dump(fleet["base"] / "nvidia-ctk" / "config.toml")
    nvidia = s.cri_runtimes(document)["nvidia"]
    assert nvidia["options"]["BinaryName"] == fleet["second"]
    assert nvidia["options"]["SystemdCgroup"] is True
    assert (fleet["base"] / "nvidia-ctk" / "conf.d" / "99-nvidia.toml").read_text() == NVIDIA_CTK_DROPIN
