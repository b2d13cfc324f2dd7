"""Every path a user passes is relative to where ansible-playbook runs (issue 14, the first example of docs/usage.md).

ansible-core runs modules over the local connection in the playbook's directory, so a relative RuntimeClasses
file, dump file or node root used to be looked for under playbooks/ and every host ended UNKNOWN. These runs use
the real ansible-playbook from the checkout root (the documented command) and from another directory, with paths
relative to that directory, and compare the verdicts with inventory/demo/expected-verdicts.yml.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from support.paths import REPO_ROOT

DEMO = REPO_ROOT / "inventory" / "demo"
BIN = Path(sys.executable).parent
ENVIRONMENT = {**os.environ, "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg")}


def ansible_playbook(cwd, *arguments, environment=None):
    return subprocess.run([str(BIN / "ansible-playbook"), *arguments], cwd=cwd, env=environment or ENVIRONMENT,
                          capture_output=True, text=True, check=False)


def assert_demo_verdicts(completed, verdicts_file, report_dir=None):
    checked = subprocess.run(
        [sys.executable, str(DEMO / "check_verdicts.py"), str(completed.returncode), str(verdicts_file),
         str(DEMO / "expected-verdicts.yml"), *([str(report_dir)] if report_dir else [])],
        capture_output=True, text=True, check=False,
    )
    assert checked.returncode == 0, checked.stderr + completed.stdout[-4000:]
    assert "does not exist" not in completed.stdout, completed.stdout[-4000:]
    assert "2 OK, 5 MISSING, 1 UNKNOWN of 8 hosts" in completed.stdout


def test_readme_example_from_the_checkout_root(tmp_path):
    # The first command of docs/usage.md, verbatim, plus a verdicts file and a report dir given relative to the checkout.
    verdicts = os.path.relpath(tmp_path / "verdicts.json", REPO_ROOT)
    reports = os.path.relpath(tmp_path / "reports", REPO_ROOT)
    assert not os.path.isabs(verdicts) and not os.path.isabs(reports)
    completed = ansible_playbook(REPO_ROOT, "gpufleet.runtime_gate.crosscheck", "-i", "inventory/demo/hosts.yml",
                                 "-e", "runtime_gate_runtimeclasses_file=inventory/demo/cluster.yaml",
                                 "-e", f"runtime_gate_verdicts_file={verdicts}", "-e", f"runtime_gate_report_dir={reports}")
    assert_demo_verdicts(completed, tmp_path / "verdicts.json", tmp_path / "reports")
    report = json.loads((tmp_path / "reports" / "report.json").read_text())
    assert report["sources"]["cluster"]["read"] is True, report["sources"]
    assert report["sources"]["cluster"]["path"] == str(DEMO / "cluster.yaml")
    assert f"Reports: {tmp_path / 'reports' / 'report.json'}" in completed.stdout


def test_paths_relative_to_another_directory(tmp_path):
    # A user working in their own directory: the cluster export and the node captures (dump + node tree) are here.
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    shutil.copy(DEMO / "cluster.yaml", workdir / "exported-cluster.yaml")
    shutil.copytree(DEMO / "nodes", workdir / "captures", symlinks=True)
    completed = ansible_playbook(
        workdir,
        os.path.relpath(REPO_ROOT / "playbooks" / "crosscheck.yml", workdir), "-i", os.path.relpath(DEMO / "hosts.yml", workdir),
        "-e", "runtime_gate_runtimeclasses_file=exported-cluster.yaml",
        "-e", "runtime_gate_dump_file=captures/{{ inventory_hostname }}/config-dump.toml",
        "-e", "runtime_gate_host_root=captures/{{ inventory_hostname }}",
        "-e", "runtime_gate_verdicts_file=verdicts.json",
        "-e", "runtime_gate_report_dir=reports",
    )
    assert_demo_verdicts(completed, workdir / "verdicts.json", workdir / "reports")
    verdicts = json.loads((workdir / "verdicts.json").read_text())["hosts"]
    # The node trees that were judged are the copies here, not the checkout's (node paths stay node paths).
    assert verdicts["gpu-node-02"]["findings"], verdicts["gpu-node-02"]
    assert not (REPO_ROOT / "playbooks" / "verdicts.json").exists() and not (REPO_ROOT / "playbooks" / "reports").exists()


def test_relative_kubeconfig_from_the_environment_is_the_users(tmp_path):
    # K8S_AUTH_KUBECONFIG=kubeconfig names the file in the user's directory, not one under playbooks/.
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    (workdir / "kubeconfig").write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1', insecure-skip-tls-verify: true}}]\n"
        "users: [{name: u, user: {token: not-a-secret}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    completed = ansible_playbook(
        workdir, os.path.relpath(REPO_ROOT / "playbooks" / "crosscheck.yml", workdir), "-i", os.path.relpath(DEMO / "hosts.yml", workdir),
        "-e", "runtime_gate_runtimeclasses_file=", "-e", "runtime_gate_verdicts_file=verdicts.json", "--limit", "localhost,gpu-node-01",
        environment={**ENVIRONMENT, "K8S_AUTH_KUBECONFIG": "kubeconfig"},
    )
    verdict = json.loads((workdir / "verdicts.json").read_text())["hosts"]["gpu-node-01"]
    # The cluster stays unreadable (nothing listens there), but because of the server the kubeconfig names.
    assert verdict["status"] == "UNKNOWN", verdict
    assert "does not exist" not in verdict["reason"] and "127.0.0.1:1" in verdict["reason"], verdict["reason"]
