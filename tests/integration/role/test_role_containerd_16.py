"""The containerd_runtimes role with the real Debian containerd 1.6 over per-node trees (local connection).

Proven by the real binary here: the role's own candidate proof (`config dump` of the candidate tree), and the
independent validation below (`containerd config dump` of the trees in place, parsed with tomllib in this
test). Not real: systemd — `service-standin` plays `systemctl restart containerd` and logs each call.
Sequence (community.crypto style): check mode → apply → check mode (no change) → apply (idempotent) → dump.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from support.console import ok_messages
from support.tools import require_command, require_tool

from . import _support as s

ROLE_PLAYBOOK = Path(__file__).with_name("role.yml")
CRI = s.CRI

# What each node looks like before the role runs; every root keeps runc with SystemdCgroup = true.
FLEET = {
    "systemd-runc": {
        "config.toml": "# hand-written root, keep me\nversion = 2\noom_score = -999\n\n"
                       f'[plugins.{CRI}]\n  sandbox_image = "registry.k8s.io/pause:3.8"\n' + s.RUNC_SYSTEMD,
    },
    "preexisting-imports": {
        "config.toml": 'version = 2\nimports = ["{tree}/extra.d/*.toml"]\n\n' + s.RUNC_SYSTEMD,
        # Unmanaged, loaded today; 1.x: its CRI table replaces the root's, so it repeats runc.
        "extra.d/10-crun.toml": "version = 2\n\n" + s.RUNC_SYSTEMD
        + f'[plugins.{CRI}.containerd.runtimes.crun]\n  runtime_type = "io.containerd.runc.v2"\n'
        + f'  [plugins.{CRI}.containerd.runtimes.crun.options]\n    BinaryName = "{{tree}}/../bin/crun"\n',
    },
    "conf-glob": {
        # The demo's gpu-node-02: a *.conf glob that never matches the .toml drop-in.
        "config.toml": 'version = 2\nimports = ["{tree}/conf.d/*.conf"]\n\n' + s.RUNC_SYSTEMD,
        "conf.d/50-nvidia.toml": "version = 2\n\n" + s.RUNC_SYSTEMD
        + f'[plugins.{CRI}.containerd.runtimes.nvidia]\n  runtime_type = "io.containerd.runc.v2"\n',
    },
    "builtin-runc": {"config.toml": "version = 2\n"},
    # Issue 23 item 5: a registry-only drop-in replaces the root's whole CRI table on 1.x, so the built-in runc (no
    # SystemdCgroup) is what is loaded; the role must plan from that without being told about runc.
    "registry-only": {
        "config.toml": 'version = 2\nimports = ["{tree}/conf.d/*.toml"]\n\n' + s.RUNC_SYSTEMD,
        "conf.d/10-registry.toml": f'version = 2\n\n[plugins.{CRI}.registry.mirrors."docker.io"]\n'
                                   '  endpoint = ["https://mirror.example"]\n',
    },
    # Issue 22 item 8: the root config is a symbolic link (to a file inside the tree): it must stay a link, written through.
    "root-link": {"real/containerd.toml": "version = 2\n\n" + s.RUNC_SYSTEMD},
}
BUILTIN_RUNC_LOADED = ("builtin-runc", "registry-only")
ASKS_DAEMON = "builtin-runc"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    require_command("containerd", "containerd")
    base = tmp_path_factory.mktemp("role16")
    bin_dir = base / "bin"
    for runtime in ("nvidia-container-runtime", "crun"):
        s.make_executable(bin_dir / runtime, "#!/bin/sh\nexit 0\n")
    standin = s.service_standin(bin_dir)
    hosts = {}
    for host, files in FLEET.items():
        s.write_tree(base / host, files)
        if host == "root-link":
            (base / host / "config.toml").symlink_to("real/containerd.toml")
        hosts[host] = {"containerd_runtimes_config_path": str(base / host / "config.toml"),
                       "containerd_runtimes_dropin_dir": str(base / host / "conf.d"),
                       "containerd_runtimes_restart_command": [str(standin), str(base / f"{host}.restarts"), "ok"]}
    # One host asks a daemon whose socket does not exist: the verification must look there and say it could not.
    hosts[ASKS_DAEMON].update(containerd_runtimes_ask_daemon=True, containerd_runtimes_socket=str(base / "no-daemon.sock"))
    group_vars = {
        "containerd_runtimes_runtimes": [{"name": "nvidia", "binary_name": str(bin_dir / "nvidia-container-runtime"),
                                          "options": {"SystemdCgroup": True}}],
        "containerd_runtimes_wait_command": ["true"],
    }
    s.write_inventory(base / "inventory.yml", hosts, group_vars)
    before = {host: s.snapshot(base / host) for host in FLEET}
    runs = {}
    runs["check"] = s.run_playbook(ROLE_PLAYBOOK, base / "inventory.yml", "--check", "--diff")
    after_check = {host: s.snapshot(base / host) for host in FLEET}
    restarted_in_check_mode = sorted(path.name for path in base.glob("*.restarts"))
    runs["apply"] = s.run_playbook(ROLE_PLAYBOOK, base / "inventory.yml", "--diff")
    after_apply = {host: s.snapshot(base / host) for host in FLEET}
    runs["check-again"] = s.run_playbook(ROLE_PLAYBOOK, base / "inventory.yml", "--check", "--diff")
    runs["apply-again"] = s.run_playbook(ROLE_PLAYBOOK, base / "inventory.yml")
    after_again = {host: s.snapshot(base / host) for host in FLEET}
    return {"base": base, "runs": runs, "before": before, "after_check": after_check, "after_apply": after_apply,
            "after_again": after_again, "bin": bin_dir, "restarted_in_check_mode": restarted_in_check_mode}


def test_check_mode_reports_changes_with_a_diff_and_writes_nothing(fleet):
    run = fleet["runs"]["check"]
    assert run.returncode == 0, run.explain()
    assert all(fleet["runs"]["check"].recap()[host]["changed"] > 0 for host in FLEET), run.explain()
    assert fleet["after_check"] == fleet["before"]
    # Issue 23 item 7: Ansible's own diff (before/after, a header per file), not diff lines quoted in a debug msg.
    dropin = str(fleet["base"] / "conf-glob" / "conf.d" / "99-gpufleet.toml")
    assert f"\n--- before: {dropin}\n+++ after: {dropin}\n" in run.stdout, run.explain()
    assert '"+++ after: ' not in run.stdout, run.explain()
    # A new runtime's keys at the release's defaults are counted, not listed (-v lists them).
    assert "keys at the release defaults (listed with -v)" in run.stdout, run.explain()
    assert ".runtimes.nvidia.privileged_without_host_devices: (absent) -> False" not in run.stdout, run.explain()
    assert fleet["restarted_in_check_mode"] == []


def test_apply_changes_every_node_and_restarts_it_once(fleet):
    run = fleet["runs"]["apply"]
    assert run.returncode == 0, run.explain()
    for host in FLEET:
        assert run.recap()[host]["changed"] > 0
        assert (fleet["base"] / f"{host}.restarts").read_text() == "restart\n"
        assert (fleet["base"] / host / "conf.d" / "99-gpufleet.toml").is_file()


def test_verification_says_it_only_proves_the_dump_when_the_daemon_view_is_unavailable(fleet):
    run = fleet["runs"]["apply"]
    base = fleet["base"]
    basis = ("every runtime of the plan is served; the running daemon's view is not available, so this verification "
             "only proves the `config dump` of the files in place, not what the restarted daemon loaded")
    said = [host for host in FLEET if any(basis in message for message in ok_messages(run.stdout, host))]
    assert said == list(FLEET), run.explain()
    # The role's socket input reaches containerd_facts: the asking host names it.
    assert f"the socket {base}/no-daemon.sock does not exist" in run.stdout, run.explain()
    assert "verified from the running daemon" not in run.stdout


def test_second_check_and_second_apply_change_nothing(fleet):
    for name in ("check-again", "apply-again"):
        run = fleet["runs"][name]
        assert run.returncode == 0, run.explain()
        assert {host: run.recap()[host]["changed"] for host in FLEET} == dict.fromkeys(FLEET, 0), run.explain()
    assert fleet["after_again"] == fleet["after_apply"]
    assert all((fleet["base"] / f"{host}.restarts").read_text() == "restart\n" for host in FLEET)


def test_root_edits_keep_comments_unknown_keys_and_every_import(fleet):
    base = fleet["base"]
    root = (base / "systemd-runc" / "config.toml").read_text()
    assert root.startswith("# hand-written root, keep me\nversion = 2\n")
    assert f'imports = ["{base}/systemd-runc/conf.d/*.toml"]' in root and "oom_score = -999" in root
    conf_glob = (base / "conf-glob" / "config.toml").read_text()
    assert f'imports = ["{base}/conf-glob/conf.d/*.conf", "{base}/conf-glob/conf.d/*.toml"]' in conf_glob
    # Unmanaged files are never rewritten.
    for host, relative in (("preexisting-imports", "extra.d/10-crun.toml"),
                           ("conf-glob", "conf.d/50-nvidia.toml")):
        assert fleet["after_again"][host][relative] == fleet["before"][host][relative]


def test_independent_dump_shows_every_runtime_runc_options_and_pre_existing_runtimes(fleet):
    """Real containerd 1.6 `config dump` of each tree in place, parsed with tomllib here."""
    base, nvidia_bin = fleet["base"], str(fleet["bin"] / "nvidia-container-runtime")
    for host in FLEET:
        document = s.dump(base / host / "config.toml")
        runtimes = s.cri_runtimes(document)
        containerd = document["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]
        assert containerd["default_runtime_name"] == "runc", host
        assert runtimes["nvidia"]["options"] == {"BinaryName": nvidia_bin, "SystemdCgroup": True}, host
        assert runtimes["runc"]["runtime_type"] == "io.containerd.runc.v2", host
        assert runtimes["runc"]["options"].get("SystemdCgroup", False) is (host not in BUILTIN_RUNC_LOADED), host
    assert set(s.cri_runtimes(s.dump(base / "preexisting-imports" / "config.toml"))) == {"runc", "crun", "nvidia"}
    registry = s.dump(base / "registry-only" / "config.toml")["plugins"]["io.containerd.grpc.v1.cri"]["registry"]
    assert registry["mirrors"]["docker.io"]["endpoint"] == ["https://mirror.example"]
    assert s.dump(base / "systemd-runc" / "config.toml")["plugins"]["io.containerd.grpc.v1.cri"]["sandbox_image"] == \
        "registry.k8s.io/pause:3.8"


# --- faults: every host below must fail with a clear message and leave its tree byte for byte -------------

NVIDIA_DISABLES_CRI = 'version = 2\ndisabled_plugins = ["io.containerd.grpc.v1.cri"]\n'
FAULTS = {
    # host: (tree files, extra host vars, text the failure must contain)
    "binary-missing": ({}, {"containerd_runtimes_containerd_bin": "/nonexistent/containerd"},
                       "containerd binary '/nonexistent/containerd' was not found"),
    "unwritable-dir": ({"conf.d/README": "x\n"}, {}, "/conf.d is not writable"),
    "read-only-path": ({}, {}, "is on a read-only file system"),
    "glob-elsewhere": ({}, {"containerd_runtimes_import_pattern": "{tree}/other.d/*.toml"},
                       "does not match the drop-in"),
    "bad-name": ({}, {"containerd_runtimes_runtimes": [{"name": "NVIDIA_GPU"}]}, "'NVIDIA_GPU' is not a DNS-1123 label"),
    "default-guard": ({}, {"containerd_runtimes_default_runtime": "nvidia"},
                      "DEFAULT_RUNTIME=nvidia\nAFFECTED=all\nNEEDS_RUNTIMECLASS=no\nBLAST_RADIUS=node"),
    # The default set by a managed root's settings, not by containerd_runtimes_default_runtime: the candidate's dump.
    "default-via-root-settings": ({"config.toml": "version = 2\n"}, {"containerd_runtimes_manage_root_config": True, "containerd_runtimes_root_settings": {
        "plugins": {"io.containerd.grpc.v1.cri": {"containerd": {"default_runtime_name": "nvidia", "runtimes": {
            "runc": {"runtime_type": "io.containerd.runc.v2"}}}}}}},
        "DEFAULT_RUNTIME=nvidia\nAFFECTED=all\nNEEDS_RUNTIMECLASS=no\nBLAST_RADIUS=node"),
    "candidate-invalid": ({"conf.d/00-off.toml": NVIDIA_DISABLES_CRI}, {}, "the candidate configuration fails its proof"),
    "root-version-3": ({"config.toml": "version = 3\n"}, {}, "has version = 3, above the 2 that containerd 1.6.20 reads"),
    "root-missing": (None, {}, "does not exist and option manage_root_config is false"),
    "shadowed": ({"config.toml": 'version = 2\nimports = ["{tree}/conf.d/*.toml"]\n\n' + s.RUNC_SYSTEMD,
                  "conf.d/zz-vendor.toml": "version = 2\n\n" + s.RUNC_SYSTEMD}, {}, "is loaded after the drop-in"),
    # In conf.d but never loaded so far: the import the role adds would load it and change opt.path, which the inputs
    # do not name (the whole loaded configuration is compared before and after).
    "unmanaged-dropin": ({"conf.d/50-vendor.toml": 'version = 2\n\n[plugins."io.containerd.internal.v1.opt"]\n  path = "/srv/opt"\n'},
                         {}, "the loaded configuration would change plugins.io.containerd.internal.v1.opt.path: "
                             "'/opt/containerd' -> '/srv/opt', which the inputs do not name"),
    # The restart fails, the one on the restored files works: say both, with the failed command's stderr.
    "restart-fails": ({}, {"restart_mode": "fail-once"},
                      "Restart containerd failed after the change: non-zero return code: Job for containerd.service failed. "
                      "The previous files were restored and containerd answers again on restart-fails."),
    # containerd does not come back on the restored files either: never "restored" alone.
    "stays-down": ({}, {"restart_mode": "fail"}, "The previous files were restored, but containerd is down on stays-down"),
    # conf.d did not exist: the role creates it, and removes it again on the rollback.
    "no-dropin-dir": ({}, {"restart_mode": "fail-once", "no_dropin_dir": True}, "The previous files were restored"),
    "verify-fails": ({}, {"restart_mode": "race"}, "MISSING=nvidia"),
    # Issue 22 item 1: a base_runtime_spec file that does not exist dumps fine, and the CRI plugin then refuses to start
    # after the restart (tests/integration/daemon/test_daemon_startup_rules.py): the proof refuses it, before any restart.
    "base-spec-missing": ({}, {"base_runtime_spec": "{tree}/no-such-spec.json"},
                          "which does not exist on the node: the CRI plugin refuses to start"),
    # 1.6 ignores enable_cdi (issue 23 item 6): asking for CDI there is refused with the release rule, nothing written.
    # Issue 22 item 8: conf.d is a link to a directory outside the containerd directory: refused naming it, nothing there.
    "dropin-dir-link": ({}, {}, "leads through a symbolic link to "),
    "cdi-on-16": ({}, {"containerd_runtimes_enable_cdi": True}, "containerd 1.6.20 has no CDI support: the CRI plugin "
                                                                "reads enable_cdi from containerd 1.7.0 on"),
}


@pytest.fixture(scope="module")
def faults(tmp_path_factory):
    require_command("containerd", "containerd")
    require_tool(shutil.which("unshare") and shutil.which("chattr"), "unshare and chattr (util-linux, e2fsprogs) are needed")
    base = tmp_path_factory.mktemp("role16-faults")
    bin_dir = base / "bin"
    nvidia_bin = s.make_executable(bin_dir / "nvidia-container-runtime", "#!/bin/sh\nexit 0\n")
    standin = s.service_standin(bin_dir)
    hosts = {}
    for host, (files, host_vars, _needle) in FAULTS.items():
        tree = base / host
        if files is None:
            (tree / "conf.d").mkdir(parents=True)
        else:
            s.write_tree(tree, {"config.toml": "version = 2\n\n" + s.RUNC_SYSTEMD, **files})
        if host == "dropin-dir-link":
            (base / "outside.d").mkdir()
            (tree / "conf.d").symlink_to(base / "outside.d")
        elif not host_vars.pop("no_dropin_dir", False):
            (tree / "conf.d").mkdir(exist_ok=True)
        mode = host_vars.pop("restart_mode", "ok")
        if "base_runtime_spec" in host_vars:
            host_vars["containerd_runtimes_runtimes"] = [{"name": "nvidia", "binary_name": str(nvidia_bin),
                                                          "base_runtime_spec": host_vars.pop("base_runtime_spec").replace("{tree}", str(tree))}]
        late = ["race", str(tree / "conf.d" / "zz-late.toml"), "version = 2\n\n" + s.RUNC_SYSTEMD] if mode == "race" else [mode]
        hosts[host] = {"containerd_runtimes_config_path": str(tree / "config.toml"),
                       "containerd_runtimes_dropin_dir": str(tree / "conf.d"),
                       "containerd_runtimes_restart_command": [str(standin), str(base / f"{host}.restarts"), *late],
                       **{key: value.replace("{tree}", str(tree)) if isinstance(value, str) else value
                          for key, value in host_vars.items()}}
    group_vars = {"containerd_runtimes_runtimes": [{"name": "nvidia", "binary_name": str(nvidia_bin)}],
                  "containerd_runtimes_wait_command": ["true"]}
    s.write_inventory(base / "inventory.yml", hosts, group_vars)
    before = {host: s.snapshot(base / host) for host in FAULTS}
    subprocess.run(["chattr", "+i", str(base / "unwritable-dir" / "conf.d")], check=True)
    readonly = base / "read-only-path"
    # A private mount namespace: the read-only bind mount exists only for this ansible-playbook run.
    wrapper = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
               'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"', str(readonly)]
    try:
        run = s.run_playbook(ROLE_PLAYBOOK, base / "inventory.yml", wrapper=wrapper)
    finally:
        subprocess.run(["chattr", "-i", str(base / "unwritable-dir" / "conf.d")], check=True)
    return {"base": base, "run": run, "before": before}


@pytest.mark.parametrize("host", sorted(FAULTS))
def test_fault_fails_the_host_with_a_clear_message(faults, host):
    run = faults["run"]
    assert run.recap()[host]["failed"] == 1, run.explain()
    assert FAULTS[host][2] in run.failures(host), run.failures(host) or run.explain()
    assert "Traceback" not in run.failures(host)


@pytest.mark.parametrize("host", sorted(set(FAULTS) - {"verify-fails"}))
def test_fault_leaves_the_tree_byte_for_byte(faults, host):
    assert s.snapshot(faults["base"] / host) == faults["before"][host]


def test_a_file_the_new_import_would_load_is_named(faults):
    """The change itself is only an import; what it would bring in is a vendor's file: say which."""
    assert (f"not loaded today and loaded after the change (the import it adds catches them): "
            f"{faults['base'] / 'unmanaged-dropin' / 'conf.d' / '50-vendor.toml'}") in faults["run"].failures("unmanaged-dropin")


