"""AWX / Automation Platform job slicing, through ansible-runner as AWX runs each job: three slices of a 60-host
inventory each run nightly.yml and write their own reports, then playbooks/merge_reports.yml merges them. The merged
report must equal one unsliced run's: same verdicts, same fleet findings, even though each slice alone sees other ones.

The fleet: nvidia-cdi is served only by three hosts, all in the first slice (AWX hands each slice every Nth host). So
the other two slices each report HANDLER_SERVED_NOWHERE for nvidia-cdi, which is false for the fleet.

The slices and the merge are one named run (runtime_gate_run_id); the unsliced run is not named. A report of that other
run of the same cluster, minutes old, put among the slices is refused by the merge, naming it (issue 22 item 2).
"""
import json
import os
import subprocess

import pytest
import yaml
from junitparser import JUnitXml
from support.fleet import FleetHost, build_fleet
from support.paths import REPO_ROOT

VENV_BIN = REPO_ROOT / ".venv" / "bin"
HOSTS = 60
SLICES = 3
RUN_ID = "nightly-2026-12-03"
SERVING_CDI = {0, 3, 6}  # "healthy" (runc, nvidia, nvidia-cdi); every other host loses nvidia-cdi (1.x drop-in)


def fleet_hosts():
    return [FleetHost(f"node-{index:03d}", "healthy" if index in SERVING_CDI else "dropin-partial") for index in range(HOSTS)]


def private_data_dir(root, fleet, node_hosts, report_dir, playbook_vars):
    """AWX's layout for one job: the project (this checkout), the job's inventory, its extra vars."""
    (root / "inventory").mkdir(parents=True)
    (root / "env").mkdir()
    os.symlink(REPO_ROOT, root / "project")
    inventory = yaml.safe_load(fleet.inventory_path.read_text(encoding="utf-8"))
    hosts = inventory["all"]["children"]["gpu_nodes"]["hosts"]
    inventory["all"]["children"]["gpu_nodes"]["hosts"] = {name: hosts[name] for name in node_hosts}
    (root / "inventory" / "hosts.yml").write_text(yaml.safe_dump(inventory, sort_keys=False), encoding="utf-8")
    extravars = {"runtime_gate_runtimeclasses_file": str(fleet.cluster_path), "runtime_gate_report_dir": str(report_dir),
                 **playbook_vars}
    (root / "env" / "extravars").write_text(yaml.safe_dump(extravars), encoding="utf-8")
    return root


def ansible_runner(data_dir, playbook, ident):
    # As in an execution environment: ansible-playbook is the one on PATH, ansible.cfg the project's.
    env = {key: value for key, value in os.environ.items() if not key.startswith(("ANSIBLE_", "K8S_AUTH_"))}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    completed = subprocess.run([str(VENV_BIN / "ansible-runner"), "run", str(data_dir), "-p", playbook, "--ident", ident],
                               env=env, capture_output=True, text=True, timeout=600, check=False)
    assert (data_dir / "artifacts" / ident / "rc").exists(), completed.stdout[-3000:] + completed.stderr
    return completed


def read(report_dir):
    return json.loads((report_dir / "report.json").read_text(encoding="utf-8"))


def served_nowhere(report):
    return sorted((finding["code"], tuple(finding["handlers"])) for finding in report["fleet_findings"]
                  if finding["code"] == "HANDLER_SERVED_NOWHERE")


def fleet_findings(report):
    return sorted((finding["code"], finding["severity"], finding["host"], finding["message"], tuple(finding["handlers"]))
                  for finding in report["fleet_findings"])


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("sliced")
    fleet = build_fleet(root / "fleet", fleet_hosts())
    names = [host.name for host in fleet.hosts]
    slices_dir = root / "slices"
    slice_runs = []
    for number in range(SLICES):
        data_dir = private_data_dir(root / f"slice-{number + 1}", fleet, names[number::SLICES],
                                    slices_dir / f"slice-{number + 1}", {"runtime_gate_run_id": RUN_ID})
        slice_runs.append(ansible_runner(data_dir, "playbooks/nightly.yml", f"slice-{number + 1}"))
    whole_dir = private_data_dir(root / "unsliced", fleet, names, root / "unsliced-report", {})
    whole = ansible_runner(whole_dir, "playbooks/nightly.yml", "unsliced")
    merge_dir = private_data_dir(root / "merge", fleet, [], root / "merged-report",
                                 {"runtime_gate_slices_dir": str(slices_dir), "runtime_gate_slices": SLICES,
                                  "runtime_gate_run_id": RUN_ID})
    merge = ansible_runner(merge_dir, "playbooks/merge_reports.yml", "merge")
    return {
        "slices": [read(slices_dir / f"slice-{number + 1}") for number in range(SLICES)],
        "unsliced": read(root / "unsliced-report"),
        "unsliced_dir": root / "unsliced-report",
        "merged": read(root / "merged-report"),
        "merged_dir": root / "merged-report",
        "processes": {"slices": slice_runs, "unsliced": whole, "merge": merge},
    }


