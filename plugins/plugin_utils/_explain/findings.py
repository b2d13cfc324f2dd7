"""Why a node (or the fleet) does not serve a handler: findings with a stable code, evidence and a remedy.

Pure controller-side functions (Python >= 3.11). Host findings read the raw evidence the node module
returns next to the dump (``config_files``, ``import_globs``, ``dropin_dirs``, ``binaries``,
``cdi_dirs``, ``daemon``); evidence that is absent (older facts, ``dump_file`` mode) makes the rules
that need it stay silent — absence never turns a failing host into a passing one, because findings only
explain a verdict, they never make it OK. The rules follow docs/containerd-loading.md; each
cites the containerd behaviour it relies on.

A finding::

    {"code", "severity": "error"|"warning", "host", "message", "remedy",
     "evidence": {str: JSON scalar or list}, "handlers": [handler names it explains]}

``error`` only when the finding makes a required handler unserved or the node's CRI broken.
"""

import difflib

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.node_facts import NodeFacts, node_facts
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._explain.finding_codes import ERROR, WARNING, codes_of, make_finding
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.handler_names import is_well_known_handler
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._explain.host_rules import host_rule_findings
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.vocabulary import was_judged

NOT_CONFIGURED_ANYWHERE = "NOT_CONFIGURED_ANYWHERE"

FLEET_CODES = codes_of("fleet")
# Findings that explain every missing handler because containerd, or its CRI plugin as a whole, fails to load. They
# are not why a handler no file mentions is missing: fixed, it would still be configured nowhere.
WHOLE_NODE_FAILURES = frozenset((
    "CRI_PLUGIN_FAILS", "CRI_TABLE_REPLACED", "CRI_UNAVAILABLE", "DEFAULT_RUNTIME_UNDEFINED", "MIXED_CONFIG_VERSIONS",
    "V3_CONFIG_ON_1X",
))


def host_findings(facts, verdict):
    """Findings for one judged host, errors first, then by code.

    ``facts`` are the host's containerd facts, ``verdict`` its verdict so far (``missing_handlers``,
    ``node``).
    """
    return host_explanation(facts, verdict)[0]


def explain(verdict, facts):
    """Why a judged host has its verdict: ``{"findings": [...], "missing_explained": {...}}`` (``host_explanation``).

    Reads the verdict (never changes it): called after ``_verdict.judge()``.
    """
    findings, missing_explained = host_explanation(facts, verdict)
    return {"findings": findings, "missing_explained": missing_explained}


def host_explanation(facts, verdict):
    """``(findings, missing_explained)`` for one judged host.

    ``missing_explained`` maps each missing handler to the codes of the findings that explain it, or to
    ``["NOT_CONFIGURED_ANYWHERE"]`` when no config file the node showed (nor the dump) mentions the handler;
    ``[]`` when no rule explains it — files mention it, or the node sent no files to look in (older facts).
    """
    if not isinstance(facts, (dict, NodeFacts)) or not isinstance(verdict, dict):
        return [], {}
    node = node_facts(facts)
    findings, mentioned = host_rule_findings(node, verdict)
    files_known = isinstance(node.evidence["config_files"], list)
    for finding in findings:
        finding["host"] = verdict.get("node")
    findings.sort(key=lambda item: (item["severity"] != ERROR, item["code"], item["message"]))
    explained = {}
    for handler in verdict.get("missing_handlers") or []:
        # Only errors explain a missing handler: a warning names a handler at risk, not one that is gone.
        codes = sorted({finding["code"] for finding in findings if finding["severity"] == ERROR and handler in finding["handlers"]})
        if files_known and handler not in mentioned:
            # No file the node showed, nor the dump, defines it: that comes first, whatever else fails on the node.
            codes = [code for code in codes if code not in WHOLE_NODE_FAILURES] or [NOT_CONFIGURED_ANYWHERE]
        explained[handler] = codes
    return findings, explained


