"""Requirements and verdicts: nodeSelector scoping, the default runtime, fail-closed cases."""
import pytest
from support.containerd_trees import dump_text
from support.judged import runtimeclass

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.containerd_config import facts_from_dump
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._verdict import (
    judge,
    judge_and_explain,
    judge_gathered,
    not_gathered,
    unreachable,
    verdict_lines,
)
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._explain.findings import explain

GPU_LABELS = {"nvidia.com/gpu.present": "true", "gpufleet.example/pool": "main"}

CLASSES = [
    runtimeclass("nvidia"),
    runtimeclass("nvidia-cdi", node_selector={"nvidia.com/gpu.present": "true"}),
    runtimeclass("nvidia-typo", "nvdia", node_selector={"gpufleet.example/pool": "canary"}),
]


def facts(runtimes, default="runc", **extra):
    return {
        "default_runtime_name": default,
        "runtimes": {name: {"runtime_type": "io.containerd.runc.v2", "binary_name": None, "options": {}} for name in runtimes},
        "cri_disabled": False,
        "containerd_version": "1.6.20",
        **extra,
    }


def real_dump_facts(release, scenario, tmp_path):
    """Facts of the dump the real containerd ``release`` prints for a scenario tree of tests/fixtures/containerd."""
    return facts_from_dump(dump_text(scenario, release, tmp_path), source="file", source_name=f"{release}/{scenario} dump")


def test_all_handlers_loaded_is_ok():
    verdict = judge(facts(["runc", "nvidia", "nvidia-cdi"]), CLASSES, node_name="n1", node_labels=GPU_LABELS)
    assert verdict["status"] == "OK"
    assert verdict["required_handlers"] == ["nvidia", "nvidia-cdi", "runc"]
    assert verdict_lines(verdict) == ["OK"]


def test_missing_handlers_are_sorted_lines():
    verdict = judge(facts(["runc"]), CLASSES, node_name="n1", node_labels=GPU_LABELS)
    assert verdict["status"] == "MISSING"
    assert verdict["lines"] == ["MISSING=nvidia", "MISSING=nvidia-cdi"]


def test_node_selector_scopes_requirements():
    cpu_node = judge(facts(["runc"]), CLASSES, node_name="cpu", node_labels={"kubernetes.io/os": "linux"})
    # nvidia has no nodeSelector: it can land on the CPU node too and fail there.
    assert cpu_node["missing_handlers"] == ["nvidia"]
    canary = judge(facts(["runc", "nvidia", "nvidia-cdi"]), CLASSES, node_name="c", node_labels={**GPU_LABELS, "gpufleet.example/pool": "canary"})
    assert canary["missing_handlers"] == ["nvdia"]


def test_unknown_labels_count_every_class_and_say_so():
    verdict = judge(facts(["runc", "nvidia", "nvidia-cdi"]), CLASSES, node_name="n9", nodes=[])
    assert verdict["missing_handlers"] == ["nvdia"]
    assert verdict["node_labels_known"] is False
    assert any("labels unknown" in note for note in verdict["notes"])


def test_labels_come_from_the_node_object():
    nodes = [{"name": "n1", "labels": GPU_LABELS, "allocatable": {}, "runtime_handlers": []}]
    verdict = judge(facts(["runc", "nvidia", "nvidia-cdi"]), CLASSES, node_name="n1", nodes=nodes)
    assert verdict["status"] == "OK" and verdict["node_labels_known"] is True


def test_default_runtime_is_required():
    verdict = judge(facts(["runc", "nvidia"], default="nvidia-legacy"), [], node_name="n1", node_labels={})
    assert verdict["required_handlers"] == ["nvidia-legacy"]
    # and because the default is not loaded, the CRI plugin serves nothing at all
    assert verdict["loaded_runtimes"] == []
    assert verdict["configured_runtimes"] == ["nvidia", "runc"]
    assert "fails validation" in verdict["reason"]


def test_no_default_in_the_dump_requires_the_builtin_runc():
    # a dump without the CRI table (CRI plugin disabled) names no default: pods without a class still need runc
    verdict = judge(facts([], default=None, cri_disabled=True), [], node_name="n", node_labels={})
    assert verdict["status"] == "MISSING" and verdict["missing_handlers"] == ["runc"]
    assert any("built-in default 'runc'" in note for note in verdict["notes"])


def test_cri_table_replaced_on_1x_serves_nothing():
    # what Debian's 1.6 dumps for a drop-in with only runtimes.nvidia: runc gone, default still "runc"
    verdict = judge(facts(["nvidia", "nvidia-cdi"]), CLASSES, node_name="n4", node_labels=GPU_LABELS)
    assert verdict["missing_handlers"] == ["nvidia", "nvidia-cdi", "runc"]