def test_each_slice_alone_sees_a_handler_served_nowhere(runs):
    # The reason to merge: slices 2 and 3 have no host serving nvidia-cdi (kata-qemu's class matches no node: nowhere).
    kata, cdi = ("HANDLER_SERVED_NOWHERE", ("kata-qemu",)), ("HANDLER_SERVED_NOWHERE", ("nvidia-cdi",))
    assert [served_nowhere(report) for report in runs["slices"]] == [[kata], [kata, cdi], [kata, cdi]]
    assert sum(len(report["hosts"]) for report in runs["slices"]) == HOSTS


def test_merged_verdicts_and_fleet_findings_equal_the_unsliced_run(runs):
    merged, unsliced = runs["merged"], runs["unsliced"]
    assert len(merged["hosts"]) == HOSTS
    assert merged["hosts"] == unsliced["hosts"]
    assert fleet_findings(merged) == fleet_findings(unsliced)
    assert served_nowhere(merged) == [("HANDLER_SERVED_NOWHERE", ("kata-qemu",))]
    assert merged["overhead_findings"] == unsliced["overhead_findings"]
    assert merged["runtimeclasses"] == unsliced["runtimeclasses"] and merged["matrix"] == unsliced["matrix"]
    assert (merged["counts"], merged["passed"], merged["failures"]) == (unsliced["counts"], unsliced["passed"], unsliced["failures"])


def test_merge_writes_every_report_file_and_fails_like_the_unsliced_run(runs):
    processes = runs["processes"]
    assert processes["unsliced"].returncode == 2 and processes["merge"].returncode == 2, processes["merge"].stdout[-3000:]
    assert [process.returncode for process in processes["slices"]] == [2, 2, 2]
    junit = JUnitXml.fromfile(str(runs["merged_dir"] / "junit.xml"))
    cases = {case.name: case for suite in junit for case in suite}
    assert len(cases) == HOSTS and sum(case.is_passed for case in cases.values()) == len(SERVING_CDI)
    metrics = (runs["merged_dir"] / "metrics.prom").read_text(encoding="utf-8")
    assert 'host="node-059"' in metrics and 'host="node-000"' in metrics
    assert "node-031" in (runs["merged_dir"] / "report.html").read_text(encoding="utf-8")


def test_every_slice_and_the_merged_report_carry_the_run_the_unsliced_run_an_id_of_its_own(runs):
    assert [report["run_id"] for report in runs["slices"]] == [RUN_ID] * SLICES and runs["merged"]["run_id"] == RUN_ID
    assert runs["unsliced"]["run_id"].startswith("unnamed-")


def test_a_report_of_another_run_of_the_same_cluster_among_the_slices_is_refused_naming_it(tmp_path, runs):
    slices_dir = tmp_path / "slices"
    for number, report in enumerate(runs["slices"][:2]):
        (slices_dir / f"slice-{number + 1}").mkdir(parents=True)
        (slices_dir / f"slice-{number + 1}" / "report.json").write_text(json.dumps(report), encoding="utf-8")
    (slices_dir / "slice-3").mkdir()
    (slices_dir / "slice-3" / "report.json").write_text((runs["unsliced_dir"] / "report.json").read_text(encoding="utf-8"),
                                                        encoding="utf-8")
    completed = merge_only(tmp_path, slices_dir, "merge-other-run", runtime_gate_run_id=RUN_ID)
    assert completed.returncode == 2
    assert (f"slice report '{slices_dir / 'slice-3' / 'report.json'}' is of run '{runs['unsliced']['run_id']}', not of "
            f"run '{RUN_ID}' (run_id): it is not a slice of this run") in completed.stdout, completed.stdout[-3000:]
    assert not (tmp_path / "merged").exists()


def merge_only(tmp_path, slices_dir, ident, **extravars):
    """merge_reports.yml alone over ``slices_dir`` (SLICES expected), into tmp_path/merged."""
    data_dir = tmp_path / "merge"
    (data_dir / "env").mkdir(parents=True)
    (data_dir / "inventory").mkdir()
    os.symlink(REPO_ROOT, data_dir / "project")
    (data_dir / "inventory" / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": {"localhost": {
        "ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}}}))
    (data_dir / "env" / "extravars").write_text(yaml.safe_dump({
        "runtime_gate_slices_dir": str(slices_dir), "runtime_gate_slices": SLICES,
        "runtime_gate_runtimeclasses_file": str(REPO_ROOT / "inventory" / "demo" / "cluster.yaml"),
        "runtime_gate_report_dir": str(tmp_path / "merged"), **extravars}))
    return ansible_runner(data_dir, "playbooks/merge_reports.yml", ident)


def test_a_missing_slice_fails_the_merge_and_names_what_it_found(tmp_path, runs):
    report = runs["slices"][0]
    (tmp_path / "slices" / "only").mkdir(parents=True)
    (tmp_path / "slices" / "only" / "report.json").write_text(json.dumps(report), encoding="utf-8")
    completed = merge_only(tmp_path, tmp_path / "slices", "merge-missing")
    assert completed.returncode == 2
    assert "1 slice reports found, 3 expected" in completed.stdout, completed.stdout[-3000:]
    assert not (tmp_path / "merged").exists()