def finding_lines(findings, indent="  "):
    """Human lines for findings: ``CODE (severity): message`` then the remedy and evidence, indented."""
    lines = []
    for finding in findings:
        lines.append(f"{finding['code']} ({finding['severity']}): {finding['message']}")
        lines.append(f"{indent}remedy: {finding['remedy']}")
        evidence = ", ".join(f"{key}={_evidence_text(value)}" for key, value in finding["evidence"].items())
        if evidence:
            lines.append(f"{indent}evidence: {evidence}")
    return lines


def explanation_lines(verdict):
    """The findings of a verdict as indented lines, each missing handler's explanation first."""
    unexplained = ("not explained: the node's config files were not examined (judge the dump with its host root)"
                   if verdict.get("files_examined") is False else "no finding explains it")
    lines = [
        f"  {handler}: {', '.join(codes) if codes else unexplained}"
        for handler, codes in (verdict.get("missing_explained") or {}).items()
    ]
    return lines + ["  " + line for line in finding_lines(verdict.get("findings") or [])]


def failure_message(verdict):
    """A failed host's one-line message: each ``MISSING=<handler>`` with the finding codes that explain it
    (``MISSING=nvidia-cdi (NOT_CONFIGURED_ANYWHERE)``), or the UNKNOWN line; ``; `` between them.

    One line, so that ansible-core's default callback shows it readably in its ``[ERROR]`` line and in JSON or YAML
    results alike; the findings themselves are the result's ``findings`` (and explanation_lines renders them).
    """
    explained = verdict.get("missing_explained") or {}
    return "; ".join(
        f"{line} ({', '.join(explained[line.split('=', 1)[1]])})"
        if line.startswith("MISSING=") and explained.get(line.split("=", 1)[1]) else line
        for line in verdict["lines"]
    ).replace("\n", " ")


def _evidence_text(value):
    if isinstance(value, list):
        return "[" + ", ".join(str(item) for item in value) + "]"
    return str(value)


# --------------------------------------------------------------------------------------------------
# Fleet findings: once per run, over every verdict.


def _judged(verdicts):
    """Verdicts that were reached from facts (OK or MISSING); UNKNOWN hosts prove nothing either way."""
    values = verdicts.values() if isinstance(verdicts, dict) else verdicts
    return [verdict for verdict in values or () if was_judged(verdict)]


def _host_of(verdict):
    return verdict.get("node") or verdict.get("host")


def fleet_findings(verdicts, cluster):
    """HANDLER_SERVED_NOWHERE, RUNTIMECLASS_WITHOUT_NODESELECTOR and PODS_RUN_ON_UNSERVED_HANDLER over one run's verdicts.

    Silent when no host was judged: a run that reached no node cannot say a handler is served nowhere.
    """
    judged = _judged(verdicts)
    runtimeclasses = (cluster or {}).get("runtimeclasses") or []
    if not judged or not runtimeclasses:
        return []
    served_anywhere = set()
    for verdict in judged:
        served_anywhere.update(verdict.get("loaded_runtimes") or ())
    known_names = set(served_anywhere)
    for verdict in judged:
        known_names.update(verdict.get("configured_runtimes") or ())
    pods = (cluster or {}).get("pods") or []
    context = {
        "served_anywhere": served_anywhere,
        "known_names": known_names,
        "in_use": _names_in_use(judged, cluster or {}),
        "coverage": _coverage(judged, cluster or {}),
    }

    findings = []
    by_handler = {}
    for runtimeclass in sorted(runtimeclasses, key=lambda item: item["name"]):
        by_handler.setdefault(runtimeclass["handler"], []).append(runtimeclass)
    for handler, classes in sorted(by_handler.items()):
        if handler not in served_anywhere:
            findings.append(_served_nowhere(handler, classes, judged, pods, context))
    for runtimeclass in sorted(runtimeclasses, key=lambda item: item["name"]):
        if runtimeclass.get("node_selector"):
            continue
        lacking = sorted(_host_of(verdict) for verdict in judged if runtimeclass["handler"] not in (verdict.get("loaded_runtimes") or ()))
        if lacking:
            findings.append(make_finding(
                "RUNTIMECLASS_WITHOUT_NODESELECTOR", WARNING,
                f"RuntimeClass {runtimeclass['name']} has no scheduling.nodeSelector, so its pods can be scheduled on "
                f"{len(lacking)} checked node(s) that do not serve handler {runtimeclass['handler']!r}.",
                f"Give RuntimeClass {runtimeclass['name']} a scheduling.nodeSelector matching only the nodes that serve "
                f"{runtimeclass['handler']!r}, or configure the handler on every node.",
                {"runtimeclass": runtimeclass["name"], "handler": runtimeclass["handler"], "nodes_lacking": lacking},
                [runtimeclass["handler"]],
            ))
    findings.extend(_pods_on_unserved_handlers(judged, runtimeclasses, pods))
    return findings


