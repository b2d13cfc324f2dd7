"""The nightly playbook run as AWX / Ansible Automation Platform runs it: ``ansible-runner run`` on a private data dir.

AWX lays out ``project/`` (the synced repository; its ansible.cfg applies because the playbook runs in it),
``inventory/``, ``env/extravars``, and reads back ``artifacts/<ident>/`` (status, rc, stdout, job_events).
Here ``project`` is a symlink to this checkout, the inventory is a two-node fleet judged on the demo's
committed containerd dumps, and the reports go to a temp dir given as an extra var.
"""
import json
import os
import subprocess

import pytest
import yaml
from junitparser import JUnitXml
from support.paths import REPO_ROOT
from support.tools import require_command

VENV_BIN = REPO_ROOT / ".venv" / "bin"
PLAYBOOK = "playbooks/nightly.yml"
DEMO_NODES = REPO_ROOT / "inventory" / "demo" / "nodes"


def manifest(runtimeclasses, nodes, pods=()):
    items = [{"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name}, **body}
             for name, body in runtimeclasses.items()]
    items += [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
               "status": {"allocatable": allocatable}} for name, (labels, allocatable) in nodes.items()]
    return {"apiVersion": "v1", "kind": "List", "items": items + list(pods)}


NODES = {"gpu-node-01": ({"pool": "gpu-a"}, {"cpu": "8", "memory": "32Gi"}),
         # 200m allocatable CPU: less than the nvidia-cdi class's 250m overhead alone.
         "gpu-node-03": ({"pool": "gpu-b"}, {"cpu": "200m", "memory": "32Gi"})}
RUNC = {"runc": {"handler": "runc"}}
# gpu-node-03's drop-in configures `nvidia` but not `nvidia-cdi`: MISSING=nvidia-cdi there.
# 100m requested fits gpu-node-03's 200m; with the class's 250m overhead (350m) it does not.
SMALL_POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "infer-0", "namespace": "ml"},
             "spec": {"nodeName": "gpu-node-03", "runtimeClassName": "nvidia-cdi", "overhead": {"cpu": "250m"},
                      "containers": [{"name": "main", "resources": {"requests": {"cpu": "100m"}}}]},
             "status": {"phase": "Pending"}}
FAILING_CLUSTER = manifest({**RUNC, "nvidia-cdi": {"handler": "nvidia-cdi", "overhead": {"podFixed": {"cpu": "250m"}},
                                                   "scheduling": {"nodeSelector": {"pool": "gpu-b"}}}}, NODES, [SMALL_POD])
PASSING_CLUSTER = manifest(RUNC, NODES)


def private_data_dir(root, cluster):
    """project/ (the checkout), inventory/hosts.yml, env/extravars; returns (dir, report_dir)."""
    root.mkdir()
    (root / "project").symlink_to(REPO_ROOT, target_is_directory=True)
    (root / "inventory").mkdir()
    (root / "env").mkdir()
    cluster_file = root / "cluster.yaml"
    cluster_file.write_text(yaml.safe_dump(cluster))
    node_tree = f"{DEMO_NODES}/{{{{ inventory_hostname }}}}"
    local = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}
    inventory = {"all": {
        "hosts": {"localhost": {**local, "runtime_gate_runtimeclasses_file": str(cluster_file)}},
        "children": {"gpu_nodes": {
            "vars": {**local, "runtime_gate_containerd_config": f"{node_tree}/etc/containerd/config.toml",
                     "runtime_gate_dump_file": f"{node_tree}/config-dump.toml"},
            "hosts": {host: None for host in NODES}}}}}
    (root / "inventory" / "hosts.yml").write_text(yaml.safe_dump(inventory))
    report_dir = root / "reports"
    (root / "env" / "extravars").write_text(yaml.safe_dump({"runtime_gate_report_dir": str(report_dir)}))
    return root, report_dir


