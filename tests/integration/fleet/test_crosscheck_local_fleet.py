"""playbooks/crosscheck.yml over a fleet of local-connection hosts, each with its own containerd config tree.

Every host runs the real ``containerd --config <tree>/config.toml config dump`` (Debian's 1.6.20). One
ansible-playbook run per fleet; the tests below read that one run's exit code, output and verdicts file.
"""
from __future__ import annotations

import os
import re
import tomllib

import pytest

from support.fleet import (
    CONTRACT_FIELDS,
    CPU_LABELS,
    GPU_LABELS,
    SCENARIOS,
    FleetHost,
    build_fleet,
    comparable_verdicts,
    containerd_config_dump,
    expected_verdicts,
)

MIXED_FLEET = [
    FleetHost("gpu-healthy", "healthy"),
    FleetHost("gpu-dropin-glob-match", "dropin-glob-match"),
    FleetHost("gpu-dropin-glob-conf", "dropin-glob-conf"),
    FleetHost("gpu-dropin-partial", "dropin-partial"),
    FleetHost("gpu-dropin-nvidia-only", "dropin-nvidia-only"),
    FleetHost("gpu-root-version-3", "root-version-3"),
    FleetHost("gpu-root-unversioned", "root-unversioned"),
    FleetHost("gpu-default-nvidia", "default-nvidia"),
    FleetHost("cpu-default-nvidia-lost", "default-nvidia-lost", labels=dict(CPU_LABELS)),
    FleetHost("gpu-cri-disabled", "cri-disabled"),
    FleetHost("gpu-binary-missing", "binary-missing"),
    FleetHost("cpu-runc-only", "runc-only", labels=dict(CPU_LABELS)),
    FleetHost("gpu-config-absent", "config-absent"),
    FleetHost("gpu-config-malformed", "config-malformed"),
    # Labels unknown: every RuntimeClass counts, including kata-qemu whose selector matches no node.
    FleetHost("gpu-not-in-cluster", "healthy", labels=None),
    FleetHost("cpu-renamed", "runc-only", labels=dict(CPU_LABELS), node_name="worker-cpu-17.example.internal"),
    # The cluster says GPU; the inventory's labels win, so only runc is required.
    FleetHost("cpu-labels-from-inventory", "runc-only", labels=dict(GPU_LABELS), inventory_labels=dict(CPU_LABELS)),
    FleetHost("cpu-labels-only-in-inventory", "runc-only", labels=None, inventory_labels=dict(CPU_LABELS)),
]

HEALTHY_FLEET = [
    FleetHost("gpu-healthy", "healthy"),
    FleetHost("gpu-dropin-glob-match", "dropin-glob-match"),
    FleetHost("gpu-default-nvidia", "default-nvidia"),
    FleetHost("cpu-runc-only", "runc-only", labels=dict(CPU_LABELS)),
    FleetHost("cpu-renamed", "runc-only", labels=dict(CPU_LABELS), node_name="worker-cpu-17.example.internal"),
]

DUMP_FILE_FLEET = [
    FleetHost("gpu-healthy-from-dump", "healthy", use_dump_file=True),
    FleetHost("gpu-dropin-partial-from-dump", "dropin-partial", use_dump_file=True),
    FleetHost("gpu-dropin-nvidia-only-from-dump", "dropin-nvidia-only", use_dump_file=True),
    FleetHost("gpu-default-nvidia-from-dump", "default-nvidia", use_dump_file=True),
    FleetHost("gpu-live-beside-dumps", "dropin-glob-conf"),
]


def summary_rows(run) -> dict:
    """Lines of the printed output whose first word is a host name, keyed by host, as word lists."""
    host_names = {host.name for host in run.fleet.hosts}
    rows = {}
    for line in run.stdout.replace("\\n", "\n").splitlines():
        words = line.strip().strip('",').split()
        # PLAY RECAP lines ("host : ok=4 ...") share the first word; the table's rows do not have ":".
        if len(words) >= 3 and words[0] in host_names and words[1] != ":":
            rows[words[0]] = words
    return rows


def assert_summary_lists(run, expected):
    rows = summary_rows(run)
    for host_name, verdict in expected.items():
        assert host_name in rows, f"no summary row for {host_name}\n{run.explain()}"
        words = rows[host_name]
        assert verdict["status"] in words, (host_name, words)
        if verdict["status"] != "UNKNOWN":
            assert (verdict["default_runtime"] or "-") in words, (host_name, words)
            row_text = " ".join(words)
            for handler in verdict["missing_handlers"]:
                assert re.search(rf"(^|[\s,]){re.escape(handler)}($|[\s,])", row_text), (host_name, handler, words)


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory, run_crosscheck):
    return run_crosscheck(build_fleet(tmp_path_factory.mktemp("mixed-fleet"), MIXED_FLEET))