def test_failed_verification_restores_the_files_and_restarts_again(faults):
    base = faults["base"]
    after = s.snapshot(base / "verify-fails")
    # The stand-in's own late file stays (another agent wrote it); every file the role wrote is undone.
    assert after.pop("conf.d/zz-late.toml")
    assert after == faults["before"]["verify-fails"]
    for host in ("verify-fails", "restart-fails", "stays-down", "no-dropin-dir"):
        assert (base / f"{host}.restarts").read_text() == "restart\nrestart\n"
    for host in set(FAULTS) - {"verify-fails", "restart-fails", "stays-down", "no-dropin-dir"}:
        assert not (base / f"{host}.restarts").exists(), host


def test_a_directory_the_role_created_is_removed_on_rollback(faults):
    """Issue 13 item 8: the rollback leaves no conf.d the node did not have."""
    assert not (faults["base"] / "no-dropin-dir" / "conf.d").exists()


@pytest.mark.parametrize("host", ["verify-fails", "restart-fails", "stays-down", "no-dropin-dir"])
def test_the_backup_directory_the_role_created_is_removed_on_rollback(faults, host):
    """Issue 23 item 4: the restored backups are dropped, and so is the .runtime-gate-backups it created for them."""
    assert (faults["base"] / host / "config.toml").exists()
    assert not (faults["base"] / host / ".runtime-gate-backups").exists(), sorted((faults["base"] / host).iterdir())


def test_a_root_config_that_is_a_link_stays_one_written_through(fleet):
    """Issue 22 item 8: the file the link names gets the import; the link itself is kept."""
    root = fleet["base"] / "root-link" / "config.toml"
    assert root.is_symlink() and str(root.readlink()) == "real/containerd.toml"
    assert f'imports = ["{root.parent}/conf.d/*.toml"]' in (root.parent / "real" / "containerd.toml").read_text()
    assert s.cri_runtimes(s.dump(root))["nvidia"]["options"]["BinaryName"].endswith("nvidia-container-runtime")


def test_a_dropin_dir_linked_outside_is_refused_and_nothing_is_written_there(faults):
    failure = faults["run"].failures("dropin-dir-link")
    assert str(faults["base"] / "outside.d") in failure and "/dropin-dir-link/conf.d" in failure, failure
    assert list((faults["base"] / "outside.d").iterdir()) == []
