"""Close the gate: which handler labels each judged node should carry, and which RuntimeClasses to bind to them.

Pure functions over plain dicts; ``_gate_labels_apply`` reads the cluster and writes what these decide.

Nothing in Kubernetes checks that a RuntimeClass's handler exists on the node a pod lands on: the scheduler places
the pod by the class's ``scheduling.nodeSelector`` only, and the kubelet then fails it with
``FailedCreatePodSandBox: no runtime for "<handler>" is configured``. A label per handler a node was *proven* to
serve (``<prefix>/<handler>=served``), put in the class's nodeSelector, lets the scheduler itself keep such pods
Pending instead.

* A judged node (OK or MISSING) carries exactly the labels of the handlers its verdict lists in ``loaded_runtimes``
  (what the loaded containerd configuration serves, after the daemon's and the Node's own view); every other
  label under the prefix is removed. An UNKNOWN node serves nothing proven: all of its labels are removed.
* A node this run did not judge keeps its labels untouched (they may be stale: the node is reported).
* A handler that cannot be a label name (Kubernetes: at most 63 characters, ``[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?``)
  gets no label and is reported; it can never be a RuntimeClass handler either (a DNS-1123 label).
* Only keys under the prefix are ever planned; every other label is left alone.
"""

import re

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.dns_names import DNS_SUBDOMAIN_MAX, is_dns_subdomain
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError, cut_text, shown_value
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.requirements import selector_matches
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.vocabulary import (
    STATUS_KEY,
    UNKNOWN,
    VERDICTS,
)

DEFAULT_LABEL_PREFIX = "handler.runtime-gate.gpufleet.io"
SERVED = "served"
# k8s.io/apimachinery/pkg/util/validation: IsQualifiedName (name part) and IsDNS1123Subdomain (prefix).
LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
LABEL_NAME_MAX = 63
# Prefixes Kubernetes reserves for its own components (kubernetes.io, k8s.io and their subdomains): their labels
# are never ours to remove.
RESERVED_PREFIX = re.compile(r"(^|\.)(kubernetes\.io|k8s\.io)\Z")
NODES_SHOWN = 10  # node names quoted in one warning; the count is always given


def check_prefix(prefix):
    """``prefix`` itself when it can be a label key prefix we own; else ``RuntimeGateError`` naming the rule."""
    if not isinstance(prefix, str) or not prefix:
        raise RuntimeGateError(f"label_prefix must be a DNS subdomain, not {shown_value(prefix)}")
    if not is_dns_subdomain(prefix):
        raise RuntimeGateError(f"label_prefix '{cut_text(prefix)}' is not a DNS-1123 subdomain (lowercase letters, digits, "
                               f"'-' and '.', at most {DNS_SUBDOMAIN_MAX} characters), so no label key can use it")
    if RESERVED_PREFIX.search(prefix):
        raise RuntimeGateError(f"label_prefix '{prefix}' is reserved for Kubernetes components: every label under it "
                               "would be removed from the judged nodes; use a domain of your own")
    return prefix


def label_problem(handler):
    """Why ``handler`` cannot be the name part of a label key, or None when it can."""
    if not isinstance(handler, str) or not handler:
        return "not a non-empty string"
    if len(handler) > LABEL_NAME_MAX:
        return f"{len(handler)} characters, a label name has at most {LABEL_NAME_MAX}"
    if not LABEL_NAME.fullmatch(handler):
        return "a label name is alphanumerics, '-', '_' and '.', starting and ending alphanumeric"
    return None


def handler_label(prefix, handler):
    """The label key of ``handler``: ``<prefix>/<handler>``."""
    return f"{prefix}/{handler}"


def our_labels(labels, prefix):
    """The labels of ``labels`` under ``prefix``."""
    return {key: value for key, value in (labels or {}).items() if key.startswith(prefix + "/")}


