"""Fuzzing where a Node's status enters the Node-status judgement (issue 27): whatever a Node's ``status.conditions``
and ``status.runtimeHandlers`` hold, the Node either is refused with one clear message at the normaliser, or vouches
for its node only when it lists the default and a named handler, says Ready=True, and its heartbeat is a readable time
within the bound of now (either way); never an exception, never a vouch otherwise."""
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.objects import normalise_node
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.node_status import node_status_facts
from fuzz.fuzzing import fuzz_settings

NOW = datetime(2026, 12, 3, 1, 0, tzinfo=UTC)
BOUND = 300
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8), st.sampled_from(["True", "False", "Unknown"]))
TIMES = st.one_of(SCALARS, st.integers(min_value=-10**6, max_value=10**6).map(
    lambda seconds: (NOW - timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")))
CONDITION = st.fixed_dictionaries({}, optional={
    "type": st.one_of(SCALARS, st.just("Ready")), "status": SCALARS, "lastHeartbeatTime": TIMES})
CONDITIONS = st.one_of(SCALARS, st.lists(st.one_of(CONDITION, SCALARS), max_size=3))
HANDLERS = st.one_of(st.none(), st.lists(st.one_of(
    st.fixed_dictionaries({"name": st.one_of(st.sampled_from(["", "runc", "nvidia"]), SCALARS)}), SCALARS), max_size=4))


@fuzz_settings(400)
@given(conditions=CONDITIONS, handlers=HANDLERS)
def test_a_node_vouches_only_when_every_condition_holds(conditions, handlers):
    status = {"conditions": conditions, **({"runtimeHandlers": handlers} if handlers is not None else {})}
    try:
        node = normalise_node({"metadata": {"name": "n"}, "status": status})
    except RuntimeGateError as error:
        assert str(error).startswith("Node 'n'")
        return
    facts = node_status_facts(node, NOW, BOUND)
    ready = next((condition for condition in conditions if isinstance(condition, dict) and condition.get("type") == "Ready"),
                 None) if isinstance(conditions, list) else None
    names = [handler["name"] for handler in handlers or ()]
    heartbeat = ready.get("lastHeartbeatTime") if ready else None
    fresh = False
    if isinstance(heartbeat, str) and heartbeat.endswith("Z"):
        try:
            fresh = abs((NOW - datetime.fromisoformat(heartbeat.replace("Z", "+00:00"))).total_seconds()) <= BOUND
        except ValueError:
            fresh = False
    expected = bool(ready) and ready.get("status") == "True" and fresh and "" in names and any(names)
    assert facts.vouched == expected, (status, facts)
    assert facts.vouched or facts.why_not


@fuzz_settings(300)
@given(seconds_ago=st.integers(min_value=-10**7, max_value=10**7), ready=st.sampled_from(["True", "False", "Unknown"]))
def test_a_well_formed_node_vouches_only_within_the_bound_of_now_either_way(seconds_ago, ready):
    heartbeat = (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
    node = normalise_node({"metadata": {"name": "n"}, "status": {
        "conditions": [{"type": "Ready", "status": ready, "lastHeartbeatTime": heartbeat}],
        "runtimeHandlers": [{"name": ""}, {"name": "runc"}]}})
    assert node_status_facts(node, NOW, BOUND).vouched == (ready == "True" and abs(seconds_ago) <= BOUND)
