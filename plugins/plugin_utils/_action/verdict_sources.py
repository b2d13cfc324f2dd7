# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Which hosts the cluster's Node status judges and which go to the node over its connection (controller side).

``SSH`` judges every host from its own evidence (one round trip each). ``NODE_STATUS`` judges every host from its
Node's ``status.runtimeHandlers`` alone: a host whose Node does not vouch for it (``_facts/node_status``) is UNKNOWN.
``HYBRID`` (the playbooks' default) keeps the Node-status verdict of every vouched host that is OK, and hands to SSH
every other host: the unvouched ones, and each MISSING one, so each missing handler still gets its explanation from
the node's files. A host whose Node the cluster does not list, or a cluster that was not read, is never judged from
the API: UNKNOWN in ``NODE_STATUS``, SSH in ``HYBRID``.
"""

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.requirements import labels_of_node
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.vocabulary import OK, cluster_not_read
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.node_status import node_status_facts
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._verdict import (
    NODE_STATUS_SOURCE,
    judge_node_status,
    unknown,
)

SSH = "ssh"
NODE_STATUS = "node-status"
HYBRID = "hybrid"
VERDICT_SOURCES = (HYBRID, NODE_STATUS, SSH)


def split_by_verdict_source(node_names, cluster_result, mode, *, now, max_heartbeat_age, node_labels=None):
    """``{"verdicts": {host: verdict}, "ssh_hosts": [...], "task_hosts": [...], "judged_from_node_status": n,
    "handed_to_ssh": m}``.

    ``node_names``: ``{host: Kubernetes Node name}``; ``node_labels``: ``{host: labels}`` for the hosts whose labels
    the inventory gives (else the Node's). ``verdicts`` holds the final Node-status verdicts (every host in
    ``NODE_STATUS``; in ``HYBRID`` only the vouched OK ones); ``ssh_hosts`` the hosts left for their node's evidence;
    ``task_hosts`` the hosts that run the playbooks' per-host task: none in ``NODE_STATUS``, every host otherwise (a
    host judged here then takes its verdict from ``verdicts`` without a connection, so that the play, its failures and
    the exit status are what they are in ``SSH`` mode, and a play whose every host fails does not end the run early).
    """
    hosts = sorted(node_names)
    if mode == SSH:
        return _split({}, hosts, hosts)
    not_read = cluster_not_read(cluster_result)
    nodes = {} if not_read else {node["name"]: node for node in cluster_result.get("nodes") or ()}
    if not not_read and "nodes" not in cluster_result:
        not_read = "the Nodes were not listed (runtime_gate_list_nodes is false)"
    verdicts, ssh_hosts = {}, []
    for host in hosts:
        node_name = node_names[host]
        node = nodes.get(node_name)
        if node is None:
            why = not_read or f"the cluster lists no Node named {node_name!r}"
            verdict = dict(unknown(node_name, f"not judged from node.status: {why}"), verdict_source=NODE_STATUS_SOURCE)
        else:
            labels = (node_labels or {}).get(host)
            verdict = judge_node_status(
                node_status_facts(node, now, max_heartbeat_age), cluster_result["runtimeclasses"], node_name=node_name,
                node_labels=labels if labels is not None else labels_of_node([node], node_name))
        if mode == NODE_STATUS or verdict["status"] == OK:
            verdicts[host] = verdict
        else:
            ssh_hosts.append(host)
    return _split(verdicts, ssh_hosts, [] if mode == NODE_STATUS else hosts)


def _split(verdicts, ssh_hosts, task_hosts):
    return {"verdicts": verdicts, "ssh_hosts": ssh_hosts, "task_hosts": task_hosts,
            "judged_from_node_status": len(verdicts), "handed_to_ssh": len(ssh_hosts)}
