"""Which RuntimeClasses may go live, and what to send to make the cluster match: pure functions.

The apiserver accepts any handler that is a DNS label and never checks that a node serves it
(pkg/apis/node/validation); a typo like ``nvdia`` is stored happily and every pod using the class
then sits in ``ContainerCreating`` with ``FailedCreatePodSandBox: no runtime for "nvdia" is configured``.
So a class is only applied when the judged nodes prove it can work:

* the class *targets* the judged nodes its ``node_selector`` matches (all of them without one:
  ``scheduling: nil`` means "supported by all nodes");
* every targeted node serves the handler (its verdict lists it in ``loaded_runtimes`` and is not
  UNKNOWN), and at least one node is targeted;
* no cluster node the class matches is left unjudged: the scheduler may place the class's pods on any
  node its nodeSelector matches (every node without one), so a node this run did not judge (a CPU
  node after a rollout over ``gpu_nodes``) is not proven to serve it. ``allow_unjudged_nodes`` accepts
  that risk explicitly. A class bound to the gate's label (its nodeSelector holds ``<label_prefix>/<handler>=served``,
  docs/gate.md) targets only nodes the labeller proved to serve the handler, so unjudged nodes it matches are reported,
  not refused.

Anything else is refused with a sentence naming the class, the handler and the nodes. One refused
class refuses the whole plan: nothing is applied, so a rollout never leaves half its classes live.
"""