def _pods_on_unserved_handlers(judged, runtimeclasses, pods):
    """PODS_RUN_ON_UNSERVED_HANDLER, one per judged node and handler: Running pods whose class's handler the node no longer
    serves. A sandbox keeps running after its handler leaves containerd's config (measured on real kubelets with
    containerd 2.2: 0 restarts); only a new sandbox fails, so the pods fail when recreated."""
    handler_of = {runtimeclass["name"]: runtimeclass["handler"] for runtimeclass in runtimeclasses}
    # The Running pods under a RuntimeClass's handler, by node, in the cluster's order: one pass over the pods, not one
    # per judged node (20,000 pods x 10,000 nodes took minutes: benchmarks/README.md, "API mode").
    running_by_node = {}
    for pod in pods:
        handler = handler_of.get(pod.get("runtime_class"))
        if handler and pod.get("phase") == "Running":
            running_by_node.setdefault(pod.get("node"), []).append((handler, pod))
    findings = []
    for verdict in sorted(judged, key=_host_of):
        node = _host_of(verdict)
        served = set(verdict.get("loaded_runtimes") or ())
        stranded = {}
        for handler, pod in running_by_node.get(node, ()):
            if handler not in served:
                stranded.setdefault(handler, []).append(pod)
        for handler, stranded_pods in sorted(stranded.items()):
            names = sorted(f"{pod.get('namespace')}/{pod.get('name')}" for pod in stranded_pods)
            findings.append(make_finding(
                "PODS_RUN_ON_UNSERVED_HANDLER", WARNING,
                f"{len(names)} pod(s) run on {node} under handler {handler!r}, which it no longer serves; they fail "
                f"when recreated: {', '.join(names)}.",
                f"Configure {handler!r} on {node} again (and restart containerd), or move these pods to a node that "
                "serves it before they are recreated.",
                {"node": node, "handler": handler, "pods": names}, [handler], host=node))
    return findings


def _names_in_use(judged, cluster):
    """Runtime names that are no typo: configured on a judged node (its loaded configuration's runtimes, its running
    daemon's), served by a cluster Node (``status.runtimeHandlers``), or the name of a RuntimeClass."""
    names = set()
    for verdict in judged:
        names.update(verdict.get("configured_runtimes") or ())
        names.update(verdict.get("loaded_runtimes") or ())
        names.update(verdict.get("daemon_runtimes") or ())
        names.update(verdict.get("node_runtime_handlers") or ())
    for node in cluster.get("nodes") or ():
        for entry in (node or {}).get("runtime_handlers") or ():
            names.add(entry.get("name") if isinstance(entry, dict) else entry)
    names.update(runtimeclass.get("name") for runtimeclass in cluster.get("runtimeclasses") or ())
    names.discard(None)
    names.discard("")
    return names


def _coverage(judged, cluster):
    """``(judged cluster Nodes, cluster Node count)``; the count is None when the cluster's Nodes are unknown."""
    names = {node.get("name") for node in cluster.get("nodes") or () if isinstance(node, dict)}
    if not names:
        return 0, None
    return len(names & {_host_of(verdict) for verdict in judged}), len(names)