def judged_by_node(verdicts):
    """``{node name: {"status", "served"}}`` from node_crosscheck results (or verdicts-file entries).

    Raises ``RuntimeGateError`` for a verdict that cannot be read: labels are written from it, so a malformed one
    must stop the run rather than count as serving nothing or everything.
    """
    if not isinstance(verdicts, list):
        raise RuntimeGateError(f"verdicts must be a list of node_crosscheck results, not {shown_value(verdicts)}")
    judged = {}
    for number, verdict in enumerate(verdicts, start=1):
        where = f"verdicts item {number}"
        if not isinstance(verdict, dict):
            raise RuntimeGateError(f"{where} is {shown_value(verdict)}, not a node_crosscheck result (a mapping)")
        node = verdict.get("node")
        if not isinstance(node, str) or not node:
            raise RuntimeGateError(f"{where} has no 'node' (the Kubernetes Node name): {shown_value(node)}")
        status = verdict.get(STATUS_KEY)
        if status not in VERDICTS:
            raise RuntimeGateError(f"{where} (node '{cut_text(node)}'): '{STATUS_KEY}' is {shown_value(status)}, "
                                   f"not one of {', '.join(VERDICTS)}")
        loaded = verdict.get("loaded_runtimes")
        if status != UNKNOWN and (not isinstance(loaded, list) or not all(isinstance(name, str) for name in loaded)):
            raise RuntimeGateError(f"{where} (node '{cut_text(node)}', {status}): 'loaded_runtimes' is "
                                   f"{shown_value(loaded)}, not a list of handler names")
        if node in judged:
            raise RuntimeGateError(f"node '{cut_text(node)}' is judged twice in verdicts ({where}); each Node may have "
                                   "one verdict (two hosts with the same runtime_gate_node_name?)")
        judged[node] = {STATUS_KEY: status, "served": [] if status == UNKNOWN else sorted(set(loaded))}
    return judged


def plan_labels(verdicts, node_labels, prefix=DEFAULT_LABEL_PREFIX):
    """Per judged node, the labels under ``prefix`` it should carry; the cluster's other nodes, reported.

    ``node_labels`` is ``{node name: its labels}`` for every Node of the cluster, as read just now. Returns
    ``{"nodes": [...], "unjudged": [{"node", "labels"}], "labels_after": {node: every label after the run}}``;
    each ``nodes`` entry: ``node``, ``status``, ``served``, ``action`` (``label``, ``none`` or ``not_found``: no Node
    of that name), ``add`` and ``remove`` (label keys), ``labels_before``/``labels_after`` (ours only),
    ``unlabelable`` (``[{"handler", "problem"}]``) and ``patch`` (the merge patch, None without change).
    """
    check_prefix(prefix)
    judged = judged_by_node(verdicts)
    planned, labels_after = [], {}
    for node in sorted(judged):
        verdict = judged[node]
        wanted, unlabelable = {}, []
        for handler in verdict["served"]:
            problem = label_problem(handler)
            if problem:
                unlabelable.append({"handler": handler, "problem": problem})
            else:
                wanted[handler_label(prefix, handler)] = SERVED
        entry = {"node": node, STATUS_KEY: verdict[STATUS_KEY], "served": verdict["served"], "unlabelable": unlabelable,
                 "labels_after": wanted}
        if node not in node_labels:
            entry.update(action="not_found", add=[], remove=[], labels_before={}, patch=None)
            planned.append(entry)
            continue
        before = our_labels(node_labels[node], prefix)
        add = sorted(key for key, value in wanted.items() if before.get(key) != value)
        remove = sorted(key for key in before if key not in wanted)
        patch = {"metadata": {"labels": {**{key: SERVED for key in add}, **{key: None for key in remove}}}} \
            if add or remove else None
        entry.update(action="label" if patch else "none", add=add, remove=remove, labels_before=before, patch=patch)
        planned.append(entry)
        others = {key: value for key, value in node_labels[node].items() if not key.startswith(prefix + "/")}
        labels_after[node] = {**others, **wanted}
    unjudged = [{"node": node, "labels": our_labels(labels, prefix)} for node, labels in sorted(node_labels.items())
                if node not in judged]
    for item in unjudged:
        labels_after[item["node"]] = dict(node_labels[item["node"]])
    return {"nodes": planned, "unjudged": unjudged, "labels_after": labels_after}


