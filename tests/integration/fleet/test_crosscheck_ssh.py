"""playbooks/crosscheck.yml over real SSH (a private sshd on 127.0.0.2-4) mixed with local-connection hosts.

The SSH hosts run the node module with the system's /usr/bin/python3 (stdlib only, no venv) and the real
containerd; one more SSH host points at a port on 127.0.0.5 where nothing listens, and must end UNKNOWN.
"""
from __future__ import annotations

import socket

import pytest

from support.fleet import CPU_LABELS, FleetHost, build_fleet, comparable_verdicts, expected_verdicts

UNREACHABLE_ADDRESS = "127.0.0.5"


@pytest.fixture(scope="module")
def unreachable_port():
    """A port on 127.0.0.5 bound but never listened on: connections are refused, and no other test
    session can start a listener there while this module runs."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as placeholder:
        placeholder.bind((UNREACHABLE_ADDRESS, 0))
        yield placeholder.getsockname()[1]


@pytest.fixture(scope="module")
def ssh_fleet_hosts(ssh_server, unreachable_port):
    def over_ssh(address):
        return ssh_server.host_vars(address)

    unreachable_vars = dict(ssh_server.host_vars(UNREACHABLE_ADDRESS), ansible_port=unreachable_port,
                            ansible_ssh_timeout=5)
    return [
        FleetHost("ssh-gpu-healthy", "healthy", connection_vars=over_ssh("127.0.0.2")),
        FleetHost("ssh-gpu-dropin-partial", "dropin-partial", connection_vars=over_ssh("127.0.0.3")),
        FleetHost("ssh-gpu-dropin-nvidia-only", "dropin-nvidia-only", connection_vars=over_ssh("127.0.0.4")),
        # A second inventory host on an address already used: the sshd serves both.
        FleetHost("ssh-cpu-runc-only", "runc-only", labels=dict(CPU_LABELS), connection_vars=over_ssh("127.0.0.2")),
        FleetHost("ssh-gpu-config-malformed", "config-malformed", connection_vars=over_ssh("127.0.0.3")),
        FleetHost("ssh-gpu-unreachable", "healthy", connection_vars=unreachable_vars, unreachable=True),
        FleetHost("local-gpu-healthy", "healthy"),
        FleetHost("local-gpu-dropin-glob-conf", "dropin-glob-conf"),
    ]


@pytest.fixture(scope="module")
def ssh_run(tmp_path_factory, ssh_fleet_hosts, run_crosscheck):
    return run_crosscheck(build_fleet(tmp_path_factory.mktemp("ssh-fleet"), ssh_fleet_hosts))


def test_ssh_fleet_run_fails_with_exit_code_2(ssh_run, ssh_server):
    assert ssh_run.returncode == 2, f"{ssh_run.explain()}\n--- sshd log ---\n{ssh_server.log_text()}"


def test_ssh_fleet_verdicts_equal_the_expectation(ssh_run, ssh_fleet_hosts):
    assert comparable_verdicts(ssh_run.verdicts) == expected_verdicts(ssh_fleet_hosts), ssh_run.explain()


def test_ssh_hosts_really_connected_over_ssh(ssh_run, ssh_server):
    """The sshd log shows connections to each loopback address and root logins by public key."""
    log_text = ssh_server.log_text()
    # Clients connect from 127.0.0.1 whatever the destination; the log names the address they reached.
    for address in ("127.0.0.2", "127.0.0.3", "127.0.0.4"):
        assert f"on {address} port {ssh_server.port}" in log_text, log_text
    assert "Accepted publickey for root" in log_text, log_text


def test_ssh_failing_hosts_print_their_missing_lines(ssh_run, ssh_fleet_hosts):
    for host_name, expected in expected_verdicts(ssh_fleet_hosts).items():
        if expected["status"] == "MISSING":
            assert ssh_run.missing_lines(host_name) == set(expected["missing_handlers"]), ssh_run.failure_text(host_name)
        elif expected["status"] == "OK":
            assert ssh_run.failure_text(host_name) == "", ssh_run.explain()


def test_unreachable_host_is_unknown_and_named(ssh_run):
    entry = ssh_run.verdicts["hosts"]["ssh-gpu-unreachable"]
    assert entry["status"] == "UNKNOWN", entry
    assert UNREACHABLE_ADDRESS in entry["reason"], entry
    summary_lines = [line for line in ssh_run.stdout.splitlines() if "ssh-gpu-unreachable" in line]
    assert any("UNKNOWN" in line for line in summary_lines), ssh_run.explain()