def ansible_runner(data_dir, ident):
    # As in an execution environment: ansible-playbook is the one on PATH, ansible.cfg the project's.
    env = {key: value for key, value in os.environ.items() if not key.startswith(("ANSIBLE_", "K8S_AUTH_"))}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run([str(VENV_BIN / "ansible-runner"), "run", str(data_dir), "-p", PLAYBOOK, "--ident", ident],
                          env=env, capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(scope="module", autouse=True)
def runc_on_this_machine():
    # The local-connection "nodes" are this machine: gpu-node-01 is OK only if the runc runtime's
    # binaries exist here (a runtime whose binary is missing is not served).
    require_command("runc", "runc")
    require_command("containerd-shim-runc-v2", "containerd")


def job_events(artifacts):
    events = [json.loads(path.read_text()) for path in (artifacts / "job_events").glob("*.json")]
    return sorted(events, key=lambda event: event["counter"])


@pytest.fixture(scope="module")
def failing_run(tmp_path_factory):
    data_dir, report_dir = private_data_dir(tmp_path_factory.mktemp("runner") / "failing", FAILING_CLUSTER)
    completed = ansible_runner(data_dir, "nightly-failing")
    return completed, data_dir / "artifacts" / "nightly-failing", report_dir


def test_runner_status_is_failed_with_rc_2_when_a_host_fails(failing_run):
    completed, artifacts, _report_dir = failing_run
    assert completed.returncode == 2, completed.stdout[-3000:] + completed.stderr
    assert (artifacts / "status").read_text() == "failed"
    assert (artifacts / "rc").read_text() == "2"


def test_job_events_say_which_host_failed_and_why(failing_run):
    _completed, artifacts, _report_dir = failing_run
    events = job_events(artifacts)
    assert events[0]["event"] == "playbook_on_start" and events[-1]["event"] == "playbook_on_stats"
    failed = {event["event_data"]["host"]: event["event_data"]["res"]["msg"]
              for event in events if event["event"] == "runner_on_failed"}
    assert list(failed) == ["gpu-node-03"]
    assert failed["gpu-node-03"].split(" (")[0] == "MISSING=nvidia-cdi" and "\n" not in failed["gpu-node-03"]
    stats = events[-1]["event_data"]
    assert stats["failures"] == {"gpu-node-03": 1} and "gpu-node-01" in stats["ok"]
    assert "MISSING=nvidia-cdi" in (artifacts / "stdout").read_text()


def test_report_files_agree_with_the_job_events(failing_run):
    _completed, _artifacts, report_dir = failing_run
    report = json.loads((report_dir / "report.json").read_text())
    assert report["passed"] is False
    assert {host: entry["status"] for host, entry in report["hosts"].items()} == {"gpu-node-01": "OK", "gpu-node-03": "MISSING"}
    assert [(failure["host"], failure["handler"]) for failure in report["failures"]] == [("gpu-node-03", "nvidia-cdi")]
    # The overhead fit reaches the report: 250m of class overhead on a node with 200m allocatable, and the
    # pod that fits there only without it.
    overhead = [(finding["code"], finding["host"], finding["severity"]) for finding in report["overhead_findings"]]
    assert overhead == [("POD_DOES_NOT_FIT_WITH_OVERHEAD", "gpu-node-03", "warning"),
                        ("RUNTIMECLASS_OVERHEAD_EXCEEDS_ALLOCATABLE", "gpu-node-03", "warning")]
    assert "100m requested + 250m overhead = 350m > 200m allocatable" in report["overhead_findings"][0]["message"]
    junit = JUnitXml.fromfile(str(report_dir / "junit.xml"))
    cases = {case.name: case for suite in junit for case in suite}
    assert set(cases) == {"gpu-node-01", "gpu-node-03"}
    assert cases["gpu-node-01"].is_passed and not cases["gpu-node-03"].is_passed
    assert "MISSING=nvidia-cdi" in (report_dir / "report.html").read_text()


def test_runner_status_is_successful_when_every_host_is_ok(tmp_path):
    data_dir, report_dir = private_data_dir(tmp_path / "passing", PASSING_CLUSTER)
    completed = ansible_runner(data_dir, "nightly-passing")
    artifacts = data_dir / "artifacts" / "nightly-passing"
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr
    assert ((artifacts / "status").read_text(), (artifacts / "rc").read_text()) == ("successful", "0")
    assert not [event for event in job_events(artifacts) if event["event"] == "runner_on_failed"]
    assert json.loads((report_dir / "report.json").read_text())["passed"] is True