def _spelling_suggestion(handler, context):
    """A served (else configured) name the handler is probably a misspelling of, or None.

    Only for a handler nothing vouches for: a name some node configures or serves, a RuntimeClass is named, or
    in common use is deliberate, even when no judged node serves it (a staged rollout: `nvidia-cdi` is no typo
    of `nvidia`).
    """
    if handler in context["in_use"] or is_well_known_handler(handler):
        return None
    closest = (difflib.get_close_matches(handler, sorted(context["served_anywhere"]), n=1, cutoff=0.6)
               or difflib.get_close_matches(handler, sorted(context["known_names"] - {handler}), n=1, cutoff=0.6))
    return closest[0] if closest else None


def _served_nowhere(handler, classes, judged, pods, context):
    class_names = [runtimeclass["name"] for runtimeclass in classes]
    classes_text = ", ".join(class_names)
    required_on = sorted(_host_of(verdict) for verdict in judged if handler in (verdict.get("required_handlers") or ()))
    closest = _spelling_suggestion(handler, context)
    nodes_judged, node_count = context["coverage"]
    every_node_judged = node_count is not None and nodes_judged == node_count
    class_pods = [pod for pod in pods if pod.get("runtime_class") in class_names]
    stuck = [pod for pod in class_pods if pod.get("sandbox_failures")]
    if every_node_judged:
        nowhere = "no node serves it"
    elif node_count is None:
        nowhere = f"no judged node serves it ({len(judged)} judged; the cluster's other nodes are unknown)"
    else:
        nowhere = f"no judged node serves it ({nodes_judged} of the cluster's {node_count} nodes judged)"
    message = (
        f"RuntimeClass {classes_text} uses handler {handler!r}: {nowhere}"
        + (f" (did you mean `{closest}`?)" if closest else "")
        + (f"; {len(class_pods)} pod(s) use it, {len(stuck)} stuck with FailedCreatePodSandBox." if class_pods else ".")
    )
    if closest:
        remedy = f"Fix the handler of RuntimeClass {classes_text} (probably {closest!r}), or configure {handler!r} on the nodes."
    elif every_node_judged:
        remedy = f"Configure a runtime named {handler!r} in containerd on the nodes that should run these pods, or delete the RuntimeClass."
    else:
        remedy = (f"Configure a runtime named {handler!r} in containerd on the nodes that should run these pods; nodes this "
                  "run did not judge may already serve it (check them before changing the RuntimeClass).")
    evidence = {
        "handler": handler,
        "runtimeclasses": class_names,
        "nodes_checked": len(judged),
        "cluster_nodes": node_count,
        "required_on": required_on,
        "pods": [_pod_text(pod) for pod in class_pods],
        "sandbox_failures": [f"{pod.get('namespace')}/{pod.get('name')}: {pod['sandbox_failures'][-1]}" for pod in stuck],
    }
    if closest:
        evidence["closest_loaded"] = closest
    return make_finding("HANDLER_SERVED_NOWHERE", ERROR if required_on or class_pods else WARNING, message, remedy, evidence, [handler])


def _pod_text(pod):
    return f"{pod.get('namespace')}/{pod.get('name')} node={pod.get('node') or '-'} phase={pod.get('phase') or '-'}"


def runtimeclass_summary(verdicts, cluster):
    """Per RuntimeClass: the judged nodes that serve its handler, require it, and require it without serving it."""
    judged = sorted(_judged(verdicts), key=lambda verdict: str(_host_of(verdict)))
    summary = []
    for runtimeclass in sorted((cluster or {}).get("runtimeclasses") or [], key=lambda item: item["name"]):
        handler = runtimeclass["handler"]
        summary.append({
            "name": runtimeclass["name"],
            "handler": handler,
            "serving": [_host_of(verdict) for verdict in judged if handler in (verdict.get("loaded_runtimes") or ())],
            "required": [_host_of(verdict) for verdict in judged if handler in (verdict.get("required_handlers") or ())],
            "missing": [_host_of(verdict) for verdict in judged if handler in (verdict.get("missing_handlers") or ())],
        })
    return summary
