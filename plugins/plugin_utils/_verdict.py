"""The verdict for one node: OK, MISSING (with the handlers) or UNKNOWN.

Pure functions over containerd facts (``_facts/containerd_config``) and normalised RuntimeClasses.
Loaded = the running daemon's view when the node read it, else the dump. ``judge()`` decides the verdict and
nothing else; ``_findings.explain()`` then reads the verdict and the facts to say why (the verdict never depends
on its explanation). ``judge_and_explain()`` does both, in that order, for the entry points — the ``node_crosscheck``
action (``judge_node`` over the ``NodeFacts`` it gathered, ``judge_gathered`` over facts or a registered result it is
given) and ``bin/rc-crosscheck`` — none of which decides anything itself.
How a verdict is said (the words, ``passed``, the ``MISSING=`` lines) is ``_core/vocabulary``'s.
"""

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.containerd_config import BUILTIN_DEFAULT_RUNTIME
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.cri_startup import unusable_runtimes
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.node_facts import node_facts, runtime_binary_problem, runtime_facts
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._explain.findings import explain
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.requirements import (
    labels_of_node,
    required_handlers,
)
# passed, VERDICTS: re-exported for the entry points that import them from here (rc-crosscheck).
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.vocabulary import (  # pylint: disable=unused-import  # noqa: F401
    MISSING,
    OK,
    UNKNOWN,
    VERDICTS,
    cluster_not_read,
    host_unreachable,
    passed,
    verdict_lines,
    why_unusable,
    with_status,
)


def served_runtimes(facts):
    """The runtimes containerd's CRI service can actually hand to pods, and why that set may be empty.

    A loaded runtime is served only while the CRI plugin runs, and the plugin refuses to start for the reasons
    ``_facts/cri_startup`` traces to containerd's source (CRI disabled, ``default_runtime_name`` empty or naming no loaded
    runtime, its snapshotter disabled or unknown, …); containerd then runs on without CRI, on 1.x and 2.x alike.
    A runtime with an empty ``runtime_type`` is listed but unusable: it is left out.
    """
    loaded = sorted(facts.get("runtimes") or {})
    startup = facts.get("cri_startup")
    if not isinstance(startup, dict):
        # Facts from before the start-up model: the two checks they carried.
        default_runtime_name = _effective_default_runtime(facts)
        if facts.get("cri_disabled"):
            return [], "the CRI plugin is in disabled_plugins: containerd serves no runtime to the kubelet"
        if default_runtime_name not in loaded:
            return [], (f"default_runtime_name {default_runtime_name!r} is not among the loaded runtimes "
                        f"[{', '.join(loaded)}]: the CRI plugin fails validation and serves no runtime")
        return loaded, None
    daemon_errors = (facts.get("daemon_startup") or {}).get("errors")
    if daemon_errors:
        return [], "containerd does not start with this configuration: " + "; ".join(daemon_errors)
    if startup.get("errors"):
        return [], "; ".join(startup["errors"])
    unusable = unusable_runtimes(facts.get("runtimes") or {})
    return [name for name in loaded if name not in unusable], None


def node_runtime_handlers(nodes, node_name):
    """Named ``status.runtimeHandlers`` of the Node, or None when unknown (absent or empty: containerd
    1.x, kubelet < 1.30; an empty list never means "no handlers")."""
    for node in nodes or ():
        if node.get("name") == node_name:
            names = sorted({handler.get("name") for handler in node.get("runtime_handlers") or () if handler.get("name")})
            return names or None
    return None


