"""node_status_facts: when a Node's status.runtimeHandlers vouches for the node, and why not otherwise."""
from datetime import UTC, datetime, timedelta

import pytest

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.objects import normalise_node
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.node_status import (
    DEFAULT_MAX_HEARTBEAT_AGE,
    node_status_facts,
)

NOW = datetime(2026, 12, 3, 1, 0, tzinfo=UTC)


def stamp(seconds_ago):
    return (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def node(handlers=("", "runc", "nvidia"), ready="True", heartbeat=stamp(30)):
    status = {"conditions": [{"type": "Ready", "status": ready, **({"lastHeartbeatTime": heartbeat} if heartbeat else {})}]}
    if handlers is not None:
        status["runtimeHandlers"] = [{"name": name} for name in handlers]
    return normalise_node({"metadata": {"name": "gpu-1"}, "status": status})


def test_a_fresh_ready_node_listing_its_handlers_vouches():
    facts = node_status_facts(node(), NOW)
    assert (facts.vouched, facts.handlers, facts.heartbeat_age) == (True, ("nvidia", "runc"), 30)


@pytest.mark.parametrize(("obj", "why"), [
    (node(handlers=None), "reports no status.runtimeHandlers"),
    (node(handlers=()), "reports no status.runtimeHandlers"),
    (node(handlers=("",)), "reports no status.runtimeHandlers"),
    (node(handlers=("runc",)), "no default handler"),
    (node(ready="False"), "not Ready (Ready=False)"),
    (node(ready="Unknown"), "not Ready (Ready=Unknown)"),
    (node(heartbeat=None), "no readable lastHeartbeatTime"),
    (node(heartbeat="yesterday"), "no readable lastHeartbeatTime"),
    (node(heartbeat="2026-12-03T00:59:00"), "no readable lastHeartbeatTime"),
    (node(heartbeat=stamp(DEFAULT_MAX_HEARTBEAT_AGE + 1)), f"{DEFAULT_MAX_HEARTBEAT_AGE + 1} s old"),
    (node(heartbeat="9999-12-31T00:00:00Z"), "s in the future"),
])
def test_a_node_that_cannot_be_trusted_now_does_not_vouch(obj, why):
    facts = node_status_facts(obj, NOW)
    assert not facts.vouched
    assert why in facts.why_not


def test_the_heartbeat_bound_is_an_option():
    assert node_status_facts(node(heartbeat=stamp(90)), NOW, max_heartbeat_age=60).why_not.endswith("(more than 60 s)")
    assert node_status_facts(node(heartbeat=stamp(90)), NOW, max_heartbeat_age=120).vouched
