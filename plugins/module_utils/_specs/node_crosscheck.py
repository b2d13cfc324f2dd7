# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The argument spec of node_crosscheck: containerd_facts' node options, where the cluster is found, and the facts
of a user's own containerd_facts task when the node is not to be gathered again."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._specs.containerd_facts import containerd_facts_options


def get_node_crosscheck_argument_spec():
    argument_spec = dict(
        containerd_facts_options(),
        # Given facts (or a registered containerd_facts result), the task judges them and gathers nothing.
        facts=dict(type="dict"),
        gather_result=dict(type="dict"),
        runtimeclasses=dict(type="list", elements="dict"),
        cluster_result=dict(type="dict"),
        # One task per host over the whole fleet: the cluster is named, not templated into every host's task.
        cluster_result_var=dict(type="str", default="runtime_gate_cluster"),
        # Handlers the node must serve whatever the cluster asks (the role's runtimes after a restart); alone, the
        # cluster is not read.
        expected_handlers=dict(type="list", elements="str"),
        nodes=dict(type="list", elements="dict"),
        # The action takes it from runtime_gate_node_name, else inventory_hostname, when the task does not give it.
        node_name=dict(type="str"),
        node_labels=dict(type="dict"),
        fail_on_verdict=dict(type="bool", default=True),
        # localhost's node_status_verdicts result: a host it judged from its Node's status is not contacted.
        node_status_var=dict(type="str"),
    )
    return {
        "argument_spec": argument_spec,
        "supports_check_mode": True,
        "mutually_exclusive": [("runtimeclasses", "cluster_result"), ("facts", "gather_result")],
    }
