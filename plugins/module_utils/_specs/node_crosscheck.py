# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The argument spec of node_crosscheck: containerd_facts' node options plus handler_crosscheck's cluster options."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._specs.containerd_facts import containerd_facts_options
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._specs.handler_crosscheck import cluster_options


def get_node_crosscheck_argument_spec():
    argument_spec = dict(containerd_facts_options(), **cluster_options())
    # One task per host over the whole fleet: the cluster is named, not templated into every host's task.
    argument_spec["cluster_result_var"]["default"] = "runtime_gate_cluster"
    # localhost's node_status_verdicts result: a host it judged from its Node's status is not contacted.
    argument_spec["node_status_var"] = dict(type="str")
    # The action takes it from runtime_gate_node_name, else inventory_hostname, when the task does not give it.
    argument_spec["node_name"] = dict(argument_spec["node_name"], required=False)
    return {
        "argument_spec": argument_spec,
        "supports_check_mode": True,
        "mutually_exclusive": [("runtimeclasses", "cluster_result")],
    }
