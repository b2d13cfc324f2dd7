"""What a user reads after `ansible-playbook -i inventory/demo/hosts.yml playbooks/crosscheck.yml` from the checkout
(ansible.cfg selects the collection's console callback): each failure once with real line breaks, the summary as a
plain table, and nothing after it but the recap."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support.console import printed_results
from support.paths import REPO_ROOT

DEMO = REPO_ROOT / "inventory" / "demo"
BIN = Path(sys.executable).parent
PROBE_PLUGINS = REPO_ROOT / "tests" / "support" / "callback_plugins"
EXPECTED = yaml.safe_load((DEMO / "expected-verdicts.yml").read_text())["hosts"]
OUTPUT_SETTINGS = ("ANSIBLE_STDOUT_CALLBACK", "ANSIBLE_CALLBACK_RESULT_FORMAT", "ANSIBLE_DISPLAY_SKIPPED_HOSTS",
                   "ANSIBLE_DISPLAY_OK_HOSTS")
FAILED_HOSTS = [host for host, expected in EXPECTED.items() if expected["status"] != "OK"]


def crosscheck_run(tmp_path, *extra_args, **env_extra):
    # The output as ansible.cfg shapes it, whatever this shell exports.
    env = {key: value for key, value in os.environ.items() if key not in OUTPUT_SETTINGS}
    env.update(ANSIBLE_CONFIG=str(REPO_ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"), **env_extra)
    completed = subprocess.run(
        [BIN / "ansible-playbook", "-i", str(DEMO / "hosts.yml"), str(REPO_ROOT / "playbooks" / "crosscheck.yml"),
         "-e", f"runtime_gate_verdicts_file={tmp_path / 'verdicts.json'}", *extra_args],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=False, timeout=300,
    )
    assert completed.returncode == 2, completed.stdout + completed.stderr
    return completed


def crosscheck_output(tmp_path, *extra_args, **env_extra):
    return crosscheck_run(tmp_path, *extra_args, **env_extra).stdout


@pytest.fixture(scope="module")
def probed_run(tmp_path_factory):
    """The demo's crosscheck with a probe of each play's removed-host list (tests/support/callback_plugins)."""
    tmp_path = tmp_path_factory.mktemp("console")
    probe = tmp_path / "removed-hosts.json"
    completed = crosscheck_run(tmp_path, ANSIBLE_CALLBACK_PLUGINS=str(PROBE_PLUGINS), ANSIBLE_CALLBACKS_ENABLED="removed_hosts_probe",
                               RUNTIME_GATE_REMOVED_HOSTS_PROBE=str(probe))
    return completed, json.loads(probe.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def console(probed_run):
    return probed_run[0].stdout


def test_no_deprecation_warning(probed_run):
    """The per-host play runs on ansible.builtin.linear: ansible-core 2.19 warns about every play on a strategy plugin
    outside ansible.builtin (which a future release removes), and a newcomer's first run should say nothing of it."""
    completed, _probed = probed_run
    assert "DEPRECATION" not in completed.stdout + completed.stderr, completed.stderr


def test_failed_hosts_are_looked_up_in_constant_time(probed_run):
    """Every play the console callback announces runs with a counted removed-host list (plugin_utils/_removed_hosts):
    the per-host play ends with the hosts it failed in it, so that list is the one the play's iterator used."""
    _completed, probed = probed_run
    judging = [play for play in probed if play["play"] == "Judge each node's loaded containerd configuration"]
    assert [play["strategy"] for play in judging] == ["linear"], probed
    assert all(play["list_type"] == "RemovedHosts" for play in probed), probed
    assert sorted(judging[0]["removed"]) == sorted(FAILED_HOSTS), probed


def test_each_failed_host_shows_its_missing_lines_once(console):
    lines = [line.strip() for line in console.splitlines()]
    for handler in sorted({handler for expected in EXPECTED.values() for handler in expected.get("missing_handlers", [])}):
        hosts = [host for host, expected in EXPECTED.items() if handler in expected.get("missing_handlers", [])]
        assert lines.count(f"MISSING={handler}") == len(hosts), (handler, hosts, console)
    for host in FAILED_HOSTS:
        messages = [result["msg"] for result in printed_results(console, host) if not result.get("unreachable")]
        assert len(messages) == 1, (host, messages)
        if EXPECTED[host]["status"] == "MISSING":
            assert [line for line in messages[0].splitlines() if line.startswith("MISSING=")] == [
                f"MISSING={handler}" for handler in EXPECTED[host]["missing_handlers"]], messages[0]
        else:
            assert messages[0].startswith("UNKNOWN=host unreachable"), messages[0]
    assert console.count("UNKNOWN=host unreachable") == 1, console


