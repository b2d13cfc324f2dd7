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
        # Item 10: an allowed default switch, then a run with the default left empty ("leave as is").
        "default-switch": {"config.toml": kubeadm_root('["{tree}/conf.d/*.toml"]')},
        # The NVIDIA preset and a kubespray containerd_additional_runtimes entry as input.
        "kubespray-preset": {"config.toml": kubeadm_root('["{tree}/conf.d/*.toml"]')},
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
        (tree / "conf.d").mkdir(exist_ok=True)
        (tree / "conf.d").chmod(0o750)
        hosts[host] = {"containerd_runtimes_config_path": str(tree / "config.toml"),
                       "containerd_runtimes_dropin_dir": str(tree / "conf.d"),
                       "containerd_runtimes_restart_command": [str(standin), str(base / f"{host}.restarts"), "ok"]}
    for name in ("nvidia-container-runtime.cdi", "nvidia-container-runtime.legacy", "crun"):
        s.make_executable(bin_dir / name, "#!/bin/sh\nexit 0\n")
    hosts["default-switch"].update(containerd_runtimes_default_runtime="nvidia", containerd_runtimes_allow_default_change=True)
    hosts["kubespray-preset"].update(
        containerd_runtimes_presets=["nvidia"], containerd_runtimes_nvidia_binary_dir=str(bin_dir),
        # kubespray's shape (docs/containerd.md): type, engine, root, options with "true"/"false" strings.
        containerd_runtimes_runtimes=[{"name": "crun", "type": "io.containerd.runc.v2", "engine": "", "root": "",
                                       "options": {"BinaryName": str(bin_dir / "crun"), "SystemdCgroup": "true"}}])
    inventory = base / "inventory.yml"
    group_vars = {"containerd_runtimes_runtimes": [{"name": "nvidia", "binary_name": str(first)}],
                  "containerd_runtimes_wait_command": ["true"]}
    s.write_inventory(inventory, hosts, group_vars)
    runs = {"check": s.run_playbook(ROLE_PLAYBOOK, inventory, "--check", "--diff"),
            "apply": s.run_playbook(ROLE_PLAYBOOK, inventory, "--diff", "-vvv")}
    after_apply = {host: s.snapshot(base / host) for host in hosts}
    # A second change: the drop-in now exists, so a backup of it is made.
    group_vars["containerd_runtimes_runtimes"] = [{"name": "nvidia", "binary_name": str(second)}]
    del hosts["default-switch"]["containerd_runtimes_default_runtime"]
    s.write_inventory(inventory, hosts, group_vars)
    runs["change"] = s.run_playbook(ROLE_PLAYBOOK, inventory, "--diff", "-vvv")
    runs["again"] = s.run_playbook(ROLE_PLAYBOOK, inventory, "--diff")
    return {"base": base, "runs": runs, "after_apply": after_apply, "first": str(first), "second": str(second)}


def nvidia_loaded(fleet, host):
    return s.cri_runtimes(s.dump(fleet["base"] / host / "config.toml"))["nvidia"]


def test_every_run_passes(fleet):
    for name, run in fleet["runs"].items():
        assert run.returncode == 0, (name, run.explain())
    hosts = ("kubeadm", "nvidia-ctk", "default-switch", "kubespray-preset")
    assert {host: fleet["runs"]["again"].recap()[host]["changed"] for host in hosts} == dict.fromkeys(hosts, 0), \
        fleet["runs"]["again"].explain()


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


