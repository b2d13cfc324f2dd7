"""gpufleet.runtime_gate.containerd_facts through pytest-ansible, one multi-host inventory per test.

pytest-ansible's ``ansible_module`` fixture is bound to the session's ``--inventory``/``--host-pattern``;
each test here needs its own inventory (fresh config trees), so the same dispatcher object is built from
``ansible_adhoc(inventory=..., host_pattern=...)``. One call runs the module on every host of the test's
inventory (local connection, the real containerd); per-host arguments come from host variables through
templates, which ansible-core 2.19 only renders when the strings are marked trusted.
"""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from ansible.template import trust_as_template

from support.containerd_trees import dumped
from support.fleet import FleetHost, build_fleet, runtime_binary

REPO_ROOT = Path(__file__).resolve().parents[3]
FACTS_MODULE = "gpufleet.runtime_gate.containerd_facts"
# The playbook's variable names, so an inventory written for crosscheck.yml drives the module too.
MODULE_ARGS = {
    "containerd_bin": "{{ runtime_gate_containerd_bin | default('containerd') }}",
    "config_path": "{{ runtime_gate_containerd_config }}",
    "dump_file": "{{ runtime_gate_dump_file | default(omit) }}",
}
RUNC_V2 = "io.containerd.runc.v2"
FACTS_PLAYBOOK = """\
- hosts: gpu_nodes
  gather_facts: false
  tasks:
    - gpufleet.runtime_gate.containerd_facts:
        config_path: "{{ runtime_gate_containerd_config }}"
"""
NVIDIA_BINARY = "/usr/bin/nvidia-container-runtime"


@pytest.fixture
def containerd_facts_on(ansible_adhoc, containerd_bin):
    """``containerd_facts_on(fleet[, module_args])`` → ``{host: result}`` for one module run over the fleet's gpu_nodes."""
    def run(fleet, module_args=None):
        module_args = MODULE_ARGS if module_args is None else module_args
        host_manager = ansible_adhoc(inventory=str(fleet.inventory_path), host_pattern="gpu_nodes")
        containerd_facts = getattr(host_manager["gpu_nodes"], FACTS_MODULE)
        results = containerd_facts(**{name: trust_as_template(value) for name, value in module_args.items()})
        return {host.name: results[host.name] for host in fleet.hosts}
    return run


