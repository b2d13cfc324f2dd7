"""The demo fleet ends with the verdicts docs/usage.md documents (what `make demo` checks), from the
committed dumps and, with the installed containerd, from the trees themselves (`make demo-live`)."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support.deprecations import collection_deprecations
from support.paths import REPO_ROOT
from support.tools import require_command, require_tool

DEMO = REPO_ROOT / "inventory" / "demo"
BIN = Path(sys.executable).parent


def run_demo(tmp_path, *extra, path_prefix=None):
    verdicts_file = tmp_path / "verdicts.json"
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg")}
    if path_prefix:
        env["PATH"] = f"{path_prefix}:{env['PATH']}"
    completed = subprocess.run(
        [BIN / "ansible-playbook", "-i", str(DEMO / "hosts.yml"), str(REPO_ROOT / "playbooks" / "crosscheck.yml"),
         "-e", f"runtime_gate_verdicts_file={verdicts_file}", *extra],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=False,
    )
    return completed, verdicts_file


def test_the_committed_dumps_need_no_containerd_on_this_machine(tmp_path):
    """`make demo` on a fresh machine: whatever containerd this machine has (here one that claims 2.4.2 and fails
    every command), the demo's verdicts and their reasons come from the dumps and the version files beside them."""
    trap = tmp_path / "bin"
    trap.mkdir()
    (trap / "containerd").write_text("#!/bin/sh\necho 'containerd github.com/containerd/containerd/v2 v2.4.2'\n"
                                     "echo \"$*\" >> \"$(dirname \"$0\")/calls\"\nexit 99\n")
    (trap / "containerd").chmod(0o755)
    completed, verdicts_file = run_demo(tmp_path, path_prefix=trap)
    checked = check_verdicts(completed.returncode, verdicts_file)
    assert checked.returncode == 0, checked.stderr + completed.stdout[-3000:]
    assert not (trap / "calls").exists(), "the demo ran this machine's containerd"
    versions = {verdict["containerd_version"] for verdict in json.loads(verdicts_file.read_text())["hosts"].values()
                if verdict["status"] != "UNKNOWN"}
    assert versions == {"1.6.20"}


def check_verdicts(playbook_rc, verdicts_file):
    return subprocess.run(
        [sys.executable, str(DEMO / "check_verdicts.py"), str(playbook_rc), str(verdicts_file), str(DEMO / "expected-verdicts.yml")],
        capture_output=True, text=True, check=False,
    )


@pytest.mark.parametrize("live", [pytest.param(False, id="committed-dumps"),
                                  pytest.param(True, id="live-containerd", marks=pytest.mark.components)])
def test_demo_verdicts_are_as_documented(tmp_path, live):
    extra = []
    if live:
        require_command("containerd", "containerd")
        require_command("unshare", "util-linux")
        require_tool(os.geteuid() == 0, "the live demo mounts each tree at /etc/containerd in a private mount namespace: needs root")
        extra = ["-e", f"@{DEMO / 'live.yml'}"]
    completed, verdicts_file = run_demo(tmp_path, *extra)
    checked = check_verdicts(completed.returncode, verdicts_file)
    assert checked.returncode == 0, checked.stderr + completed.stdout[-3000:]
    assert "MISSING=nvidia-cdi" in completed.stdout and "UNKNOWN=host unreachable" in completed.stdout
    summary = completed.stdout[completed.stdout.rindex("HOST ") :]
    # Summarised once, by the per-host play: the last play summarises only a run that judged no host over its connection.
    assert len(re.findall(r"^HOST +VERDICT ", completed.stdout, re.MULTILINE)) == 1, completed.stdout[-4000:]
    expected = [verdict["status"] for verdict in yaml.safe_load((DEMO / "expected-verdicts.yml").read_text())["hosts"].values()]
    counts = ", ".join(f"{expected.count(verdict)} {verdict}" for verdict in ("OK", "MISSING", "UNKNOWN"))
    assert f"{counts} of {len(expected)} hosts" in summary
    assert collection_deprecations(completed.stdout + completed.stderr) == []
    # Nor any of ansible-core's about how the playbooks are built (a strategy plugin outside ansible.builtin was one).
    assert "DEPRECATION WARNING" not in completed.stdout + completed.stderr, completed.stderr


def test_checker_refuses_other_outcomes(tmp_path):
    completed, verdicts_file = run_demo(tmp_path)
    assert check_verdicts(0, verdicts_file).returncode == 1  # a green run of a broken fleet is wrong
    document = json.loads(verdicts_file.read_text())
    document["hosts"]["gpu-node-04"]["missing_handlers"] = ["runc"]
    verdicts_file.write_text(json.dumps(document))
    refused = check_verdicts(completed.returncode, verdicts_file)
    assert refused.returncode == 1 and "gpu-node-04" in refused.stderr
    # Right verdict, wrong reason: gpu-node-02's drop-in explained by another finding is refused too.
    document = json.loads(verdicts_file.read_text())
    document["hosts"]["gpu-node-04"]["missing_handlers"] = ["nvidia", "nvidia-cdi", "runc"]
    for finding in document["hosts"]["gpu-node-02"]["findings"]:
        finding["code"] = "CDI_SPEC_MISSING"
    verdicts_file.write_text(json.dumps(document))
    refused = check_verdicts(completed.returncode, verdicts_file)
    assert refused.returncode == 1 and "gpu-node-02: findings ['CDI_SPEC_MISSING']" in refused.stderr, refused.stderr


def test_without_the_cluster_play_every_host_is_unknown(tmp_path):
    completed, verdicts_file = run_demo(tmp_path, "--limit", "gpu-node-01,gpu-node-06")
    assert completed.returncode == 2
    verdicts = json.loads(verdicts_file.read_text())["hosts"]
    assert {host: verdict["status"] for host, verdict in verdicts.items()} == {"gpu-node-01": "UNKNOWN", "gpu-node-06": "UNKNOWN"}
    assert all("never asked" in verdict["reason"] for verdict in verdicts.values())


def test_a_limit_that_leaves_no_node_judges_none_and_fails(tmp_path):
    # Only localhost: the per-host play has no host, and the last play must still summarise and fail the run, never end
    # it green with no report (node_status_verdicts hands that play the hosts within the limit: none here).
    completed, verdicts_file = run_demo(tmp_path, "--limit", "localhost")
    assert completed.returncode == 2, completed.stdout[-3000:]
    assert json.loads(verdicts_file.read_text())["hosts"] == {}
    assert "NO_HOST_JUDGED" in completed.stdout and "0 OK, 0 MISSING, 0 UNKNOWN of 0 hosts" in completed.stdout