def _loaded_view(node, nodes, node_name, notes):
    """``(served, reason, daemon_runtimes, loaded_source, node_handlers)``.

    Loaded = the running daemon's view when the node could read it and the dump came from running containerd
    there (never for a dump file, maybe another node's capture), else the dump (docs/containerd-loading.md §7: the dump
    re-reads the files; the daemon may run an older config). ``node.status.runtimeHandlers``, when the
    Node reports it, is the kubelet's copy of the daemon's list: without the daemon's own view, a handler absent there
    is not served; with it, the copy (lagging a restart) only adds a note.
    A runtime whose BinaryName is missing or not executable is not served either.
    """
    facts = node.facts
    served, reason = served_runtimes(facts)
    daemon = node.loaded_daemon_view
    daemon_runtimes, loaded_source = None, "dump"
    if daemon is not None:
        daemon_runtimes, loaded_source = daemon["runtimes"], "daemon"
        if daemon["state"] == "cri_unavailable":
            served, reason = [], "the running containerd serves no CRI (the CRI plugin failed to load): no runtime is served"
        else:
            served, reason = list(daemon["runtimes"]), None
    elif facts.get("source") != "command" and isinstance(facts.get("daemon"), dict) and facts["daemon"].get("state") != "unknown":
        notes.append("the running daemon's view is not used: the dump was read from a file, maybe another node's capture")
    elif isinstance(facts.get("daemon"), dict) and facts["daemon"].get("reason"):
        notes.append(f"the running daemon's view is unknown ({facts['daemon']['reason']}): judged from the config dump")
    node_handlers = node_runtime_handlers(nodes, node_name)
    if node_handlers is not None:
        absent = sorted(set(served) - set(node_handlers))
        if absent and loaded_source == "daemon":
            # The kubelet copies the daemon's own list at its next sync (4-8 s after a restart, measured): the live
            # answer read just now is newer than the copy the run read from the cluster, e.g. before the role restarted.
            notes.append(f"node.status.runtimeHandlers lacks {', '.join(absent)}: the kubelet's copy of the running "
                         "daemon's list, which lags a restart; the daemon's own answer counts")
        elif absent:
            notes.append(f"node.status.runtimeHandlers lacks {', '.join(absent)}: counted as not served")
            served = [name for name in served if name in node_handlers]
    unrunnable = {name: runtime_binary_problem(facts, runtime_facts(facts, name)) for name in served}
    for name, problem in sorted(unrunnable.items()):
        if problem:
            notes.append(f"runtime {name} cannot run: its {problem['role']} {problem['binary']} {problem['problem']} on the node")
    served = [name for name in served if not unrunnable[name]]
    # Only facts parsed from a dump say which runtime_type each runtime has (hand-made facts may leave it out).
    untyped = sorted(set(served) & set(unusable_runtimes({name: runtime_facts(facts, name) for name in served}))) \
        if isinstance(facts.get("cri_startup"), dict) else []
    if untyped:
        notes.append(f"runtime(s) {', '.join(untyped)} cannot run: runtime_type is empty, so no shim is named")
        served = [name for name in served if name not in untyped]
    for note in (facts.get("cri_startup") or {}).get("notes") or ():
        notes.append(note)
    return sorted(served), reason, daemon_runtimes, loaded_source, node_handlers


# Where a verdict came from: the node's own evidence over its connection, or the Node's status in the cluster.
NODE_SOURCE = "node"
NODE_STATUS_SOURCE = "node-status"