def write_executable(path, script):
    path.write_text(script, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(path)


def test_facts_from_live_dumps_on_many_hosts(tmp_path, containerd_facts_on):
    hosts = [FleetHost(f"facts-{scenario}", scenario) for scenario in (
        "healthy", "dropin-glob-match", "dropin-glob-conf", "dropin-partial", "dropin-nvidia-only",
        "root-version-3", "default-nvidia", "cri-disabled")]
    fleet = build_fleet(tmp_path, hosts)
    results = containerd_facts_on(fleet)
    for host in hosts:
        result = results[host.name]
        assert not result.is_failed, (host.name, dict(result))
        assert result.get("changed") is False, host.name
        facts = result["ansible_facts"]["containerd"]
        assert facts["source"] == "command", host.name
        assert facts["containerd_version"].startswith("1.6."), facts["containerd_version"]
        assert facts["dump_version"] == 2, host.name
        # The module reports what the dump lists; whether CRI can serve it is the verdict's business.
        assert set(facts["runtimes"]) == host.config.dumped_runtimes, host.name
        if not host.config.cri_disabled:
            assert facts["cri_runtime_plugin"] == "io.containerd.grpc.v1.cri", host.name
            assert facts["default_runtime_name"] == host.config.default_runtime, host.name
        for name, runtime in facts["runtimes"].items():
            assert runtime["runtime_type"] == RUNC_V2, (host.name, name)
            # BinaryName points at the stand-in inside the host's tree (tests/support/fleet.py).
            assert runtime["binary_name"] == runtime_binary(fleet.tree(host.name), name), (host.name, name, runtime)
            # Declared runtimes carry the options the files set; containerd's built-in runc (the only
            # runtime of root-version-3) carries its full default option set, SystemdCgroup = false.
            assert "SystemdCgroup" in runtime["options"], (host.name, name, runtime)
            if name != "runc":
                assert runtime["options"]["SystemdCgroup"] is True, (host.name, name, runtime)


def test_facts_from_dump_files_never_run_the_binary(tmp_path, containerd_facts_on):
    """A live 1.6 dump taken beforehand, and dumps the real 1.7, 2.2 and 2.3 print for scenario trees of
    tests/fixtures/containerd (support.containerd_trees), taken just before the run."""
    released_dumps = {f"dump-{release_name}": dumped(scenario, release_name, tmp_path / "released")
                      for release_name, scenario in (("1.7", "S3full"), ("2.2", "S1"), ("2.3", "S1"))}
    # One capture with what `containerd --version` printed beside it: the release is then exact.
    versioned = dumped("S1v4", "2.3", tmp_path / "released")
    versioned.write_version_file()
    released_dumps["dump-2.3-versioned"] = versioned
    for host_name, dump in released_dumps.items():
        assert dump.returncode == 0, (host_name, dump.stderr)
    hosts = [FleetHost("dump-live-1.6-partial", "dropin-partial", use_dump_file=True)] + [
        FleetHost(host_name, "config-absent",
                  inventory_vars={"runtime_gate_dump_file": str(dump.path),
                                  "runtime_gate_containerd_bin": str(tmp_path / "no-such-containerd")})
        for host_name, dump in released_dumps.items()]
    fleet = build_fleet(tmp_path, hosts)
    results = containerd_facts_on(fleet)
    expected = {
        "dump-live-1.6-partial": (2, "io.containerd.grpc.v1.cri", {"runc", "nvidia"}),
        "dump-1.7": (2, "io.containerd.grpc.v1.cri", {"runc", "nvidia", "nvidia-cdi"}),
        "dump-2.2": (3, "io.containerd.cri.v1.runtime", {"runc", "nvidia", "nvidia-cdi"}),
        "dump-2.3": (4, "io.containerd.cri.v1.runtime", {"runc", "nvidia", "nvidia-cdi"}),
        "dump-2.3-versioned": (4, "io.containerd.cri.v1.runtime", {"runc", "nvidia", "nvidia-cdi"}),
    }
    for host_name, (dump_version, cri_plugin, runtimes) in expected.items():
        result = results[host_name]
        assert not result.is_failed, (host_name, dict(result))
        facts = result["ansible_facts"]["containerd"]
        assert facts["source"] == "file", host_name
        assert (facts["dump_version"], facts["cri_runtime_plugin"]) == (dump_version, cri_plugin), host_name
        assert set(facts["runtimes"]) == runtimes, host_name
        assert facts["default_runtime_name"] == "runc", host_name
        tree_binary = runtime_binary(fleet.tree(host_name), "nvidia") if host_name.startswith("dump-live") else NVIDIA_BINARY
        assert facts["runtimes"]["nvidia"]["binary_name"] == tree_binary, host_name
    # No binary ran: the release is what the version file beside the dump says, or none (the family from the dump).
    versioned_facts = results["dump-2.3-versioned"]["ansible_facts"]["containerd"]
    assert versioned_facts["containerd_version"] == versioned.release.version
    assert "containerd-version.txt" in versioned_facts["version_source"]
    for host_name in ("dump-live-1.6-partial", "dump-1.7", "dump-2.2", "dump-2.3"):
        facts = results[host_name]["ansible_facts"]["containerd"]
        assert facts["containerd_version"] is None, host_name
        assert facts["containerd_release"]["source"] == "inferred from the dump", host_name


def test_gathering_failures_name_the_node_and_the_command_or_file(tmp_path, containerd_facts_on):
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    silent_containerd = write_executable(scripts / "containerd-silent", "#!/bin/sh\nexit 0\n")
    failing_containerd = write_executable(
        scripts / "containerd-failing", '#!/bin/sh\necho "fake containerd: plugin init exploded" >&2\nexit 3\n')
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    malformed_dump = dumps / "malformed.toml"
    malformed_dump.write_text('version = 2\n[plugins."io.containerd.grpc.v1.cri"\n', encoding="utf-8")
    non_utf8_dump = dumps / "latin1.toml"
    non_utf8_dump.write_bytes('version = 2\n# r\xe9sum\xe9\n'.encode("latin-1"))
    missing_dump = dumps / "never-written.toml"
    # A node's root config.toml (version 2, a CRI runtime) passed as if it were a dump.
    root_config_as_dump = dumps / "config.toml"
    root_config_as_dump.write_text('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n'
                                   '  default_runtime_name = "runc"\n', encoding="utf-8")
    missing_binary = str(tmp_path / "no-such-containerd")

    hosts = [
        FleetHost("fail-binary-missing", "healthy", inventory_vars={"runtime_gate_containerd_bin": missing_binary}),
        FleetHost("fail-config-malformed", "config-malformed"),
        FleetHost("fail-config-absent", "config-absent"),
        FleetHost("fail-nonzero-exit", "healthy", inventory_vars={"runtime_gate_containerd_bin": failing_containerd}),
        FleetHost("fail-empty-output", "healthy", inventory_vars={"runtime_gate_containerd_bin": silent_containerd}),
        FleetHost("fail-malformed-dump", "healthy", inventory_vars={"runtime_gate_dump_file": str(malformed_dump)}),
        FleetHost("fail-non-utf8-dump", "healthy", inventory_vars={"runtime_gate_dump_file": str(non_utf8_dump)}),
        FleetHost("fail-dump-absent", "healthy", inventory_vars={"runtime_gate_dump_file": str(missing_dump)}),
        FleetHost("fail-config-as-dump", "healthy", inventory_vars={"runtime_gate_dump_file": str(root_config_as_dump)}),
    ]
    fleet = build_fleet(tmp_path / "fleet", hosts)
    results = containerd_facts_on(fleet)
    config = {host.name: str(fleet.config_path(host.name)) for host in hosts}
    # host → fragments its message must contain: the command or file, and the cause.
    expected_fragments = {
        "fail-binary-missing": [missing_binary, "not found"],
        "fail-config-malformed": [config["fail-config-malformed"], "exited 1", "failed to load TOML",
                                  "unterminated"],
        "fail-config-absent": [config["fail-config-absent"], "exited 1", "no such file or directory"],
        "fail-nonzero-exit": [failing_containerd, "config dump", "exited 3", "plugin init exploded"],
        "fail-empty-output": [silent_containerd, "config dump", "nothing"],
        "fail-malformed-dump": [str(malformed_dump), "TOML"],
        "fail-non-utf8-dump": [str(non_utf8_dump), "UTF-8"],
        "fail-dump-absent": [str(missing_dump), "does not exist"],
        "fail-config-as-dump": [str(root_config_as_dump), "no top-level root, state", "not such an output"],
    }
    for host_name, fragments in expected_fragments.items():
        result = results[host_name]
        assert result.is_failed, (host_name, dict(result))
        message = result["msg"]
        assert host_name in message, message
        for fragment in fragments:
            assert fragment.lower() in message.lower(), (host_name, fragment, message)
        assert "Traceback" not in message and "ansible_facts" not in result, (host_name, dict(result))


def test_check_mode_gathers_the_same_facts(tmp_path, containerd_bin):
    """Facts modules run unchanged under --check.

    Through the ``ansible`` CLI: pytest-ansible 26 accepts ``check=True`` but never hands it to ad-hoc
    runs (``_configure_adhoc_cli`` forwards only connection, user, become*, module_path).
    """
    fleet = build_fleet(tmp_path, [FleetHost("check-healthy", "healthy"), FleetHost("check-partial", "dropin-partial")])
    module_args = " ".join(f"{name}={value!r}" for name, value in MODULE_ARGS.items() if name != "dump_file")
    tree_dir = tmp_path / "results"
    # The tree callback writes each host's result as JSON to <tree_dir>/<host>.
    environment = dict(os.environ, ANSIBLE_CONFIG=str(REPO_ROOT / "ansible.cfg"), ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
                       ANSIBLE_CALLBACKS_ENABLED="ansible.builtin.tree", ANSIBLE_CALLBACK_TREE_DIR=str(tree_dir),
                       ANSIBLE_NOCOLOR="1")
    completed = subprocess.run(
        [str(Path(sys.executable).with_name("ansible")), "gpu_nodes", "-i", str(fleet.inventory_path), "--check",
         "-m", FACTS_MODULE, "-a", module_args],
        cwd=REPO_ROOT, env=environment, capture_output=True, text=True, timeout=120, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    for host in fleet.hosts:
        result = json.loads((tree_dir / host.name).read_text(encoding="utf-8"))
        assert not result.get("failed") and result.get("changed") is False, result
        assert set(result["ansible_facts"]["containerd"]["runtimes"]) == host.config.dumped_runtimes, host.name


# Registry credentials as containerd configs carry them; none may leave the node (docs/security.md).
SECRETS = {
    "dropin_password": "PW-dropin-7f3a91",      # imported drop-in: also in containerd's dump
    "dropin_auth": "cm9ib3Q6UFctZHJvcGlu",      # imported drop-in: base64 auth, also in the dump
    "root_inline": "PW-root-inline-c402",       # root file, inline table (its CRI table is replaced: file text only)
    "unloaded_token": "TOKEN-unloaded-e5d1",    # a .conf drop-in no import reaches: listed with its text
}
REGISTRY_DROPIN = f"""
[plugins."io.containerd.grpc.v1.cri".registry.configs."registry.example.com".auth]
  username = "robot"
  password = "{SECRETS['dropin_password']}"
  auth = "{SECRETS['dropin_auth']}"
"""
REGISTRY_ROOT = (f'[plugins."io.containerd.grpc.v1.cri".registry.configs."mirror.example.com"]\n'
                 f'  auth = {{ username = "u", password = "{SECRETS["root_inline"]}" }}\n')
REGISTRY_UNLOADED = (f'version = 2\n[plugins."io.containerd.grpc.v1.cri".registry.configs."other.example.com".auth]\n'
                     f'  identitytoken = "{SECRETS["unloaded_token"]}"\n')


def test_registry_credentials_never_leave_the_node(tmp_path, monkeypatch, run_crosscheck, containerd_bin):
    """A real 1.6 tree with registry credentials through crosscheck.yml at -vvv: output, facts, fact cache and
    reports carry none of them, and the host's verdict and findings are the same as without them."""
    host = FleetHost("gpu-registry-auth", "dropin-partial")  # 1.x: the drop-in replaces the CRI table; nvidia-cdi lost
    fleet = build_fleet(tmp_path, [host])
    tree = fleet.tree(host.name)
    with open(tree / "conf.d" / "99-nvidia.toml", "a", encoding="utf-8") as dropin:
        dropin.write(REGISTRY_DROPIN)
    with open(fleet.config_path(host.name), "a", encoding="utf-8") as root:
        root.write(REGISTRY_ROOT)
    (tree / "conf.d" / "50-registry.conf").write_text(REGISTRY_UNLOADED, encoding="utf-8")
    dump = subprocess.run([containerd_bin, "--config", str(fleet.config_path(host.name)), "config", "dump"],
                          capture_output=True, text=True, check=True, cwd="/").stdout
    # The test can fail: the real containerd prints the drop-in's credentials in its dump.
    assert SECRETS["dropin_password"] in dump and SECRETS["dropin_auth"] in dump

    cache_dir, report_dir = tmp_path / "fact-cache", tmp_path / "report"
    monkeypatch.setenv("ANSIBLE_CACHE_PLUGIN", "jsonfile")
    monkeypatch.setenv("ANSIBLE_CACHE_PLUGIN_CONNECTION", str(cache_dir))
    run = run_crosscheck(fleet, "-vvv", "-e", f"runtime_gate_report_dir={report_dir}")
    assert run.returncode == 2, run.explain()  # the host is MISSING nvidia-cdi
    # crosscheck.yml judges in the node's own task, which fails the host: its facts are not cached. The module
    # alone sets them, so it runs here too, at -vvv into the same cache.
    facts_playbook = tmp_path / "facts.yml"
    facts_playbook.write_text(FACTS_PLAYBOOK, encoding="utf-8")
    facts_run = subprocess.run([str(Path(sys.executable).with_name("ansible-playbook")), "-vvv", "-i", str(fleet.inventory_path),
                                str(facts_playbook)], cwd=REPO_ROOT, capture_output=True, text=True, check=False, timeout=300,
                               env=dict(os.environ, ANSIBLE_CONFIG=str(REPO_ROOT / "ansible.cfg"),
                                        ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp")))
    assert facts_run.returncode == 0, facts_run.stdout + facts_run.stderr
    # ansible-core 2.19's jsonfile cache: one file per host (a serialization prefix before the name), a JSON payload.
    (cache_file,) = cache_dir.glob(f"*{host.name}")
    cached = cache_file.read_text(encoding="utf-8")
    facts = json.loads(json.loads(cached)["__payload__"])["containerd"]
    written = [run.stdout, run.stderr, facts_run.stdout, facts_run.stderr, cached,
               fleet.verdicts_path.read_text(encoding="utf-8")] + [path.read_text(encoding="utf-8") for path in report_dir.iterdir()]
    for name, secret in SECRETS.items():
        assert not any(secret in text for text in written), f"{name} leaked"
    # The texts are still there, redacted, so the findings still read the files.
    texts = {entry["path"]: entry["text"] for entry in facts["config_files"]}
    assert 'password = "<redacted>"' in texts[str(tree / "conf.d" / "99-nvidia.toml")]
    assert 'auth = { username = "u", password = "<redacted>" }' in texts[str(fleet.config_path(host.name))]
    unloaded = next(entry for listing in facts["dropin_dirs"] for entry in listing["entries"] if entry["name"] == "50-registry.conf")
    assert 'identitytoken = "<redacted>"' in unloaded["text"]
    verdict = run.verdicts["hosts"][host.name]
    assert (verdict["status"], verdict["missing_handlers"]) == ("MISSING", ["nvidia-cdi"]), verdict
    assert "CRI_TABLE_REPLACED" in verdict["missing_explained"]["nvidia-cdi"], verdict["missing_explained"]


def test_host_root_without_a_wrapper_or_dump_file_fails_instead_of_reading_this_machine(tmp_path, containerd_facts_on):
    """containerd reads this machine's /etc/containerd whatever host_root says: without a wrapper, refuse."""
    node_root = tmp_path / "node-root"
    (node_root / "etc" / "containerd").mkdir(parents=True)
    (node_root / "etc" / "containerd" / "config.toml").write_text("version = 2\n", encoding="utf-8")
    hosts = [FleetHost("bare-under-host-root", "healthy",
                       inventory_vars={"runtime_gate_host_root": str(node_root), "runtime_gate_containerd_config": "/etc/containerd/config.toml"})]
    fleet = build_fleet(tmp_path / "fleet", hosts)
    host_manager_args = dict(MODULE_ARGS, host_root="{{ runtime_gate_host_root }}",
                             containerd_bin="{{ runtime_gate_containerd_bin | default(omit, true) }}")
    result = containerd_facts_on(fleet, host_manager_args)["bare-under-host-root"]
    assert result.is_failed, dict(result)
    assert "ansible_facts" not in result
    for fragment in ("bare-under-host-root", str(node_root), "containerd_bin", "wrapper", "dump_file"):
        assert fragment in result["msg"], (fragment, result["msg"])
