"""Fleet findings, the extra views of the verdict, and the surfaces that print findings."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from support.paths import REPO_ROOT
from support.judged import runtimeclass
from support.judged_trees import CLASSES, GPU_LABELS, V2_FULL_DROPIN, V2_ROOT_RUNC, gathered_facts, write_tree

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.containerd_config import facts_from_dump
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._explain.findings import fleet_findings, runtimeclass_summary
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._verdict import judge_and_explain, unknown, verdict_lines

DEMO = REPO_ROOT / "inventory" / "demo"


def demo_facts(host):
    dump = (DEMO / "nodes" / host / "config-dump.toml").read_text()
    return facts_from_dump(dump, source="file", source_name=host, version_text="1.6.20")


def test_fleet_findings_need_a_judged_host():
    cluster = {"runtimeclasses": [runtimeclass("typo", "nvdia")], "pods": []}
    assert fleet_findings([unknown("n1", "unreachable")], cluster) == []
    assert runtimeclass_summary([unknown("n1", "unreachable")], cluster)[0]["serving"] == []


def test_handler_served_nowhere_without_a_close_name_guesses_nothing():
    verdict = judge_and_explain(demo_facts("gpu-node-01"), [runtimeclass("kata", "kata-qemu")], node_name="n1", node_labels={})
    [finding] = [item for item in fleet_findings([verdict], {"runtimeclasses": [runtimeclass("kata", "kata-qemu")]})
                 if item["code"] == "HANDLER_SERVED_NOWHERE"]
    assert "did you mean" not in finding["message"] and "closest_loaded" not in finding["evidence"]
    assert finding["evidence"]["pods"] == [] and finding["severity"] == "error"


def test_pods_running_under_a_handler_the_node_no_longer_serves_are_named():
    # gpu-node-03's dump serves runc and nvidia, not nvidia-cdi.
    classes = [runtimeclass("nvidia", "nvidia"), runtimeclass("nvidia-cdi", "nvidia-cdi")]
    verdict = judge_and_explain(demo_facts("gpu-node-03"), classes, node_name="gpu-node-03", node_labels={})
    pods = [{"namespace": "ml", "name": "old-cdi", "node": "gpu-node-03", "phase": "Running", "runtime_class": "nvidia-cdi"},
            {"namespace": "ml", "name": "stuck-cdi", "node": "gpu-node-03", "phase": "Pending", "runtime_class": "nvidia-cdi"},
            {"namespace": "ml", "name": "elsewhere", "node": "gpu-node-01", "phase": "Running", "runtime_class": "nvidia-cdi"},
            {"namespace": "ml", "name": "served", "node": "gpu-node-03", "phase": "Running", "runtime_class": "nvidia"}]
    [finding] = [item for item in fleet_findings([verdict], {"runtimeclasses": classes, "pods": pods})
                 if item["code"] == "PODS_RUN_ON_UNSERVED_HANDLER"]
    assert (finding["severity"], finding["host"], finding["handlers"]) == ("warning", "gpu-node-03", ["nvidia-cdi"])
    assert finding["evidence"] == {"node": "gpu-node-03", "handler": "nvidia-cdi", "pods": ["ml/old-cdi"]}
    assert finding["message"].startswith("1 pod(s) run on gpu-node-03 under handler 'nvidia-cdi'")
    # Nothing running there under it: no finding.
    assert not [item for item in fleet_findings([verdict], {"runtimeclasses": classes, "pods": pods[1:]})
                if item["code"] == "PODS_RUN_ON_UNSERVED_HANDLER"]


def test_runtimeclass_with_node_selector_is_not_flagged():
    verdicts = [judge_and_explain(demo_facts("gpu-node-03"), CLASSES, node_name="gpu-node-03", node_labels=GPU_LABELS)]
    findings = fleet_findings(verdicts, {"runtimeclasses": CLASSES})
    # nvidia-cdi is missing on gpu-node-03 but scoped by a nodeSelector: no RUNTIMECLASS_WITHOUT_NODESELECTOR for it.
    assert [finding["evidence"]["runtimeclass"] for finding in findings if finding["code"] == "RUNTIMECLASS_WITHOUT_NODESELECTOR"] == []


def test_node_runtime_handlers_are_a_further_view():
    # Kubernetes >= 1.30 with containerd 2.x: the kubelet's copy of the daemon's handlers (empty = unknown).
    nodes = [{"name": "n1", "labels": GPU_LABELS, "allocatable": {},
              "runtime_handlers": [{"name": "", "features": {}}, {"name": "runc", "features": {}}, {"name": "nvidia", "features": {}}]}]
    verdict = judge_and_explain(demo_facts("gpu-node-01"), CLASSES, node_name="n1", nodes=nodes)
    assert verdict["node_runtime_handlers"] == ["nvidia", "runc"]
    assert verdict["lines"] == ["MISSING=nvidia-cdi"] and verdict["loaded_source"] == "dump"
    nodes[0]["runtime_handlers"] = []
    assert judge_and_explain(demo_facts("gpu-node-01"), CLASSES, node_name="n1", nodes=nodes)["lines"] == ["OK"]


def test_unknown_verdict_carries_the_new_fields():
    verdict = unknown("n1", "no facts")
    assert (verdict["findings"], verdict["missing_explained"], verdict["daemon_runtimes"]) == ([], {}, None)
    assert verdict_lines(verdict) == ["UNKNOWN=no facts"]


# ------------------------------------------------------------------------------------------- surfaces

RC_CROSSCHECK = REPO_ROOT / "bin" / "rc-crosscheck"


@pytest.mark.components
def test_rc_crosscheck_explain_prints_findings_after_the_missing_lines(tmp_path):
    config = write_tree(tmp_path, {"config.toml": V2_ROOT_RUNC.format(imports='"{d}/conf.d/*.conf"'), "conf.d/99-nvidia.toml": V2_FULL_DROPIN})
    gathered_facts(config)  # skips unless the real containerd is installed
    classes = tmp_path / "classes.yaml"
    classes.write_text("apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: nvidia}\nhandler: nvidia\n")
    arguments = [str(RC_CROSSCHECK), "--runtimeclasses", str(classes), "--containerd-config", str(config), "--socket", str(tmp_path / "none.sock")]
    plain = subprocess.run(arguments, capture_output=True, text=True, check=False, cwd="/")
    assert (plain.returncode, plain.stdout, plain.stderr) == (1, "MISSING=nvidia\n", "")
    explained = subprocess.run(arguments + ["--explain"], capture_output=True, text=True, check=False, cwd="/")
    lines = explained.stdout.splitlines()
    assert explained.returncode == 1 and lines[0] == "MISSING=nvidia"
    assert lines[1] == "  nvidia: DROPIN_NOT_IMPORTED, IMPORT_GLOB_MATCHES_NOTHING"
    assert any(line.startswith("  IMPORT_GLOB_MATCHES_NOTHING (error): ") for line in lines)
    assert any(line.strip().startswith("remedy: ") for line in lines)


def test_node_crosscheck_failure_message_lists_findings(tmp_path):
    # The action plugin as crosscheck.yml runs it: a failed host's msg has the findings under MISSING=.
    facts = demo_facts("gpu-node-04")
    playbook, saved = tmp_path / "play.yml", tmp_path / "result.json"
    playbook.write_text(yaml.safe_dump([{
        "hosts": "localhost", "gather_facts": False,
        "tasks": [
            {"gpufleet.runtime_gate.node_crosscheck": {
                "facts": facts, "runtimeclasses": CLASSES, "node_name": "gpu-node-04", "node_labels": GPU_LABELS},
             "register": "judged", "ignore_errors": True},
            {"ansible.builtin.copy": {"content": "{{ judged | to_json }}", "dest": str(saved)}},
        ],
    }]))
    environment = {**os.environ, "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg")}
    completed = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
                                "-e", f"ansible_python_interpreter={sys.executable}", str(playbook)],
                               cwd=REPO_ROOT, env=environment, capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    result = json.loads(saved.read_text())
    assert result["failed"] is True
    # one line, for any stdout callback; the findings are the result's (the console callback prints them under it)
    assert result["msg"] == "; ".join(f"MISSING={handler} (DEFAULT_RUNTIME_UNDEFINED)" for handler in ("nvidia", "nvidia-cdi", "runc"))
    assert result["lines"] == ["MISSING=nvidia", "MISSING=nvidia-cdi", "MISSING=runc"]
    assert result["findings"][0]["code"] == "DEFAULT_RUNTIME_UNDEFINED"
    assert result["missing_explained"] == {handler: ["DEFAULT_RUNTIME_UNDEFINED"] for handler in ("nvidia", "nvidia-cdi", "runc")}


# ------------------------------------------------------------------------------------------- robustness

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)
EVIDENCE_KEYS = ("config_files", "import_globs", "dropin_dirs", "binaries", "cdi_dirs")
DAEMONS = st.fixed_dictionaries({"state": st.sampled_from(["serving", "cri_unavailable", "unknown"])},
                                optional={"runtimes": JSON_VALUES, "default_runtime": JSON_VALUES, "runtime_details": JSON_VALUES})


TOML_TEXTS = st.sampled_from([V2_FULL_DROPIN, V2_ROOT_RUNC.format(imports='"conf.d/*.toml"'), "version = 3\n[plugins]\n", "= broken"])
CONFIG_FILES = st.lists(st.fixed_dictionaries(
    {"path": st.sampled_from(["/etc/containerd/config.toml", "/etc/containerd/conf.d/99-nvidia.toml"]),
     "role": st.sampled_from(["root", "import", "other"])},
    optional={"text": TOML_TEXTS | JSON_VALUES, "imported_by": JSON_VALUES}), max_size=3)
IMPORT_GLOBS = st.lists(st.fixed_dictionaries(
    {"pattern": st.sampled_from(["/etc/containerd/conf.d/*.toml", "conf.d/*.toml", "/x/[.toml"])},
    optional={key: JSON_VALUES for key in ("declared_in", "absolute", "matches", "matches_from_cwd", "resolved_pattern", "cwd")}),
    max_size=3)


@settings(max_examples=200, deadline=None)
@given(st.fixed_dictionaries({}, optional={**{key: JSON_VALUES for key in EVIDENCE_KEYS}, "daemon": DAEMONS | JSON_VALUES,
                                           "config_files": CONFIG_FILES | JSON_VALUES, "import_globs": IMPORT_GLOBS | JSON_VALUES}),
       st.sampled_from(["1.6.20", "2.2.0", "2.3.4", None]))
def test_odd_evidence_never_breaks_a_verdict(evidence, version):
    # Whatever a node (or a newer node module) sends, the verdict is still reached and stays what the dump says.
    facts = {**demo_facts("gpu-node-02"), **evidence, "containerd_version": version}
    verdict = judge_and_explain(facts, CLASSES, node_name="n1", node_labels=GPU_LABELS)
    assert verdict["status"] in ("OK", "MISSING")
    assert set(verdict["missing_explained"]) == set(verdict["missing_handlers"])
    if verdict["loaded_source"] == "dump":  # only a readable daemon view may change what is served
        assert verdict["missing_handlers"] == ["nvidia", "nvidia-cdi"]