def judge(facts, runtimeclasses, *, node_name, node_labels=None, nodes=None, expected_handlers=()):
    """The verdict of one node, without its explanation (``findings`` [] and ``missing_explained`` {}: see
    ``judge_and_explain``). ``node_labels`` wins; else the labels of ``node_name`` among ``nodes``; else unknown.
    ``facts``: the ``ansible_facts.containerd`` dict or its ``_facts.NodeFacts``. ``expected_handlers`` are required
    besides the classes'.
    """
    node = node_facts(facts)
    facts = node.facts
    undecided = (facts.get("cri_startup") or {}).get("undecided")
    if undecided:
        # Whether the CRI plugin starts at all is not known: no handler can be proven served, none proven missing.
        return unknown(node_name, undecided)
    daemon_undecided = (facts.get("daemon_startup") or {}).get("undecided")
    if daemon_undecided and (node.loaded_daemon_view or {}).get("state") != "serving":
        # Whether containerd starts is for the node to say (a required plugin that loads only where the node supports
        # it): without a running daemon serving CRI, nothing is proven. With one, it started and its view decides.
        return unknown(node_name, "; ".join(daemon_undecided))
    if node_labels is None:
        node_labels = labels_of_node(nodes, node_name)
    default_runtime_name = facts.get("default_runtime_name")
    requirements, notes = required_handlers(runtimeclasses, node_labels, _effective_default_runtime(facts),
                                            expected_handlers)
    if not default_runtime_name:
        notes.append(
            f"the loaded configuration names no default_runtime_name (no CRI runtime table): "
            f"containerd's built-in default {BUILTIN_DEFAULT_RUNTIME!r} is required"
        )
    if facts.get("files_examined") is False:
        notes.append("the node's config files were not examined (a dump judged by itself, no host root): why a handler "
                     "is missing is not known beyond the dump")
    loaded, not_served_reason, daemon_runtimes, loaded_source, node_handlers = _loaded_view(node, nodes, node_name, notes)
    missing = sorted(set(requirements) - set(loaded))
    if not_served_reason:
        notes.append(not_served_reason)
    verdict = _verdict(
        node_name,
        MISSING if missing else OK,
        required_handlers=sorted(requirements),
        requirements=[{"handler": handler, "required_by": reasons} for handler, reasons in requirements.items()],
        loaded_runtimes=loaded,
        configured_runtimes=sorted(facts.get("runtimes") or {}),
        missing_handlers=missing,
        default_runtime=default_runtime_name,
        containerd_version=facts.get("containerd_version"),
        node_labels_known=node_labels is not None,
        notes=notes,
        reason=not_served_reason or ("" if not missing else "required handlers are not loaded"),
        daemon_runtimes=daemon_runtimes,
        loaded_source=loaded_source,
        node_runtime_handlers=node_handlers,
        files_examined=facts.get("files_examined") is not False,
        version_source=facts.get("version_source"),
    )
    return verdict


# What a verdict from node.status.runtimeHandlers cannot see, said in every such verdict (docs/usage.md).
NODE_STATUS_BLIND_SPOTS = (
    "judged from node.status.runtimeHandlers alone (the kubelet's copy of the handlers containerd's CRI serves), "
    "without connecting to the node: no config file, drop-in or runtime binary was examined, so a missing handler "
    "is not explained and a runtime whose binary is gone still counts as served"
)


def judge_node_status(status_facts, runtimeclasses, *, node_name, node_labels):
    """The verdict of one node from its Node's ``status.runtimeHandlers`` (``_facts/node_status.NodeStatusFacts``).

    Required: every RuntimeClass handler whose nodeSelector matches the node's labels (``node_labels`` None: unknown,
    every class counts). The default runtime's name is not in the Node's status; its serving is what the default
    ``""`` entry says, which the facts require before they vouch. A list that does not vouch for the node now makes
    it UNKNOWN, never OK. The verdict carries ``verdict_source`` ``node-status``.
    """
    if not status_facts.vouched:
        return dict(unknown(node_name, f"not judged from node.status: {status_facts.why_not}"),
                    verdict_source=NODE_STATUS_SOURCE)
    requirements, notes = required_handlers(runtimeclasses, node_labels, None)
    loaded = list(status_facts.handlers)
    missing = sorted(set(requirements) - set(loaded))
    notes.append(NODE_STATUS_BLIND_SPOTS)
    return _verdict(
        node_name,
        MISSING if missing else OK,
        required_handlers=sorted(requirements),
        requirements=[{"handler": handler, "required_by": reasons} for handler, reasons in requirements.items()],
        loaded_runtimes=loaded,
        missing_handlers=missing,
        node_labels_known=node_labels is not None,
        notes=notes,
        reason="" if not missing else "required handlers are not listed in node.status.runtimeHandlers",
        node_runtime_handlers=loaded,
        files_examined=False,
        verdict_source=NODE_STATUS_SOURCE,
    )


def judge_and_explain(facts, runtimeclasses, *, node_name, node_labels=None, nodes=None, expected_handlers=()):
    """``judge()``, then ``explain()``, over one NodeFacts: the verdict carrying the findings that explain it."""
    node = node_facts(facts)
    verdict = judge(node, runtimeclasses, node_name=node_name, node_labels=node_labels, nodes=nodes,
                    expected_handlers=expected_handlers)
    if verdict["status"] == UNKNOWN:
        return verdict
    return dict(verdict, **explain(verdict, node))