def test_disabled_cri_serves_nothing():
    verdict = judge(facts(["runc", "nvidia", "nvidia-cdi"], cri_disabled=True), CLASSES, node_name="n", node_labels=GPU_LABELS)
    assert verdict["status"] == "MISSING" and verdict["loaded_runtimes"] == []


@pytest.mark.parametrize(
    "release,scenario,missing",
    [
        ("2.2", "S1", []),
        ("2.2", "S6", ["nvidia-cdi"]),
        ("2.3", "S5", []),
        ("1.7", "S6-v2", ["nvidia-cdi"]),
        ("2.2", "S3full", []),
        ("2.4", "S1-after-edit", ["nvidia-cdi"]),
    ],
)
@pytest.mark.components
def test_real_dumps_judged(release, scenario, missing, tmp_path):
    verdict = judge(real_dump_facts(release, scenario, tmp_path), CLASSES[:2], node_name="n", node_labels=GPU_LABELS)
    assert verdict["missing_handlers"] == missing
    assert verdict["status"] == ("MISSING" if missing else "OK")


def test_verdict_is_independent_of_runtimeclass_order():
    forward = judge(facts(["runc"]), CLASSES, node_name="n", node_labels=GPU_LABELS)
    backward = judge(facts(["runc"]), list(reversed(CLASSES)), node_name="n", node_labels=GPU_LABELS)
    assert forward == backward


@pytest.mark.parametrize(
    "gather_result,fragment",
    [
        (
            {"failed": True, "msg": "n1: `containerd config dump` exited 1: boom"},
            "gathering containerd facts failed: n1: `containerd config dump` exited 1: boom",
        ),
        ({"unreachable": True, "msg": "Failed to connect"}, "host unreachable while gathering containerd facts"),
        ({"skipped": True}, "was skipped"),
        ({"changed": False}, "holds no ansible_facts.containerd"),
    ],
)
def test_facts_that_could_not_be_gathered_are_unknown(gather_result, fragment):
    verdict = judge_gathered(node_name="n1", gather_result=gather_result, runtimeclasses=CLASSES)
    assert verdict["status"] == "UNKNOWN"
    assert fragment in verdict["reason"]
    assert verdict["lines"] == [f"UNKNOWN={verdict['reason']}"]


def test_a_node_that_gave_no_facts_is_unknown_in_the_words_of_a_registered_result():
    # node_crosscheck's own gathering (no registered result in between) says what a user's containerd_facts task would.
    failed = {"failed": True, "msg": "n1: `containerd config dump` exited 1: boom"}
    assert not_gathered("n1", failed) == judge_gathered(node_name="n1", gather_result=failed, runtimeclasses=CLASSES)
    assert unreachable("n1", "Failed to connect") == judge_gathered(
        node_name="n1", gather_result={"unreachable": True, "msg": "Failed to connect"}, runtimeclasses=CLASSES)
    assert unreachable("n1", "Failed to connect")["status"] == "UNKNOWN"


def test_cluster_that_could_not_be_read_makes_every_node_unknown():
    gathered = {"ansible_facts": {"containerd": facts(["runc", "nvidia", "nvidia-cdi"])}}
    verdict = judge_gathered(node_name="n1", gather_result=gathered, cluster_result={"failed": True, "msg": "401 Unauthorized"})
    assert verdict["status"] == "UNKNOWN" and "401 Unauthorized" in verdict["reason"]


@pytest.mark.parametrize("runtimes", ["runc", ["runc"], None])
def test_facts_of_the_wrong_shape_are_unknown(runtimes):
    verdict = judge_gathered(node_name="n1", facts={"default_runtime_name": "runc", "runtimes": runtimes}, runtimeclasses=[])
    assert verdict["status"] == "UNKNOWN" and "no runtimes table" in verdict["reason"]


def test_nothing_gathered_is_unknown():
    assert judge_gathered(node_name="n1", runtimeclasses=[])["status"] == "UNKNOWN"
    gathered = {"ansible_facts": {"containerd": facts(["runc"])}}
    verdict = judge_gathered(node_name="n1", gather_result=gathered)
    assert verdict["status"] == "UNKNOWN" and "never asked" in verdict["reason"]


def test_cluster_result_carries_nodes_for_labels():
    gathered = {"ansible_facts": {"containerd": facts(["runc", "nvidia", "nvidia-cdi"])}}
    cluster = {"runtimeclasses": CLASSES, "nodes": [{"name": "n1", "labels": GPU_LABELS}]}
    assert judge_gathered(node_name="n1", gather_result=gathered, cluster_result=cluster)["status"] == "OK"