def test_findings_are_printed_once_with_real_line_breaks(console):
    assert "\\n" not in console and '\\"' not in console
    # ansible-core 2.19's default callback repeats each failure in an [ERROR] block before the result.
    assert "[ERROR]" not in console, console
    assert "Callback dispatch" not in console, console
    # Each finding's evidence line names the host's version file: one line per finding, each printed once.
    for host in FAILED_HOSTS:
        evidence = [line.strip() for line in console.splitlines() if f"nodes/{host}/containerd-version.txt" in line]
        assert len(evidence) == len(EXPECTED[host]["finding_codes"]), (host, evidence)
        assert all(line.startswith("evidence: ") for line in evidence), (host, evidence)
    assert any(line.strip().startswith("DROPIN_NOT_IMPORTED (error): ") for line in console.splitlines())


def test_summary_is_a_plain_table_and_ends_the_output(console):
    lines = console.splitlines()
    header = next((index for index, line in enumerate(lines)
                   if re.fullmatch(r"HOST +VERDICT +DEFAULT +MISSING / REASON", line)), None)
    assert header is not None, f"no plain table header line\n{console}"
    recap = next(index for index, line in enumerate(lines) if line.startswith("PLAY RECAP"))
    table = lines[header:recap]
    for host, expected in EXPECTED.items():
        assert any(re.match(rf"{re.escape(host)} +{expected['status']} ", line) for line in table), (host, table)
    counts = ", ".join(f"{sum(e['status'] == verdict for e in EXPECTED.values())} {verdict}"
                       for verdict in ("OK", "MISSING", "UNKNOWN"))
    assert f"{counts} of {len(EXPECTED)} hosts" in table
    assert not any(line.lstrip().startswith('"') for line in table), table
    # Nothing between the table and the recap: no task banner, no play banner, no skipped or ok host.
    assert not [line for line in table if re.match(r"(TASK|PLAY) \[|(skipping|ok|changed|fatal|failed): ", line)], table
    assert lines[header - 1].startswith("TASK [Show the fleet summary]"), lines[header - 2:header + 1]


def test_overhead_warnings_name_only_the_judged_nodes(console, tmp_path):
    """The demo's bigmem-canary pod does not fit gpu-node-07 with its overhead: a run limited to other nodes leaves
    the warning out (issue 25 item 4)."""
    assert "WARNING POD_DOES_NOT_FIT_WITH_OVERHEAD [gpu-node-07]" in console
    limited = crosscheck_output(tmp_path, "-l", "localhost,gpu-node-02,gpu-node-03,gpu-node-05")
    assert "0 OK, 3 MISSING, 0 UNKNOWN of 3 hosts" in limited, limited
    assert "gpu-node-07" not in limited and "Overhead warnings" not in limited, limited


def test_failed_hosts_still_fail_in_the_recap(console):
    recap = dict(re.findall(r"^(\S+)\s+: (ok=.*)$", console, re.MULTILINE))
    for host, expected in EXPECTED.items():
        assert (" failed=0 " in recap[host]) == (expected["status"] == "OK"), (host, recap[host])


@pytest.mark.parametrize("result_format", ["json", "yaml"])
def test_default_callback_is_readable_by_itself(tmp_path, result_format):
    """What an installed collection prints unless the console callback is selected (docs/console.md): ansible-core
    2.19's default callback, with either result format. Each failure is one line, in the [ERROR] line and in the
    result alike, and the summary is a list of lines."""
    output = crosscheck_output(tmp_path, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default",
                               ANSIBLE_CALLBACK_RESULT_FORMAT=result_format)
    assert "\\n" not in output
    lines = output.splitlines()
    verdicts = json.loads((tmp_path / "verdicts.json").read_text())["hosts"]
    for host in FAILED_HOSTS:
        (result,) = printed_results(output, host)
        message = result["msg"]
        assert "\n" not in message and message.startswith(("MISSING=", "UNKNOWN=")), message
        assert message.split("; ")[0].split(" (")[0] == verdicts[host]["lines"][0], (message, verdicts[host]["lines"])
        for handler, codes in verdicts[host]["missing_explained"].items():
            assert f"MISSING={handler} ({', '.join(codes)})" in message, (handler, message)
        # the [ERROR] line before the result says the same in one line, then where the task is
        error = lines.index(f"[ERROR]: Task failed: Action failed: {message}")
        assert lines[error + 1].startswith("Origin: "), lines[error:error + 3]
    summaries = [result["msg"] for host in EXPECTED for result in printed_results(output, host, statuses=("ok",))
                 if isinstance(result.get("msg"), list)]
    assert len(summaries) == 1, output
    (summary,) = summaries
    assert re.fullmatch(r"HOST +VERDICT +DEFAULT +MISSING / REASON", summary[0]), summary
    assert "2 OK, 5 MISSING, 1 UNKNOWN of 8 hosts" in summary
    assert all("\n" not in line for line in summary)


