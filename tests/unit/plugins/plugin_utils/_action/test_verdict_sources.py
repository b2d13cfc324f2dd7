"""split_by_verdict_source: Node-status verdicts, and which hosts go to SSH, in each mode."""
from datetime import UTC, datetime, timedelta

import pytest

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.objects import normalise_node
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._action.verdict_sources import (
    HYBRID,
    NODE_STATUS,
    SSH,
    split_by_verdict_source,
)

NOW = datetime(2026, 12, 3, 1, 0, tzinfo=UTC)
FRESH = (NOW - timedelta(seconds=20)).strftime("%Y-%m-%dT%H:%M:%SZ")
STALE = (NOW - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
GPU = {"gpu": "true"}
RUNTIMECLASSES = [{"name": "nvidia", "handler": "nvidia", "node_selector": GPU},
                  {"name": "kata", "handler": "kata", "node_selector": {"vm": "true"}}]


def node(name, handlers, ready="True", heartbeat=FRESH, labels=None):
    status = {"conditions": [{"type": "Ready", "status": ready, "lastHeartbeatTime": heartbeat}]}
    if handlers is not None:
        status["runtimeHandlers"] = [{"name": handler} for handler in handlers]
    return normalise_node({"metadata": {"name": name, "labels": GPU if labels is None else labels}, "status": status})


CLUSTER = {"runtimeclasses": RUNTIMECLASSES, "nodes": [
    node("ok", ["", "runc", "nvidia"]),
    node("missing", ["", "runc"]),
    node("stale", ["", "runc", "nvidia"], heartbeat=STALE),
    node("notready", ["", "runc", "nvidia"], ready="False"),
    node("old-containerd", None),
]}
HOSTS = {name: name for name in ("ok", "missing", "stale", "notready", "old-containerd", "not-a-node")}


def split(mode, cluster="the lab cluster", **kwargs):
    return split_by_verdict_source(HOSTS, CLUSTER if cluster == "the lab cluster" else cluster, mode, now=NOW, max_heartbeat_age=300, **kwargs)


def test_node_status_mode_judges_every_host_from_the_api_and_fails_closed():
    result = split(NODE_STATUS)
    statuses = {host: verdict["status"] for host, verdict in result["verdicts"].items()}
    assert statuses == {"ok": "OK", "missing": "MISSING", "stale": "UNKNOWN", "notready": "UNKNOWN",
                        "old-containerd": "UNKNOWN", "not-a-node": "UNKNOWN"}
    assert result["ssh_hosts"] == [] and result["task_hosts"] == []
    assert {verdict["verdict_source"] for verdict in result["verdicts"].values()} == {"node-status"}
    assert result["verdicts"]["missing"]["lines"] == ["MISSING=nvidia"]
    assert "no config file" in result["verdicts"]["ok"]["notes"][-1]
    assert "more than 300 s" in result["verdicts"]["stale"]["reason"]
    assert "Ready=False" in result["verdicts"]["notready"]["reason"]
    assert "no Node named 'not-a-node'" in result["verdicts"]["not-a-node"]["reason"]


def test_hybrid_keeps_only_vouched_ok_verdicts_and_hands_the_rest_to_ssh():
    result = split(HYBRID)
    assert list(result["verdicts"]) == ["ok"]
    assert result["ssh_hosts"] == ["missing", "not-a-node", "notready", "old-containerd", "stale"]
    assert (result["judged_from_node_status"], result["handed_to_ssh"]) == (1, 5)
    # Every host still runs the per-host task; the vouched one takes its verdict from here there.
    assert result["task_hosts"] == sorted(HOSTS)


def test_ssh_mode_hands_every_host_to_ssh():
    assert split(SSH) == {"verdicts": {}, "ssh_hosts": sorted(HOSTS), "task_hosts": sorted(HOSTS),
                          "judged_from_node_status": 0, "handed_to_ssh": 6}


@pytest.mark.parametrize("cluster", [None, {"failed": True, "msg": "403"}, {"runtimeclasses": RUNTIMECLASSES}])
def test_a_cluster_not_read_or_without_nodes_vouches_for_nobody(cluster):
    assert split(HYBRID, cluster=cluster)["ssh_hosts"] == sorted(HOSTS)
    assert {verdict["status"] for verdict in split(NODE_STATUS, cluster=cluster)["verdicts"].values()} == {"UNKNOWN"}


def test_inventory_labels_win_over_the_nodes():
    # Without the gpu label, nvidia is not required of "missing": it is OK from its status.
    result = split(HYBRID, node_labels={"missing": {}})
    assert result["verdicts"]["missing"]["status"] == "OK"