def serving_daemon(runtimes):
    return {"state": "serving", "reason": None, "source": "grpc", "socket": "/run/containerd/containerd.sock",
            "runtimes": sorted(runtimes), "runtime_details": {}, "default_runtime": "runc", "runtime_handlers": None,
            "cri_ready": True, "conditions": [], "cri_plugin_errors": []}


def test_a_dump_file_is_judged_by_itself_never_by_this_nodes_daemon():
    # The file may be another node's capture: a daemon here serving nvidia says nothing about it.
    daemon = serving_daemon(["runc", "nvidia", "nvidia-cdi"])
    from_file = judge(facts(["runc"], source="file", daemon=daemon), CLASSES, node_name="n1", node_labels=GPU_LABELS)
    assert (from_file["status"], from_file["lines"]) == ("MISSING", ["MISSING=nvidia", "MISSING=nvidia-cdi"])
    assert (from_file["loaded_source"], from_file["daemon_runtimes"]) == ("dump", None)
    assert any("read from a file" in note for note in from_file["notes"]), from_file["notes"]
    # Facts of unknown origin count as a file too (fail closed); only running containerd on the node lets the daemon count.
    assert judge(facts(["runc"], daemon=daemon), CLASSES, node_name="n1", node_labels=GPU_LABELS)["status"] == "MISSING"
    from_command = judge(facts(["runc"], source="command", daemon=daemon), CLASSES, node_name="n1", node_labels=GPU_LABELS)
    assert (from_command["status"], from_command["loaded_source"]) == ("OK", "daemon")


def test_judge_decides_without_explaining_and_explain_reads_the_verdict():
    # A node whose files show why nvidia is missing: the drop-in that defines it is not imported.
    node = facts(["runc"], source="command", config_files=[
        {"path": "/etc/containerd/config.toml", "role": "root", "text": 'version = 2\nimports = ["/etc/containerd/conf.d/*.conf"]\n'}],
        dropin_dirs=[{"path": "/etc/containerd/conf.d", "exists": True, "texts_for": [".toml", ".conf"], "entries": [
            {"name": "99-nvidia.toml", "is_file": True, "size": 90, "mtime": 0,
             "text": '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n  runtime_type = "io.containerd.runc.v2"\n'}]}],
        import_globs=[{"pattern": "/etc/containerd/conf.d/*.conf", "declared_in": "/etc/containerd/config.toml", "matches": []}])
    verdict = judge(node, CLASSES[:1], node_name="n1", node_labels={})
    assert (verdict["status"], verdict["status"], verdict["lines"]) == ("MISSING", "MISSING", ["MISSING=nvidia"])
    assert verdict["findings"] == [] and verdict["missing_explained"] == {}
    explanation = explain(verdict, node)
    assert explanation["missing_explained"] == {"nvidia": ["DROPIN_NOT_IMPORTED", "IMPORT_GLOB_MATCHES_NOTHING"]}
    # The entry points' verdict is the same verdict with the explanation added, and nothing else changed.
    explained = judge_and_explain(node, CLASSES[:1], node_name="n1", node_labels={})
    assert explained == {**verdict, **explanation}


def test_an_unknown_verdict_is_not_explained():
    undecided = facts(["runc"], cri_startup={"errors": [], "notes": [], "undecided": "the root config was not read"})
    verdict = judge_and_explain(undecided, CLASSES, node_name="n1", node_labels=GPU_LABELS)
    assert verdict["lines"] == ["UNKNOWN=the root config was not read"] and verdict["findings"] == []


def test_the_running_daemons_answer_beats_the_kubelets_lagging_copy_and_the_copy_narrows_a_dump():
    # A Node read before containerd restarted with nvidia-cdi added (rollout.yml reads the cluster once): its
    # status.runtimeHandlers lacks the handler the live daemon now serves.
    nodes = [{"name": "n1", "labels": GPU_LABELS, "allocatable": {},
              "runtime_handlers": [{"name": ""}, {"name": "runc"}, {"name": "nvidia"}]}]
    daemon = serving_daemon(["runc", "nvidia", "nvidia-cdi"])
    live = judge(facts(["runc", "nvidia", "nvidia-cdi"], source="command", daemon=daemon), CLASSES, node_name="n1",
                 nodes=nodes)
    assert (live["status"], live["loaded_source"]) == ("OK", "daemon"), live
    assert any("lacks nvidia-cdi" in note and "lags a restart" in note for note in live["notes"]), live["notes"]
    # Without the daemon's view the Node's copy is the only word on what was loaded: absent there, not served.
    dump = judge(facts(["runc", "nvidia", "nvidia-cdi"]), CLASSES, node_name="n1", nodes=nodes)
    assert (dump["status"], dump["missing_handlers"]) == ("MISSING", ["nvidia-cdi"]), dump