def _effective_default_runtime(facts):
    return facts.get("default_runtime_name") or BUILTIN_DEFAULT_RUNTIME


def unknown(node_name, reason):
    """A node whose facts or cluster data could not be gathered: it fails, it is never OK."""
    return _verdict(node_name, UNKNOWN, reason=reason)


# What node_crosscheck was doing when a node gave no facts (the UNKNOWN reason's words, _core/vocabulary).
GATHERING = "gathering containerd facts"
NOTHING_GATHERED = "no containerd facts were gathered for this node"


def unreachable(node_name, message):
    """A node whose connection failed while its facts were gathered: UNKNOWN (it fails, never OK)."""
    return unknown(node_name, host_unreachable(GATHERING, message))


def not_gathered(node_name, module_result):
    """A node whose ``containerd_facts`` node module failed (its failed result, ``msg`` naming the host): UNKNOWN."""
    return unknown(node_name, why_unusable(module_result, GATHERING, NOTHING_GATHERED))


def judge_node(node, *, node_name, runtimeclasses=None, cluster_result=None, nodes=None, node_labels=None,
               expected_handlers=None):
    """Judge one node's ``_facts.NodeFacts`` (as gathered: ``NodeFacts.from_evidence``) against the cluster.

    ``cluster_result`` (a registered ``runtimeclass_info`` result) stands in for ``runtimeclasses``/``nodes``.
    ``expected_handlers`` alone (no RuntimeClasses, no cluster result) judges the node against those handlers and its
    default runtime only: the cluster is not needed. A cluster result that is absent, failed or was skipped makes the
    node UNKNOWN.
    """
    if runtimeclasses is None and cluster_result is None and expected_handlers is not None:
        runtimeclasses = []
    if runtimeclasses is None:
        reason = cluster_not_read(cluster_result)
        if reason:
            return unknown(node_name, f"no RuntimeClasses were read: {reason}" if cluster_result is None else reason)
        runtimeclasses = cluster_result["runtimeclasses"]
        nodes = nodes if nodes is not None else cluster_result.get("nodes")
    return judge_and_explain(node, runtimeclasses, node_name=node_name, node_labels=node_labels, nodes=nodes,
                             expected_handlers=expected_handlers or ())


def judge_gathered(*, node_name, facts=None, gather_result=None, **requirement_inputs):
    """Judge a node from facts given as data: the ``ansible_facts.containerd`` dict (``facts``), or the registered
    result of a user's own ``containerd_facts`` task (``gather_result``); ``requirement_inputs`` (``runtimeclasses``,
    ``cluster_result``, ``nodes``, ``node_labels``, ``expected_handlers``): as for ``judge_node``.

    A gather result that is absent, failed, was skipped or whose host was unreachable makes the node UNKNOWN.
    """
    if facts is None:
        reason = why_unusable(gather_result, GATHERING, NOTHING_GATHERED)
        facts = None if reason else (gather_result.get("ansible_facts") or {}).get("containerd")
        if facts is None:
            return unknown(node_name, reason or "gather_result holds no ansible_facts.containerd")
    if not isinstance(facts.get("runtimes"), dict):
        return unknown(node_name, "the containerd facts hold no runtimes table (not what containerd_facts returns)")
    return judge_node(node_facts(facts), node_name=node_name, **requirement_inputs)


def _verdict(node_name, status, **fields):
    result = with_status({
        "node": node_name,
        "required_handlers": [],
        "requirements": [],
        "loaded_runtimes": [],
        "configured_runtimes": [],
        "missing_handlers": [],
        "default_runtime": None,
        "containerd_version": None,
        "node_labels_known": False,
        "notes": [],
        "reason": "",
        "findings": [],
        "missing_explained": {},
        "daemon_runtimes": None,
        "loaded_source": None,
        "node_runtime_handlers": None,
        "files_examined": None,
        "version_source": None,
    }, status)
    result.update(fields)
    result["lines"] = verdict_lines(result)
    return result
