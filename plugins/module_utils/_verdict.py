"""The verdict for one node, and how it is said: OK, MISSING (with the handlers) or UNKNOWN.

Pure functions over containerd facts (``_containerd_config``) and normalised RuntimeClasses.
Every entry point — the ``handler_crosscheck`` action, ``crosscheck_summary`` and ``bin/rc-crosscheck``
— calls these; none of them decides anything itself.
"""

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._containerd_config import BUILTIN_DEFAULT_RUNTIME
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._requirements import (
    labels_of_node,
    required_handlers,
)

OK = "OK"
MISSING = "MISSING"
UNKNOWN = "UNKNOWN"
VERDICTS = (OK, MISSING, UNKNOWN)


def served_runtimes(facts):
    """The runtimes containerd's CRI service can actually hand to pods, and why that set may be empty.

    A loaded runtime is served only while the CRI plugin runs. It does not when CRI is disabled, or
    when ``default_runtime_name`` names no loaded runtime: the plugin then fails validation
    ("no corresponding runtime configured in containerd.runtimes for containerd default_runtime_name")
    and containerd runs on without CRI, on 1.x and 2.x alike (reference §2, §8).
    """
    loaded = sorted(facts.get("runtimes") or {})
    default_runtime_name = _effective_default_runtime(facts)
    if facts.get("cri_disabled"):
        return [], "the CRI plugin is in disabled_plugins: containerd serves no runtime to the kubelet"
    if default_runtime_name not in loaded:
        return [], (
            f"default_runtime_name {default_runtime_name!r} is not among the loaded runtimes "
            f"[{', '.join(loaded)}]: the CRI plugin fails validation and serves no runtime"
        )
    return loaded, None


def judge(facts, runtimeclasses, *, node_name, node_labels=None, nodes=None):
    """Judge one node. ``node_labels`` wins; else the labels of ``node_name`` among ``nodes``; else unknown."""
    if node_labels is None:
        node_labels = labels_of_node(nodes, node_name)
    default_runtime_name = facts.get("default_runtime_name")
    requirements, notes = required_handlers(runtimeclasses, node_labels, _effective_default_runtime(facts))
    if not default_runtime_name:
        notes.append(
            f"the loaded configuration names no default_runtime_name (no CRI runtime table): "
            f"containerd's built-in default {BUILTIN_DEFAULT_RUNTIME!r} is required"
        )
    loaded, not_served_reason = served_runtimes(facts)
    missing = sorted(set(requirements) - set(loaded))
    if not_served_reason:
        notes.append(not_served_reason)
    return _verdict(
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
    )


def _effective_default_runtime(facts):
    return facts.get("default_runtime_name") or BUILTIN_DEFAULT_RUNTIME


def unknown(node_name, reason):
    """A node whose facts or cluster data could not be gathered: it fails, it is never OK."""
    return _verdict(node_name, UNKNOWN, reason=reason)


def _why_unusable(result, what, when_absent):
    """Why a registered task result cannot be judged from, or None when it can."""
    if result is None:
        return when_absent
    if result.get("unreachable"):
        return f"host unreachable while {what}: {result.get('msg', 'no message')}"
    if result.get("failed"):
        return f"{what} failed: {result.get('msg', 'no message')}"
    if result.get("skipped"):
        return f"{what} was skipped"
    return None


def judge_gathered(
    *, node_name, facts=None, gather_result=None, runtimeclasses=None, cluster_result=None, nodes=None, node_labels=None
):
    """Judge a node from what the run gathered: plain data, or registered Ansible task results.

    ``gather_result`` (a registered ``containerd_facts`` result) stands in for ``facts`` and
    ``cluster_result`` (a registered ``runtimeclass_info`` result) for ``runtimeclasses``/``nodes``.
    A result that is absent, failed, was skipped or whose host was unreachable makes the node UNKNOWN.
    """
    if facts is None:
        reason = _why_unusable(gather_result, "gathering containerd facts", "no containerd facts were gathered for this node")
        facts = None if reason else (gather_result.get("ansible_facts") or {}).get("containerd")
        if facts is None:
            return unknown(node_name, reason or "gather_result holds no ansible_facts.containerd")
    if not isinstance(facts.get("runtimes"), dict):
        return unknown(node_name, "the containerd facts hold no runtimes table (not what containerd_facts returns)")

    if runtimeclasses is None:
        reason = _why_unusable(
            cluster_result,
            "reading RuntimeClasses from the cluster",
            "no RuntimeClasses were read: the cluster was never asked (was localhost left out by --limit?)",
        )
        if reason or "runtimeclasses" not in cluster_result:
            return unknown(node_name, reason or "cluster_result holds no runtimeclasses")
        runtimeclasses = cluster_result["runtimeclasses"]
        nodes = nodes if nodes is not None else cluster_result.get("nodes")
    return judge(facts, runtimeclasses, node_name=node_name, node_labels=node_labels, nodes=nodes)


def verdict_lines(verdict):
    """What a user reads for one node: ``MISSING=<handler>`` lines, ``UNKNOWN=<reason>`` or ``OK``."""
    if verdict["verdict"] == MISSING:
        return [f"MISSING={handler}" for handler in verdict["missing_handlers"]]
    if verdict["verdict"] == UNKNOWN:
        return [f"UNKNOWN={verdict['reason']}"]
    return [OK]


def passed(verdict):
    return verdict["verdict"] == OK


def _verdict(node_name, verdict, **fields):
    result = {
        "node": node_name,
        "verdict": verdict,
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
    }
    result.update(fields)
    result["lines"] = verdict_lines(result)
    return result