def fleet_inventory(path, size):
    """``size`` hosts, each playing one of the demo's nodes (its tree, its dump and, through runtime_gate_node_name,
    its Node's labels) in turn, gpu-node-08 (unreachable) included."""
    demo = yaml.safe_load((DEMO / "hosts.yml").read_text())
    group = demo["all"]["children"]["gpu_nodes"]
    played = sorted(group["hosts"])
    hosts = {}
    for index in range(size):
        node = played[index % len(played)]
        hosts[f"fleet-{index:04d}"] = {
            **(group["hosts"][node] or {}),
            "runtime_gate_node_name": node,
            "runtime_gate_host_root": str(DEMO / "nodes" / node),
            "runtime_gate_dump_file": str(DEMO / "nodes" / node / "config-dump.toml"),
        }
    variables = {key: value for key, value in group["vars"].items()
                 if key not in ("runtime_gate_host_root", "runtime_gate_dump_file")}
    localhost = dict(demo["all"]["hosts"]["localhost"], runtime_gate_runtimeclasses_file=str(DEMO / "cluster.yaml"))
    path.write_text(yaml.safe_dump({"all": {"hosts": {"localhost": localhost},
                                            "children": {"gpu_nodes": {"vars": variables, "hosts": hosts}}}}))
    return hosts, played


def test_fleet_size_run_shows_failures_passing_hosts_as_a_count_and_a_short_recap(tmp_path):
    """Above 20 hosts (30 here; the summary's lines at 200 and 1,000 hosts: reports/test_console_fleet_size.py)."""
    hosts, _played = fleet_inventory(tmp_path / "fleet.yml", 30)
    env = {key: value for key, value in os.environ.items() if key not in OUTPUT_SETTINGS}
    env.update(ANSIBLE_CONFIG=str(REPO_ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"))
    completed = subprocess.run(
        [BIN / "ansible-playbook", "-i", str(tmp_path / "fleet.yml"), str(REPO_ROOT / "playbooks" / "crosscheck.yml")],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=False, timeout=300,
    )
    assert completed.returncode == 2, completed.stdout + completed.stderr
    lines = completed.stdout.splitlines()
    passing = sorted(host for host, variables in hosts.items()
                     if EXPECTED[variables["runtime_gate_node_name"]]["status"] == "OK")
    failing = sorted(set(hosts) - set(passing))
    assert len(passing) > 5 and failing

    # the verdict task: each failure as at 8 hosts, the passing hosts as one line after them
    ok_lines = [line for line in lines if line.startswith("ok: ") and "fleet-" in line and " -> " not in line]
    assert len(ok_lines) == 1 and ok_lines[0].startswith(f"ok: {len(passing)} hosts passed ("), ok_lines
    assert ok_lines[0].endswith(f"({', '.join(passing[:5])} and {len(passing) - 5} more)"), ok_lines
    for host in failing:
        assert len(printed_results(completed.stdout, host)) == 1, host

    # the summary: failing hosts first, by cause, OK hosts as a count, the counts line just before the recap
    start = lines.index(next(line for line in lines if line.startswith("TASK [Show the fleet summary]"))) + 1
    recap = lines.index(next(line for line in lines if line.startswith("PLAY RECAP")))
    summary = [line for line in lines[start:recap] if line]
    assert summary[0].startswith(f"{len(failing)} of 30 hosts did not pass, by cause")
    unknown = sum(EXPECTED[variables["runtime_gate_node_name"]]["status"] == "UNKNOWN" for variables in hosts.values())
    assert summary[-1] == f"{len(passing)} OK, {len(failing) - unknown} MISSING, {unknown} UNKNOWN of 30 hosts"
    rows = [line.split()[0] for line in summary if line.startswith("  fleet-")]
    assert sorted(rows) == failing
    assert any(line.startswith(f"OK ({len(passing)} hosts): ") for line in summary), summary

    # the recap: the hosts that did not pass, then one line for the others (the passing hosts and localhost)
    recap_lines = [line for line in lines[recap + 1:] if line]
    assert [line.split()[0] for line in recap_lines[:-1]] == failing, recap_lines
    assert recap_lines[-1].startswith(f"{len(passing) + 1} other hosts: failed=0 unreachable=0 ("), recap_lines