import difflib

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.objects import (
    RUNTIMECLASS_API_VERSION,
    normalise_runtimeclass,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._cluster_writers.gate_labels import DEFAULT_LABEL_PREFIX, SERVED, handler_label
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.handler_names import is_well_known_handler
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.dns_names import is_dns_label, is_dns_subdomain
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.quantity import QuantityError, parse_resource_list
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.requirements import selector_matches
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.vocabulary import NOT_REACHED, UNKNOWN, status_of

# pkg/apis/node/validation: the name is a DNS-1123 subdomain, the handler a DNS-1123 label (one definition, _k8s/objects).
UNJUDGED_SHOWN = 5  # node names quoted in a refusal; the count is always given


def desired_body(desired):
    """A desired class ``{name, handler, node_selector, overhead_pod_fixed, tolerations}`` → node.k8s.io/v1 object.

    Raises ``RuntimeGateError`` naming the class and the field for input the apiserver would refuse.
    """
    if not isinstance(desired, dict):
        raise RuntimeGateError(f"each runtimeclasses entry must be a mapping, not {type(desired).__name__}")
    name = desired.get("name")
    if not is_dns_subdomain(name):
        raise RuntimeGateError(f"runtimeclasses entry name {name!r} is not a DNS-1123 subdomain "
                               "(lowercase letters, digits, '-' and '.')")
    handler = desired.get("handler")
    if not is_dns_label(handler):
        raise RuntimeGateError(f"RuntimeClass '{name}': handler {handler!r} is not a DNS-1123 label (lowercase "
                               "letters, digits and '-', at most 63), so the apiserver refuses it")
    body = {"apiVersion": RUNTIMECLASS_API_VERSION, "kind": "RuntimeClass", "metadata": {"name": name},
            "handler": handler}
    overhead = desired.get("overhead_pod_fixed")
    if overhead:
        try:
            parse_resource_list(overhead, f"RuntimeClass '{name}': overhead_pod_fixed")
        except QuantityError as err:
            raise RuntimeGateError(str(err)) from None
        body["overhead"] = {"podFixed": {str(key): str(value) for key, value in overhead.items()}}
    scheduling = {}
    if desired.get("node_selector"):
        scheduling["nodeSelector"] = desired["node_selector"]
    if desired.get("tolerations"):
        scheduling["tolerations"] = desired["tolerations"]
    if scheduling:
        body["scheduling"] = scheduling
    normalise_runtimeclass(body)  # the same type checks as for objects read back
    return body


def plan_runtimeclasses(desired_classes, verdicts, nodes, allow_unjudged_nodes=False, label_prefix=DEFAULT_LABEL_PREFIX):
    """Decide per class: ``[{"name", "handler", "targeted", "serving", "missing", "unjudged", "refusal"}]``.

    ``verdicts`` are node_crosscheck results (``node``, ``status``, ``loaded_runtimes``); ``nodes``
    the cluster's normalised Nodes (all of them: runtimeclass_apply lists them itself). ``refusal`` is None when the
    class may be applied.
    ``unjudged`` lists cluster nodes the selector matches that this run did not judge: a refusal unless
    ``allow_unjudged_nodes``.
    """
    if not isinstance(verdicts, list) or not all(isinstance(v, dict) and isinstance(v.get("node"), str) for v in verdicts):
        raise RuntimeGateError("verdicts must be a list of node_crosscheck results, each with a 'node'")
    judged = {verdict["node"]: verdict for verdict in verdicts}
    labels = {node["name"]: dict(node.get("labels") or {}) for node in nodes or () if isinstance(node, dict) and node.get("name")}
    seen = set()
    plans = []
    for desired in desired_classes:
        body = desired_body(desired)
        name, handler = body["metadata"]["name"], body["handler"]
        if name in seen:
            raise RuntimeGateError(f"RuntimeClass '{name}' is listed twice in runtimeclasses")
        seen.add(name)
        node_selector = desired.get("node_selector") or None
        gated = bool(node_selector) and node_selector.get(handler_label(label_prefix, handler)) == SERVED
        plans.append(_plan_one(name, handler, node_selector, judged, labels, allow_unjudged_nodes or gated))
    return plans


def refusals(plans):
    """The refusal sentences of a plan, in class order."""
    return [plan["refusal"] for plan in plans if plan["refusal"]]


def _plan_one(name, handler, node_selector, judged, labels, allow_unjudged_nodes=False):
    what = f"RuntimeClass '{name}' (handler '{handler}')"
    unknown_labels = sorted(node for node in judged if node_selector and node not in labels)
    targeted = sorted(node for node in judged
                      if not node_selector or (node in labels and selector_matches(node_selector, labels[node])))
    serving = [node for node in targeted if _serves(judged[node], handler)]
    missing = [node for node in targeted if node not in serving]
    unjudged = sorted(node for node, node_labels in labels.items()
                      if node not in judged and (not node_selector or selector_matches(node_selector, node_labels)))
    selector_text = ("nodeSelector " + ",".join(f"{key}={value}" for key, value in sorted(node_selector.items()))
                     if node_selector else "no nodeSelector")
    scope = f"its {selector_text}" if node_selector else "it (no nodeSelector: every node)"
    refusal = None
    if unknown_labels:
        refusal = (f"{what}: the labels of judged node(s) {', '.join(unknown_labels)} are unknown (not in nodes), so "
                   f"whether {scope} targets them cannot be told; pass the cluster's Nodes")
    elif not targeted:
        refusal = (f"{what}: {scope} matches none of the {len(judged)} judged node(s), so no node "
                   "is proven to serve the handler; judge the nodes it targets first")
    elif not serving:
        loaded = sorted({runtime for node in targeted for runtime in _loaded(judged[node])})
        # A well-known name or one a judged node configures is deliberate, maybe not rolled out yet (a staged CDI
        # rollout: `nvidia-cdi` is no typo of `nvidia`), so no spelling is suggested for it (as for fleet findings).
        deliberate = is_well_known_handler(handler) or any(handler in _configured(judged[node]) for node in judged)
        close = [] if deliberate else difflib.get_close_matches(handler, loaded, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        refusal = (f"{what}: no targeted node serves handler '{handler}' ({selector_text}; targeted: "
                   f"{', '.join(targeted)}; they serve: {', '.join(loaded) or 'nothing known'}){hint}")
    elif missing:
        refusal = (f"{what}: {len(missing)} of the {len(targeted)} node(s) {scope} targets do not serve "
                   f"the handler ({', '.join(missing)}); pods placed there would fail with FailedCreatePodSandBox")
    elif unjudged and not allow_unjudged_nodes:
        shown = ", ".join(unjudged[:UNJUDGED_SHOWN]) + (", ..." if len(unjudged) > UNJUDGED_SHOWN else "")
        refusal = (f"{what}: {scope} also matches {len(unjudged)} cluster node(s) this run did not judge ({shown}), "
                   "so they are not proven to serve the handler and pods placed there could fail with "
                   "FailedCreatePodSandBox; judge them too, narrow the nodeSelector, or set allow_unjudged_nodes: true")
    return {"name": name, "handler": handler, "targeted": targeted, "serving": serving, "missing": missing,
            "unjudged": unjudged, "refusal": refusal}


def _loaded(verdict):
    if status_of(verdict) in (UNKNOWN, NOT_REACHED):
        return []
    return [runtime for runtime in verdict.get("loaded_runtimes") or () if isinstance(runtime, str)]


def _configured(verdict):
    """Runtimes a node's configuration or running daemon names, loaded or not."""
    names = set()
    for key in ("configured_runtimes", "loaded_runtimes", "daemon_runtimes"):
        names.update(runtime for runtime in verdict.get(key) or () if isinstance(runtime, str))
    return names


def _serves(verdict, handler):
    return handler in _loaded(verdict)


def needed_change(desired_obj, live_obj):
    """``(action, body)``: ``("create", desired)``, ``("update", merged)``, ``("none", None)``.

    ``live_obj`` is the class as the API returns it (None when absent). Quantities compare by value
    (``1000m`` equals ``1``), as the apiserver canonicalises them. The live object's labels,
    annotations and resourceVersion are kept, so the update is a conditional replace.
    Raises ``RuntimeGateError`` when only a handler change would do: the field is immutable.
    """
    if live_obj is None:
        return "create", desired_obj
    name = desired_obj["metadata"]["name"]
    live = normalise_runtimeclass(live_obj)
    wanted = normalise_runtimeclass(desired_obj)
    if live["handler"] != wanted["handler"]:
        raise RuntimeGateError(
            f"RuntimeClass '{name}' exists with handler '{live['handler']}', and handler is immutable; to move it to "
            f"'{wanted['handler']}' delete the class first (running pods keep their sandbox; new pods fail until it exists)")
    if _comparable(live, name) == _comparable(wanted, name):
        return "none", None
    merged = {key: value for key, value in live_obj.items() if key not in ("overhead", "scheduling", "status")}
    merged["metadata"] = {key: value for key, value in (live_obj.get("metadata") or {}).items()
                          if key in ("name", "labels", "annotations", "resourceVersion", "uid")}
    merged.update({key: desired_obj[key] for key in ("overhead", "scheduling") if key in desired_obj})
    merged["apiVersion"], merged["kind"] = RUNTIMECLASS_API_VERSION, "RuntimeClass"
    return "update", merged


def _comparable(normalised, name):
    try:
        overhead = parse_resource_list(normalised["overhead_pod_fixed"], f"RuntimeClass '{name}' overhead")
    except QuantityError:
        overhead = normalised["overhead_pod_fixed"]
    return (normalised["handler"], overhead or None, normalised["node_selector"] or None,
            normalised["tolerations"] or [])
