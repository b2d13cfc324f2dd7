"""A Node's own word on its runtime handlers, as facts: what ``status.runtimeHandlers`` lists and whether that list can
be trusted now (controller side; the evidence is the Node as the cluster read listed it, ``_k8s/objects.normalise_node``).

The kubelet (>= 1.30) copies into ``status.runtimeHandlers`` the handlers its CRI runtime reports (containerd >= 2.0);
the list is as fresh as the Node's status. It vouches for the node only when all of these hold, else ``why_not`` says
which failed and the node is not judged from it (fail closed):

- it names at least one handler, the default one (``""``) among them: an empty list is "unknown" (containerd 1.x, a
  kubelet before 1.30, both feature gates off), never "no handlers";
- the ``Ready`` condition is ``True``: a NotReady or Unknown node's list may be a dead runtime's;
- its ``lastHeartbeatTime`` is no older than ``max_heartbeat_age`` seconds at ``now`` (the kubelet rewrites the
  condition at least every ``nodeStatusReportFrequency``, 5 minutes by default, so a bound below that would refuse
  healthy nodes); one further ahead of the controller's clock than that is refused too.
"""

from dataclasses import dataclass
from datetime import datetime

# Seconds: the kubelet's default nodeStatusReportFrequency (5 min) plus two minutes for a late update and clock skew.
DEFAULT_MAX_HEARTBEAT_AGE = 420


@dataclass(frozen=True)
class NodeStatusFacts:
    """``handlers``: the named handlers the Node lists (sorted; the default ``""`` left out); ``why_not``: None when the
    list vouches for the node now, else the reason it does not; ``heartbeat_age``: seconds, None when unknown."""

    node: str
    handlers: tuple
    why_not: str | None
    heartbeat_age: float | None

    @property
    def vouched(self):
        return self.why_not is None


def node_status_facts(node, now, max_heartbeat_age=DEFAULT_MAX_HEARTBEAT_AGE):
    """``NodeStatusFacts`` of one normalised Node at ``now`` (an aware ``datetime``)."""
    listed = [handler["name"] for handler in node.get("runtime_handlers") or ()]
    handlers = tuple(sorted({name for name in listed if name}))
    ready = node.get("ready") or {}
    age = _age_seconds(ready.get("heartbeat"), now)
    why_not = None
    if not handlers:
        why_not = ("the Node reports no status.runtimeHandlers (containerd 1.x, a kubelet before 1.30, or feature "
                   "gates off)")
    elif "" not in listed:
        why_not = "the Node's status.runtimeHandlers lists no default handler (\"\")"
    elif ready.get("status") != "True":
        why_not = f"the Node is not Ready (Ready={ready.get('status') or 'absent'})"
    elif age is None:
        why_not = "the Node's Ready condition has no readable lastHeartbeatTime"
    elif age > max_heartbeat_age:
        why_not = f"the Node's Ready heartbeat is {int(age)} s old (more than {max_heartbeat_age} s)"
    elif -age > max_heartbeat_age:
        # A time far ahead of the controller's clock (skew, or a status nobody should trust) would stay "fresh" for ever.
        why_not = f"the Node's Ready heartbeat is {int(-age)} s in the future (more than {max_heartbeat_age} s ahead)"
    return NodeStatusFacts(node=node["name"], handlers=handlers, why_not=why_not, heartbeat_age=age)


def _age_seconds(timestamp, now):
    """Seconds from an RFC 3339 time (as the API writes it) to ``now``; None when unreadable."""
    if not timestamp:
        return None
    try:
        moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return (now - moment).total_seconds()