def plan_binding(runtimeclass, labels_after, prefix=DEFAULT_LABEL_PREFIX):
    """Bind one RuntimeClass (as the API returns it) to its handler's label: add ``<prefix>/<handler>=served`` to
    ``scheduling.nodeSelector``, keeping the keys it has (the class then targets fewer nodes, never more).

    ``labels_after`` is every Node's labels once the planned labels are written. Returns ``name``, ``handler``,
    ``label``, ``action`` (``bind`` or ``none``), ``node_selector_before``/``_after``, ``labelled_nodes`` (nodes the
    bound selector matches) and ``unlabelled_nodes`` (nodes the current selector matches, every node without one,
    that lack the label: new pods of the class will no longer be placed there).
    """
    metadata = runtimeclass.get("metadata") or {}
    name, handler = metadata.get("name"), runtimeclass.get("handler")
    problem = label_problem(handler)
    if problem:
        raise RuntimeGateError(f"RuntimeClass '{cut_text(name)}': handler {shown_value(handler)} cannot be a label name "
                               f"({problem}), so it cannot be bound")
    label = handler_label(prefix, handler)
    scheduling = runtimeclass.get("scheduling") or {}
    before = dict(scheduling.get("nodeSelector") or {})
    after = {**before, label: SERVED}
    unlabelled = sorted(node for node, labels in labels_after.items()
                        if selector_matches(before, labels) and labels.get(label) != SERVED)
    labelled = sorted(node for node, labels in labels_after.items() if selector_matches(after, labels))
    return {"name": name, "handler": handler, "label": label, "action": "none" if before == after else "bind",
            "node_selector_before": before or None, "node_selector_after": after, "labelled_nodes": labelled,
            "unlabelled_nodes": unlabelled}


def bound_body(runtimeclass, binding):
    """The conditional replace of a bound class: the object as read (labels, annotations, resourceVersion kept), its
    nodeSelector the bound one, everything else as it was."""
    metadata = runtimeclass.get("metadata") or {}
    body = {key: value for key, value in runtimeclass.items() if key not in ("status", "metadata")}
    body["metadata"] = {key: value for key, value in metadata.items()
                        if key in ("name", "labels", "annotations", "resourceVersion", "uid")}
    body["scheduling"] = dict(runtimeclass.get("scheduling") or {}, nodeSelector=binding["node_selector_after"])
    return body


def label_warnings(label_plan):
    """Sentences a user must read: handlers that got no label, judged nodes not in the cluster, unjudged nodes that
    keep labels of ours."""
    warnings = []
    for entry in label_plan["nodes"]:
        for item in entry["unlabelable"]:
            warnings.append(f"node '{entry['node']}' serves handler '{cut_text(item['handler'])}', which cannot be a label "
                            f"name ({item['problem']}): no label says it is served")
        if entry["action"] == "not_found":
            warnings.append(f"node '{entry['node']}' was judged ({entry[STATUS_KEY]}) but the cluster has no Node of that "
                            "name (check runtime_gate_node_name): nothing labelled")
    stale = [item["node"] for item in label_plan["unjudged"] if item["labels"]]
    if stale:
        warnings.append(f"{len(stale)} node(s) this run did not judge keep their handler labels, unverified: "
                        f"{_names(stale)}")
    return warnings


def binding_warnings(binding):
    """What binding this class changes for the scheduler, said before it is done."""
    if binding["action"] != "bind":
        return []
    selector = binding["node_selector_before"]
    scope = ("its nodeSelector " + ",".join(f"{key}={value}" for key, value in sorted(selector.items()))
             if selector else "it (no nodeSelector: every node)")
    warnings = []
    if binding["unlabelled_nodes"]:
        warnings.append(f"binding RuntimeClass '{binding['name']}' to {binding['label']}={SERVED}: {scope} now places "
                        f"pods on {len(binding['unlabelled_nodes'])} node(s) without that label, where new pods of the "
                        f"class will no longer be scheduled (running pods stay): {_names(binding['unlabelled_nodes'])}")
    if not binding["labelled_nodes"]:
        warnings.append(f"binding RuntimeClass '{binding['name']}': no node carries {binding['label']}={SERVED} within "
                        f"{scope}, so every new pod of the class stays Pending until one is labelled")
    return warnings


def _names(nodes):
    return ", ".join(nodes[:NODES_SHOWN]) + (", ..." if len(nodes) > NODES_SHOWN else "")