def test_scenario_statements_match_the_real_containerd(tmp_path, containerd_bin):
    """The oracle itself: each scenario's stated dump content is what containerd 1.6 really prints."""
    fleet = build_fleet(tmp_path, [FleetHost(f"node-{name}", name) for name in SCENARIOS])
    for host in fleet.hosts:
        scenario = host.config
        if scenario.containerd_refuses:
            with pytest.raises(RuntimeError, match="failed to load TOML"):
                containerd_config_dump(fleet.config_path(host.name), containerd_bin)
            continue
        dump = tomllib.loads(containerd_config_dump(fleet.config_path(host.name), containerd_bin))
        cri = dump.get("plugins", {}).get("io.containerd.grpc.v1.cri", {})
        assert set(cri.get("containerd", {}).get("runtimes", {})) == scenario.dumped_runtimes, scenario.name
        assert cri.get("containerd", {}).get("default_runtime_name") == scenario.default_runtime, scenario.name
        assert ("io.containerd.grpc.v1.cri" in dump["disabled_plugins"]) == scenario.cri_disabled, scenario.name
        # A stated absent binary is the dumped runtime's BinaryName, and it is really absent; every other exists.
        for name, runtime in cri.get("containerd", {}).get("runtimes", {}).items():
            binary = runtime.get("options", {}).get("BinaryName")
            if binary:
                assert os.access(binary, os.X_OK) == (name not in scenario.absent_binaries), (scenario.name, name, binary)
        assert scenario.absent_binaries <= scenario.dumped_runtimes, scenario.name


def test_mixed_fleet_fails_the_run_with_exit_code_2(mixed_run):
    assert mixed_run.returncode == 2, mixed_run.explain()


def test_mixed_fleet_verdicts_file_equals_the_expectation(mixed_run):
    document = mixed_run.verdicts
    for host_name, entry in document["hosts"].items():
        assert set(CONTRACT_FIELDS) | {"reason"} <= set(entry), (host_name, sorted(entry))
    assert comparable_verdicts(document) == expected_verdicts(MIXED_FLEET)


def test_each_failing_host_fails_with_its_missing_lines(mixed_run):
    for host_name, expected in expected_verdicts(MIXED_FLEET).items():
        if expected["status"] == "OK":
            assert mixed_run.failure_text(host_name) == "", f"{host_name} is healthy but failed\n{mixed_run.explain()}"
        elif expected["status"] == "UNKNOWN":
            assert mixed_run.failure_text(host_name), f"{host_name} is UNKNOWN but did not fail\n{mixed_run.explain()}"
        else:
            assert mixed_run.missing_lines(host_name) == set(expected["missing_handlers"]), (
                f"{host_name}: wrong MISSING= lines\n{mixed_run.failure_text(host_name)}")


def test_missing_or_malformed_config_is_unknown_naming_host_and_config(mixed_run):
    verdicts = mixed_run.verdicts["hosts"]
    for host_name, cause in (("gpu-config-absent", "no such file or directory"),
                             ("gpu-config-malformed", "failed to load TOML")):
        config_path = str(mixed_run.fleet.config_path(host_name))
        assert verdicts[host_name]["status"] == "UNKNOWN"
        assert config_path in verdicts[host_name]["reason"], verdicts[host_name]
        messages = [line for line in mixed_run.failure_text(host_name).splitlines() if config_path in line]
        assert messages, f"no failure message for {host_name} names {config_path}\n{mixed_run.explain()}"
        assert any(re.search(rf"\b{re.escape(host_name)}\b.*{re.escape(config_path)}", line.split("=>", 1)[-1])
                   for line in messages), messages
        assert any(cause in line for line in messages), messages


def test_runtime_whose_binary_is_missing_is_not_served(mixed_run):
    verdict = mixed_run.verdicts["hosts"]["gpu-binary-missing"]
    binary = str(mixed_run.fleet.tree("gpu-binary-missing") / "usr" / "bin" / "nvidia-container-runtime")
    assert (verdict["status"], verdict["missing_handlers"]) == ("MISSING", ["nvidia"])
    assert verdict["missing_explained"] == {"nvidia": ["RUNTIME_BINARY_MISSING"]}
    finding = next(finding for finding in verdict["findings"] if finding["code"] == "RUNTIME_BINARY_MISSING")
    assert (finding["severity"], finding["handlers"], finding["evidence"]["binary"]) == ("error", ["nvidia"], binary)
    assert "MISSING=nvidia" in mixed_run.failure_text("gpu-binary-missing")


def test_mixed_fleet_summary_table_lists_every_host(mixed_run):
    assert_summary_lists(mixed_run, expected_verdicts(MIXED_FLEET))


def test_all_healthy_fleet_exits_0(tmp_path, run_crosscheck):
    run = run_crosscheck(build_fleet(tmp_path, HEALTHY_FLEET, cluster_format="manifests"))
    assert run.returncode == 0, run.explain()
    assert comparable_verdicts(run.verdicts) == expected_verdicts(HEALTHY_FLEET)
    assert {entry["status"] for entry in run.verdicts["hosts"].values()} == {"OK"}
    assert "MISSING=" not in run.stdout
    assert_summary_lists(run, expected_verdicts(HEALTHY_FLEET))


def test_dump_files_are_judged_without_running_containerd(tmp_path, run_crosscheck):
    """Hosts with runtime_gate_dump_file point runtime_gate_containerd_bin at a path that does not exist."""
    fleet = build_fleet(tmp_path, DUMP_FILE_FLEET)
    run = run_crosscheck(fleet)
    assert run.returncode == 2, run.explain()
    assert comparable_verdicts(run.verdicts) == expected_verdicts(DUMP_FILE_FLEET)
    for host_name, expected in expected_verdicts(DUMP_FILE_FLEET).items():
        if expected["status"] != "OK":
            assert run.missing_lines(host_name) == set(expected["missing_handlers"]), run.failure_text(host_name)