def test_an_empty_default_runtime_leaves_the_switched_default_as_it_is(fleet):
    """Item 10: documented "leave as is", it reverted the switch an earlier run was allowed to make."""
    document = s.dump(fleet["base"] / "default-switch" / "config.toml")
    assert document["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["default_runtime_name"] == "nvidia"


def test_the_nvidia_preset_and_a_kubespray_entry(fleet):
    runtimes = s.cri_runtimes(s.dump(fleet["base"] / "kubespray-preset" / "config.toml"))
    bin_dir = Path(fleet["first"]).parent
    for name, binary in (("nvidia", "nvidia-container-runtime"), ("nvidia-cdi", "nvidia-container-runtime.cdi"),
                         ("nvidia-legacy", "nvidia-container-runtime.legacy")):
        assert runtimes[name]["runtime_type"] == "io.containerd.runc.v2", name
        # Started from runc's table, as nvidia-ctk does: the node's SystemdCgroup carries over.
        options = runtimes[name]["options"]
        assert (options["BinaryName"], options["SystemdCgroup"]) == (str(bin_dir / binary), True), name
    assert runtimes["crun"]["options"] == {"BinaryName": str(bin_dir / "crun"), "SystemdCgroup": True}


# --- refusals: each host fails with one clear message and its tree stays byte for byte ----------------------------

REFUSALS = {
    # Item 3: the refusal message suggests manage_root_config; it must not drop what root_settings do not name.
    "managed-root": ({"containerd_runtimes_manage_root_config": True},
                     ["oom_score: -999 -> 0", "debug.level: 'info' -> ''", "metrics.address: '127.0.0.1:1338' -> ''",
                      "grpc.max_recv_message_size: 33554432 -> 16777216"]),
    # Item 6: what the crosscheck would report as errors on the candidate.
    "bogus-shim": ({"containerd_runtimes_runtimes": [{"name": "kata", "runtime_type": "io.containerd.bogus.v1"}]},
                   ["RUNTIME_BINARY_MISSING: runtime 'kata' has runtime_type 'io.containerd.bogus.v1', whose shim "
                    "containerd-shim-bogus-v1 is not an executable file on the node"]),
    "string-bool": ({"containerd_runtimes_runtimes": [{"name": "nvidia", "options": {"SystemdCgroup": "yes"}}]},
                    ["runtime 'nvidia' option 'SystemdCgroup' is 'yes', the runc shim reads a boolean"]),
    # Item 10: why the name must end in .toml.
    "conf-name": ({"containerd_runtimes_dropin_name": "99-gpufleet.conf"},
                  ["must be a plain file name ending in .toml", "loads only .toml files"]),
}


@pytest.fixture(scope="module")
def refusals(tmp_path_factory):
    require_command("containerd", "containerd")
    base = tmp_path_factory.mktemp("never-lose16-refusals")
    hosts = {}
    root = kubeadm_root('["{tree}/conf.d/*.toml"]').replace("oom_score = 0", "oom_score = -999").replace(
        "max_recv_message_size = 16777216", "max_recv_message_size = 33554432")
    root = root.replace('[debug]\n  address = ""\n  format = ""\n  gid = 0\n  level = ""',
                        '[debug]\n  address = ""\n  format = ""\n  gid = 0\n  level = "info"')
    root = root.replace('[metrics]\n  address = ""', '[metrics]\n  address = "127.0.0.1:1338"')
    assert "level = \"info\"" in root and "127.0.0.1:1338" in root
    for host, (host_vars, _needles) in REFUSALS.items():
        s.write_tree(base / host, {"config.toml": root, "conf.d/10-unrelated.toml": "version = 2\n"})
        hosts[host] = {"containerd_runtimes_config_path": str(base / host / "config.toml"),
                       "containerd_runtimes_dropin_dir": str(base / host / "conf.d"),
                       "containerd_runtimes_restart_command": ["false"], **host_vars}
    s.write_inventory(base / "inventory.yml", hosts, {"containerd_runtimes_runtimes": [{"name": "nvidia"}],
                                                      "containerd_runtimes_wait_command": ["true"]})
    before = {host: s.snapshot(base / host) for host in REFUSALS}
    run = s.run_playbook(ROLE_PLAYBOOK, base / "inventory.yml")
    return {"base": base, "run": run, "before": before}


@pytest.mark.parametrize("host", sorted(REFUSALS))
def test_refused_with_a_clear_message_and_nothing_written(refusals, host):
    run = refusals["run"]
    assert run.recap()[host]["failed"] == 1, run.explain()
    for needle in REFUSALS[host][1]:
        assert needle in run.failures(host), run.failures(host)
    assert s.snapshot(refusals["base"] / host) == refusals["before"][host]
